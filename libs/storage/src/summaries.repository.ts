// Type only: storage does not load the book engine.
import type { BookRecord, ChecksState, ClaimHashRef } from '@booktape/book';
import { VENUES, type Venue } from '@booktape/domain';
import {
  BOOK_ROW_COLUMNS,
  BOOK_ROW_FORMAT,
  CLAIM_HASH_COLUMNS,
  claimHashesOf,
  firstBatch,
  foldBookRows,
  readBookRow,
  readWhole,
  ROLLUP_ROW_COLUMNS,
  RollupRecords,
  rowBinaryRows,
  type BookRowSink,
  type RowBinaryReader,
  type RowClaimHash,
  type RowTime,
  type Timed,
} from './book-rows.ts';
import type { ClickHouse } from './clickhouse.ts';
import { unchained } from './inline-params.ts';
import { holdsImportsManySql, holdsImportsSql, supersedeImported } from './pmxt-import.ts';
import { RowBinaryWriter } from './row-binary.ts';
import { insertRowBinary } from './row-insert.ts';
import { streamQuery } from './stream.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/** One asset's summaries: exchange A (condition id, outcome token), exchange B (ticker, ticker). */
export interface SummaryKey {
  venue: Venue;
  market: string;
  asset: string;
}

/** A `summary_days` row (migration 004). Times are Unix milliseconds. */
export interface SummaryDay {
  date: string;
  version: number;
  baseVersion: number;
  engineVersion: number;
  /** Every book event of the day with event_ts before this is in the stored buckets. */
  coveredUntil: number;
  /** The day is closed and covered to its end. */
  complete: boolean;
  events: number;
  startStateHash: string;
  /** The book's state (JSON) at coveredUntil. */
  state: string;
  /** The last observation (JSON, '' when none yet): what later buckets forward-fill from. */
  lastObs: string;
  /**
   * The day's cross-checks at coveredUntil: JSON of @booktape/book `ChecksState` ('' on rows
   * written before migration 008; the rollup then rebuilds the day).
   */
  checks: string;
  computedAt: number;
}

export interface SummaryChunk {
  date: string;
  resolution: number;
  /** Hour start, Unix ms. */
  hour: number;
  version: number;
  engineVersion: number;
  bucketCount: number;
  /** bucket-codec text. */
  buckets: string;
}

/**
 * A full-book checkpoint (migration 011): the book of one asset after every book event of
 * the day at or before `at`. Times are Unix milliseconds.
 */
export interface BookCheckpoint {
  date: string;
  /** The day's book events at or before `at` (the late-data check, and the key within a day). */
  events: number;
  /** The last millisecond applied; it held a book record, so it is also the book's as_of_ms. */
  at: number;
  /** The day build it belongs to: valid while the day row's base_version is this. */
  baseVersion: number;
  version: number;
  engineVersion: number;
  /** The book's `toState()` JSON. */
  state: string;
}

/** Where a checkpoint lies: the day's book events up to it, and its time (Unix ms). */
export interface CheckpointPosition {
  events: number;
  at: number;
}

/** A stored day's build: its chunks and checkpoints count from `baseVersion` on. */
export interface DayBuild {
  date: string;
  baseVersion: number;
  complete: boolean;
}

/** What a rollup run decides by, read with its events (`SummariesRepository.bookEventsRead`). */
export interface BookEventsFacts {
  /** The date's book events before the asked time (FINAL: duplicates count once); null when not asked. */
  countedBefore: number | null;
  /** The first date after this one that holds raw data of the market, or null. */
  nextDataDate: string | null;
  /**
   * The asset-day holds imported records (always false for a venue without imports): only
   * then can `supersedeImported` remove any, so a run reads first and supersedes only then.
   */
  holdsImports: boolean;
}

export interface BookEventsRead {
  facts: BookEventsFacts;
  /** The book records (book-rows.ts), in serving order, a few hundred per array, each array with its records' times (`Timed`). */
  events: AsyncGenerator<Timed<BookRecord>>;
  /** Ends the read early (frees its stream session); harmless after the end. */
  close(): Promise<void>;
}

/** `SummariesRepository.bookEventsFold`: the facts at once, the rows when `fold` is called. */
export interface BookEventsFold {
  facts: BookEventsFacts;
  /** Hands every row to `sink` in serving order (book-rows.ts `foldBookRows`); once, and the read is then closed. */
  fold(sink: BookRowSink): Promise<void>;
  /** Ends the read without folding it (frees its stream session); harmless after the end. */
  close(): Promise<void>;
}

/** One book of a read of several (`SummariesRepository.bookEventsReadMany`): what `bookEventsRead` takes for one. */
export interface BookEventsItem {
  market: string;
  asset: string;
  fromMs: number;
  toMs: number;
  countBeforeMs: number | null;
}

export interface BookEventsReadMany {
  /** Per item, at its index. */
  facts: BookEventsFacts[];
  /** The items' book records, item after item (ascending index), each item's in serving order, a few hundred per array. */
  events: AsyncGenerator<{ item: number; records: BookRecord[]; ms?: Float64Array | undefined }>;
  /** Ends the read early (frees its stream session); harmless after the end. */
  close(): Promise<void>;
}

type FactsOf = (counted: string, nextDate: string, holdsImports: number) => BookEventsFacts;

/** The facts a book-events row leads with (`SummariesRepository.bookEventsRead`). */
function readFacts(r: RowBinaryReader, factsOf: FactsOf): BookEventsFacts {
  return factsOf(String(r.u64()), r.string(), r.u8());
}

/** The other rows' copies of the facts: skipped, not decoded (a million rows a busy day). */
function skipFacts(r: RowBinaryReader): void {
  r.pos += 8;
  r.skipString();
  r.pos += 1;
}

/** One asset's output of a rollup run, for `SummariesRepository.writeMany`. */
export interface SummaryWrite {
  key: SummaryKey;
  day: SummaryDay;
  chunks: readonly SummaryChunk[];
  checkpoints: readonly BookCheckpoint[];
}

interface DayRow {
  day: string;
  version: string | number;
  base_version: string | number;
  engine_version: number;
  covered_ms: string;
  complete: number;
  events: string | number;
  start_state_hash: string;
  state: string;
  last_obs: string;
  checks: string;
  computed_ms: string;
}

const DAY_COLUMNS = `toString(event_date) AS day, version, base_version, engine_version,
  toUnixTimestamp64Milli(covered_until) AS covered_ms, complete, events, start_state_hash, state, last_obs, checks,
  toUnixTimestamp64Milli(computed_at) AS computed_ms`;

function toDay(r: DayRow): SummaryDay {
  return {
    date: r.day,
    version: Number(r.version),
    baseVersion: Number(r.base_version),
    engineVersion: Number(r.engine_version),
    coveredUntil: Number(r.covered_ms),
    complete: Number(r.complete) === 1,
    events: Number(r.events),
    startStateHash: r.start_state_hash,
    state: r.state,
    lastObs: r.last_obs,
    checks: r.checks,
    computedAt: Number(r.computed_ms),
  };
}

/** Only the key's fields (callers may pass richer objects). */
function keyParams(k: SummaryKey): SummaryKey {
  return { venue: k.venue, market: k.market, asset: k.asset };
}

/**
 * A stored day's checks as JSON: only that it is a JSON object is checked here; its shape is
 * checked by `BookChecker.resume` (stored data is outside input).
 */
function parseChecksJson(text: string): ChecksState | null {
  if (text === '') return null;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as ChecksState) : null;
  } catch {
    return null;
  }
}

/** The date's book events before {before} (FINAL: duplicates count once), as a scalar subquery. */
function countBeforeSql(table: string, where: string): string {
  return `(SELECT count() FROM ${table} FINAL WHERE ${where} AND event_date = {date:Date} AND event_ts < fromUnixTimestamp64Milli({before:Int64}, 'UTC'))`;
}

const KEY_COLUMNS = [['venue', 'String'], ['market', 'String'], ['asset', 'String'], ['event_date', 'Date']] as const;
const CHUNK_COLUMNS = [...KEY_COLUMNS, ['resolution', 'UInt16'], ['hour', "DateTime('UTC')"], ['version', 'UInt64'], ['engine_version', 'UInt16'], ['bucket_count', 'UInt32'], ['buckets', 'String']] as const;
const CHECKPOINT_COLUMNS = [...KEY_COLUMNS, ['events', 'UInt64'], ['at', "DateTime64(3, 'UTC')"], ['base_version', 'UInt64'], ['version', 'UInt64'], ['engine_version', 'UInt16'], ['state', 'String']] as const;

/**
 * How the rows of one summary table are written (`insertSummaryRows`): the text whose size
 * picks the format, and each row's columns after the key and date (KEY_COLUMNS) as a JSON
 * row's fields and as RowBinary, in `columns` order.
 */
interface SummaryRows<T> {
  name: string;
  columns: ReadonlyArray<readonly [string, string]>;
  text(c: T): string;
  json(c: T): Record<string, unknown>;
  binary(w: RowBinaryWriter, c: T): void;
}

const CHECKPOINT_ROWS: SummaryRows<BookCheckpoint> = {
  name: 'book_checkpoints',
  columns: CHECKPOINT_COLUMNS,
  text: (c) => c.state,
  json: (c) => ({ events: c.events, at: c.at, base_version: c.baseVersion, version: c.version, engine_version: c.engineVersion, state: c.state }),
  binary: (w, c) => {
    w.i64(c.events);
    w.i64(c.at);
    w.i64(c.baseVersion);
    w.i64(c.version);
    w.u16(c.engineVersion);
    w.string(c.state);
  },
};

const CHUNK_ROWS: SummaryRows<SummaryChunk> = {
  name: 'summary_chunks',
  columns: CHUNK_COLUMNS,
  text: (c) => c.buckets,
  json: (c) => ({ resolution: c.resolution, hour: Math.floor(c.hour / 1000), version: c.version, engine_version: c.engineVersion, bucket_count: c.bucketCount, buckets: c.buckets }),
  binary: (w, c) => {
    w.u16(c.resolution);
    w.u32(Math.floor(c.hour / 1000));
    w.i64(c.version);
    w.u16(c.engineVersion);
    w.u32(c.bucketCount);
    w.string(c.buckets);
  },
};

/** A row's leading columns (KEY_COLUMNS): the asset and its date (`YYYY-MM-DD`, as Date: days since 1970). */
function writeKey(w: RowBinaryWriter, key: SummaryKey, date: string): void {
  const days = Date.parse(`${date}T00:00:00Z`) / 86_400_000;
  if (!Number.isInteger(days) || days < 0 || days > 0xffff) throw new RangeError(`not a date the engine stores: ${date}`);
  w.string(key.venue);
  w.string(key.market);
  w.string(key.asset);
  w.u16(days);
}

/** See `SummariesRepository`'s constructor: about a quarter of a dense day's checkpoint states. */
export const ROW_BINARY_FROM_CHARS = 256 * 1024;

/** A RowBinary body's size for `rows` rows of `textChars` characters of text: UTF-8 of up to 3 bytes each, rarely; grown if short. */
function rowBytes(rows: number, textChars: number): number {
  return textChars + rows * 64 + 1024;
}

const KEY = 'venue = {venue:String} AND market = {market:String} AND asset = {asset:String}';

/**
 * The rollup worker's output and what the API reads back, plus the raw reads a rollup
 * needs. Rows are versioned (newest wins, read with FINAL); a day's chunks count only from
 * its base_version on (older ones are leftovers of an earlier full build).
 */
export class SummariesRepository {
  /**
   * @param rowBinaryFromChars chunks or checkpoints of a write whose texts hold at least this
   *   many characters go as RowBinary, fewer as JSON rows (see `insertChunks`); the stored
   *   rows are the same either way (summaries-write.int.test.ts).
   */
  constructor(
    private readonly ch: ClickHouse,
    private readonly rowBinaryFromChars = ROW_BINARY_FROM_CHARS,
  ) {}

  /**
   * Before a day is rolled up: imported records of events own capture stored since are
   * removed (capture after import, docs/rules/imports.md#which-copy-wins), so the day is
   * built from the capture's copy. Returns how many were removed (the day is then rebuilt).
   */
  async supersedeImported(key: SummaryKey, date: string): Promise<number> {
    if (!VENUE_STORAGE[key.venue].imports) return 0;
    return supersedeImported(this.ch, { market: key.market, asset: key.asset, date });
  }

  private async rows<T>(query: string, params: Record<string, unknown>): Promise<T[]> {
    const rs = await this.ch.client.query({ query, query_params: params, format: 'JSONEachRow' });
    return rs.json<T>();
  }

  async day(key: SummaryKey, date: string): Promise<SummaryDay | null> {
    const [r] = await this.rows<DayRow>(
      `SELECT ${DAY_COLUMNS} FROM ${this.ch.table('summary_days')} FINAL WHERE ${KEY} AND event_date = {date:Date}`,
      { ...keyParams(key), date },
    );
    return r === undefined ? null : toDay(r);
  }

  /** Rows of the dates in [from, to], ascending. */
  async days(key: SummaryKey, from: string, to: string): Promise<SummaryDay[]> {
    return (
      await this.rows<DayRow>(
        `SELECT ${DAY_COLUMNS} FROM ${this.ch.table('summary_days')} FINAL
          WHERE ${KEY} AND event_date >= {from:Date} AND event_date <= {to:Date} ORDER BY event_date`,
        { ...keyParams(key), from, to },
      )
    ).map(toDay);
  }

  /** The latest row before a date (the state a day starts from), or null. */
  async dayBefore(key: SummaryKey, date: string): Promise<SummaryDay | null> {
    const [r] = await this.rows<DayRow>(
      `SELECT ${DAY_COLUMNS} FROM ${this.ch.table('summary_days')} FINAL
        WHERE ${KEY} AND event_date < {date:Date} ORDER BY event_date DESC LIMIT 1`,
      { ...keyParams(key), date },
    );
    return r === undefined ? null : toDay(r);
  }

  /**
   * What a summary answer needs to know about stored days, in one round trip: the rows of
   * [from, to], the latest row before `from`, and the earliest open row up to `to`.
   */
  async window(key: SummaryKey, from: string, to: string): Promise<{ rows: SummaryDay[]; before: SummaryDay | null; firstOpen: SummaryDay | null }> {
    const t = this.ch.table('summary_days');
    const all = await this.rows<DayRow & { part: string }>(
      `SELECT 'in' AS part, ${DAY_COLUMNS} FROM ${t} FINAL WHERE ${KEY} AND event_date >= {from:Date} AND event_date <= {to:Date}
       UNION ALL
       SELECT * FROM (SELECT 'before' AS part, ${DAY_COLUMNS} FROM ${t} FINAL WHERE ${KEY} AND event_date < {from:Date} ORDER BY event_date DESC LIMIT 1)
       UNION ALL
       SELECT * FROM (SELECT 'open' AS part, ${DAY_COLUMNS} FROM ${t} FINAL WHERE ${KEY} AND event_date <= {to:Date} AND complete = 0 ORDER BY event_date LIMIT 1)`,
      { ...keyParams(key), from, to },
    );
    const rows = all.filter((r) => r.part === 'in').map(toDay).sort((a, b) => (a.date < b.date ? -1 : 1));
    const before = all.find((r) => r.part === 'before');
    const open = all.find((r) => r.part === 'open');
    return { rows, before: before ? toDay(before) : null, firstOpen: open ? toDay(open) : null };
  }

  /**
   * `window(key, date, date)`'s `rows` and `before` of several assets of one venue in one
   * read: per key at its index, the date's row (or null) and the latest row before it.
   */
  async dayAndBeforeMany(venue: Venue, date: string, keys: readonly SummaryKey[]): Promise<Array<{ row: SummaryDay | null; before: SummaryDay | null }>> {
    const t = this.ch.table('summary_days');
    const where = 'venue = {venue:String} AND market IN {ms:Array(String)} AND asset IN {as:Array(String)}';
    const all = await this.rows<DayRow & { part: string; m: string; a: string }>(
      `SELECT 'in' AS part, market AS m, asset AS a, ${DAY_COLUMNS} FROM ${t} FINAL WHERE ${where} AND event_date = {date:Date}
       UNION ALL
       SELECT * FROM (SELECT 'before' AS part, market AS m, asset AS a, ${DAY_COLUMNS} FROM ${t} FINAL WHERE ${where} AND event_date < {date:Date}
         ORDER BY event_date DESC LIMIT 1 BY market, asset)`,
      { venue, date, ms: [...new Set(keys.map((k) => k.market))], as: [...new Set(keys.map((k) => k.asset))] },
    );
    const at = new Map<string, { row: SummaryDay | null; before: SummaryDay | null }>(keys.map((k) => [`${k.market}\n${k.asset}`, { row: null, before: null }]));
    for (const r of all) {
      const slot = at.get(`${r.m}\n${r.a}`);
      if (slot === undefined) continue;
      if (r.part === 'in') slot.row = toDay(r);
      else slot.before = toDay(r);
    }
    return keys.map((k) => at.get(`${k.market}\n${k.asset}`)!);
  }

  /** Days whose rows need re-deriving: made by another engine version (at most `limit`). */
  async outdatedDays(engineVersion: number, limit: number): Promise<(SummaryKey & { date: string })[]> {
    return (
      await this.rows<{ venue: Venue; market: string; asset: string; day: string }>(
        `SELECT venue, market, asset, toString(event_date) AS day FROM ${this.ch.table('summary_days')} FINAL
          WHERE engine_version != {v:UInt16} ORDER BY event_date LIMIT {limit:UInt32}`,
        { v: engineVersion, limit },
      )
    ).map((r) => ({ venue: r.venue, market: r.market, asset: r.asset, date: r.day }));
  }

  /** Open days (not covered to their end) of dates before `beforeDate`: the sweep finalises them. */
  async openDaysBefore(beforeDate: string, limit: number): Promise<(SummaryKey & { date: string })[]> {
    return (
      await this.rows<{ venue: Venue; market: string; asset: string; day: string }>(
        `SELECT venue, market, asset, toString(event_date) AS day FROM ${this.ch.table('summary_days')} FINAL
          WHERE complete = 0 AND event_date < {d:Date} ORDER BY event_date LIMIT {limit:UInt32}`,
        { d: beforeDate, limit },
      )
    ).map((r) => ({ venue: r.venue, market: r.market, asset: r.asset, date: r.day }));
  }

  /**
   * The stored cross-checks of a market's asset-days in [from, to] (exchange A: every
   * outcome token; exchange B: the ticker), the newest row of each, ordered by date then
   * asset: what the coverage endpoint reports. `checks` is the parsed `ChecksState` JSON, or
   * null where the row has none or it is not JSON (a row written before migration 008);
   * validating its shape is the reader's (`BookChecker.resume` does).
   */
  async checksForMarket(
    venue: Venue,
    market: string,
    fromDate: string,
    toDate: string,
  ): Promise<Array<{ asset: string; date: string; coveredUntil: number; complete: boolean; checks: ChecksState | null }>> {
    const rows = await this.rows<{ asset: string; day: string; covered_ms: string; complete: number; checks: string }>(
      `SELECT asset, toString(event_date) AS day, toUnixTimestamp64Milli(covered_until) AS covered_ms, complete, checks
        FROM ${this.ch.table('summary_days')} FINAL
        WHERE venue = {venue:String} AND market = {market:String} AND event_date >= {from:Date} AND event_date <= {to:Date}
        ORDER BY event_date, asset`,
      { venue, market, from: fromDate, to: toDate },
    );
    return rows.map((r) => ({
      asset: r.asset,
      date: r.day,
      coveredUntil: Number(r.covered_ms),
      complete: Number(r.complete) === 1,
      checks: parseChecksJson(r.checks),
    }));
  }

  /**
   * Chunks at one resolution for some dates, hours in [fromHour, toHour) (ms), valid ones
   * only (version ≥ the date's base version), in time order.
   */
  async chunks(key: SummaryKey, bases: ReadonlyMap<string, number>, resolution: number, fromHour: number, toHour: number): Promise<SummaryChunk[]> {
    if (bases.size === 0) return [];
    const dates = [...bases.keys()];
    const rows = await this.rows<{ day: string; hour_s: string | number; version: string | number; engine_version: number; bucket_count: number; buckets: string }>(
      `SELECT toString(event_date) AS day, toUnixTimestamp(hour) AS hour_s, version, engine_version, bucket_count, buckets
        FROM ${this.ch.table('summary_chunks')} FINAL
        WHERE ${KEY} AND event_date IN {dates:Array(Date)} AND resolution = {r:UInt16}
          AND hour >= toDateTime({from:Int64}, 'UTC') AND hour < toDateTime({to:Int64}, 'UTC')
        ORDER BY hour`,
      { ...keyParams(key), dates, r: resolution, from: Math.floor(fromHour / 1000), to: Math.ceil(toHour / 1000) },
    );
    const out: SummaryChunk[] = [];
    for (const r of rows) {
      if (Number(r.version) < bases.get(r.day)!) continue;
      out.push({
        date: r.day,
        resolution,
        hour: Number(r.hour_s) * 1000,
        version: Number(r.version),
        engineVersion: Number(r.engine_version),
        bucketCount: Number(r.bucket_count),
        buckets: r.buckets,
      });
    }
    return out;
  }

  /** One hour's chunks at every resolution (valid ones), keyed by resolution: what an append continues. */
  async hourChunks(key: SummaryKey, date: string, baseVersion: number, hour: number): Promise<Map<number, SummaryChunk>> {
    const rows = await this.rows<{ resolution: number; version: string | number; engine_version: number; bucket_count: number; buckets: string }>(
      `SELECT resolution, version, engine_version, bucket_count, buckets FROM ${this.ch.table('summary_chunks')} FINAL
        WHERE ${KEY} AND event_date = {date:Date} AND hour = toDateTime({h:Int64}, 'UTC')`,
      { ...keyParams(key), date, h: Math.floor(hour / 1000) },
    );
    const out = new Map<number, SummaryChunk>();
    for (const r of rows) {
      if (Number(r.version) < baseVersion) continue;
      out.set(Number(r.resolution), { date, resolution: Number(r.resolution), hour, version: Number(r.version), engineVersion: Number(r.engine_version), bucketCount: Number(r.bucket_count), buckets: r.buckets });
    }
    return out;
  }

  /** Every stored day of an asset: its build (base version) and whether it is closed. */
  async dayBuilds(key: SummaryKey): Promise<DayBuild[]> {
    return (
      await this.rows<{ day: string; base_version: string | number; complete: number }>(
        `SELECT toString(event_date) AS day, base_version, complete FROM ${this.ch.table('summary_days')} FINAL WHERE ${KEY} ORDER BY event_date`,
        { ...keyParams(key) },
      )
    ).map((r) => ({ date: r.day, baseVersion: Number(r.base_version), complete: Number(r.complete) === 1 }));
  }

  /**
   * The checkpoints of one day build (and engine version): position (the day's events up to
   * it) and time, ascending. Key columns only: a state is read by `checkpointState`.
   */
  async checkpointPositions(key: SummaryKey, date: string, baseVersion: number, engineVersion: number): Promise<CheckpointPosition[]> {
    return (
      await this.rows<{ events: string | number; at_ms: string | number }>(
        `SELECT DISTINCT events, toUnixTimestamp64Milli(at) AS at_ms FROM ${this.ch.table('book_checkpoints')}
          WHERE ${KEY} AND event_date = {date:Date} AND base_version = {base:UInt64} AND engine_version = {ev:UInt16} ORDER BY events`,
        { ...keyParams(key), date, base: baseVersion, ev: engineVersion },
      )
    ).map((r) => ({ events: Number(r.events), at: Number(r.at_ms) }));
  }

  /** The book state of one checkpoint (rows of one build at one position hold the same book). */
  async checkpointState(key: SummaryKey, date: string, baseVersion: number, events: number): Promise<string | null> {
    // The values go into the text: a book answer's records after the checkpoint are read
    // beside this instead of after it (inline-params.ts).
    const rs = await this.ch.client.query({
      ...unchained(
        this.ch,
        `SELECT state FROM ${this.ch.table('book_checkpoints')}
          WHERE ${KEY} AND event_date = {date:Date} AND events = {events:UInt64} AND base_version = {base:UInt64} LIMIT 1`,
        { ...keyParams(key), date, events, base: baseVersion },
      ),
      format: 'JSONEachRow',
    });
    const [r] = await rs.json<{ state: string }>();
    return r?.state ?? null;
  }

  /**
   * A page of the checkpoint states of one day build: the positions from `fromEvents` on, in
   * order, at most `limit` of them, one state per position (as `checkpointState` reads each:
   * the rows of one build at one position hold the same book). A book reader keeps a hot
   * build's states, page by page, instead of one round trip per answer.
   */
  async checkpointStatesOf(key: SummaryKey, date: string, baseVersion: number, page: { fromEvents: number; limit: number }): Promise<Array<{ events: number; state: string }>> {
    const rs = await this.ch.client.query({
      ...unchained(
        this.ch,
        // `position`, not `events`: an alias of that name would stand for the column in WHERE and ORDER BY.
        `SELECT toString(events) AS position, state FROM ${this.ch.table('book_checkpoints')}
          WHERE ${KEY} AND event_date = {date:Date} AND base_version = {base:UInt64} AND events >= {from:UInt64}
          ORDER BY events LIMIT 1 BY events LIMIT {limit:UInt32}`,
        { ...keyParams(key), date, base: baseVersion, from: page.fromEvents, limit: page.limit },
      ),
      format: 'JSONEachRow',
    });
    return (await rs.json<{ position: string; state: string }>()).map((r) => ({ events: Number(r.position), state: r.state }));
  }

  /**
   * Writes a run's chunks and checkpoints, then its day row: a reader that sees the row (and
   * its base version) finds every chunk and checkpoint it refers to. The chunks and the
   * checkpoints go in at once: a run mostly waits for the engine's answers, so two inserts
   * under way together cost about one.
   */
  async write(key: SummaryKey, day: SummaryDay, chunks: readonly SummaryChunk[], checkpoints: readonly BookCheckpoint[] = []): Promise<void> {
    await this.writeMany([{ key, day, chunks, checkpoints }]);
  }

  /**
   * `write` of several assets' runs in one insert per table (the day rows last, as there):
   * on an engine busy with inserts, an insert's wait, not its rows, is what it costs.
   */
  async writeMany(writes: readonly SummaryWrite[]): Promise<void> {
    if (writes.length === 0) return;
    // Both settle before a failure is thrown: nothing of this run is still being written
    // when its retry starts.
    const settled = await Promise.allSettled([
      this.insertCheckpoints(writes.flatMap((w) => w.checkpoints.map((c) => ({ key: w.key, c })))),
      this.insertChunks(writes.flatMap((w) => w.chunks.map((c) => ({ key: w.key, c })))),
    ]);
    for (const r of settled) if (r.status === 'rejected') throw r.reason;
    await this.ch.client.insert({
      table: this.ch.table('summary_days'),
      format: 'JSONEachRow',
      values: writes.map(({ key, day }) => ({
        ...keyParams(key),
        event_date: day.date,
        version: day.version,
        base_version: day.baseVersion,
        engine_version: day.engineVersion,
        covered_until: day.coveredUntil,
        complete: day.complete ? 1 : 0,
        events: day.events,
        start_state_hash: day.startStateHash,
        state: day.state,
        last_obs: day.lastObs,
        checks: day.checks,
        computed_at: day.computedAt,
      })),
    });
  }

  // A busy day's chunks and checkpoints (megabytes of bucket and book texts for a dense day)
  // go as RowBinary: no JSON to make here and to parse in the engine. A small write (the
  // worker's run on a live day: a few chunks and checkpoints) goes as JSON rows: the
  // embedded engine's RowBinary insert is a file written, read and removed, which cost a
  // live run more than the JSON (writes p50 188 → 320 ms in the lag benchmark).
  private async insertSummaryRows<T extends { date: string }>(table: SummaryRows<T>, rows: ReadonlyArray<{ key: SummaryKey; c: T }>): Promise<void> {
    if (rows.length === 0) return;
    let text = 0;
    for (const { c } of rows) text += table.text(c).length;
    if (text < this.rowBinaryFromChars) {
      const values = rows.map(({ key, c }) => ({ ...keyParams(key), event_date: c.date, ...table.json(c) }));
      await this.ch.client.insert({ table: this.ch.table(table.name), format: 'JSONEachRow', values });
      return;
    }
    const w = new RowBinaryWriter(rowBytes(rows.length, text));
    for (const { key, c } of rows) {
      writeKey(w, key, c.date);
      table.binary(w, c);
    }
    await this.insertRows(table.name, table.columns, w.bytes());
  }

  private insertCheckpoints(rows: ReadonlyArray<{ key: SummaryKey; c: BookCheckpoint }>): Promise<void> {
    return this.insertSummaryRows(CHECKPOINT_ROWS, rows);
  }

  private insertChunks(rows: ReadonlyArray<{ key: SummaryKey; c: SummaryChunk }>): Promise<void> {
    return this.insertSummaryRows(CHUNK_ROWS, rows);
  }

  private async insertRows(table: string, columns: ReadonlyArray<readonly [string, string]>, body: Buffer): Promise<void> {
    await insertRowBinary(this.ch, `INSERT INTO ${this.ch.table(table)} (${columns.map(([c]) => c).join(', ')})`, columns, body);
  }

  /**
   * Raw partitions (per asset and date) that received rows in the last `lookbackMs`: what
   * the sweep marks for a counted run, so that a stored record whose notification was lost
   * is found (the rollup skips the late-data count on the notifications' hints otherwise).
   */
  async recentPartitions(lookbackMs: number, limit: number): Promise<(SummaryKey & { date: string })[]> {
    const part = (venue: Venue, table: string, market: string, asset: string) => `
      SELECT DISTINCT '${venue}' AS venue, ${market} AS market, ${asset} AS asset, toString(event_date) AS date FROM ${this.ch.table(table)}
        WHERE inserted_at >= now64(3) - toIntervalMillisecond({look:UInt32})`;
    return (
      await this.rows<SummaryKey & { date: string }>(
        `SELECT * FROM (${VENUES.map((v) => part(v, VENUE_STORAGE[v].table, VENUE_STORAGE[v].market, VENUE_STORAGE[v].asset)).join(' UNION ALL ')})
          ORDER BY date LIMIT {limit:UInt32}`,
        { look: lookbackMs, limit },
      )
    ).map((r) => ({ venue: r.venue, market: r.market, asset: r.asset, date: r.date }));
  }

  /** Dates in [from, to] that hold raw data of the market, ascending. */
  async dataDates(key: SummaryKey, from: string, to: string): Promise<string[]> {
    return (
      await this.rows<{ d: string }>(
        `SELECT DISTINCT toString(event_date) AS d FROM ${this.ch.table('market_dates')}
          WHERE venue = {venue:String} AND market = {market:String} AND event_date >= {from:Date} AND event_date <= {to:Date} ORDER BY d`,
        { venue: key.venue, market: key.market, from, to },
      )
    ).map((r) => r.d);
  }

  /** The exchange A market (condition id) an outcome token was rolled up under, or null. */
  async marketOfAsset(asset: string): Promise<string | null> {
    const [row] = await this.rows<{ m: string }>(
      `SELECT market AS m FROM ${this.ch.table('summary_days')} WHERE venue = 'exchange-a' AND asset = {asset:String} LIMIT 1`,
      { asset },
    );
    return row?.m ?? null;
  }

  /** The outcome tokens of an exchange A market that have raw data in [from, to]. */
  async assetsOf(market: string, from: string, to: string): Promise<string[]> {
    return (
      await this.rows<{ a: string }>(
        `SELECT DISTINCT asset_id AS a FROM ${this.ch.table('raw_exchange_a')}
          WHERE market = {market:String} AND event_date >= {from:Date} AND event_date <= {to:Date} ORDER BY a`,
        { market, from, to },
      )
    ).map((r) => r.a);
  }

  private bookFilter(key: SummaryKey): { table: string; where: string } {
    const store = VENUE_STORAGE[key.venue];
    return { table: this.ch.table(store.table), where: store.bookEventsWhere };
  }

  /** How many book events of a date lie before a time (FINAL: duplicates count once). */
  async countBookEvents(key: SummaryKey, date: string, beforeMs: number): Promise<number> {
    const { table, where } = this.bookFilter(key);
    const [r] = await this.rows<{ n: string | number }>(
      `SELECT ${countBeforeSql(table, where)} AS n`,
      { market: key.market, asset: key.asset, date, before: beforeMs },
    );
    return Number(r!.n);
  }

  /**
   * What a rollup run reads, in one engine round trip (a round trip, not the work, is what
   * a run mostly pays for on an engine busy with inserts): the date's book events with
   * event_ts in [fromMs, toMs) in serving order, as book rows (book-rows.ts), streamed (a busy
   * asset-day holds millions), together with the facts the run decides by (`facts`).
   *
   * The facts ride on every row as three leading columns (scalar subqueries, evaluated once)
   * and are known once the first row has arrived; a read without rows asks for them alone.
   * `events` must be read to its end or `close`d: it holds a stream session until then.
   */
  async bookEventsRead(key: SummaryKey, date: string, fromMs: number, toMs: number, countBeforeMs: number | null, opts: { hashes?: boolean } = {}): Promise<BookEventsRead> {
    // Without hashes (`opts.hashes` false): exchange A's rows as ROLLUP_ROW_COLUMNS, an entry
    // with a claim carrying where to fetch its hash instead (`claimHashes`).
    const hashes = opts.hashes !== false;
    const { query, params, factsOf, factsAlone } = this.bookEventsQuery(key, date, fromMs, toMs, countBeforeMs, '', hashes ? BOOK_ROW_COLUMNS : ROLLUP_ROW_COLUMNS);
    const records = hashes ? null : new RollupRecords(key.venue);
    // Every row carries the facts (the engine computes the scalar subqueries once): the
    // first row's are read, the others' skipped.
    const got: { facts: BookEventsFacts | null } = { facts: null };
    const time: RowTime = { ms: Number.NaN };
    const { first, batches, close } = await firstBatch(rowBinaryRows(
      streamQuery(this.ch, { query, query_params: params, format: BOOK_ROW_FORMAT }),
      (r) => {
        if (got.facts === null) got.facts = readFacts(r, factsOf);
        else skipFacts(r);
        return records === null ? readBookRow(key.venue, r, key.market, key.asset, time) : records.read(r, key.market, key.asset, time);
      },
      () => time.ms,
    ));
    if (first.done === true || got.facts === null) {
      const [r] = await this.rows<{ counted: string | number; next: string; imports: number }>(factsAlone, params);
      return { facts: factsOf(String(r!.counted), r!.next, Number(r!.imports)), events: (async function* () {})(), close };
    }
    const head = first.value;
    async function* events(): AsyncGenerator<Timed<BookRecord>> {
      yield head;
      yield* batches;
    }
    return { facts: got.facts, events: events(), close };
  }

  /**
   * `bookEventsRead` for a caller that applies each row as it is decoded (a closed day's
   * rollup, which holds nothing back): the same read and facts, the rows handed to a sink by
   * `fold` instead of yielded in arrays of records (book-rows.ts `foldBookRows`: most exchange
   * A rows are then never made into records).
   */
  async bookEventsFold(key: SummaryKey, date: string, fromMs: number, toMs: number, countBeforeMs: number | null, opts: { hashes?: boolean } = {}): Promise<BookEventsFold> {
    // Without hashes (`opts.hashes` false): exchange A's rows as ROLLUP_ROW_COLUMNS, their
    // entries' claim hashes fetched afterwards where a claim does not hold (`claimHashes`).
    const hashes = opts.hashes !== false;
    // A date merged into one part is read on one engine thread: the rows go to one consumer,
    // in order, no faster than it folds them, and one thread reading the part in order keeps
    // ahead of it, where a second splits the read in two streams merged again and, on the
    // embedded engine, takes a core from the fold (a dense day's rollup 5-12% faster on 2
    // cores). A date still in several parts keeps the default: one thread merging them all
    // was 20% slower (benchmarks/rollup-read.ts). What the parts are only picks the setting,
    // so a merge between this look and the read changes nothing in the rows.
    const settings = (await this.datePartsOf(key, date)) === 1 ? 'max_threads = 1' : '';
    const { query, params, factsOf, factsAlone } = this.bookEventsQuery(key, date, fromMs, toMs, countBeforeMs, settings, hashes ? BOOK_ROW_COLUMNS : ROLLUP_ROW_COLUMNS);
    const it = streamQuery(this.ch, { query, query_params: params, format: BOOK_ROW_FORMAT })[Symbol.asyncIterator]();
    const close = async () => void (await it.return?.(undefined));
    // The first row's facts, before the caller decides to fold (a server's chunk may end inside them).
    let head: Buffer | null = null;
    let facts: BookEventsFacts | undefined;
    try {
      for (;;) {
        const n = await it.next();
        if (n.done === true) break;
        head = head === null ? n.value : Buffer.concat([head, n.value]);
        facts = readWhole(head, (r) => readFacts(r, factsOf));
        if (facts !== undefined) break;
      }
    } catch (e) {
      await close();
      throw e;
    }
    if (facts === undefined) {
      if (head !== null && head.length > 0) throw new Error(`RowBinary stream ends inside a row (${head.length} bytes left)`);
      const [r] = await this.rows<{ counted: string | number; next: string; imports: number }>(factsAlone, params);
      return { facts: factsOf(String(r!.counted), r!.next, Number(r!.imports)), fold: async () => undefined, close };
    }
    const first = head!;
    async function* chunks(): AsyncGenerator<Buffer> {
      yield first;
      for (;;) {
        const n = await it.next();
        if (n.done === true) return;
        yield n.value;
      }
    }
    return {
      facts,
      fold: async (sink) => {
        try {
          await foldBookRows(chunks(), key.venue, key.market, key.asset, skipFacts, sink, hashes);
        } finally {
          await close();
        }
      },
      close,
    };
  }

  /**
   * The hashes a read without them (`bookEventsFold`, `bookEventsRead` or, per item,
   * `bookEventsReadMany` with `hashes` false) left to fetch for
   * the claims that did not hold (ClaimHashRef from its entries, book-rows.ts RowClaimHash),
   * in their order: the rows of their milliseconds alone (the sort key's market, date, time
   * and asset pick their granules), read with the fold's filter and order, within
   * [fromMs, toMs) as the fold read. Null when a row is not as the fold read it (the store
   * changed since): the caller reads the day again with its hashes.
   */
  async claimHashes(key: SummaryKey, date: string, fromMs: number, toMs: number, refs: readonly ClaimHashRef[]): Promise<string[] | null> {
    const columns = CLAIM_HASH_COLUMNS[key.venue];
    if (columns === undefined) throw new RangeError(`claimHashes: ${key.venue} rows carry no claims`);
    const rows = refs as readonly RowClaimHash[];
    if (rows.length === 0) return [];
    const { table, where } = this.bookFilter(key);
    const ms = [...new Set(rows.map((r) => r.ms))].sort((a, b) => a - b);
    for (const m of ms) if (!Number.isSafeInteger(m)) throw new RangeError(`claimHashes: not a time: ${m}`);
    // Literal times, so that the engine's key analysis takes each as a point of the sort key.
    const at = ms.map((m) => `fromUnixTimestamp64Milli(toInt64(${m}), 'UTC')`).join(', ');
    return claimHashesOf(
      streamQuery(this.ch, {
        query: `SELECT ${columns} FROM ${table} FINAL WHERE ${where} AND event_date = {date:Date}
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
          AND event_ts IN (${at})
          ORDER BY event_ts, ingest_seq, dedup_id`,
        query_params: { market: key.market, asset: key.asset, date, from: fromMs, to: toMs },
        format: BOOK_ROW_FORMAT,
      }),
      rows,
    );
  }

  /**
   * How many active parts of the venue's raw table hold rows of the date (a part's min_date
   * and max_date are its event_date range); 0 where the table keeps no parts here (a
   * cluster's Distributed table) or they cannot be listed.
   */
  private async datePartsOf(key: SummaryKey, date: string): Promise<number> {
    try {
      const [r] = await this.rows<{ n: string | number }>(
        `SELECT count() AS n FROM system.parts WHERE database = {db:String} AND table = {t:String} AND active AND min_date <= {date:Date} AND max_date >= {date:Date}`,
        { db: this.ch.database, t: VENUE_STORAGE[key.venue].table, date },
      );
      return Number(r?.n ?? 0);
    } catch {
      // Only a setting hangs on it: a server that will not show its parts to this user
      // (a restricted grant) keeps the default rather than failing the rollup.
      return 0;
    }
  }

  /**
   * The read of `bookEventsRead` (the facts in three leading columns), and the facts alone for
   * a read without rows. `settings`: a SETTINGS clause's text ('' for none); a setting changes
   * how the engine works, never the rows or their order (FINAL, and the ORDER BY places every
   * row of a book).
   */
  private bookEventsQuery(key: SummaryKey, date: string, fromMs: number, toMs: number, countBeforeMs: number | null, settings = '', columns = BOOK_ROW_COLUMNS) {
    const { table, where } = this.bookFilter(key);
    const count =
      countBeforeMs === null
        ? `toUInt64(0)`
        : // A scalar subquery is Nullable to the engine: the binary row needs the plain UInt64.
          `toUInt64(ifNull(${countBeforeSql(table, where)}, 0))`;
    const next = `ifNull((SELECT toString(event_date) FROM ${this.ch.table('market_dates')}
        WHERE venue = {venue:String} AND market = {market:String} AND event_date > {date:Date} ORDER BY event_date LIMIT 1), '')`;
    const imports = VENUE_STORAGE[key.venue].imports ? holdsImportsSql(this.ch) : `toUInt8(0)`;
    const params = { venue: key.venue, market: key.market, asset: key.asset, date, from: fromMs, to: toMs, before: countBeforeMs ?? 0 };
    const factsOf = (counted: string, nextDate: string, holdsImports: number): BookEventsFacts => ({
      countedBefore: countBeforeMs === null ? null : Number(counted),
      nextDataDate: nextDate === '' ? null : nextDate,
      holdsImports: holdsImports === 1,
    });
    const query = `SELECT ${count} AS counted, ${next} AS next, ${imports} AS imports, ${columns[key.venue]} FROM ${table} FINAL WHERE ${where} AND event_date = {date:Date}
        AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
        ORDER BY event_ts, ingest_seq, dedup_id${settings === '' ? '' : ` SETTINGS ${settings}`}`;
    return { query, params, factsOf, factsAlone: `SELECT ${count} AS counted, ${next} AS next, ${imports} AS imports` };
  }

  /**
   * `bookEventsRead` of several books of one venue and date in one read and one facts query
   * (sent together): each item's records in [fromMs, toMs) and its facts, as a read of it
   * alone would give them. Asset values must be distinct (an exchange A token belongs to one
   * market). The facts are known when this returns; `events` must be read to its end or
   * `close`d.
   */
  async bookEventsReadMany(venue: Venue, date: string, items: readonly BookEventsItem[], opts: { hashes?: boolean } = {}): Promise<BookEventsReadMany> {
    // Without hashes: as `bookEventsRead`'s (each item's claim hashes fetched by `claimHashes` of its key and window).
    const hashes = opts.hashes !== false;
    const records = hashes ? null : new RollupRecords(venue);
    const store = VENUE_STORAGE[venue];
    const as = items.map((i) => i.asset);
    if (new Set(as).size !== as.length) throw new RangeError('bookEventsReadMany: the same asset twice');
    const table = this.ch.table(store.table);
    const where = `${store.bookEventsWhereMany} AND event_date = {date:Date}`;
    const col = store.asset;
    const ms = items.map((i) => i.market);
    const params = {
      venue,
      date,
      ms,
      as,
      fr: items.map((i) => i.fromMs),
      to: items.map((i) => i.toMs),
      bf: items.map((i) => i.countBeforeMs ?? 0),
      // The span of every item's window: a bound on the sort key's event_ts that the engine
      // can prune parts and granules by (it cannot through the per-item `transform`).
      lo: Math.min(...items.map((i) => i.fromMs)),
      hi: Math.max(...items.map((i) => i.toMs)),
    };
    const at = (arr: string) => `fromUnixTimestamp64Milli(transform(${col}, {as:Array(String)}, {${arr}:Array(Int64)}, toInt64(0)), 'UTC')`;
    const parts = [
      `SELECT 'n' AS kind, market AS k, toString(min(event_date)) AS v FROM ${this.ch.table('market_dates')}
        WHERE venue = {venue:String} AND market IN {ms:Array(String)} AND event_date > {date:Date} GROUP BY market`,
    ];
    if (items.some((i) => i.countBeforeMs !== null)) parts.push(`SELECT 'c' AS kind, ${col} AS k, toString(count()) AS v FROM ${table} FINAL WHERE ${where} AND event_ts < ${at('bf')} GROUP BY k`);
    if (store.imports) parts.push(holdsImportsManySql(this.ch));
    const factsQuery = this.rows<{ kind: string; k: string; v: string }>(parts.join('\nUNION ALL\n'), params);
    // Each decoded row's item, in order: the rows of the array yielded next are the first
    // ones not taken yet (the decoder runs ahead of its consumer by at most one array).
    const itemOf: number[] = [];
    const time: RowTime = { ms: Number.NaN };
    const read = firstBatch(
      rowBinaryRows(
        streamQuery(this.ch, {
          query: `SELECT toUInt32(indexOf({as:Array(String)}, ${col})) AS item, ${(hashes ? BOOK_ROW_COLUMNS : ROLLUP_ROW_COLUMNS)[venue]} FROM ${table} FINAL WHERE ${where}
            AND event_ts >= fromUnixTimestamp64Milli({lo:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({hi:Int64}, 'UTC')
            AND event_ts >= ${at('fr')} AND event_ts < ${at('to')}
            ORDER BY item, event_ts, ingest_seq, dedup_id`,
          query_params: params,
          format: BOOK_ROW_FORMAT,
        }),
        (r) => {
          const item = r.u32() - 1;
          const it = items[item]!;
          const rec = records === null ? readBookRow(venue, r, it.market, it.asset, time) : records.read(r, it.market, it.asset, time, item);
          itemOf.push(item);
          return rec;
        },
        () => time.ms,
      ),
    );
    const [factRows, opened] = await Promise.allSettled([factsQuery, read]);
    if (opened.status === 'rejected') throw opened.reason;
    const { first, batches, close } = opened.value;
    if (factRows.status === 'rejected') {
      await close();
      throw factRows.reason;
    }
    const next = new Map<string, string>();
    const counted = new Map<string, number>();
    const imports = new Set<string>();
    for (const r of factRows.value) {
      if (r.kind === 'n') next.set(r.k, r.v);
      else if (r.kind === 'c') counted.set(r.k, Number(r.v));
      else imports.add(r.k);
    }
    const facts = items.map(
      (i): BookEventsFacts => ({
        countedBefore: i.countBeforeMs === null ? null : (counted.get(i.asset) ?? 0),
        nextDataDate: next.get(i.market) ?? null,
        holdsImports: imports.has(i.asset),
      }),
    );
    let taken = 0;
    async function* events(): AsyncGenerator<{ item: number; records: BookRecord[]; ms?: Float64Array | undefined }> {
      // An array of one item (nearly every one) is yielded as it is; one that spans items is cut.
      const split = function* (rows: Timed<BookRecord>) {
        const at = taken;
        taken += rows.length;
        let start = 0;
        for (let j = 1; j <= rows.length; j++) {
          if (j === rows.length || itemOf[at + j] !== itemOf[at + start]) {
            const item = itemOf[at + start]!;
            if (start === 0 && j === rows.length) yield { item, records: rows, ms: rows.ms };
            else yield { item, records: rows.slice(start, j), ms: rows.ms?.subarray(start, j) };
            start = j;
          }
        }
        // Every row decoded so far was yielded: the list starts again.
        if (taken === itemOf.length) {
          itemOf.length = 0;
          taken = 0;
        }
      };
      if (first.done === true) return;
      yield* split(first.value);
      for await (const b of batches) yield* split(b);
    }
    return { facts, events: events(), close };
  }

  /**
   * A date's book events with event_ts in [fromMs, toMs), in serving order, as book records
   * (book-rows.ts), a few hundred per array, streamed (a busy asset-day holds millions).
   */
  bookEvents(key: SummaryKey, date: string, fromMs: number, toMs: number): AsyncGenerator<BookRecord[]> {
    const { table, where } = this.bookFilter(key);
    return rowBinaryRows(
      streamQuery(this.ch, {
        query: `SELECT ${BOOK_ROW_COLUMNS[key.venue]} FROM ${table} FINAL WHERE ${where} AND event_date = {date:Date}
        AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
        ORDER BY event_ts, ingest_seq, dedup_id`,
        query_params: { market: key.market, asset: key.asset, date, from: fromMs, to: toMs },
        format: BOOK_ROW_FORMAT,
      }),
      (r) => readBookRow(key.venue, r, key.market, key.asset),
    );
  }
}
