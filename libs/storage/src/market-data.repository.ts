import { VENUES, utcDate, type Venue } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { SERVED_SOURCE_SQL } from './raw-events.repository.ts';
import { storedRecordSql } from './stored-record.ts';
import { VENUE_STORAGE } from './venue-storage.ts';
import { leaseStreams, type ByteStream, type StreamQuery } from './stream.ts';

/**
 * Reads for the API: raw records of one market (by UTC date with offset paging, or by time
 * range with keyset paging), and availability / market lists from the `market_dates`
 * summary (migration 002).
 *
 * Serving order within a market is (event_ts, ingest_seq, dedup_id) and then the rest of
 * the table's row identity (A: asset_id, event_type; B: record_type), so the order is
 * total: after FINAL no two rows share that key, and keyset paging can neither skip nor
 * repeat a row, however many rows share one millisecond. The ORDER BY starts with the
 * table's own key prefix (market, event_date, event_ts), which lets the engine read in
 * order and only finish-sort rows of equal event_ts, and read payloads lazily, for the
 * rows that survive LIMIT.
 *
 * Raw rows are streamed as `TabSeparatedRaw` lines `<key>\t<record>\n`:
 *   key    = JSON array of strings: event_ts in ms, ingest_seq, dedup_id, tie-break columns
 *   record = the served record: the stored payload plus `received_at` (ISO 8601, ms) and
 *            `worker_id` (integer), as one JSON object; with `include.source`, then
 *            `source` (a JSON string, SERVED_SOURCE_SQL), the last field.
 * Neither part can contain a raw tab or newline (both are JSON text; payloads are written
 * by JSON.stringify), so the format needs no escaping.
 */

/** A row's position in serving order: [event_ts ms, ingest_seq, dedup_id, ...tie-breaks]. */
export type RawKey = string[];

interface VenueColumns {
  venue: Venue;
  table: string;
  market: string;
  tieBreak: string[];
}

const columnsOf = (v: Venue): VenueColumns => ({ venue: v, table: VENUE_STORAGE[v].table, market: VENUE_STORAGE[v].market, tieBreak: [...VENUE_STORAGE[v].ties] });
const COLUMNS = Object.fromEntries(VENUES.map((v) => [v, columnsOf(v)])) as Record<Venue, VenueColumns>;

/** Number of fields in a venue's RawKey. */
export function rawKeyLength(venue: Venue): number {
  return 3 + COLUMNS[venue].tieBreak.length;
}

/**
 * ISO 8601 UTC with milliseconds, built by the engine: a DateTime64(3, 'UTC') column prints
 * as 'YYYY-MM-DD hh:mm:ss.mmm' (the cheapest formatting there is), made ISO by two edits.
 * Portable to ClickHouse 24.8.
 */
export function isoMsSql(col: string): string {
  return `concat(replaceOne(toString(${col}), ' ', 'T'), 'Z')`;
}

/** Fields a raw read adds to every record on request (the API's `include`). */
export interface RawInclude {
  /** `source`: where the record came from (docs/rules/imports.md#provenance). */
  source?: boolean;
  /**
   * `record`: the stored record whole, as JSON text (stored-record.ts), for an import to
   * rebuild it exactly (docs/rules/imports.md#booktapes-own-exports). After `source`.
   */
  record?: boolean;
}

function lineSql(v: VenueColumns, include: RawInclude): string {
  const key = keySql(v);
  // The served record (VENUE_STORAGE's `record`) is a JSON object: drop its closing brace and
  // append the lineage fields.
  const open = `if(length((${VENUE_STORAGE[v.venue].record}) AS served_record) <= 2, '{', concat(substring(served_record, 1, length(served_record) - 1), ','))`;
  // toJSONString escapes whatever a file name holds (quotes, tabs, newlines), so the line
  // keeps no raw tab or newline. Without `include` the SQL, and so every byte, is as before.
  const source = include.source ? `, ',"source":', toJSONString(${SERVED_SOURCE_SQL})` : '';
  const stored = include.record ? `, ',"record":', toJSONString(${storedRecordSql(v.venue)})` : '';
  const record = `concat(${open}, '"received_at":"', ${isoMsSql('received_at')}, '","worker_id":', toString(worker_id)${source}${stored}, '}')`;
  return `concat(${key}, '\\t', ${record})`;
}

/** Records of one market with {lower} <= event_ts <= {end} (ms), dates bounding the scan. */
function rangeWhereSql(v: VenueColumns): string {
  return `WHERE ${v.market} = {market:String}
    AND event_date >= {first_date:Date} AND event_date <= {last_date:Date}
    AND event_ts >= fromUnixTimestamp64Milli({lower:Int64}, 'UTC')
    AND event_ts <= fromUnixTimestamp64Milli({end:Int64}, 'UTC')`;
}

function rangeParams(market: string, lowerMs: number, endMs: number): Record<string, unknown> {
  return { market, lower: lowerMs, end: endMs, first_date: utcDate(lowerMs), last_date: utcDate(endMs) };
}

function orderSql(v: VenueColumns): string {
  // The market is fixed by WHERE, so it is left out (comparing an equal 66-byte id on every
  // comparison costs); event_date stays: it keeps the ORDER BY a prefix of the table's key
  // for ranges that span dates, and it is a function of event_ts, so it changes no order.
  return `ORDER BY event_date, event_ts, ingest_seq, dedup_id${v.tieBreak.map((c) => `, ${c}`).join('')}`;
}

/**
 * A page is read as a chain of sub-reads of at most SUB_READ_ROWS rows, each continuing
 * after the last key of the one before. An ordered FINAL read holds one block per part of
 * the table for every column it reads, so its memory grows with the parts and with the
 * row count it carries; a sub-read of 10,001 rows reads its payloads lazily, for the rows
 * that survive LIMIT only (the embedded engine's lazy materialisation, allowed up to that
 * limit), and a 100,000-record page costs no more memory than a 10,000-record one. 10,001:
 * a default range page plus the row that tells whether there is a next page. Each sub-read
 * is read whole off the event loop (StreamQuery.whole): a few MB at most.
 */
export const SUB_READ_ROWS = 10_001;

/** One thread per read: an ordered FINAL read of one market is one merge stream anyway. */
function streamSettings(ch: ClickHouse): string {
  // Version-specific settings only for the embedded engine, whose version ships with the
  // package (a 24.8 server knows no lazy materialisation and would refuse the setting).
  return ch.mode === 'embedded'
    ? `SETTINGS max_threads = 1, query_plan_max_limit_for_lazy_materialization = ${SUB_READ_ROWS}`
    : 'SETTINGS max_threads = 1';
}

/**
 * Follows raw-row lines through a stream: how many complete rows went by and the key of
 * the last one (so that the next sub-read can continue after it). Reads each chunk before
 * it is handed on (the consumer may rewrite it).
 */
class RowTracker {
  rows = 0;
  private partial: Buffer | null = null;
  private last: Buffer | null = null;

  see(chunk: Buffer): void {
    const lastNl = chunk.lastIndexOf(10);
    if (lastNl === -1) {
      this.partial = this.partial ? Buffer.concat([this.partial, chunk]) : Buffer.from(chunk);
      return;
    }
    for (let i = chunk.indexOf(10); i !== -1 && i <= lastNl; i = chunk.indexOf(10, i + 1)) this.rows++;
    const prevNl = lastNl === 0 ? -1 : chunk.lastIndexOf(10, lastNl - 1);
    const line = prevNl >= 0 ? chunk.subarray(prevNl + 1, lastNl) : this.partial ? Buffer.concat([this.partial, chunk.subarray(0, lastNl)]) : chunk.subarray(0, lastNl);
    const tab = line.indexOf(9);
    this.last = Buffer.from(tab === -1 ? line : line.subarray(0, tab));
    this.partial = lastNl + 1 < chunk.length ? Buffer.from(chunk.subarray(lastNl + 1)) : null;
  }

  lastKey(): RawKey | null {
    if (!this.last) return null;
    const key = JSON.parse(this.last.toString('utf8')) as unknown;
    if (!Array.isArray(key) || !key.every((k) => typeof k === 'string')) throw new Error('malformed raw row key');
    return key as RawKey;
  }
}

/** `AND (key) > (after)` with the key's values bound, or nothing without a key. */
function afterSql(venue: Venue, after: RawKey | null, op: '>' | '<=' = '>', name = 'after'): { sql: string; params: Record<string, unknown> } {
  if (!after) return { sql: '', params: {} };
  const v = COLUMNS[venue];
  const [ts, seq, id, ...ties] = after as [string, string, string, ...string[]];
  const params: Record<string, unknown> = { [`${name}_ts`]: Number(ts), [`${name}_seq`]: seq, [`${name}_id`]: id };
  ties.forEach((t, i) => (params[`${name}_t${i}`] = t));
  const cols = ['event_ts', 'ingest_seq', 'dedup_id', ...v.tieBreak].join(', ');
  const vals = [`fromUnixTimestamp64Milli({${name}_ts:Int64}, 'UTC')`, `{${name}_seq:UInt64}`, `{${name}_id:String}`, ...ties.map((_, i) => `{${name}_t${i}:String}`)].join(', ');
  return { sql: `AND (${cols}) ${op} (${vals})`, params };
}

function keySql(v: VenueColumns): string {
  return `toJSONString([toString(toUnixTimestamp64Milli(event_ts)), toString(ingest_seq), dedup_id${v.tieBreak.map((c) => `, toString(${c})`).join('')}])`;
}

export interface AvailabilityRow {
  dateCount: number;
  firstDate: string | null;
  lastDate: string | null;
}

export interface MarketListRow {
  total: number;
  markets: string[];
}

export class MarketDataRepository {
  constructor(
    private readonly ch: ClickHouse,
    private readonly opts: {
      maxStreamSessions?: number;
      /** Stream sessions one owner (an API key) may hold at once; default defaultSessionsPerOwner. */
      maxStreamSessionsPerOwner?: number;
      /** tests: smaller sub-reads */ subReadRows?: number;
    } = {},
  ) {}

  /** Deduplicated number of records of one market on one UTC date. */
  async countByDate(venue: Venue, market: string, date: string): Promise<number> {
    const v = COLUMNS[venue];
    const rs = await this.ch.client.query({
      query: `SELECT toString(count()) AS n FROM ${this.ch.table(v.table)} FINAL
        WHERE ${v.market} = {market:String} AND event_date = {date:Date}`,
      query_params: { market, date },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string }>();
    return Number(row?.n ?? 0);
  }

  /**
   * Records `offset`…`offset+limit-1` of one market's UTC date, as raw-row lines. With
   * `after` (the key of record `offset-1`, known from the page before) the read starts
   * right after it instead of skipping `offset` records.
   */
  streamByDate(venue: Venue, market: string, date: string, offset: number, limit: number, after: RawKey | null = null, signal?: AbortSignal, owner?: string, include: RawInclude = {}): ByteStream {
    const v = COLUMNS[venue];
    return this.chained(venue, limit, after, (from, n) => {
      const k = afterSql(venue, from);
      return {
        // Skipping by offset happens only without a key to continue from.
        query: `SELECT ${lineSql(v, include)} FROM ${this.ch.table(v.table)} FINAL
          WHERE ${v.market} = {market:String} AND event_date = {date:Date}
            ${from ? `AND event_ts >= fromUnixTimestamp64Milli({after_ts:Int64}, 'UTC') ${k.sql}` : ''}
          ${orderSql(v)}
          LIMIT {limit:UInt32} OFFSET {offset:UInt64}
          ${streamSettings(this.ch)}`,
        query_params: { market, date, limit: n, offset: from ? 0 : offset, ...k.params },
        format: 'TabSeparatedRaw',
        whole: true,
        ...(signal ? { signal } : {}),
      };
    }, owner);
  }

  /**
   * Up to `limit` records of one market with startMs <= event_ts <= endMs, strictly after
   * `after` in serving order (from the start when null), as raw-row lines. With `upTo`, only
   * records up to and including that key.
   */
  streamByRange(
    venue: Venue,
    market: string,
    startMs: number,
    endMs: number,
    after: RawKey | null,
    limit: number,
    signal?: AbortSignal,
    upTo: RawKey | null = null,
    owner?: string,
    include: RawInclude = {},
  ): ByteStream {
    const v = COLUMNS[venue];
    const bound = afterSql(venue, upTo, '<=', 'upto');
    // Nothing after `upTo` is read: its time bounds the scan (and the dates it prunes) too.
    const lastMs = upTo ? Math.min(endMs, Number(upTo[0])) : endMs;
    return this.chained(venue, limit, after, (from, n) => {
      const k = afterSql(venue, from);
      const lowerMs = from ? Math.max(startMs, Number(from[0])) : startMs;
      return {
        query: `SELECT ${lineSql(v, include)} FROM ${this.ch.table(v.table)} FINAL
          ${rangeWhereSql(v)}
            ${k.sql} ${bound.sql}
          ${orderSql(v)}
          LIMIT {limit:UInt32}
          ${streamSettings(this.ch)}`,
        query_params: { ...rangeParams(market, lowerMs, lastMs), limit: n, ...k.params, ...bound.params },
        format: 'TabSeparatedRaw',
        whole: true,
        ...(signal ? { signal } : {}),
      };
    }, owner);
  }

  /**
   * Where a range page of `limit` records after `after` ends, read before the page itself
   * (for answers whose next-page link goes in a header): the key of its last record, null
   * when fewer than `limit` records remain, and whether any record follows it.
   */
  async rangePageEnd(venue: Venue, market: string, startMs: number, endMs: number, after: RawKey | null, limit: number): Promise<{ last: RawKey | null; more: boolean }> {
    const v = COLUMNS[venue];
    const k = afterSql(venue, after);
    const lowerMs = after ? Math.max(startMs, Number(after[0])) : startMs;
    const rs = await this.ch.client.query({
      query: `SELECT ${keySql(v)} AS k FROM ${this.ch.table(v.table)} FINAL
        ${rangeWhereSql(v)}
          ${k.sql}
        ${orderSql(v)}
        LIMIT 2 OFFSET {skip:UInt64}
        SETTINGS max_threads = 1`,
      query_params: { ...rangeParams(market, lowerMs, endMs), skip: limit - 1, ...k.params },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ k: string }>();
    return { last: rows[0] ? (JSON.parse(rows[0].k) as RawKey) : null, more: rows.length > 1 };
  }

  /** Deduplicated number of records of one market with startMs <= event_ts <= endMs. */
  async countByRange(venue: Venue, market: string, startMs: number, endMs: number): Promise<number> {
    const v = COLUMNS[venue];
    const rs = await this.ch.client.query({
      query: `SELECT toString(count()) AS n FROM ${this.ch.table(v.table)} FINAL ${rangeWhereSql(v)}`,
      query_params: rangeParams(market, startMs, endMs),
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string }>();
    return Number(row?.n ?? 0);
  }

  /** `limit` rows as a chain of sub-reads, each continuing after the last key of the one before. */
  private chained(venue: Venue, limit: number, start: RawKey | null, build: (after: RawKey | null, n: number) => StreamQuery, owner: string | undefined): ByteStream {
    if (start && start.length !== rawKeyLength(venue)) throw new Error(`a ${venue} key has ${rawKeyLength(venue)} fields`);
    const ch = this.ch;
    const opts = { maxSessions: this.opts.maxStreamSessions, maxPerOwner: this.opts.maxStreamSessionsPerOwner, owner };
    const sub = this.opts.subReadRows ?? SUB_READ_ROWS;
    return (async function* () {
      // One session for the whole chain: between two sub-reads another reader (of the
      // same owner) could otherwise take it, and the page would fail half-sent.
      const lease = await leaseStreams(ch, opts);
      try {
        let after = start;
        let remaining = limit;
        while (remaining > 0) {
          const n = Math.min(remaining, sub);
          const tracker = new RowTracker();
          for await (const chunk of lease.query(build(after, n))) {
            tracker.see(chunk);
            yield chunk;
          }
          remaining -= tracker.rows;
          const last = tracker.lastKey();
          if (tracker.rows < n || !last) return;
          after = last;
        }
      } finally {
        lease.release();
      }
    })();
  }

  /** Stored UTC dates of one market from `minDate` on (from the summary, no raw scan). */
  async availability(venue: Venue, market: string, minDate = '1970-01-01'): Promise<AvailabilityRow> {
    const rs = await this.ch.client.query({
      query: `SELECT toString(count()) AS n, toString(min(event_date)) AS first, toString(max(event_date)) AS last
        FROM (SELECT DISTINCT event_date FROM ${this.ch.table('market_dates')}
              WHERE venue = {venue:String} AND market = {market:String} AND event_date >= {min_date:Date})`,
      query_params: { venue, market, min_date: minDate },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string; first: string; last: string }>();
    const n = Number(row?.n ?? 0);
    return n === 0 ? { dateCount: 0, firstDate: null, lastDate: null } : { dateCount: n, firstDate: row!.first, lastDate: row!.last };
  }

  /** Markets with data from `minDate` on whose id starts with `prefix`, in id order, one page. */
  async listMarkets(venue: Venue, prefix: string, offset: number, limit: number, minDate = '1970-01-01'): Promise<MarketListRow> {
    const t = this.ch.table('market_dates');
    const where = `venue = {venue:String} AND startsWith(market, {prefix:String}) AND event_date >= {min_date:Date}`;
    const rs = await this.ch.client.query({
      query: `SELECT
          (SELECT toString(uniqExact(market)) FROM ${t} WHERE ${where}) AS total,
          (SELECT groupArray(market) FROM (SELECT DISTINCT market FROM ${t} WHERE ${where}
                                           ORDER BY market LIMIT {limit:UInt32} OFFSET {offset:UInt64})) AS markets`,
      query_params: { venue, prefix, offset, limit, min_date: minDate },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ total: string; markets: string[] }>();
    // groupArray does not promise order: restore it (byte order, as the engine sorts).
    const markets = [...(row?.markets ?? [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { total: Number(row?.total ?? 0), markets };
  }
}
