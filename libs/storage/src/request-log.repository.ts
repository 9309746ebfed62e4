import { Readable } from 'node:stream';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import { isoMsSql } from './market-data.repository.ts';
import { chTime, queryRows } from './rows.ts';

/** One request to a billable endpoint (migration 007). */
export interface RequestLogRow {
  /** Request start, Unix ms. */
  ts: number;
  /** Unique per request (UUID). */
  request_id: string;
  user_id: string;
  key_id: string;
  /** The plan in force when the request was made. */
  plan: string;
  /** The route as called, without the /api/v1 prefix (`/exchange-a/market/data`). */
  endpoint: string;
  /** `exchange-a`, `exchange-b`, or empty. */
  venue: string;
  /** Normalised condition id or ticker; empty for lists and failed requests. */
  market: string;
  /** Normalised query parameters, JSON. */
  params: string;
  status: number;
  /** 1 when the request counts against the quota if it succeeded (historical-data routes). */
  billable: 0 | 1;
  latency_ms: number;
  bytes: number;
  /** Quota units the request counts as when it succeeded: 1, or the days of a bulk export (default 1). */
  units?: number;
}

/** Inclusive status range; null = every status. */
export interface StatusRange {
  min: number;
  max: number;
}

export interface RequestCountFilter {
  fromMs: number;
  toMs: number;
  endpoint?: string | undefined;
  status?: StatusRange | undefined;
}

export interface RequestCounts {
  requests: number;
  successful: number;
  rate_limited: number;
  failed: number;
  bytes: number;
}

export interface RequestBucket extends RequestCounts {
  /** Bucket start, Unix ms. */
  start: number;
}

/** A logged request as its user sees it in the history. */
export interface RecentRequest extends Omit<RequestLogRow, 'user_id' | 'billable'> {
  time: string; // ISO 8601, ms
}

export interface LatencySummary {
  p50: number | null;
  p95: number | null;
}

export interface ServiceStats extends RequestCounts {
  distinct_users: number;
  distinct_keys: number;
  latency_ms: LatencySummary;
}

export interface EndpointStats extends RequestCounts {
  endpoint: string;
  latency_ms: LatencySummary;
}

export interface PopularMarket {
  venue: string;
  market: string;
  requests: number;
  distinct_users: number;
  last_requested_at: string;
}

const SUCCESS = 'status BETWEEN 200 AND 299';
const COUNTS = `count() AS requests, countIf(${SUCCESS}) AS successful, countIf(status = 429) AS rate_limited,
  countIf(NOT (${SUCCESS}) AND status != 429) AS failed, sum(bytes) AS bytes`;
const WINDOW = `ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')`;
// Approximate quantiles (reservoir sampling): exact enough for a dashboard, bounded memory.
const LATENCY = `quantiles(0.5, 0.95)(latency_ms) AS q`;

type Num = number | string;
interface StoredCounts {
  requests: Num;
  successful: Num;
  rate_limited: Num;
  failed: Num;
  bytes: Num;
}

function counts(r: StoredCounts | undefined): RequestCounts {
  return {
    requests: Number(r?.requests ?? 0),
    successful: Number(r?.successful ?? 0),
    rate_limited: Number(r?.rate_limited ?? 0),
    failed: Number(r?.failed ?? 0),
    bytes: Number(r?.bytes ?? 0),
  };
}

function latency(q: Num[] | undefined, n: number): LatencySummary {
  if (!q || n === 0) return { p50: null, p95: null };
  const r = (v: Num | undefined) => (v === undefined || !Number.isFinite(Number(v)) ? null : Math.round(Number(v) * 100) / 100);
  return { p50: r(q[0]), p95: r(q[1]) };
}

/** request_log (migration 007). Every value is bound. */
export class RequestLogRepository {
  constructor(private readonly ch: ClickHouse) {}

  private get table(): string {
    return this.ch.table('request_log');
  }

  /**
   * Stores a batch. `token` makes a retry of the same batch idempotent (the insert is
   * dropped as a duplicate); it goes into the statement's SETTINGS clause, never into
   * session settings (see clickhouse.ts).
   */
  async insert(rows: readonly RequestLogRow[], token: string): Promise<void> {
    if (rows.length === 0) return;
    const lines = rows.map((r) => JSON.stringify({ ...r, ts: chTime(r.ts), units: r.units ?? 1 })).join('\n') + '\n';
    const result = await this.ch.client.exec({
      query: `INSERT INTO ${this.table} (ts, request_id, user_id, key_id, plan, endpoint, venue, market, params, status, billable, latency_ms, bytes, units)
        SETTINGS insert_deduplication_token = ${sqlString(token)}, async_insert = 0
        FORMAT JSONEachRow`,
      values: Readable.from([lines]),
    });
    result.stream.resume();
  }

  /**
   * Successful billable requests of a user from `fromMs` on, in quota units (a request
   * counted once by its id, as its `units`), and the units of those of `ids` among them (so
   * a caller adding requests it still holds in memory counts none twice).
   */
  async countBillable(userId: string, fromMs: number, ids: readonly string[]): Promise<{ stored: number; overlap: number }> {
    const [r] = await queryRows<{ stored: Num; overlap: Num }>(
      this.ch,
      `SELECT sum(u) AS stored, sumIf(u, has({ids:Array(String)}, request_id)) AS overlap
       FROM (SELECT request_id, any(units) AS u FROM ${this.table}
             WHERE user_id = {user:String} AND ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND billable = 1 AND ${SUCCESS}
             GROUP BY request_id)`,
      { user: userId, from: fromMs, ids },
    );
    return { stored: Number(r?.stored ?? 0), overlap: Number(r?.overlap ?? 0) };
  }

  private filterSql(f: RequestCountFilter): { sql: string; params: Record<string, unknown> } {
    const parts = [WINDOW];
    const params: Record<string, unknown> = { from: f.fromMs, to: f.toMs };
    if (f.endpoint !== undefined) {
      parts.push('endpoint = {endpoint:String}');
      params.endpoint = f.endpoint;
    }
    if (f.status !== undefined) {
      parts.push('status BETWEEN {status_min:UInt16} AND {status_max:UInt16}');
      params.status_min = f.status.min;
      params.status_max = f.status.max;
    }
    return { sql: parts.join(' AND '), params };
  }

  /** A user's requests matching the filter, by outcome. */
  async count(userId: string, f: RequestCountFilter): Promise<RequestCounts> {
    const w = this.filterSql(f);
    const [r] = await queryRows<StoredCounts>(this.ch, `SELECT ${COUNTS} FROM ${this.table} WHERE user_id = {user:String} AND ${w.sql}`, { user: userId, ...w.params });
    return counts(r);
  }

  /** A user's requests per hour or day (UTC) in the window; buckets without requests are absent. */
  async timeframe(userId: string, f: RequestCountFilter, interval: 'hour' | 'day'): Promise<RequestBucket[]> {
    const w = this.filterSql(f);
    const bucket = interval === 'hour' ? 'toStartOfHour(ts)' : "toStartOfDay(ts, 'UTC')";
    const rows = await queryRows<StoredCounts & { start: Num }>(
      this.ch,
      `SELECT toUnixTimestamp(${bucket}) * 1000 AS start, ${COUNTS}
       FROM ${this.table} WHERE user_id = {user:String} AND ${w.sql}
       GROUP BY start ORDER BY start`,
      { user: userId, ...w.params },
    );
    return rows.map((r) => ({ start: Number(r.start), ...counts(r) }));
  }

  /** A user's newest requests first, after the position of a previous page (keyset). */
  async recent(userId: string, limit: number, before: { ts: number; requestId: string } | null): Promise<RecentRequest[]> {
    // ts_ms, not ts: an alias named like the column would replace it in WHERE and ORDER BY.
    const rows = await queryRows<Omit<RecentRequest, 'ts'> & { ts_ms: Num; status: Num; bytes: Num; latency_ms: Num }>(
      this.ch,
      `SELECT request_id, ${isoMsSql('ts')} AS time, toUnixTimestamp64Milli(ts) AS ts_ms, key_id, toString(plan) AS plan,
              toString(endpoint) AS endpoint, toString(venue) AS venue, market, params, status, latency_ms, bytes
       FROM ${this.table}
       WHERE user_id = {user:String}
         ${before ? "AND (ts, request_id) < (fromUnixTimestamp64Milli({before_ts:Int64}, 'UTC'), {before_id:String})" : ''}
       ORDER BY ts DESC, request_id DESC
       LIMIT {limit:UInt32}`,
      { user: userId, limit, ...(before ? { before_ts: before.ts, before_id: before.requestId } : {}) },
    );
    return rows.map(({ ts_ms, ...r }) => ({ ...r, ts: Number(ts_ms), status: Number(r.status), bytes: Number(r.bytes), latency_ms: Math.round(Number(r.latency_ms) * 100) / 100 }));
  }

  /** Every request since `fromMs`, for the counts of today and of the period. */
  async countSince(fromMs: number): Promise<number> {
    const [r] = await queryRows<{ n: Num }>(this.ch, `SELECT count() AS n FROM ${this.table} WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')`, { from: fromMs });
    return Number(r?.n ?? 0);
  }

  /** Service-wide figures of a window. */
  async stats(fromMs: number, toMs: number): Promise<ServiceStats> {
    const [r] = await queryRows<StoredCounts & { users: Num; keys: Num; q: Num[] }>(
      this.ch,
      `SELECT ${COUNTS}, uniqExact(user_id) AS users, uniqExact(key_id) AS keys, ${LATENCY} FROM ${this.table} WHERE ${WINDOW}`,
      { from: fromMs, to: toMs },
    );
    const c = counts(r);
    return { ...c, distinct_users: Number(r?.users ?? 0), distinct_keys: Number(r?.keys ?? 0), latency_ms: latency(r?.q, c.requests) };
  }

  /** Per-endpoint figures of a window, busiest first. */
  async endpointStats(fromMs: number, toMs: number): Promise<EndpointStats[]> {
    const rows = await queryRows<StoredCounts & { endpoint: string; q: Num[] }>(
      this.ch,
      `SELECT toString(endpoint) AS endpoint, ${COUNTS}, ${LATENCY} FROM ${this.table} WHERE ${WINDOW}
       GROUP BY endpoint ORDER BY requests DESC, endpoint`,
      { from: fromMs, to: toMs },
    );
    return rows.map((r) => {
      const c = counts(r);
      return { endpoint: r.endpoint, ...c, latency_ms: latency(r.q, c.requests) };
    });
  }

  /** Markets asked for most by successful requests in a window. */
  async popularMarkets(fromMs: number, toMs: number, venue: string | undefined, limit: number): Promise<PopularMarket[]> {
    const rows = await queryRows<{ venue: string; market: string; requests: Num; users: Num; last: string }>(
      this.ch,
      `SELECT toString(venue) AS venue, market, count() AS requests, uniqExact(user_id) AS users, ${isoMsSql('max(ts)')} AS last
       FROM ${this.table}
       WHERE ${WINDOW} AND ${SUCCESS} AND market != '' ${venue ? 'AND venue = {venue:String}' : ''}
       GROUP BY venue, market
       ORDER BY requests DESC, users DESC, venue, market
       LIMIT {limit:UInt32}`,
      { from: fromMs, to: toMs, limit, ...(venue ? { venue } : {}) },
    );
    return rows.map((r) => ({ venue: r.venue, market: r.market, requests: Number(r.requests), distinct_users: Number(r.users), last_requested_at: r.last }));
  }
}
