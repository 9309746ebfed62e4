import { performance } from 'node:perf_hooks';
import { setImmediate as turn } from 'node:timers/promises';
import { VENUES, isoMs, utcDate, type ExchangeAEvent, type ExchangeBRecord, type Venue } from '@booktape/domain';
import { frameOfSeqHalves } from '@booktape/venues';
import { BOOK_ROW_COLUMNS, readExchangeABookRow, readExchangeBBookRow, RowBinaryReader } from './book-rows.ts';
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
 *
 * Two kinds of read: `rows` gives each record's served payload (JSON text, which the engine
 * rebuilds from the typed columns), for the merged stream; `recordsA` / `recordsB` read the
 * typed columns themselves in RowBinary and decode them here (no JSON made or parsed), for
 * the venue replays. A typed sub-read is held as its bytes (at most about 4 MB) and decoded
 * a run of rows at a time as the consumer goes.
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

/** Exchange A: one stored record of a typed replay read (ReplayRepository.recordsA). */
export interface ReplayRecordA {
  /** Event time, Unix ms. */
  ts: number;
  /** The venue frame the record came in: ingest_seq >> 11 (the records of one frame share it), exact as a number. */
  frame: number;
  market: string;
  /** The asset id ('' for market-level events). */
  asset: string;
  /** The served record's named fields; the whole served record where the row has a residue (`extra` then ''). */
  record: ExchangeAEvent;
  /** The venue fields the record does not name, as JSON members without braces ('' when none, and where `residue`). */
  extra: string;
  /** The row kept the record's own text (the typed columns do not give it back exactly): `record` is that text's value. */
  residue: boolean;
}

/** Exchange B: one stored record of a typed replay read (ReplayRepository.recordsB). */
export interface ReplayRecordB {
  /** Event time, Unix ms. */
  ts: number;
  /** The served record. */
  record: ExchangeBRecord;
}

interface SubRead<T> {
  /** Rows read. */
  count: number;
  /** Bytes the engine answered. */
  bytes: number;
  /** The rows, in runs (decoded as they are asked for). */
  chunks: () => Iterable<T[]>;
  /** The last row's serving-order key (as the keyset parameters take it); null when no row. */
  last: string[] | null;
}

/** Column types of a RowBinary row, for skipping over rows without decoding them. */
type Skip = 'i64' | 'u8' | 's' | 'ai64' | 'au8' | 'as' | 'ni64' | 'ns';

const LEVEL_SKIPS: Skip[] = ['ai64', 'au8', 'ai64', 'au8'];
/** recordsA's columns: the key and flags, then BOOK_ROW_COLUMNS['exchange-a']. */
const SKIP_A: Skip[] = [
  'i64', 'i64', 's', 's', 's', 's', 'u8', 's',
  'i64', 's', 's', 's', ...LEVEL_SKIPS, ...LEVEL_SKIPS,
  'ai64', 'au8', 'au8', 'ai64', 'au8', 'as', 'ai64', 'au8', 'ai64', 'au8',
];
/** recordsB's columns: the key and flags, then BOOK_ROW_COLUMNS['exchange-b']. */
const SKIP_B: Skip[] = [
  'i64', 'i64', 's', 's', 's', 'u8', 'ni64', 'ns', 's',
  'i64', 's', 's', 'ni64', 'ni64', 'ni64', 'u8', ...LEVEL_SKIPS, 'u8', ...LEVEL_SKIPS, 's', 'i64', 'u8', 'i64', 'u8',
];

/** The column types as small integers, for skipRow's switch. */
const SKIP_CODE: Record<Skip, number> = { i64: 0, u8: 1, s: 2, ai64: 3, au8: 4, as: 5, ni64: 6, ns: 7 };
const codes = (types: readonly Skip[]): Uint8Array => Uint8Array.from(types.map((t) => SKIP_CODE[t]));
const SKIP_A_CODES = codes(SKIP_A);
const SKIP_B_CODES = codes(SKIP_B);

/** Moves past one row of the column types `codes` (SKIP_CODE). */
function skipRow(r: RowBinaryReader, codes: Uint8Array): void {
  for (let k = 0; k < codes.length; k++) {
    switch (codes[k]) {
      case 0:
        r.pos += 8;
        break;
      case 1:
        r.pos += 1;
        break;
      case 6:
        if (r.u8() === 0) r.pos += 8;
        break;
      case 7:
        if (r.u8() === 1) break;
      // falls through: a String
      case 2:
      case 4: {
        const n = r.length();
        r.pos += n;
        break;
      }
      case 3: {
        const n = r.length();
        r.pos += n * 8;
        break;
      }
      case 5: {
        const n = r.length();
        for (let i = 0; i < n; i++) {
          const m = r.length();
          r.pos += m;
        }
        break;
      }
    }
  }
  r.need(0);
}

/** Rows decoded a run at a time, so that a sub-read's records are short-lived (they never outlive a run's frames). */
const DECODE_RUN = 512;

/** Skips a String. */
function skipString(r: RowBinaryReader): void {
  const n = r.length();
  r.need(n);
  r.pos += n;
}

/** A String column read row after row: a value equal to the row before's gives that row's string again. */
class Repeated {
  private text = '';
  private buf: Buffer | null = null;
  private at = 0;
  private n = -1;
  private readonly onlyBytes: number;

  /** `only`: the one non-empty value the read allows (its WHERE names one): a value is it or '', told apart by length. */
  constructor(private readonly only: string | null) {
    this.onlyBytes = only === null ? -1 : Buffer.byteLength(only);
  }

  read(r: RowBinaryReader): string {
    const n = r.length();
    r.need(n);
    const p = r.pos;
    r.pos = p + n;
    if (this.only !== null) {
      if (n === this.onlyBytes) return this.only;
      if (n === 0) return '';
    }
    const b = r.buf;
    if (n !== this.n || b !== this.buf || !this.same(b, p, n)) {
      this.text = b.toString('utf8', p, p + n);
      this.buf = b;
      this.n = n;
    }
    this.at = p;
    return this.text;
  }

  /** The n bytes at p equal the last value's (short ones compared here: cheaper than a native call). */
  private same(b: Buffer, p: number, n: number): boolean {
    if (n > 32) return b.compare(b, this.at, this.at + n, p, p + n) === 0;
    const q = this.at;
    for (let i = n - 1; i >= 0; i--) if (b[p + i] !== b[q + i]) return false;
    return true;
  }
}

/** A typed sub-read is decoded in runs of about this long (ms), with event-loop turns between. */
const DECODE_SLICE_MS = 2;

interface Columns {
  market: string;
  /** Tie-break columns after the market, as in the raw pages' order. */
  ties: string[];
}

const columnsOf = (v: Venue): Columns => ({ market: VENUE_STORAGE[v].market, ties: [...VENUE_STORAGE[v].ties] });
const COLUMNS = Object.fromEntries(VENUES.map((v) => [v, columnsOf(v)])) as Record<Venue, Columns>;

/** Rows one sub-read of `rows` (the payload text) returns at most. */
export const REPLAY_SUB_READ_ROWS = 5_000;
/**
 * Rows one typed sub-read (recordsA, recordsB) returns at most: about 4 MB of RowBinary for
 * book-event rows. Each query has a fixed cost in the engine of some ms whatever its size,
 * so larger sub-reads read a dense day several times faster (measured: 5,000-row sub-reads
 * about 40,000 records/s, 20,000-row ones about 135,000/s).
 */
const REPLAY_TYPED_SUB_READ_ROWS = 20_000;
/** The bytes a typed sub-read aims at: it asks for as many rows as fit (at the last one's bytes a row), at most REPLAY_TYPED_SUB_READ_ROWS. */
const REPLAY_TYPED_SUB_READ_BYTES = 4 << 20;
/** Sub-reads read ahead of the consumer at most (each held as its bytes once read). */
const READ_AHEAD = 2;
/** Rows a typed sub-read asks for at least, however large its rows. */
const MIN_SUB_READ_ROWS = 500;
const typedSize = (o: ReplayReadOptions) => ({ rows: o.subReadRows ?? REPLAY_TYPED_SUB_READ_ROWS, bytes: REPLAY_TYPED_SUB_READ_BYTES });
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
   * The stored records of `markets` with fromMs <= event_ts <= toMs in serving order, read
   * in bounded sub-reads from the first `next()` on (no stream session is held); returning
   * from the generator starts no further sub-read, and `o.signal` aborts those in flight.
   */
  async *rows(venue: Venue, markets: readonly string[], fromMs: number, toMs: number, o: ReplayReadOptions = {}): AsyncGenerator<ReplayRow> {
    const c = COLUMNS[venue];
    const key = `toJSONString([toString(toUnixTimestamp64Milli(event_ts)), toString(ingest_seq), dedup_id, ${c.market}${c.ties.map((t) => `, toString(${t})`).join('')}])`;
    const read = async (sql: string, params: Record<string, unknown>): Promise<SubRead<ReplayRow>> => {
      const rs = await this.ch.client.query({ query: sql, query_params: params, format: 'TabSeparatedRaw', ...(o.signal ? { abort_signal: o.signal } : {}) });
      const text = await rs.text();
      const rows: ReplayRow[] = [];
      let last: string[] | null = null;
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
      return { count: rows.length, bytes: text.length, chunks: () => [rows], last };
    };
    for await (const batch of this.subReads(venue, markets, fromMs, toMs, o, `concat(${key}, '\\t', ${VENUE_STORAGE[venue].record}) AS line`, read)) yield* batch;
  }

  /**
   * Exchange A: the stored records of `markets` (and `o.assets`) in serving order, like
   * `rows`, one array per sub-read, read from the typed columns in RowBinary (the engine makes
   * no JSON: rebuilding the served payload was about half of a sub-read's time, and its key
   * a quarter). Each record is the served record's named fields (book-rows.ts), with the
   * venue extras beside it as the table keeps them; the served record is
   * `{...extra, ...record}` (its key order too), or, where the row has a residue, the
   * residue's record itself (`record`, with `extra` '').
   */
  recordsA(markets: readonly string[], fromMs: number, toMs: number, o: ReplayReadOptions = {}): AsyncGenerator<ReplayRecordA[]> {
    const select = `toUnixTimestamp64Milli(event_ts), ingest_seq, dedup_id, market, toString(asset_id), toString(event_type), toUInt8(residue != ''), extra, ${BOOK_ROW_COLUMNS['exchange-a']}`;
    return this.subReads('exchange-a', markets, fromMs, toMs, o, select, this.binary('exchange-a', o, SKIP_A_CODES, () => {
      // Most rows repeat the market, asset and type of the row before: those strings are not
      // made again. A read of one market (or one asset) knows the value without reading it.
      const market = new Repeated(markets.length === 1 ? markets[0]! : null);
      const asset = new Repeated(o.assets?.length === 1 && o.assets[0] !== '' ? o.assets[0]! : null);
      const type = new Repeated(null);
      return (r) => {
        const ts = r.i64();
        const lo = r.u32();
        const hi = r.u32();
        skipString(r);
        const m = market.read(r);
        const a = asset.read(r);
        const t = type.read(r);
        const hasResidue = r.u8() === 1;
        const extra = r.string();
        const record = readExchangeABookRow(r, m, a);
        return { ts, frame: frameOfSeqHalves(hi, lo), market: m, asset: a, record, extra: hasResidue ? '' : extra, residue: hasResidue };
      };
    }), typedSize(o));
  }

  /**
   * Exchange B: the stored records of `tickers` in serving order, like `rows`, one array
   * per sub-read, read from the typed columns in RowBinary: each record is the served
   * record (JSON.parse of `payload` gives the same value).
   */
  recordsB(tickers: readonly string[], fromMs: number, toMs: number, o: ReplayReadOptions = {}): AsyncGenerator<ReplayRecordB[]> {
    const select = `toUnixTimestamp64Milli(event_ts), ingest_seq, dedup_id, ticker, toString(record_type), toUInt8(residue != ''),
      if(isNull(venue_ts), NULL, toUnixTimestamp64Milli(assumeNotNull(venue_ts))), market_id, data, ${BOOK_ROW_COLUMNS['exchange-b']}`;
    return this.subReads('exchange-b', tickers, fromMs, toMs, o, select, this.binary('exchange-b', o, SKIP_B_CODES, () => (r) => {
      const ts = r.i64();
      const lo = r.u32();
      const hi = r.u32();
      skipString(r);
      const ticker = r.string();
      const type = r.string();
      const hasResidue = r.u8() === 1;
      const venueMs = r.nullableI64();
      const marketId = r.u8() === 1 ? null : r.string();
      const data = r.string();
      const record = readExchangeBBookRow(r, ticker);
      if (!hasResidue) {
        const vts = venueMs === null ? null : isoMs(venueMs);
        if (type === 'snapshot' || type === 'delta') {
          record.venue_ts = vts;
          record.market_id = marketId;
        } else if (type !== 'gap') {
          record.venue_ts = vts;
          record.data = JSON.parse(data) as Record<string, unknown>;
        }
      }
      return { ts, record };
    }), typedSize(o));
  }

  /**
   * Sub-reads in RowBinary. A sub-read is kept as its bytes: one pass skips over its rows
   * (`skip`: their column types) to count them and find the last one, whose key continues
   * the read (its first columns: the venue's serving-order key, read here); the rows are
   * decoded a run at a time as the consumer asks for them, by a decoder `decoder()` makes
   * for the sub-read. Decoding it
   * whole when read ahead made tens of thousands of objects that lived until the consumer
   * reached them: the garbage collector moved them all, a fifth of a fast replay's time.
   */
  private binary<T>(venue: Venue, o: ReplayReadOptions, skip: Uint8Array, decoder: () => (r: RowBinaryReader) => T): (sql: string, params: Record<string, unknown>) => Promise<SubRead<T>> {
    return async (sql, params) => {
      const rs = await this.ch.client.exec({ query: `${sql}\nFORMAT RowBinary`, query_params: params, ...(o.signal ? { abort_signal: o.signal } : {}) });
      const chunks: Buffer[] = [];
      for await (const c of rs.stream as AsyncIterable<Buffer>) chunks.push(c);
      const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const r = new RowBinaryReader();
      r.reset(buf);
      let count = 0;
      let lastAt = 0;
      let since = performance.now();
      try {
        while (r.pos < buf.length) {
          lastAt = r.pos;
          skipRow(r, skip);
          count++;
          // In runs of a few ms with event-loop turns between: a read ahead must not hold paced replays back.
          if ((count & 1023) === 0 && performance.now() - since > DECODE_SLICE_MS) {
            await turn();
            if (o.signal?.aborted) throw new Error('replay read aborted');
            since = performance.now();
          }
        }
      } catch (e) {
        if (e instanceof Error) throw e;
        throw new Error(`replay read: a RowBinary row ends past the result's ${buf.length} bytes`);
      }
      if (count === 0) return { count, bytes: buf.length, chunks: () => [], last: null };
      // The last row's key (event_ts, ingest_seq, dedup_id, the market, the tie-breaks: the SELECT's first columns).
      r.pos = lastAt;
      const ts = r.i64();
      const lo = r.u32();
      const hi = r.u32();
      const last = [String(ts), ((BigInt(hi) << 32n) | BigInt(lo)).toString(), r.string(), r.string()];
      for (let i = 0; i < COLUMNS[venue].ties.length; i++) last.push(r.string());
      function* runs(): Generator<T[]> {
        const row = decoder();
        const d = new RowBinaryReader();
        d.reset(buf);
        while (d.pos < buf.length) {
          const out: T[] = [];
          for (let i = 0; i < DECODE_RUN && d.pos < buf.length; i++) out.push(row(d));
          yield out;
        }
      }
      return { count, bytes: buf.length, chunks: runs, last };
    };
  }

  /**
   * The window as a chain of bounded sub-reads (keyset on the serving order, time slices
   * that follow the density), each read by `read` with `select` as its columns; the next one
   * is fetched while the consumer works through the current one (at most two held).
   */
  private async *subReads<T>(
    venue: Venue,
    markets: readonly string[],
    fromMs: number,
    toMs: number,
    o: ReplayReadOptions,
    select: string,
    read: (sql: string, params: Record<string, unknown>) => Promise<SubRead<T>>,
    /** Typed reads: sub-reads of up to `rows` rows (REPLAY_TYPED_SUB_READ_ROWS), as many as fit in about `bytes` (the first has REPLAY_SUB_READ_ROWS). */
    size: { rows: number; bytes: number } | null = null,
  ): AsyncGenerator<T[]> {
    if (markets.length === 0 || fromMs > toMs) return;
    const c = COLUMNS[venue];
    const table = this.ch.table(RAW_TABLE[venue]);
    const keyCols = ['event_ts', 'ingest_seq', 'dedup_id', c.market, ...c.ties];
    // Only a venue with outcome tokens can read some of a market's books (records without an asset are kept).
    const asset = VENUE_STORAGE[venue].asset;
    const assetSql = VENUE_STORAGE[venue].tokens && o.assets !== undefined ? `AND (${asset} IN {assets:Array(String)} OR ${asset} = '')` : '';
    const most = size?.rows ?? o.subReadRows ?? REPLAY_SUB_READ_ROWS;

    interface Batch {
      rows: SubRead<T>;
      /** Where the next sub-read starts; null: the window is read. */
      next: { lower: number; after: string[] | null; slice: number; n: number } | null;
    }
    const fetch = async (lower: number, after: string[] | null, slice: number, n: number): Promise<Batch> => {
      const upper = Math.min(toMs, lower + slice - 1);
      const afterSql = after ? `AND (${keyCols.join(', ')}) > (fromUnixTimestamp64Milli({a0:Int64}, 'UTC'), {a1:UInt64}, {a2:String}, {a3:String}${c.ties.map((_, i) => `, {a${4 + i}:String}`).join('')})` : '';
      const params: Record<string, unknown> = { markets: [...markets], lower, upper, first_date: utcDate(lower), last_date: utcDate(upper), n };
      if (o.assets !== undefined) params.assets = [...o.assets];
      if (after) after.forEach((v, i) => (params[`a${i}`] = i === 0 ? Number(v) : v));
      // A bounded sub-read (at most n rows) asked whole, not streamed: the embedded engine
      // starts a stream synchronously on the event loop, and this read's sort runs before its
      // first row, so a streamed sub-read held the whole API process for tens of ms each
      // (the replay benchmark's largest self time). Asked whole, it runs on the engine's own
      // thread, beside the frames of the previous sub-read being sent.
      const rows = await read(
        `SELECT ${select} FROM ${table} FINAL
          WHERE ${c.market} IN {markets:Array(String)} ${assetSql}
            AND event_date >= {first_date:Date} AND event_date <= {last_date:Date}
            AND event_ts >= fromUnixTimestamp64Milli({lower:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({upper:Int64}, 'UTC')
            ${afterSql}
          ORDER BY ${keyCols.join(', ')}
          LIMIT {n:UInt32}
          SETTINGS max_threads = 1`,
        params,
      );
      // The slice held more: continue inside it after the last key, with smaller slices later.
      // The next slice spans about the time this one's rows did (a dense stretch is read in slices of ~n rows).
      const last = rows.last;
      // Typed reads: the next sub-read asks for as many rows as fit in size.bytes at this one's bytes a row
      // (book rows with deep books are far larger than the rest), so a sub-read holds about that much whatever its rows.
      const nextN = size !== null && rows.count > 0 ? Math.min(most, Math.max(MIN_SUB_READ_ROWS, Math.floor((size.bytes * rows.count) / Math.max(1, rows.bytes)))) : n;
      if (rows.count >= n && last) return { rows, next: { lower: Number(last[0]), after: last, slice: Math.max(MIN_SLICE_MS, Number(last[0]) - lower + 1), n: nextN } };
      if (upper >= toMs) return { rows, next: null };
      // A slice that came back short of n rows: the next one is longer, aiming at about 3/4 of n (at most 4 times as long).
      return { rows, next: { lower: upper + 1, after: null, slice: rows.count < n / 2 ? Math.min(MAX_SLICE_MS, slice * Math.min(4, Math.max(1, Math.floor((0.75 * nextN) / Math.max(1, rows.count))))) : slice, n: nextN } };
    };

    // Sub-reads read ahead of the one the consumer is on: each starts as soon as the one
    // before it is known (its last key), while fewer than READ_AHEAD wait, so the engine
    // keeps working through an uneven stretch instead of the consumer waiting for it.
    interface Link {
      read: Promise<Batch>;
      batch?: Batch;
      next?: Link;
    }
    let stopped = false;
    let waiting = 0;
    const watch = (link: Link): Link => {
      // Also what makes a read that fails, or is never awaited, never an unhandled rejection.
      link.read.then(
        (b) => {
          link.batch = b;
          extend();
        },
        () => undefined,
      );
      return link;
    };
    let head: Link = watch({ read: fetch(fromMs, null, FIRST_SLICE_MS, Math.min(most, o.subReadRows ?? REPLAY_SUB_READ_ROWS)) });
    let tail = head;
    waiting = 1;
    function extend(): void {
      const n = tail.batch?.next;
      if (stopped || tail.next !== undefined || !n || waiting >= READ_AHEAD) return;
      tail = tail.next = watch({ read: fetch(n.lower, n.after, n.slice, n.n) });
      waiting++;
    }
    try {
      for (;;) {
        const batch = await head.read;
        head.batch = batch;
        waiting--;
        extend();
        for (const chunk of batch.rows.chunks()) if (chunk.length > 0) yield chunk;
        if (!batch.next) return;
        extend();
        head = head.next!;
      }
    } finally {
      // A consumer gone early: no further read starts; those running end on their own (or on o.signal).
      stopped = true;
    }
  }
}
