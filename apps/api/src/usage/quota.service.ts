import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import { RedisScript } from '@booktape/messaging';
import type { RequestLogRepository } from '@booktape/storage';
import type { Plan } from '../billing/plans.ts';
import { UnavailableError, guard } from '../http/errors.ts';
import { periodOf, retryAfterSeconds, type Exceeded, type Period, type PlanLimits } from './limits.ts';

/**
 * Quotas: a monthly request counter and a one-second burst window per user, in Redis.
 *
 * Exactness under concurrency: a request *reserves* before it is handled, in one Lua
 * script (check the monthly count and the burst window, then increment both), so N
 * parallel requests against a remaining quota of Q let exactly Q through. A reservation
 * whose request does not succeed (any non-2xx, a client gone before the status line, or
 * an answer cut before its end) is given back; one that succeeds stays, so the counter
 * equals the successful billable requests of the period. The burst window counts every
 * request let through, failed or not (it protects the service, not the bill), and is not
 * given back.
 *
 * Exactness when Redis answers late or not at all: every open reservation is a field
 * `o:<request id>` = units of the monthly hash, set by the reservation itself. Giving back
 * removes that field and subtracts its units in one script, so it is idempotent: a give-back
 * that timed out is retried until Redis answers (it may have run already: the retry then
 * finds no field and does nothing), and a reservation whose answer never came (a command
 * timeout while the event loop was busy: the request answered 503) is given back the same
 * way, whether or not Redis ran it. A success removes its field and keeps the units.
 *
 * Keys (`{user}` is a hash tag, so both keys of a user share a cluster slot):
 *   <prefix>quota:{<user>}:m:<YYYY-MM>  hash n = count, o:<id> = units of each
 *                                       open reservation; expires a week after the month
 *   <prefix>quota:{<user>}:s            hash s = second (Redis clock), n = requests in it
 *
 * The reservation script never creates the monthly key. When it is missing (a new month,
 * a Redis restart or flush, an eviction) the counter is rebuilt from the request log in
 * ClickHouse: successful billable requests of the period (by request id), plus what this
 * process holds that the log does not show yet (rows not flushed, requests still being
 * handled, whose `o:` fields the rebuild writes so they can still be given back), and
 * written with "set if absent" so concurrent rebuilds, here or in another process, cannot
 * add up. A reservation counted in an older counter has no field in the new one, so giving
 * it back there changes nothing.
 *
 * Limit: requests that another API process has not flushed to the log yet (at most its
 * REQUEST_LOG_FLUSH_MS) or is still handling when Redis loses the counter are missing
 * from a rebuild made elsewhere.
 */

const RESERVE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local t = redis.call('TIME')
local sec = t[1]
local used = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local monthly = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local units = tonumber(ARGV[3])
if monthly > 0 and used + units > monthly then return {1, used} end
local n = 0
if redis.call('HGET', KEYS[2], 's') == sec then n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0') end
if burst > 0 and n >= burst then return {2, n, tonumber(sec)} end
redis.call('HINCRBY', KEYS[1], 'n', units)
redis.call('HSET', KEYS[1], 'o:' .. ARGV[4], units)
redis.call('HSET', KEYS[2], 's', sec, 'n', n + 1)
redis.call('EXPIRE', KEYS[2], 2)
-- What the RateLimit fields of the answer need: the month's units and this second's requests, this one included.
return {0, used + units, n + 1}
`;

// Where a user stands, counting nothing: the month's units (-1: no counter) and this second's requests.
const PEEK = `
local t = redis.call('TIME')
local n = 0
if redis.call('HGET', KEYS[2], 's') == t[1] then n = tonumber(redis.call('HGET', KEYS[2], 'n') or '0') end
return {tonumber(redis.call('HGET', KEYS[1], 'n') or '-1'), n}
`;

/** Gives an open reservation back, once: without its field (given back already, or never counted here) nothing changes. */
const RELEASE = `
local u = redis.call('HGET', KEYS[1], 'o:' .. ARGV[1])
if not u then return -1 end
redis.call('HDEL', KEYS[1], 'o:' .. ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'n', -tonumber(u))
`;

/** ARGV: count, expiry (ms), then request id and units of each open reservation counted in. */
const REBUILD = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'n', ARGV[1])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], 'o:' .. ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`;

/** A give-back Redis did not confirm is retried this long, backing off up to RELEASE_RETRY_MAX_MS. */
const RELEASE_RETRY_FOR_MS = 15 * 60_000;
const RELEASE_RETRY_MAX_MS = 5_000;

/** Monthly keys outlive their month a little (a late release, an operator looking). */
const KEEP_AFTER_PERIOD_MS = 7 * 86_400_000;

const reserveScript = new RedisScript(RESERVE);
const releaseScript = new RedisScript(RELEASE);
const rebuildScript = new RedisScript(REBUILD);
const peekScript = new RedisScript(PEEK);

/** A reserved request, until it is settled. */
export interface Reservation {
  requestId: string;
  userId: string;
  period: Period;
  /** What it counts: 1 for a call, the days covered for a bulk export. */
  units: number;
  state: 'open' | 'succeeded' | 'failed';
}

/** `used`: the month's units with this request; `secondUsed`: requests let through in this second, this one included. */
export type ReserveResult = { ok: true; reservation: Reservation; used: number; secondUsed: number } | { ok: false; exceeded: Exceeded };

/** What this process knows that the request log in ClickHouse may not show yet. */
export interface PendingRequests {
  /** Successful billable requests of `userId` from `fromMs` on, not yet acknowledged by ClickHouse: id → units. */
  pendingSuccess(userId: string, fromMs: number): Map<string, number>;
}

export interface QuotaServiceDeps {
  redis: Redis;
  repo: Pick<RequestLogRepository, 'countBillable'>;
  log: Logger;
  redisKeyPrefix: string;
  limits: PlanLimits;
  pending: PendingRequests;
}

export class QuotaService {
  /** Open reservations of this process, by user and period. */
  private readonly open = new Map<string, Set<Reservation>>();
  /** Rebuilds in progress in this process (one per user and period). */
  private readonly rebuilding = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly deps: QuotaServiceDeps) {}

  get limits(): PlanLimits {
    return this.deps.limits;
  }

  /** A Redis call that fails at once while Redis is known down (the caller answers 503). */
  private redisCall<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
    const status = this.deps.redis.status;
    if (status === 'reconnecting' || status === 'end' || status === 'close') return Promise.reject(new UnavailableError('Redis'));
    return guard('Redis', () => fn(this.deps.redis));
  }

  monthlyKey(userId: string, period: Period): string {
    return `${this.deps.redisKeyPrefix}quota:{${userId}}:m:${period.id}`;
  }

  private burstKey(userId: string): string {
    return `${this.deps.redisKeyPrefix}quota:{${userId}}:s`;
  }

  private openKey(userId: string, period: Period): string {
    return `${userId}\u0000${period.id}`;
  }

  /**
   * Reserves one request of `userId` on `plan` worth `units` of the monthly quota (the burst
   * window counts it once), or says which limit refuses it.
   */
  async reserve(userId: string, plan: Plan, requestId: string, units = 1, now = Date.now()): Promise<ReserveResult> {
    const period = periodOf(now);
    const limit = this.deps.limits[plan];
    const keys = [this.monthlyKey(userId, period), this.burstKey(userId)];
    for (let attempt = 0; attempt < 3; attempt++) {
      let r: [number, number?, number?];
      let sent = false;
      try {
        r = (await this.redisCall((redis) => {
          sent = true;
          return reserveScript.run(redis, keys, [limit.monthly ?? 0, limit.perSecond ?? 0, units, requestId]);
        })) as typeof r;
      } catch (e) {
        // Sent but no answer (a timeout, a dropped connection): Redis may have counted it
        // all the same. The request is not served, so whatever was counted is given back.
        // (Refused before sending, with Redis known down, nothing can have been counted.)
        if (sent) this.giveBack({ requestId, userId, period, units, state: 'failed' });
        throw e;
      }
      const kind = Number(r[0]);
      if (kind === -1) {
        await this.ensureCounter(userId, period);
        continue;
      }
      if (kind === 1) {
        const used = Number(r[1]);
        return {
          ok: false,
          exceeded: { limit: 'monthly', plan, allowed: limit.monthly!, used, requested: units, window: period.id, resetsAtMs: period.endMs, retryAfterS: retryAfterSeconds(period.endMs, now) },
        };
      }
      if (kind === 2) {
        const sec = Number(r[2]);
        return {
          ok: false,
          exceeded: { limit: 'per_second', plan, allowed: limit.perSecond!, used: Number(r[1]), requested: 1, window: new Date(sec * 1000).toISOString(), resetsAtMs: (sec + 1) * 1000, retryAfterS: 1 },
        };
      }
      const reservation: Reservation = { requestId, userId, period, units, state: 'open' };
      const k = this.openKey(userId, period);
      let set = this.open.get(k);
      if (!set) this.open.set(k, (set = new Set()));
      set.add(reservation);
      return { ok: true, reservation, used: Number(r[1]), secondUsed: Number(r[2] ?? 1) };
    }
    // The counter vanished again right after each rebuild: Redis is flushing or evicting.
    throw new UnavailableError('the quota counter (Redis keeps losing it)');
  }

  /**
   * Settles a reservation: a success keeps it (the caller has put the request into the
   * log before calling this, in the same tick), anything else gives it back.
   */
  settle(res: Reservation, succeeded: boolean): void {
    if (res.state !== 'open') return;
    res.state = succeeded ? 'succeeded' : 'failed';
    const k = this.openKey(res.userId, res.period);
    const set = this.open.get(k);
    set?.delete(res);
    if (set?.size === 0) this.open.delete(k);
    if (succeeded) this.keep(res);
    else this.giveBack(res);
  }

  /** A success: its units stay counted, its open-reservation field goes (a failure only leaves the field until the key expires). */
  private keep(res: Reservation): void {
    this.redisCall((redis) => redis.hdel(this.monthlyKey(res.userId, res.period), `o:${res.requestId}`)).catch((err: unknown) =>
      this.deps.log.debug({ err, user: res.userId }, 'clearing a kept quota reservation failed'),
    );
  }

  /**
   * Gives a reservation back, retrying until Redis confirms it (the script is idempotent):
   * a Redis that timed out during a stall must not leave a failed request billed.
   */
  private giveBack(res: Reservation, attempt = 0, firstAt = Date.now()): void {
    if (this.closed) return;
    this.redisCall((redis) => releaseScript.run(redis, [this.monthlyKey(res.userId, res.period)], [res.requestId])).catch((err: unknown) => {
      if (this.closed) return;
      if (Date.now() - firstAt > RELEASE_RETRY_FOR_MS) {
        // The count stays too high by these units until the month ends.
        this.deps.log.warn({ err, user: res.userId, units: res.units }, 'giving back a quota reservation failed');
        return;
      }
      const delay = Math.min(RELEASE_RETRY_MAX_MS, 100 * 2 ** attempt);
      setTimeout(() => this.giveBack(res, attempt + 1, firstAt), delay).unref();
    });
  }

  /** Stops retrying give-backs (the app is closing and its Redis client goes). */
  close(): void {
    this.closed = true;
  }

  /** Successful billable requests of `userId` this period (rebuilding the counter when it is missing). */
  async used(userId: string, now = Date.now()): Promise<{ used: number; period: Period }> {
    const period = periodOf(now);
    const key = this.monthlyKey(userId, period);
    for (let attempt = 0; attempt < 3; attempt++) {
      const n = await this.redisCall((r) => r.hget(key, 'n'));
      if (n !== null) return { used: Math.max(0, Number(n)), period };
      await this.ensureCounter(userId, period);
    }
    throw new UnavailableError('the quota counter (Redis keeps losing it)');
  }

  /**
   * Where `userId` stands now, counting nothing (the RateLimit headers of answers that hold
   * no reservation): units used this period (the counter rebuilt when missing) and requests
   * in the current one-second window.
   */
  async peek(userId: string, now = Date.now()): Promise<{ monthlyUsed: number; secondUsed: number; period: Period }> {
    const period = periodOf(now);
    const keys = [this.monthlyKey(userId, period), this.burstKey(userId)];
    for (let attempt = 0; attempt < 3; attempt++) {
      const [m, n] = (await this.redisCall((r) => peekScript.run(r, keys, []))) as [number, number];
      if (Number(m) >= 0) return { monthlyUsed: Number(m), secondUsed: Number(n), period };
      await this.ensureCounter(userId, period);
    }
    throw new UnavailableError('the quota counter (Redis keeps losing it)');
  }

  /** Rebuilds the counter of (user, period) once per process at a time. */
  private ensureCounter(userId: string, period: Period): Promise<void> {
    const k = this.openKey(userId, period);
    let p = this.rebuilding.get(k);
    if (!p) {
      p = this.rebuild(userId, period).finally(() => this.rebuilding.delete(k));
      this.rebuilding.set(k, p);
    }
    return p;
  }

  private async rebuild(userId: string, period: Period): Promise<void> {
    // One synchronous snapshot of what this process holds: rows not yet in ClickHouse and
    // requests still being handled. A request moves from the second to the first in one
    // tick, so it is seen exactly once; ids the log already has are subtracted below.
    const openNow = [...(this.open.get(this.openKey(userId, period)) ?? [])];
    const held = this.deps.pending.pendingSuccess(userId, period.startMs);
    for (const r of openNow) held.set(r.requestId, r.units);
    const idList = [...held.keys()];
    const { stored, overlap } = await guard('ClickHouse', () => this.deps.repo.countBillable(userId, period.startMs, idList));
    let heldUnits = 0;
    for (const u of held.values()) heldUnits += u;
    const count = stored + heldUnits - overlap;
    const fields = openNow.flatMap((r) => [r.requestId, r.units]);
    const won = await this.redisCall((r) => rebuildScript.run(r, [this.monthlyKey(userId, period)], [count, period.endMs + KEEP_AFTER_PERIOD_MS, ...fields]));
    if (Number(won) !== 1) return; // someone else rebuilt it first: theirs stands
    this.deps.log.info({ user: userId, period: period.id, count }, 'quota counter rebuilt from the request log');
    // The open reservations were counted in, each with its field: one that was settled
    // meanwhile is settled again against this counter (its earlier settlement found no field).
    for (const r of openNow) {
      if (r.state === 'failed') this.giveBack(r);
      else if (r.state === 'succeeded') this.keep(r);
    }
  }
}
