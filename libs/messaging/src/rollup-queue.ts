import { randomInt } from 'node:crypto';
import { Queue, type Job, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { utcDate, type RawMessage, type Venue } from '@booktape/domain';
import { eventTimeMs, marketKey, messageAsset } from '@booktape/venues';
import { ROLLUP_QUEUE, assetKey, parseAssetKey, rollupKeys, type AssetRef, type RollupKeys } from './rollup-keys.ts';
import { readRollupDepth } from './rollup-state.ts';

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
 *
 * A claim is held under a lease (the asset's score in the `leases` sorted set: when it
 * runs out, in Redis's clock), which its job renews while it runs. A process that dies
 * holding a claim stops renewing it; once the lease has run out the claimed dates go back
 * to dirty, taken over by the next claim of the asset or by the sweep
 * (`takeOverExpiredClaims`), so they cannot stay claimed (and unsettled) for good. A job
 * whose claim was taken over ends its claim without touching the new one's dates.
 *
 * The late-data hint: beside each dirty date the lowest event time of the records notified
 * for it since it became dirty (`PartitionRef.earliestMs`, the min of every mark merged in
 * one step), handed to the job with the claim. A roller compares it with the stored
 * `covered_until` and counts the stored events before it (the exact late-data check) only
 * when it could have changed: the sink notifies only after its insert, the claim precedes
 * the run's read, so a stored record the last run did not see is notified after that run's
 * claim and is in a later claim's hint. A date whose hint is unknown is counted: a mark
 * without an event time (the sweep, an import, a mark written before hints existed) makes
 * the date's hint unknown until it is claimed, and so do dates that go back to dirty from a
 * claim (a failed run, a lease taken over), since the claim's hint is not kept.
 */

export interface PartitionRef {
  venue: Venue;
  market: string;
  asset: string;
  date: string;
  /**
   * The lowest event time (Unix ms) of the stored records this mark is for: the sink's
   * notifications carry it. Absent: unknown (the sweep, imports, an operator), and a
   * rollup of the date then counts its stored events (see the class comment).
   */
  earliestMs?: number | undefined;
}

/**
 * A hint that says only that records were stored recently, not when (the sweep's mark of a
 * partition stored to within its look-back): below every covered time, so the run counts,
 * and, being a hint, it keeps a past day open while its data may still arrive.
 */
export const STORED_RECENTLY_MS = 1;

/**
 * How long an asset's notification times (the past-day hold) outlive its last notification
 * when no claim deletes them: far beyond any hold.
 */
const NOTIFIED_TTL_MS = 3_600_000;

/**
 * The past-day hold of a claim (`lockAndClaimMany`): an asset whose dirty dates are all
 * before `closedBefore`, each marked with a hint, is not claimed while a sink stored records
 * of a past day (of any asset) within `quietMs`, at most `maxMs` from the asset's first
 * notification since its last claim. (Quiet is the sink's, not the asset's: a slow sink
 * notifies each asset of a replay only now and then.) A replay or an import through the sink feeds a past day in many
 * small notifications: rolled as they come, the day is read, folded and written again and
 * again (and the store's unmerged parts re-read), where one run once the day is quiet does
 * the same work once. A mark without a hint (a replay's end, the sweep's close of an open
 * day, an engine version, an operator) ends the hold at once, and today's dates are never
 * held.
 */
export interface PastDayHold {
  /** 'YYYY-MM-DD': dates before it have ended (plus the close grace). */
  closedBefore: string;
  quietMs: number;
  maxMs: number;
}

/** A claimed date and its late-data hint (null: unknown, the rollup counts). */
export interface ClaimedDate {
  date: string;
  earliestMs: number | null;
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

const BUMP = `if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end
return redis.call('INCR', KEYS[1])`;

export interface RollupQueueOptions {
  redisUrl: string;
  /** BullMQ key prefix; everything of this queue lives under it. */
  prefix?: string;
  /** Notifications within this window are served by one rollup run. */
  debounceMs?: number;
  /** How long a claim holds without being renewed (DEFAULT_CLAIM_LEASE_MS). */
  claimLeaseMs?: number;
}

/**
 * A notified asset's job waits this long (ROLLUP_DEBOUNCE_MS): notifications within it are
 * served by one run. Every millisecond of it is lag of the stored summaries behind the data
 * (a job notified while its asset's run goes on follows that run by as much), and the sink
 * notifies each busy asset once per fetch anyway: runs are few because one run claims every
 * date stored since the last and other waiting assets of its venue, not because of the wait.
 */
export const DEFAULT_DEBOUNCE_MS = 250;

/** A claim's lease: renewed every third of it, so only a dead (or stalled) holder loses it. */
export const DEFAULT_CLAIM_LEASE_MS = 60_000;

/** The partition a record lands in: (venue, market, asset, UTC date of its event time); a B ticker is its own asset. */
export function partitionOf(m: RawMessage): PartitionRef {
  const date = utcDate(eventTimeMs(m));
  return { venue: m.venue, market: marketKey(m), asset: messageAsset(m), date };
}

/** A partition's identity as text (venue, market, asset, date): one map key per asset-day. */
export const partitionKey = (p: { venue: string; market: string; asset: string; date: string }): string => `${p.venue}|${p.market}|${p.asset}|${p.date}`;

/** Distinct partitions of some records, each with its records' lowest event time (`earliestMs`). */
export function partitionsOf(messages: Iterable<RawMessage>, into = new Map<string, PartitionRef>()): Map<string, PartitionRef> {
  for (const m of messages) {
    const ms = eventTimeMs(m);
    const date = utcDate(ms);
    const venue = m.venue;
    const market = marketKey(m);
    const asset = messageAsset(m);
    const k = partitionKey({ venue, market, asset, date });
    const had = into.get(k);
    if (had === undefined) into.set(k, { venue, market, asset, date, earliestMs: ms });
    else had.earliestMs = mergeEarliest(had.earliestMs, ms);
  }
  return into;
}

/** Two marks' hints as one: the lower, and unknown when either is (absent, or not a number). */
export function mergeEarliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return undefined;
  return Math.min(a, b);
}

/** A hint as stored beside a dirty date: whole ms, 0 for unknown (below every covered time). */
function storedEarliest(ms: number | undefined): string {
  return ms === undefined || !Number.isFinite(ms) || ms <= 0 ? '0' : String(Math.floor(ms));
}

/** A stored hint as the job gets it: null (unknown) when absent or 0. */
function claimedEarliest(v: string | null | undefined): number | null {
  const n = v === null || v === undefined ? 0 : Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

// A date marked dirty, with its hint. KEYS: dirty, earliest, pending, notified, past-fed.
// ARGV: date, now, hint ('0': unknown), asset key, past ('1': the date is before the
// marker's today). A date already dirty keeps the lower hint; one dirty without a hint
// (marked before hints existed) stays unknown. A sink's mark (a hint above
// STORED_RECENTLY_MS) also records, in Redis's clock, when the asset was first notified
// since its last claim, and, for a past date, when the sink last stored a past day's
// records (the past-day hold, `lockAndClaimMany`).
const MARK = `if tonumber(ARGV[3]) > ${STORED_RECENTLY_MS} then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('SET', KEYS[4], now, 'PX', ${NOTIFIED_TTL_MS}, 'NX')
  if ARGV[5] == '1' then redis.call('SET', KEYS[5], now, 'PX', ${NOTIFIED_TTL_MS}) end
end
if redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
else
  local cur = redis.call('HGET', KEYS[2], ARGV[1])
  if not cur then
    redis.call('HSET', KEYS[2], ARGV[1], '0')
  elseif tonumber(ARGV[3]) < tonumber(cur) then
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
  end
end
redis.call('ZADD', KEYS[3], 'NX', ARGV[2], ARGV[4])
return 1`;

// Redis's clock (ms), so leases do not depend on the clocks of the processes.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// A claim of KEYS[2] whose lease (score of ARGV_ASSET in KEYS[4]) ran out: its dates back to
// dirty, their hints unknown (KEYS[5]: the claim's hints are gone).
const TAKE_OVER_IF_EXPIRED = (asset: string) => `
local exp = redis.call('ZSCORE', KEYS[4], ${asset})
if exp and tonumber(exp) <= now then
  local old = redis.call('HKEYS', KEYS[2])
  redis.call('DEL', KEYS[2])
  for _, d in ipairs(old) do
    redis.call('ZADD', KEYS[1], 'NX', now, d)
    redis.call('HSET', KEYS[5], d, '0')
  end
  if #old > 0 then redis.call('ZADD', KEYS[3], 'NX', now, ${asset}) end
  redis.call('ZREM', KEYS[4], ${asset})
  taken = #old
end
`;

// Claims an asset's dirty dates under its lock, taken first in the same step, and those of
// up to ARGV[7] more assets of the pending set (oldest first, among its first ARGV[9]) whose
// key starts with ARGV[8] (the venue's head), all under one claim id and lock id. KEYS:
// pending, leases. ARGV: claim id, lease ms, lock ms, the head of the per-asset keys, asset
// key, lock id, more, key head, scan. An expired claim of an asset is taken over first, so
// its dates are claimed again here. An asset locked by another job is skipped; one locked
// here with nothing dirty is unlocked at once. Returns {asset key, dates, hints} triples
// (each hint at its date's index, '0': unknown), the first asset's first (its dates may be
// none); nil when another job holds the first asset's lock. The other assets' keys are built
// here from their names (a single Redis, as the queue's other scripts assume).
//
// The past-day hold (ARGV[10] closed-before date, ARGV[11] quiet ms, ARGV[12] most ms; quiet
// 0: none): an asset whose dirty dates are all before the closed-before date, each with a
// hint, while a sink stored records of a past day within the quiet ms, and at most the most
// ms from the asset's first notification since its last claim, is left as it is, unclaimed
// and unlocked: a replay or an import is still feeding past days. The first asset held
// comes back as {asset key, {}, {}, ms until it may be claimed}.
const LOCK_AND_CLAIM_MANY = `${NOW}
local head = ARGV[4]
local quiet = tonumber(ARGV[11] or '0')
local function heldFor(a, dirty, earliest)
  if quiet <= 0 then return 0 end
  local first = tonumber(redis.call('GET', head .. ':notified:' .. a) or '')
  local last = tonumber(redis.call('GET', head .. ':past-fed') or '')
  if not first or not last then return 0 end
  local untilMs = math.min(last + quiet, first + tonumber(ARGV[12]))
  if untilMs <= now then return 0 end
  local dates = redis.call('ZRANGE', dirty, 0, -1)
  if #dates == 0 then return 0 end
  for _, d in ipairs(dates) do
    if d >= ARGV[10] then return 0 end
    local h = tonumber(redis.call('HGET', earliest, d) or '0')
    if (not h) or h <= 0 then return 0 end
  end
  return untilMs - now
end
local function claimOne(a)
  local lock = head .. ':lock:' .. a
  if not redis.call('SET', lock, ARGV[6], 'PX', tonumber(ARGV[3]), 'NX') then return false end
  local dirty = head .. ':dirty:' .. a
  local claimed = head .. ':claimed:' .. a
  local earliest = head .. ':earliest:' .. a
  local exp = redis.call('ZSCORE', KEYS[2], a)
  if exp and tonumber(exp) <= now then
    local old = redis.call('HKEYS', claimed)
    redis.call('DEL', claimed)
    for _, d in ipairs(old) do
      redis.call('ZADD', dirty, 'NX', now, d)
      redis.call('HSET', earliest, d, '0')
    end
    redis.call('ZREM', KEYS[2], a)
  end
  local held = heldFor(a, dirty, earliest)
  if held > 0 then
    redis.call('DEL', lock)
    return {{}, {}, held}
  end
  redis.call('DEL', head .. ':notified:' .. a)
  local dates = redis.call('ZRANGE', dirty, 0, -1)
  local hints = {}
  if #dates > 0 then
    redis.call('DEL', dirty)
    for i, d in ipairs(dates) do
      redis.call('HSET', claimed, d, ARGV[1])
      hints[i] = redis.call('HGET', earliest, d) or '0'
    end
    -- GT: a claim still held by another (live) job of the asset keeps its longer lease.
    redis.call('ZADD', KEYS[2], 'GT', now + tonumber(ARGV[2]), a)
  end
  redis.call('DEL', earliest)
  redis.call('ZREM', KEYS[1], a)
  return {dates, hints}
end
local first = claimOne(ARGV[5])
if not first then return false end
if first[3] then return {{ARGV[5], {}, {}, first[3]}} end
local out = {{ARGV[5], first[1], first[2]}}
local more = tonumber(ARGV[7])
if more > 0 then
  local vh = ARGV[8]
  for _, a in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[9]) - 1)) do
    if #out > more then break end
    if a ~= ARGV[5] and string.sub(a, 1, #vh) == vh then
      local got = claimOne(a)
      if got and not got[3] then
        if #got[1] > 0 then out[#out + 1] = {a, got[1], got[2]} else redis.call('DEL', head .. ':lock:' .. a) end
      end
    end
  end
end
return out`;

// KEYS: dirty, claimed, pending, leases, earliest. ARGV: asset key. Returns how many dates went back to dirty.
const TAKE_OVER = `${NOW}
local taken = 0
${TAKE_OVER_IF_EXPIRED('ARGV[1]')}
return taken`;

// KEYS: claimed hash, leases zset. ARGV: claim id, asset key, lease ms. 1: renewed; 0: the claim is gone (taken over).
const RENEW = `${NOW}
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do
  if v == ARGV[1] then
    redis.call('ZADD', KEYS[2], 'GT', now + tonumber(ARGV[3]), ARGV[2])
    return 1
  end
end
return 0`;

// KEYS: dirty, claimed, pending, leases, earliest. ARGV: claim id, asset key, failed ('1'|'0'), dates…
// Only the dates this claim still holds: a date taken over belongs to the job that took it.
// A failed date goes back to dirty with its hint unknown (the claim's is not kept).
const RELEASE = `${NOW}
local ended = 0
for i = 4, #ARGV do
  local d = ARGV[i]
  if redis.call('HGET', KEYS[2], d) == ARGV[1] then
    redis.call('HDEL', KEYS[2], d)
    ended = ended + 1
    if ARGV[3] == '1' then
      redis.call('ZADD', KEYS[1], 'NX', now, d)
      redis.call('HSET', KEYS[5], d, '0')
      redis.call('ZADD', KEYS[3], 'NX', now, ARGV[2])
    end
  end
end
if redis.call('HLEN', KEYS[2]) == 0 then redis.call('ZREM', KEYS[4], ARGV[2]) end
return ended`;

// KEYS: claimed hash, leases zset. ARGV: asset key, lease ms. A claim without a lease (made
// before leases existed) gets one, so it is taken over unless someone renews it.
const ADOPT = `${NOW}
if redis.call('HLEN', KEYS[1]) > 0 and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
  return 1
end
return 0`;

// KEYS: leases zset. ARGV: limit. The assets whose claim lease has run out.
const EXPIRED = `${NOW}
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))`;

export function rollupConnection(url: string, name: string): Redis {
  // BullMQ's blocking commands need maxRetriesPerRequest: null.
  return new Redis(url, { connectionName: name, maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
}

export class RollupQueue {
  readonly queue: Queue<RollupJobData>;
  readonly redis: Redis;
  readonly prefix: string;
  private readonly debounceMs: number;
  readonly claimLeaseMs: number;
  private readonly keys: RollupKeys;
  private adopted = false;
  /** Notified assets whose job is not added yet (see `notify`). */
  private readonly jobsToAdd = new Map<string, AssetRef>();
  private addingJobs: Promise<void> | undefined;
  private closing = false;

  constructor(opts: RollupQueueOptions) {
    this.prefix = opts.prefix ?? 'booktape';
    this.debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.claimLeaseMs = opts.claimLeaseMs ?? DEFAULT_CLAIM_LEASE_MS;
    this.keys = rollupKeys(this.prefix);
    this.redis = rollupConnection(opts.redisUrl, 'booktape-rollup-queue');
    this.redis.on('error', () => undefined);
    this.queue = new Queue<RollupJobData>(ROLLUP_QUEUE, { connection: this.redis, prefix: this.prefix });
    this.queue.on('error', () => undefined);
  }

  /** The keys the claim scripts take, in their order. */
  private claimKeys(k: string): [string, string, string, string, string] {
    return [this.keys.dirty(k), this.keys.claimed(k), this.keys.pending, this.keys.leases, this.keys.earliest(k)];
  }

  /**
   * Records stored partitions as dirty (one round trip) and gives each asset a (debounced)
   * job. Resolves once the dates are dirty: `unsettled` and the claims see them from then on,
   * which is what the sink's commit waits for. The jobs follow in the background, the assets
   * of every notification since the last add in one round trip (`jobsAdded` waits for them).
   * A process that stops between the two leaves an asset pending without a job: the sweep
   * gives every asset pending longer than it should be a job (`enqueueStalePending`).
   */
  async notify(parts: readonly PartitionRef[]): Promise<void> {
    if (parts.length === 0) return;
    for (const [k, a] of await this.recordDirty(parts)) this.jobsToAdd.set(k, a);
    this.addingJobs ??= this.addJobs().finally(() => (this.addingJobs = undefined));
  }

  /** Resolves once the jobs of every notification so far were added (or left at `close`). */
  async jobsAdded(): Promise<void> {
    while (this.addingJobs) await this.addingJobs;
  }

  /** Dirty dates (with their hints, `MARK`) and pending assets, in one transaction. Returns the assets. */
  private async recordDirty(parts: readonly PartitionRef[]): Promise<Map<string, AssetRef>> {
    const now = Date.now();
    const today = utcDate(now);
    const assets = new Map<string, AssetRef>();
    const multi = this.redis.multi();
    for (const p of parts) {
      const k = assetKey(p);
      if (!assets.has(k)) assets.set(k, { venue: p.venue, market: p.market, asset: p.asset });
      multi.eval(MARK, 5, this.keys.dirty(k), this.keys.earliest(k), this.keys.pending, this.keys.notified(k), this.keys.pastFed, p.date, now, storedEarliest(p.earliestMs), k, p.date < today ? '1' : '0');
    }
    const res = await multi.exec();
    if (res === null) throw new Error('redis transaction of the dirty dates was discarded');
    for (const [err] of res) if (err) throw err;
    return assets;
  }

  /** The notified assets' jobs, all waiting ones in one add; a failed add is tried again with back-off (the sweep covers a process that stops meanwhile). */
  private async addJobs(): Promise<void> {
    let backoff = 100;
    while (this.jobsToAdd.size > 0) {
      const batch = [...this.jobsToAdd];
      this.jobsToAdd.clear();
      try {
        await this.enqueueAssets(batch, this.debounceMs);
        backoff = 100;
      } catch {
        for (const [k, a] of batch) if (!this.jobsToAdd.has(k)) this.jobsToAdd.set(k, a);
        if (this.closing) return;
        await new Promise((r) => setTimeout(r, backoff).unref());
        backoff = Math.min(backoff * 2, 5000);
        if (this.closing) return;
      }
    }
  }

  private jobOptions(k: string, delay: number): JobsOptions {
    return {
      deduplication: { id: k, keepLastIfActive: true },
      delay,
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: 1000,
    };
  }

  /** One job for the asset (deduplicated; see the class comment). */
  async enqueueAsset(k: string, a: AssetRef, delay = this.debounceMs): Promise<void> {
    await this.queue.add('asset', { kind: 'asset', ...a }, this.jobOptions(k, delay));
  }

  /** `enqueueAsset` of several assets, in one round trip. */
  async enqueueAssets(assets: Iterable<readonly [string, AssetRef]>, delay = this.debounceMs): Promise<void> {
    const jobs = [...assets].map(([k, a]) => ({ name: 'asset', data: { kind: 'asset' as const, venue: a.venue, market: a.market, asset: a.asset }, opts: this.jobOptions(k, delay) }));
    if (jobs.length > 0) await this.queue.addBulk(jobs);
  }

  /**
   * Gives a job to every asset pending (dirty dates not claimed) since more than
   * `olderThanMs` ago, at most `limit`: a notification whose job was never added (its
   * process stopped after recording the dates) is served. An asset whose job still waits
   * keeps that one (deduplicated). Returns how many assets it asked for.
   */
  async enqueueStalePending(olderThanMs: number, limit = 1000): Promise<number> {
    const keys = await this.redis.zrangebyscore(this.keys.pending, '-inf', Date.now() - olderThanMs, 'LIMIT', 0, limit);
    await this.enqueueAssets(keys.map((k) => [k, parseAssetKey(k)] as const), 0);
    return keys.length;
  }

  /**
   * Moves the asset's dirty dates to its claimed set under `claimId`, with a lease of
   * `claimLeaseMs`, under the asset's lock (the worker's AssetLocks key) taken in the same
   * step as `lockId` for `lockMs`; and, in that step, those of up to `more` other assets of
   * its venue that have dirty dates (the longest waiting first), under the same claim and
   * lock ids: one run can roll several assets of a date with one read and one write. A claim
   * of an asset whose lease ran out is taken over first (its dates are claimed again here).
   * Returns the assets and their claimed dates, each with its late-data hint (see the class
   * comment), the asked asset first (its dates may be none); the others each hold dates and
   * their locks (as `lockId`). Null when another job holds the asked asset's lock: then
   * nothing is claimed.
   */
  lockAndClaimMany(a: AssetRef, claimId: string, lockId: string, lockMs: number, more: number): Promise<Array<{ asset: AssetRef; claimed: ClaimedDate[] }> | null>;
  /** With the past-day hold: `{ heldForMs }` when the asset is held (nothing claimed or locked), the ms until it may be claimed. */
  lockAndClaimMany(a: AssetRef, claimId: string, lockId: string, lockMs: number, more: number, hold: PastDayHold | undefined): Promise<Array<{ asset: AssetRef; claimed: ClaimedDate[] }> | { heldForMs: number } | null>;
  async lockAndClaimMany(a: AssetRef, claimId: string, lockId: string, lockMs: number, more: number, hold?: PastDayHold): Promise<Array<{ asset: AssetRef; claimed: ClaimedDate[] }> | { heldForMs: number } | null> {
    const k = assetKey(a);
    const head = this.keys.dirty('').slice(0, -':dirty:'.length);
    const holdArgs = hold && hold.quietMs > 0 ? [hold.closedBefore, Math.ceil(hold.quietMs), Math.ceil(Math.max(0, hold.maxMs))] : ['', 0, 0];
    const res = (await this.redis.eval(LOCK_AND_CLAIM_MANY, 2, this.keys.pending, this.keys.leases, claimId, this.claimLeaseMs, lockMs, head, k, lockId, Math.max(0, more), `${a.venue}|`, Math.max(0, more) * 4, ...holdArgs)) as Array<[string, string[], Array<string | null>, number?]> | null;
    if (res === null) return null;
    const heldForMs = res[0]?.[3];
    if (heldForMs !== undefined) return { heldForMs: Number(heldForMs) };
    return res.map(([key, dates, hints]) => ({ asset: key === k ? a : parseAssetKey(key), claimed: dates.map((date, i) => ({ date, earliestMs: claimedEarliest(hints[i]) })) }));
  }

  /** Extends the claim's lease; false when the claim is gone (its lease ran out and it was taken over). */
  async renewClaim(a: AssetRef, claimId: string): Promise<boolean> {
    const k = assetKey(a);
    return (await this.redis.eval(RENEW, 2, this.keys.claimed(k), this.keys.leases, claimId, k, this.claimLeaseMs)) === 1;
  }

  /**
   * Ends a claim: done, or (failed) back to dirty so that a retry or the sweep takes them
   * again. Dates the claim no longer holds (taken over) are left to their new holder.
   */
  async release(a: AssetRef, dates: readonly string[], failed: boolean, claimId: string): Promise<void> {
    if (dates.length === 0) return;
    const k = assetKey(a);
    await this.redis.eval(RELEASE, 5, ...this.claimKeys(k), claimId, k, failed ? '1' : '0', ...dates);
  }

  /**
   * The sweep's part: claims whose lease ran out go back to dirty and their assets get a
   * job. Claims without a lease (from before leases) get one first. Returns the assets
   * taken over.
   */
  async takeOverExpiredClaims(limit = 1000): Promise<AssetRef[]> {
    // Once per process: claims made since leases exist always have one, and the scan walks
    // the whole key space.
    if (!this.adopted) {
      await this.adoptUnleasedClaims();
      this.adopted = true;
    }
    const expired = (await this.redis.eval(EXPIRED, 1, this.keys.leases, limit)) as string[];
    const taken: AssetRef[] = [];
    for (const k of expired) {
      // Checked again inside the script: the holder may have renewed it meanwhile.
      const n = (await this.redis.eval(TAKE_OVER, 5, ...this.claimKeys(k), k)) as number;
      if (n > 0) {
        const a = parseAssetKey(k);
        taken.push(a);
        await this.enqueueAsset(k, a, 0);
      }
    }
    return taken;
  }

  private async adoptUnleasedClaims(): Promise<void> {
    // What follows this head in a claimed hash's key is its asset key.
    const head = this.keys.claimed('');
    const pattern = `${head.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      for (const key of keys) await this.redis.eval(ADOPT, 2, key, this.keys.leases, key.slice(head.length), this.claimLeaseMs);
    } while (cursor !== '0');
  }

  /**
   * Around each write of the asset's summaries (before and after): readers' copies of them
   * are stale. Returns the new count.
   */
  async bumpVersion(a: AssetRef): Promise<number> {
    // A counter that was lost (Redis restarted without its data) starts again at a random
    // point, not at 1: a remembered count from before must not come round again.
    return Number(await this.redis.eval(BUMP, 1, this.keys.version(assetKey(a)), randomInt(2 ** 47)));
  }

  /** The asset's summaries version now (0 before the first write). */
  async version(a: AssetRef): Promise<number> {
    return Number((await this.redis.get(this.keys.version(assetKey(a)))) ?? 0);
  }

  /** Marks dates dirty and enqueues the asset (the sweep, an outdated engine version); a part without `earliestMs` makes its date's hint unknown. */
  async markDirty(parts: readonly PartitionRef[], delay = 0): Promise<void> {
    if (parts.length === 0) return;
    await this.enqueueAssets(await this.recordDirty(parts), delay);
  }

  /**
   * A replay's end (`booktape replay --wait`): its partitions marked dirty without a hint,
   * so that their next runs close the past days its hinted runs left open.
   */
  async markReplayed(parts: readonly PartitionRef[]): Promise<void> {
    const assets = await this.recordDirty(parts.map((p) => ({ venue: p.venue, market: p.market, asset: p.asset, date: p.date })));
    // Jobs of their own, not deduplicated: an asset's job held by the past-day hold waits
    // delayed until its quiet time, and a deduplicated add would wait behind it. The asset's
    // lock keeps the two from running it at once; the later one finds nothing to claim.
    const jobs = [...assets.values()].map((a) => ({ name: 'asset', data: { kind: 'asset' as const, venue: a.venue, market: a.market, asset: a.asset }, opts: { attempts: 8, backoff: { type: 'exponential' as const, delay: 1000 }, removeOnComplete: true, removeOnFail: 1000 } }));
    if (jobs.length > 0) await this.queue.addBulk(jobs);
  }

  /** How many of these partitions are still dirty or being rolled up. */
  async unsettled(parts: readonly PartitionRef[]): Promise<number> {
    if (parts.length === 0) return 0;
    const pipe = this.redis.pipeline();
    for (const p of parts) {
      const k = assetKey(p);
      pipe.zscore(this.keys.dirty(k), p.date);
      pipe.hexists(this.keys.claimed(k), p.date);
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
    const { oldestPending, ...depth } = await readRollupDepth(this.redis, this.prefix);
    return { ...depth, oldestPendingMs: oldestPending?.since ?? null };
  }

  async close(): Promise<void> {
    // Jobs of notifications still being added get a moment (the sweep covers the rest).
    this.closing = true;
    if (this.addingJobs) await Promise.race([this.addingJobs, new Promise((r) => setTimeout(r, 2000).unref())]);
    await this.queue.close().catch(() => undefined);
    this.redis.disconnect();
  }
}

export type { JobsOptions };
