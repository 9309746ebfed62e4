import type { Venue } from '@booktape/domain';

/**
 * Every Redis key of the rollup queue, in one place: the sink, the rollup worker, the API
 * (monitoring, summary reads) and the CLI build them here. `<prefix>` is
 * ROLLUP_QUEUE_PREFIX; `<asset>` is an asset key (`assetKey`).
 *
 *   <prefix>:rollup:<state>            BullMQ's own keys of the queue `rollup` (`wait`, `active`, …)
 *   <prefix>:rollup:pending            sorted set: asset → since when it has dirty dates
 *   <prefix>:rollup:leases             sorted set: asset → when its claim's lease runs out (Redis's clock)
 *   <prefix>:rollup:dirty:<asset>      sorted set: dates stored since the last rollup
 *   <prefix>:rollup:claimed:<asset>    hash: date → id of the claim rolling it up
 *   <prefix>:rollup:earliest:<asset>   hash: dirty date → lowest event time (Unix ms) stored since it was marked; 0 or absent: unknown
 *   <prefix>:rollup:version:<asset>    counter: bumped before and after every write of the asset's summaries
 *   <prefix>:rollup:lock:<asset>       the worker's lock on the asset while it rolls it up
 *   <prefix>:rollup:notified:<asset>   when a sink first notified the asset since its last claim (Redis's clock; the past-day hold)
 *   <prefix>:rollup:past-fed           when a sink last stored records of a past day (Redis's clock; the past-day hold)
 *
 * BullMQ's keys share the `rollup:` head because the queue is named `rollup`; the other
 * kinds are not BullMQ states, so the two cannot collide.
 */

export const ROLLUP_QUEUE = 'rollup';

export interface AssetRef {
  venue: Venue;
  market: string;
  asset: string;
}

export function assetKey(a: AssetRef): string {
  return `${a.venue}|${a.market}|${a.asset}`;
}

export function parseAssetKey(k: string): AssetRef {
  const [venue, market, ...rest] = k.split('|');
  return { venue: venue as Venue, market: market!, asset: rest.join('|') };
}

/** The BullMQ states whose keys monitoring reads (lists: wait, paused, active; sorted sets: the others). */
export type RollupJobState = 'wait' | 'paused' | 'prioritized' | 'active' | 'delayed' | 'failed';

export interface RollupKeys {
  /** BullMQ's key of one state of the queue. */
  jobs(state: RollupJobState): string;
  pending: string;
  leases: string;
  /** Per asset, by its asset key. */
  dirty(asset: string): string;
  claimed(asset: string): string;
  /** Beside `dirty`: each dirty date's lowest stored event time (rollup-queue.ts, the late-data hint). */
  earliest(asset: string): string;
  version(asset: string): string;
  lock(asset: string): string;
  /** When a sink first notified the asset since its last claim (rollup-queue.ts, the past-day hold). */
  notified(asset: string): string;
  /** When a sink last stored records of a past day, any asset's (the past-day hold). */
  pastFed: string;
}

export function rollupKeys(prefix: string): RollupKeys {
  const queue = `${prefix}:${ROLLUP_QUEUE}`;
  const head = `${prefix}:rollup`;
  return {
    jobs: (state) => `${queue}:${state}`,
    pending: `${head}:pending`,
    leases: `${head}:leases`,
    dirty: (asset) => `${head}:dirty:${asset}`,
    claimed: (asset) => `${head}:claimed:${asset}`,
    earliest: (asset) => `${head}:earliest:${asset}`,
    version: (asset) => `${head}:version:${asset}`,
    lock: (asset) => `${head}:lock:${asset}`,
    notified: (asset) => `${head}:notified:${asset}`,
    pastFed: `${head}:past-fed`,
  };
}
