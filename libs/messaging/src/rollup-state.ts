import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script.ts';
import { assetKey, parseAssetKey, rollupKeys, type AssetRef } from './rollup-keys.ts';

/**
 * The rollup queue's state, read with any Redis client: monitoring uses the API's fail-fast
 * one, which does not wait while Redis is down the way BullMQ's connection does, and
 * `RollupQueue.stats()` its own. Nothing here writes.
 */

/** Queue depth and the asset pending longest. */
export interface RollupDepth {
  /** Jobs ready to run (waiting + prioritized), running, scheduled for later, and failed (kept for inspection). */
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  /** Assets with dates whose summaries are behind the raw data. */
  pendingAssets: number;
  /** The asset pending longest, and since when. */
  oldestPending: { asset: AssetRef; since: number } | null;
}

/** Reads BullMQ's state keys directly, without opening a BullMQ queue (see the module comment). */
export async function readRollupDepth(redis: Redis, prefix: string): Promise<RollupDepth> {
  const keys = rollupKeys(prefix);
  const res = await redis
    .pipeline()
    .llen(keys.jobs('wait'))
    .llen(keys.jobs('paused'))
    .zcard(keys.jobs('prioritized'))
    .llen(keys.jobs('active'))
    .zcard(keys.jobs('delayed'))
    .zcard(keys.jobs('failed'))
    .zcard(keys.pending)
    .zrange(keys.pending, '0', '0', 'WITHSCORES')
    .exec();
  if (!res) throw new Error('redis pipeline returned nothing');
  for (const [err] of res) if (err) throw err;
  const n = (i: number) => Number(res[i]![1]);
  const first = res[7]![1] as string[];
  const oldestPending = first.length === 2 ? { asset: parseAssetKey(first[0]!), since: Number(first[1]) } : null;
  return { waiting: n(0) + n(1) + n(2), active: n(3), delayed: n(4), failed: n(5), pendingAssets: n(6), oldestPending };
}

/** The claims of a queue: how many assets are claimed, and those whose lease ran out (`expiredAt`: when). */
export interface ClaimLeases {
  now: number;
  claimed: number;
  stale: Array<AssetRef & { expiredAt: number }>;
}

/**
 * Claims and their leases, read with any Redis client (monitoring): a stale claim is one
 * whose holder stopped renewing it (a dead process) and that nothing has taken over yet.
 */
export async function readClaimLeases(redis: Redis, prefix: string, limit = 10): Promise<ClaimLeases & { staleCount: number }> {
  const key = rollupKeys(prefix).leases;
  const res = (await redis.pipeline().time().zcard(key).exec()) ?? [];
  for (const [err] of res) if (err) throw err;
  if (res.length !== 2) throw new Error('redis pipeline returned nothing');
  const time = res[0]![1];
  const claimed = res[1]![1];
  const [sec, usec] = time as [string, string];
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  const [stale, staleCount] = await Promise.all([redis.zrangebyscore(key, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit), redis.zcount(key, '-inf', now)]);
  const out: ClaimLeases['stale'] = [];
  for (let i = 0; i < stale.length; i += 2) out.push({ ...parseAssetKey(stale[i]!), expiredAt: Number(stale[i + 1]) });
  return { now, claimed: Number(claimed), stale: out, staleCount };
}

/**
 * The dates of an asset that are dirty or being rolled up (their stored summaries may be
 * behind the raw data), read with any Redis client.
 */
export async function pendingDates(redis: Redis, prefix: string, a: AssetRef): Promise<Set<string>> {
  return (await assetRollupState(redis, prefix, a)).pending;
}

/** An asset's rollup state: the dates waiting for a rollup run, and its summaries version (null: none yet). */
export interface RollupState {
  pending: Set<string>;
  version: string | null;
  /**
   * Nobody was writing the asset's summaries when this was read: its lock was free and none
   * of its dates claimed, in the same atomic read as `version`. A writer takes the lock (and
   * an asset job its claims) before its first bump and keeps it past its last, so any write
   * that lands after this read bumps the version after it too: what is read of the
   * summaries from now on is current for as long as the version stays `version`, even
   * where that writer dies between its write and its last bump (false for a state not read
   * from Redis).
   */
  atRest?: boolean;
}

/**
 * One atomic read of an asset's dirty dates, claimed dates, summaries version and lock
 * (KEYS in that order): `{dirty, claimed, version or nil, lock held 0/1}`.
 */
const STATE = new RedisScript(`
return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('HKEYS', KEYS[2]), redis.call('GET', KEYS[3]), redis.call('EXISTS', KEYS[4])}
`);

/**
 * An asset's pending dates and its summaries' version: a counter the worker bumps before and after
 * every write of the asset's summaries, so a reader may reuse what it read of them while
 * the counter stands still. One script (one command, atomic: see `RollupState.atRest`).
 */
export async function assetRollupState(redis: Redis, prefix: string, a: AssetRef): Promise<RollupState> {
  const k = assetKey(a);
  const keys = rollupKeys(prefix);
  const r = (await STATE.run(redis, [keys.dirty(k), keys.claimed(k), keys.version(k), keys.lock(k)])) as [string[], string[], string | null, number];
  const [dirty, claimed, version, locked] = r;
  return { pending: new Set([...dirty, ...claimed]), version: version ?? null, atRest: claimed.length === 0 && Number(locked) === 0 };
}
