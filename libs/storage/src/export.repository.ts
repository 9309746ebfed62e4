import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Venue } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { A_HASH_SQL } from './raw-codec.ts';
import { storedRecordSql } from './stored-record.ts';
import { sweepDeadProcessFiles } from './leftover-files.ts';
import type { RawInclude } from './market-data.repository.ts';
import { RAW_TABLE, SERVED_SOURCE_SQL } from './raw-events.repository.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/**
 * Bulk exports as Parquet, written by the engine's own Parquet output with typed columns
 * (docs/api.md, "Bulk export", "Parquet columns"). Raw records come in the long format of
 * the CSV pages, one row per price level change. Exact and typed:
 * - prices, sizes and deltas: DECIMAL(38, 18) (FIXED_LEN_BYTE_ARRAY(16)), null where the
 *   row has none: the venues' decimal strings exactly (20 integer digits, 18 decimals), where
 *   Float64 turned 0.1 into 0.1000000000000000055…;
 * - times: TIMESTAMP(MILLIS, isAdjustedToUTC = true), i.e. timestamp[ms, UTC], where Int64
 *   left every reader to guess the unit and the zone;
 * - ZSTD-compressed (DECIMAL_PRECISION and the rest below).
 *
 * The embedded engine writes the file itself (`INTO OUTFILE` into a temp file: its streamed
 * Parquet output is one file per chunk, not one file), which is then streamed and removed;
 * a server streams it over HTTP.
 */

/** Scale of the decimal columns: far more decimals than the venues send (a few). */
export const DECIMAL_SCALE = 18;
/** A decimal string (or '' / null) → Decimal(38, 18), null when empty. */
export const decimalOf = (e: string) => `toDecimal128OrNull(${e}, ${DECIMAL_SCALE})`;
/** Unix ms (Int64) → timestamp[ms, UTC]. */
export const timestampOfMs = (e: string) => `fromUnixTimestamp64Milli(${e}, 'UTC')`;

const A_LEVELS = `arrayConcat(
    arrayMap(x -> ('bid', JSONExtractString(x, 'price'), JSONExtractString(x, 'size')), JSONExtractArrayRaw(served_record, 'bids')),
    arrayMap(x -> ('ask', JSONExtractString(x, 'price'), JSONExtractString(x, 'size')), JSONExtractArrayRaw(served_record, 'asks')),
    arrayMap(x -> (multiIf(JSONExtractString(x, 'side') = 'BUY', 'bid', JSONExtractString(x, 'side') = 'SELL', 'ask', JSONExtractString(x, 'side')), JSONExtractString(x, 'price'), JSONExtractString(x, 'size')), JSONExtractArrayRaw(served_record, 'changes')))`;

const B_LEVELS = `if(record_type = 'delta',
    [(JSONExtractString(served_record, 'side'), JSONExtractString(served_record, 'price'), '', JSONExtractString(served_record, 'delta'))],
    arrayConcat(
      arrayMap(x -> ('yes', JSONExtractString(x, 1), JSONExtractString(x, 2), ''), JSONExtractArrayRaw(served_record, 'yes')),
      arrayMap(x -> ('no', JSONExtractString(x, 1), JSONExtractString(x, 2), ''), JSONExtractArrayRaw(served_record, 'no'))))`;

const num = decimalOf;

/** Rows of one UTC hour `{hour:UInt8}` of the date (with `event_date = {…:Date}`). */
const HOUR_FILTER = ' AND toHour(event_ts) = {hour:UInt8}';

/**
 * One market's raw records over dates from…to, or (`allMarkets`) every market's of one date
 * `from` = `to`: then exchange A rows lead with the market's condition id (exchange B rows
 * carry the ticker already), ordered market by market, each in serving order. With
 * `include.source`, a last column `source` (SERVED_SOURCE_SQL); without it, the SQL is as before.
 */
function rawSql(ch: ClickHouse, venue: Venue, allMarkets = false, oneHour = false, include: RawInclude = {}): string {
  const col = VENUE_STORAGE[venue].market;
  // With include.record, the stored record on the first row of each record (li = 1), '' on its other levels' rows.
  const source = `${include.source ? ', record_source AS source' : ''}${include.record ? ", if(li = 1, stored_record, '') AS record" : ''}`;
  const innerSource = `${include.source ? `, ${SERVED_SOURCE_SQL} AS record_source` : ''}${include.record ? `, ${storedRecordSql(venue)} AS stored_record` : ''}`;
  const where = `WHERE ${allMarkets ? '' : `${col} = {market:String} AND `}event_date >= {from:Date} AND event_date <= {to:Date}${oneHour ? HOUR_FILTER : ''}`;
  const lead = allMarkets ? `${col}, ` : '';
  return RAW_SQL[venue]({ ch, allMarkets, where, lead, source, innerSource });
}

/** The parts of a raw export query every venue's SELECT is built around. */
interface RawSqlParts {
  ch: ClickHouse;
  allMarkets: boolean;
  where: string;
  lead: string;
  source: string;
  innerSource: string;
}

/** Each venue's raw export SELECT (its record's columns, one row per level or change), keyed by venue. */
const RAW_SQL: { readonly [V in Venue]: (p: RawSqlParts) => string } = {
  'exchange-a': ({ ch, allMarkets, where, lead, source, innerSource }) => `SELECT ${allMarkets ? 'market AS condition_id, ' : ''}event_ts AS timestamp, asset_id, event_type, lv.1 AS side, ${num('lv.2')} AS price, ${num('lv.3')} AS size, record_hash AS hash,
        received_at${source}
      FROM (SELECT ${allMarkets ? 'market, ' : ''}event_date, event_ts, ingest_seq, dedup_id, asset_id, event_type, ${A_HASH_SQL} AS record_hash, received_at${innerSource}, ${VENUE_STORAGE['exchange-a'].record} AS served_record, ${A_LEVELS} AS l0,
              if(empty(l0), [('', '', '')], l0) AS levels
            FROM ${ch.table(RAW_TABLE['exchange-a'])} FINAL ${where})
      ARRAY JOIN levels AS lv, arrayEnumerate(levels) AS li
      ORDER BY ${lead}event_date, event_ts, ingest_seq, dedup_id, asset_id, event_type, li`,
  'exchange-b': ({ ch, where, lead, source, innerSource }) => `SELECT event_ts AS timestamp, ticker, record_type AS type, lv.1 AS side, ${num('lv.2')} AS price, ${num('lv.3')} AS size, ${num('lv.4')} AS delta,
      JSONExtract(served_record, 'seq', 'Nullable(Int64)') AS seq, JSONExtract(served_record, 'sid', 'Nullable(Int64)') AS sid,
      JSONExtract(served_record, 'expected_seq', 'Nullable(Int64)') AS expected_seq, received_at,
      if(JSONHas(served_record, 'data'), JSONExtractRaw(served_record, 'data'), '') AS data${source}
    FROM (SELECT event_date, event_ts, ingest_seq, dedup_id, ticker, record_type, received_at, ${VENUE_STORAGE['exchange-b'].record} AS served_record${innerSource}, ${B_LEVELS} AS l0,
            if(empty(l0), [('', '', '', '')], l0) AS levels
          FROM ${ch.table(RAW_TABLE['exchange-b'])} FINAL ${where})
    ARRAY JOIN levels AS lv, arrayEnumerate(levels) AS li
    ORDER BY ${lead}event_date, event_ts, ingest_seq, dedup_id, type, li`,
};

/**
 * ZSTD: smaller than Snappy at similar read speed, and what the anchors' own archives use;
 * pyarrow, polars, DuckDB, Spark read it (hyparquet with hyparquet-compressors). Row groups
 * of 100,000 rows: the writer holds one whole row group in memory (the default, 1,000,000
 * rows, held a day's export at once); one thread, since a market's ordered read is one
 * stream anyway.
 */
const PARQUET_SETTINGS = "output_format_parquet_compression_method = 'zstd', output_format_parquet_row_group_size = 100000, max_threads = 1";

/** The temp files `parquet` writes: `booktape-export-<pid>-<hex>.parquet`. */
const TEMP_FILE = /^booktape-export-(\d+)-[0-9a-f]{16}\.parquet$/;

export class ExportRepository {
  constructor(
    private readonly ch: ClickHouse,
    private readonly tempDir = tmpdir(),
  ) {}

  /**
   * Removes what exports of a process that died mid-build left behind: temp tables older
   * than `olderThanMs` (another API process may be building a younger one) and temp
   * Parquet files of processes no longer running. Returns how many of each it removed.
   */
  async sweep(olderThanMs: number): Promise<{ tables: number; files: number }> {
    const rs = await this.ch.client.query({
      query: `SELECT name FROM system.tables WHERE database = {db:String} AND startsWith(name, 'export_tmp_')
        AND metadata_modification_time <= now() - toIntervalSecond({s:UInt32})`,
      query_params: { db: this.ch.database, s: Math.ceil(olderThanMs / 1000) },
      format: 'JSONEachRow',
    });
    const tables = (await rs.json<{ name: string }>()).map((r) => r.name).filter((n) => /^export_tmp_[0-9a-f]{12}$/.test(n));
    for (const name of tables) await this.ch.client.command({ query: `DROP TABLE IF EXISTS ${this.ch.table(name)}` });
    return { tables: tables.length, files: await sweepDeadProcessFiles(this.tempDir, TEMP_FILE) };
  }

  /** One market's raw records of UTC dates `from`…`to` as a Parquet file, streamed. */
  rawParquet(venue: Venue, market: string, from: string, to: string, include: RawInclude = {}): Promise<Readable> {
    return this.parquet(rawSql(this.ch, venue, false, false, include), { market, from, to });
  }

  /** Every market's raw records of UTC date `date` (or of its `hour` only) as one Parquet file, streamed (rawSql). */
  rawDayParquet(venue: Venue, date: string, hour?: number): Promise<Readable> {
    return this.parquet(rawSql(this.ch, venue, true, hour !== undefined), { from: date, to: date, ...(hour !== undefined ? { hour } : {}) });
  }

  /**
   * The version of a venue's UTC dates `from`…`to` (or of `hour` of the one date): their
   * deduplicated stored-row count. Rows are only ever added and a duplicate adds nothing,
   * so a late row into them changes it.
   */
  async dayVersion(venue: Venue, from: string, to: string, hour?: number): Promise<number> {
    const rs = await this.ch.client.query({
      query: `SELECT count() AS n FROM ${this.ch.table(RAW_TABLE[venue])} FINAL WHERE event_date >= {from:Date} AND event_date <= {to:Date}${hour !== undefined ? HOUR_FILTER : ''}`,
      query_params: { from, to, ...(hour !== undefined ? { hour } : {}) },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string | number }>();
    return Number(row?.n ?? 0);
  }

  /**
   * The markets with raw records on UTC date `date` (or in its `hour`), sorted; with each exchange A market its
   * outcome tokens (exchange B: `asset` is '').
   */
  async dayMarkets(venue: Venue, date: string, hour?: number): Promise<Array<{ market: string; asset: string }>> {
    const where = `WHERE event_date = {date:Date}${hour !== undefined ? HOUR_FILTER : ''}`;
    const store = VENUE_STORAGE[venue];
    // A venue with outcome tokens lists each market's tokens; otherwise a market is its one book (asset '').
    const query = store.tokens
      ? `SELECT DISTINCT ${store.market} AS market, ${store.asset} AS asset FROM ${this.ch.table(store.table)} ${where} ORDER BY market, asset`
      : `SELECT DISTINCT ${store.market} AS market, '' AS asset FROM ${this.ch.table(store.table)} ${where} ORDER BY market`;
    const rs = await this.ch.client.query({ query, query_params: { date, ...(hour !== undefined ? { hour } : {}) }, format: 'JSONEachRow' });
    return rs.json<{ market: string; asset: string }>();
  }

  /**
   * Rows (JSON objects of `columns`, in order, typed by `types`) as a Parquet file: they are
   * written to a temporary table in batches, so the engine makes the file, then dropped.
   * A column's `out` is the expression it is written as (default: itself), e.g.
   * `decimalOf(name)` for a decimal kept as text in the table.
   */
  async rowsParquet(columns: ReadonlyArray<{ name: string; type: string; out?: string }>, batches: AsyncIterable<Record<string, unknown>[]>): Promise<Readable> {
    const table = this.ch.table(`export_tmp_${randomBytes(6).toString('hex')}`);
    await this.ch.client.command({ query: `CREATE TABLE ${table} (${columns.map((c) => `${c.name} ${c.type}`).join(', ')}, _n UInt64) ENGINE = MergeTree ORDER BY _n` });
    const drop = () => this.ch.client.command({ query: `DROP TABLE IF EXISTS ${table}` }).then(() => undefined);
    try {
      let n = 0;
      for await (const rows of batches) {
        if (rows.length === 0) continue;
        await this.ch.client.insert({ table, values: rows.map((r) => ({ ...r, _n: n++ })), format: 'JSONEachRow' });
      }
      const out = await this.parquet(`SELECT ${columns.map((c) => (c.out ? `${c.out} AS ${c.name}` : c.name)).join(', ')} FROM ${table} ORDER BY _n`, {});
      out.once('close', () => void drop().catch(() => undefined));
      return out;
    } catch (e) {
      await drop().catch(() => undefined);
      throw e;
    }
  }

  private async parquet(select: string, params: Record<string, unknown>): Promise<Readable> {
    const sql = `${select} SETTINGS ${PARQUET_SETTINGS}`;
    if (this.ch.mode === 'server') {
      const rs = await this.ch.client.query({ query: sql, query_params: params, format: 'Parquet' as never });
      return rs.stream() as unknown as Readable;
    }
    const file = path.join(this.tempDir, `booktape-export-${process.pid}-${randomBytes(8).toString('hex')}.parquet`);
    try {
      await this.ch.client.command({ query: `${select} INTO OUTFILE '${file}' FORMAT Parquet SETTINGS ${PARQUET_SETTINGS}`, query_params: params });
    } catch (e) {
      await unlink(file).catch(() => undefined);
      throw e;
    }
    const stream = createReadStream(file);
    stream.once('close', () => void unlink(file).catch(() => undefined));
    return stream;
  }
}
