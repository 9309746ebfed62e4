import { Queue, type Job, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { eventTimeMs, utcDate, type RawMessage, type Venue } from '@booktape/domain';

/**
 * The rollup queue (BullMQ on Redis), shared by the sink (which reports stored partitions),
 * the rollup worker, and the operator's CLI.
 *
 * Work is tracked per asset (venue, market, asset), because an asset's days depend on each
 * other (a day starts from the previous day's final book). A stored partition is recorded
 * as a dirty date in the asset's sorted set and the asset gets one job:
 * - deduplicated per asset with BullMQ's `keepLastIfActive`, so an asset is never rolled by
 *   two jobs at once, and a notification that arrives while its job runs gets a follow-up
 *   job instead of being lost;
 * - debounced by the job's delay: notifications within it are served by one run.
 * The job claims the dirty dates atomically (moved to a "claimed" hash) before it reads
 * the store, so data stored after the claim is always noticed again. A date is settled
 * when it is neither dirty nor claimed: `booktape replay --wait` waits for that.
 */

export const ROLLUP_QUEUE = 'rollup';

export interface PartitionRef {
  venue: Venue;
  market: string;
  asset: string;
  date: string;
}

export interface AssetRef {
  venue: Venue;
  market: string;
  asset: string;
}

/** An operator's back-fill: every date in [from, to] of one asset, or of every asset of the market. */
export interface BackfillRequest {
  venue: Venue;
  market: string;
  asset?: string | undefined;
  from: string;
  to: string;
}

export interface BackfillProgress {
  done: number;
  total: number;
  asset?: string;
  date?: string;
}

export type RollupJobData = ({ kind: 'asset' } & AssetRef) | ({ kind: 'backfill' } & BackfillRequest) | { kind: 'sweep' };

export interface RollupQueueOptions {
  redisUrl: string;
  /** BullMQ key prefix; everything of this queue lives under it. */
  prefix?: string;
  /** Notifications within this window are served by one rollup run. */
  debounceMs?: number;
}

/** The partition a record lands in: (venue, market, asset, UTC date of its event time); a B ticker is its own asset. */
export function partitionOf(m: RawMessage): PartitionRef {
  const date = utcDate(eventTimeMs(m));
  return m.venue === 'exchange-a'
    ? { venue: m.venue, market: m.event.market, asset: m.event.asset_id, date }
    : { venue: m.venue, market: m.record.ticker, asset: m.record.ticker, date };
}

/** Distinct partitions of some records. */
export function partitionsOf(messages: Iterable<RawMessage>, into = new Map<string, PartitionRef>()): Map<string, PartitionRef> {
  for (const m of messages) {
    const p = partitionOf(m);
    into.set(`${assetKey(p)}|${p.date}`, p);
  }
  return into;
}

export function assetKey(a: AssetRef): string {
  return `${a.venue}|${a.market}|${a.asset}`;
}

export function parseAssetKey(k: string): AssetRef {
  const [venue, market, ...rest] = k.split('|');
  return { venue: venue as Venue, market: market!, asset: rest.join('|') };
}

// KEYS: dirty zset, claimed hash, pending zset. ARGV: claim id, asset key.
const CLAIM = `
local dates = redis.call('ZRANGE', KEYS[1], 0, -1)
if #dates > 0 then
  redis.call('DEL', KEYS[1])
  for _, d in ipairs(dates) do redis.call('HSET', KEYS[2], d, ARGV[1]) end
end
redis.call('ZREM', KEYS[3], ARGV[2])
return dates`;

/**
 * The dates of an asset that are dirty or being rolled up (their stored summaries may be
 * behind the raw data), read with any Redis client.
 */
export async function pendingDates(redis: Redis, prefix: string, a: AssetRef): Promise<Set<string>> {
  return (await assetRollupState(redis, prefix, a)).pending;
}

/**
 * An asset's pending dates and its summaries' version: a counter the worker bumps after
 * every write of the asset's summaries, so a reader may reuse what it read of them while
 * the counter stands still.
 */
export async function assetRollupState(redis: Redis, prefix: string, a: AssetRef): Promise<{ pending: Set<string>; version: string | null }> {
  const k = assetKey(a);
  const [dirty, claimed, version] = await Promise.all([
    redis.zrange(`${prefix}:rollup:dirty:${k}`, '0', '-1'),
    redis.hkeys(`${prefix}:rollup:claimed:${k}`),
    redis.get(`${prefix}:rollup:version:${k}`),
  ]);
  return { pending: new Set([...dirty, ...claimed]), version };
}

export function rollupConnection(url: string, name: string): Redis {
  // BullMQ's blocking commands need maxRetriesPerRequest: null.
  return new Redis(url, { connectionName: name, maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
}

export class RollupQueue {
  readonly queue: Queue<RollupJobData>;
  readonly redis: Redis;
  readonly prefix: string;
  private readonly debounceMs: number;

  constructor(opts: RollupQueueOptions) {
    this.prefix = opts.prefix ?? 'booktape';
    this.debounceMs = opts.debounceMs ?? 1000;
    this.redis = rollupConnection(opts.redisUrl, 'booktape-rollup-queue');
    this.redis.on('error', () => undefined);
    this.queue = new Queue<RollupJobData>(ROLLUP_QUEUE, { connection: this.redis, prefix: this.prefix });
    this.queue.on('error', () => undefined);
  }

  private key(kind: 'dirty' | 'claimed', asset: string): string {
    return `${this.prefix}:rollup:${kind}:${asset}`;
  }

  private get pendingKey(): string {
    return `${this.prefix}:rollup:pending`;
  }

  /** Records stored partitions as dirty and gives each asset a (debounced) job. */
  async notify(parts: readonly PartitionRef[]): Promise<void> {
    if (parts.length === 0) return;
    const now = Date.now();
    const assets = new Map<string, AssetRef>();
    const multi = this.redis.multi();
    for (const p of parts) {
      const k = assetKey(p);
      assets.set(k, { venue: p.venue, market: p.market, asset: p.asset });
      multi.zadd(this.key('dirty', k), 'NX', now, p.date);
      multi.zadd(this.pendingKey, 'NX', now, k);
    }
    await multi.exec();
    await Promise.all([...assets].map(([k, a]) => this.enqueueAsset(k, a)));
  }

  /** One job for the asset (deduplicated; see the class comment). */
  async enqueueAsset(k: string, a: AssetRef, delay = this.debounceMs): Promise<void> {
    await this.queue.add('asset', { kind: 'asset', ...a }, {
      deduplication: { id: k, keepLastIfActive: true },
      delay,
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    });
  }

  /** Moves the asset's dirty dates to its claimed set; returns them. */
  async claim(a: AssetRef, claimId: string): Promise<string[]> {
    const k = assetKey(a);
    return (await this.redis.eval(CLAIM, 3, this.key('dirty', k), this.key('claimed', k), this.pendingKey, claimId, k)) as string[];
  }

  /** Ends a claim: done, or (failed) back to dirty so that a retry or the sweep takes them again. */
  async release(a: AssetRef, dates: readonly string[], failed: boolean): Promise<void> {
    if (dates.length === 0) return;
    const k = assetKey(a);
    const multi = this.redis.multi();
    if (failed) {
      const now = Date.now();
      for (const d of dates) multi.zadd(this.key('dirty', k), 'NX', now, d);
      multi.zadd(this.pendingKey, 'NX', now, k);
    }
    multi.hdel(this.key('claimed', k), ...dates);
    await multi.exec();
  }

  /** After the asset's summaries were written: readers' caches of them are stale. */
  async bumpVersion(a: AssetRef): Promise<void> {
    await this.redis.incr(`${this.prefix}:rollup:version:${assetKey(a)}`);
  }

  /** Marks dates dirty and enqueues the asset (the sweep, an outdated engine version). */
  async markDirty(parts: readonly PartitionRef[], delay = 0): Promise<void> {
    if (parts.length === 0) return;
    const now = Date.now();
    const multi = this.redis.multi();
    const assets = new Map<string, AssetRef>();
    for (const p of parts) {
      const k = assetKey(p);
      assets.set(k, p);
      multi.zadd(this.key('dirty', k), 'NX', now, p.date);
      multi.zadd(this.pendingKey, 'NX', now, k);
    }
    await multi.exec();
    await Promise.all([...assets].map(([k, a]) => this.enqueueAsset(k, { venue: a.venue, market: a.market, asset: a.asset }, delay)));
  }

  /** How many of these partitions are still dirty or being rolled up. */
  async unsettled(parts: readonly PartitionRef[]): Promise<number> {
    if (parts.length === 0) return 0;
    const pipe = this.redis.pipeline();
    for (const p of parts) {
      const k = assetKey(p);
      pipe.zscore(this.key('dirty', k), p.date);
      pipe.hexists(this.key('claimed', k), p.date);
    }
    const res = (await pipe.exec()) ?? [];
    let n = 0;
    for (let i = 0; i < res.length; i += 2) {
      const [e1, dirty] = res[i]!;
      const [e2, claimed] = res[i + 1]!;
      if (e1 || e2) throw e1 ?? e2;
      if (dirty !== null || claimed === 1) n++;
    }
    return n;
  }

  async enqueueBackfill(req: BackfillRequest): Promise<Job<RollupJobData>> {
    return this.queue.add('backfill', { kind: 'backfill', ...req }, { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 7 * 86_400 } });
  }

  /** Queue depth and the oldest pending asset, for monitoring. */
  async stats(): Promise<{ waiting: number; active: number; delayed: number; failed: number; pendingAssets: number; oldestPendingMs: number | null }> {
    const [counts, pending, oldest] = await Promise.all([
      this.queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized'),
      this.redis.zcard(this.pendingKey),
      this.redis.zrange(this.pendingKey, '0', '0', 'WITHSCORES'),
    ]);
    return {
      waiting: (counts['waiting'] ?? 0) + (counts['prioritized'] ?? 0),
      active: counts['active'] ?? 0,
      delayed: counts['delayed'] ?? 0,
      failed: counts['failed'] ?? 0,
      pendingAssets: pending,
      oldestPendingMs: oldest.length === 2 ? Number(oldest[1]) : null,
    };
  }

  async close(): Promise<void> {
    await this.queue.close().catch(() => undefined);
    this.redis.disconnect();
  }
}

export type { JobsOptions };
