import { VENUES, utcDate, type Venue } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { RAW_TABLE } from './raw-events.repository.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/**
 * Reads for the websocket replay (issue 25): the stored records of several markets of one
 * venue in one serving order, (event_ts, ingest_seq, dedup_id, market, tie-breaks), streamed.
 *
 * The order spans markets, so it is not a prefix of the table's key (market first): a read
 * sorts. To keep each sort small the window is read as a chain of sub-reads, each of at
 * most `subReadRows` rows inside a time slice, continuing after the last key of the one
 * before (keyset, like the raw pages: nothing is skipped or repeated however many rows share
 * one millisecond). The slice grows while slices come back sparse and shrinks when one
 * fills (to the time its rows spanned), so a quiet window is read in few queries and a
 * dense one in queries of about `subReadRows` rows each.
 *
 * A replay may last hours (paced at real time): so each sub-read is a bounded query of its
 * own (at most `subReadRows` rows, read whole, bounded memory), and nothing of the engine is
 * held between sub-reads. It is not a stream: the embedded engine starts a stream
 * synchronously on the event loop and this read's sort runs before its first row, so a
 * streamed sub-read held the whole API process for tens of ms each; a query runs on the
 * engine's thread. The next sub-read is fetched while the consumer works through the
 * current one (at most two batches held). How many replays a key runs at once is bounded
 * by the callers (API_REPLAYS_PER_KEY).
 */

export interface ReplayRow {
  /** Event time, Unix ms. */
  ts: number;
  /** The capture's ingest_seq (UInt64 as decimal text): records of one frame share `seq >> 11`. */
  seq: string;
  market: string;
  /** Exchange A: the asset id ('' for market-level events). Exchange B: the record type. */
  tie: string;
  /** The stored record (the payload), JSON text. */
  payload: string;
}

interface Columns {
  market: string;
  /** Tie-break columns after the market, as in the raw pages' order. */
  ties: string[];
}

const columnsOf = (v: Venue): Columns => ({ market: VENUE_STORAGE[v].market, ties: [...VENUE_STORAGE[v].ties] });
const COLUMNS = Object.fromEntries(VENUES.map((v) => [v, columnsOf(v)])) as Record<Venue, Columns>;

/** Rows one sub-read returns at most. */
export const REPLAY_SUB_READ_ROWS = 5_000;
/** The first time slice, and its bounds. */
const FIRST_SLICE_MS = 15 * 60_000;
const MIN_SLICE_MS = 10;
const MAX_SLICE_MS = 31 * 86_400_000;

export interface ReplayReadOptions {
  /** Exchange A: only these assets' records (and the markets' market-level ones, asset_id ''). */
  assets?: readonly string[];
  /** Stops the read between chunks. */
  signal?: AbortSignal;
  subReadRows?: number;
}

export class ReplayRepository {
  constructor(private readonly ch: ClickHouse) {}

  /**
   * Exchange A: the market (condition id) of each asset that has a record in the window,
   * read from the raw table over the window's dates (the table's key starts with the
   * market, so this scans those dates once for all the assets asked).
   */
  async marketsOfAssets(assets: readonly string[], fromMs: number, toMs: number): Promise<Map<string, string>> {
    if (assets.length === 0) return new Map();
    const rs = await this.ch.client.query({
      query: `SELECT asset_id AS a, any(market) AS m FROM ${this.ch.table(RAW_TABLE['exchange-a'])}
        WHERE asset_id IN {assets:Array(String)} AND event_date >= {first:Date} AND event_date <= {last:Date}
        GROUP BY asset_id`,
      query_params: { assets: [...assets], first: utcDate(fromMs), last: utcDate(toMs) },
      format: 'JSONEachRow',
    });
    return new Map((await rs.json<{ a: string; m: string }>()).map((r) => [r.a, r.m]));
  }

  /**
   * Exchange B: which of `tickers` have any stored record up to `toMs`'s date (the table's
   * key starts with the ticker: each one is a short range of the key).
   */
  async tickersStored(tickers: readonly string[], toMs: number): Promise<Set<string>> {
    if (tickers.length === 0) return new Set();
    const rs = await this.ch.client.query({
      query: `SELECT DISTINCT ticker AS t FROM ${this.ch.table(RAW_TABLE['exchange-b'])}
        WHERE ticker IN {tickers:Array(String)} AND event_date <= {last:Date}`,
      query_params: { tickers: [...tickers], last: utcDate(toMs) },
      format: 'JSONEachRow',
    });
    return new Set((await rs.json<{ t: string }>()).map((r) => r.t));
  }

  /**
   * The stored records of `markets` with fromMs <= event_ts <= toMs in serving order. The
   * session is taken on the first `next()`; returning from the generator (or an abort)
   * cancels the read and gives it back.
   */
  async *rows(venue: Venue, markets: readonly string[], fromMs: number, toMs: number, o: ReplayReadOptions = {}): AsyncGenerator<ReplayRow> {
    if (markets.length === 0 || fromMs > toMs) return;
    const c = COLUMNS[venue];
    const table = this.ch.table(RAW_TABLE[venue]);
    const keyCols = ['event_ts', 'ingest_seq', 'dedup_id', c.market, ...c.ties];
    const key = `toJSONString([toString(toUnixTimestamp64Milli(event_ts)), toString(ingest_seq), dedup_id, ${c.market}${c.ties.map((t) => `, toString(${t})`).join('')}])`;
    // Only a venue with outcome tokens can read some of a market's books (records without an asset are kept).
    const asset = VENUE_STORAGE[venue].asset;
    const assetSql = VENUE_STORAGE[venue].tokens && o.assets !== undefined ? `AND (${asset} IN {assets:Array(String)} OR ${asset} = '')` : '';
    const n = o.subReadRows ?? REPLAY_SUB_READ_ROWS;
    const ch = this.ch;

    interface Batch {
      rows: ReplayRow[];
      /** Where the next sub-read starts; null: the window is read. */
      next: { lower: number; after: string[] | null; slice: number } | null;
    }
    const fetch = async (lower: number, after: string[] | null, slice: number): Promise<Batch> => {
      const upper = Math.min(toMs, lower + slice - 1);
      const afterSql = after ? `AND (${keyCols.join(', ')}) > (fromUnixTimestamp64Milli({a0:Int64}, 'UTC'), {a1:UInt64}, {a2:String}, {a3:String}${c.ties.map((_, i) => `, {a${4 + i}:String}`).join('')})` : '';
      const params: Record<string, unknown> = { markets: [...markets], lower, upper, first_date: utcDate(lower), last_date: utcDate(upper), n };
      if (o.assets !== undefined) params.assets = [...o.assets];
      if (after) after.forEach((v, i) => (params[`a${i}`] = i === 0 ? Number(v) : v));
      const rows: ReplayRow[] = [];
      let last: string[] | null = null;
      // A bounded sub-read (at most n rows) asked whole, not streamed: the embedded engine
      // starts a stream synchronously on the event loop, and this read's sort runs before its
      // first row, so a streamed sub-read held the whole API process for tens of ms each
      // (the replay benchmark's largest self time). Asked whole, it runs on the engine's own
      // thread, beside the frames of the previous sub-read being sent.
      const rs = await ch.client.query({
        query: `SELECT concat(${key}, '\\t', payload) AS line FROM ${table} FINAL
          WHERE ${c.market} IN {markets:Array(String)} ${assetSql}
            AND event_date >= {first_date:Date} AND event_date <= {last_date:Date}
            AND event_ts >= fromUnixTimestamp64Milli({lower:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({upper:Int64}, 'UTC')
            ${afterSql}
          ORDER BY ${keyCols.join(', ')}
          LIMIT {n:UInt32}
          SETTINGS max_threads = 1`,
        query_params: params,
        format: 'TabSeparatedRaw',
        ...(o.signal ? { abort_signal: o.signal } : {}),
      });
      const text = await rs.text();
      for (let at = 0; at < text.length; ) {
        let nl = text.indexOf('\n', at);
        if (nl < 0) nl = text.length;
        const line = text.slice(at, nl);
        at = nl + 1;
        if (line.length === 0) continue;
        const tab = line.indexOf('\t');
        const k = JSON.parse(line.slice(0, tab)) as string[];
        last = k;
        rows.push({ ts: Number(k[0]), seq: k[1]!, market: k[3]!, tie: k[4]!, payload: line.slice(tab + 1) });
      }
      // The slice held more: continue inside it after the last key, with smaller slices later.
      // The next slice spans about the time this one's rows did (a dense stretch is read in slices of ~n rows).
      if (rows.length >= n && last) return { rows, next: { lower: Number(last[0]), after: last, slice: Math.max(MIN_SLICE_MS, Number(last[0]) - lower + 1) } };
      if (upper >= toMs) return { rows, next: null };
      return { rows, next: { lower: upper + 1, after: null, slice: rows.length < n / 4 ? Math.min(MAX_SLICE_MS, slice * 2) : slice } };
    };

    let current: Promise<Batch> = fetch(fromMs, null, FIRST_SLICE_MS);
    let ahead: Promise<Batch> | null = null;
    try {
      for (;;) {
        const batch = await current;
        ahead = batch.next ? fetch(batch.next.lower, batch.next.after, batch.next.slice) : null;
        // A read ahead that fails is reported when it is awaited, never as an unhandled rejection.
        ahead?.catch(() => undefined);
        for (const r of batch.rows) yield r;
        if (!ahead) return;
        current = ahead;
        ahead = null;
      }
    } finally {
      // A consumer gone early: a read ahead still running gives its session back when done.
      ahead?.catch(() => undefined);
    }
  }
}
