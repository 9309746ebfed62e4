import type { Redis } from 'ioredis';
import { assetKey, pendingDates, readClaimLeases, readRollupDepth, readRollupWorkers, rollupKeys, type AssetRef, type RollupDepth, type RollupWorkers } from '@booktape/messaging';

/** The queue's depth (readRollupDepth), with the dates of its oldest pending asset and the state of the claims. */
export interface RollupBacklog extends Omit<RollupDepth, 'oldestPending'> {
  /** The asset pending longest: since when, and its dirty or claimed dates. */
  oldest: (AssetRef & { since: number; dates: string[] }) | null;
  /** Assets a rollup job has claimed (being rolled up now, or held by a job that died). */
  claimedAssets: number;
  /**
   * Claims whose lease ran out: their holder stopped renewing them (a process that died
   * holding them) and nothing has taken them over yet. The first one: its dates and when
   * its lease ran out.
   */
  staleClaims: number;
  oldestStaleClaim: (AssetRef & { expiredAt: number; dates: string[] }) | null;
  /** The worker processes, by their liveness beats: live, or stopped without a clean stop. */
  workers: RollupWorkers;
}

const MAX_DATES = 10;

/**
 * The rollup queue's backlog, read with the API's own fail-fast Redis client. The depth is
 * read as `RollupQueue.stats()` reads it (readRollupDepth, libs/messaging), straight from
 * BullMQ's keys: a BullMQ queue in the API would bring its blocking-style connection, which
 * waits rather than fails while Redis is down.
 */
export async function readRollupBacklog(redis: Redis, prefix: string): Promise<RollupBacklog> {
  const claims = readClaimLeases(redis, prefix, 1);
  claims.catch(() => undefined);
  const workers = readRollupWorkers(redis, prefix);
  workers.catch(() => undefined);
  const { oldestPending, ...depth } = await readRollupDepth(redis, prefix);
  let oldest: RollupBacklog['oldest'] = null;
  if (oldestPending) {
    const dates = [...(await pendingDates(redis, prefix, oldestPending.asset))].sort().slice(0, MAX_DATES);
    oldest = { ...oldestPending.asset, since: oldestPending.since, dates };
  }
  const c = await claims;
  const s = c.stale[0];
  const oldestStaleClaim = s ? { ...s, dates: (await redis.hkeys(rollupKeys(prefix).claimed(assetKey(s)))).sort().slice(0, MAX_DATES) } : null;
  return { ...depth, oldest, claimedAssets: c.claimed, staleClaims: c.staleCount, oldestStaleClaim, workers: await workers };
}
