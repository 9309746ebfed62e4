import type { Redis } from 'ioredis';
import { ROLLUP_QUEUE, parseAssetKey, pendingDates, type AssetRef } from '@booktape/messaging';

export interface RollupBacklog {
  /** Jobs ready to run (waiting + prioritized), running, scheduled for later, and failed (kept for inspection). */
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  /** Assets with dates whose summaries are behind the raw data. */
  pendingAssets: number;
  /** The asset pending longest: since when, and its dirty or claimed dates. */
  oldest: (AssetRef & { since: number; dates: string[] }) | null;
}

const MAX_DATES = 10;

/**
 * The rollup queue's backlog, read with the API's own fail-fast Redis client. This is what
 * `RollupQueue.stats()` (libs/messaging) answers, without opening a BullMQ queue and its
 * blocking-style connection in the API (which would wait, not fail, while Redis is down).
 * BullMQ keeps its job states under `<prefix>:<queue>:<state>` (lists for wait, paused and
 * active; sorted sets for the others); monitoring.int.test.ts compares both readers.
 */
export async function readRollupBacklog(redis: Redis, prefix: string): Promise<RollupBacklog> {
  const q = `${prefix}:${ROLLUP_QUEUE}`;
  const pending = `${prefix}:rollup:pending`;
  const res = await redis
    .pipeline()
    .llen(`${q}:wait`)
    .llen(`${q}:paused`)
    .zcard(`${q}:prioritized`)
    .llen(`${q}:active`)
    .zcard(`${q}:delayed`)
    .zcard(`${q}:failed`)
    .zcard(pending)
    .zrange(pending, '0', '0', 'WITHSCORES')
    .exec();
  if (!res) throw new Error('redis pipeline returned nothing');
  for (const [err] of res) if (err) throw err;
  const n = (i: number) => Number(res[i]![1]);
  const first = res[7]![1] as string[];
  let oldest: RollupBacklog['oldest'] = null;
  if (first.length === 2) {
    const asset = parseAssetKey(first[0]!);
    const dates = [...(await pendingDates(redis, prefix, asset))].sort().slice(0, MAX_DATES);
    oldest = { ...asset, since: Number(first[1]), dates };
  }
  return { waiting: n(0) + n(1) + n(2), active: n(3), delayed: n(4), failed: n(5), pendingAssets: n(6), oldest };
}
