import { stat } from 'node:fs/promises';
import path from 'node:path';
import { VENUES, type Venue } from '@booktape/domain';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/**
 * Import of PMXT v2 Polymarket hourly Parquet files into raw_exchange_a
 * (docs/rules/imports.md). The engine reads the file and converts every row to the typed
 * columns of a 2.1 record in one INSERT … SELECT: no row goes through JavaScript.
 *
 * A file is checked whole before anything is written (its schema, then every row), so a bad
 * file leaves nothing behind. The insert skips identities already stored for the file's
 * markets and hour (an earlier import's copy wins, and a re-run or a resumed import adds only
 * what is missing); importing the same file twice changes nothing.
 */

export const PMXT_FORMAT = 'pmxt-v2';
/** PMXT v2 archives are Polymarket's order books: exchange A's records, written to its raw table only. */
export const PMXT_VENUE: Venue = 'exchange-a';

/** The 16 columns and the types the engine reads them as (Parquet types in the comment). */
const COLUMNS: ReadonlyArray<readonly [name: string, type: string, family: RegExp]> = [
  ['timestamp_received', "DateTime64(3, 'UTC')", /^(Nullable\()?DateTime/], // timestamp[ms, UTC]
  ['timestamp', "DateTime64(3, 'UTC')", /^(Nullable\()?DateTime/],
  ['market', 'String', /^(Nullable\()?(Fixed)?String/], // fixed_size_binary[66]
  ['event_type', 'String', /^(Nullable\()?(LowCardinality\()?String/],
  ['asset_id', 'String', /^(Nullable\()?(LowCardinality\()?String/],
  ['bids', 'Nullable(String)', /^(Nullable\()?String/],
  ['asks', 'Nullable(String)', /^(Nullable\()?String/],
  ['price', 'Nullable(Decimal(9, 4))', /^(Nullable\()?Decimal/],
  ['size', 'Nullable(Decimal(18, 6))', /^(Nullable\()?Decimal/],
  ['side', 'Nullable(String)', /^(Nullable\()?(LowCardinality\()?String/],
  ['best_bid', 'Nullable(Decimal(9, 4))', /^(Nullable\()?Decimal/],
  ['best_ask', 'Nullable(Decimal(9, 4))', /^(Nullable\()?Decimal/],
  ['fee_rate_bps', 'Nullable(UInt16)', /^(Nullable\()?U?Int/],
  ['transaction_hash', 'Nullable(String)', /^(Nullable\()?(LowCardinality\()?String/],
  ['old_tick_size', 'Nullable(Decimal(9, 4))', /^(Nullable\()?Decimal/],
  ['new_tick_size', 'Nullable(Decimal(9, 4))', /^(Nullable\()?Decimal/],
];
const STRUCTURE = COLUMNS.map(([n, t]) => `${n} ${t}`).join(', ');
const KNOWN_TYPES = `('book', 'price_change', 'last_trade_price', 'tick_size_change')`;

/** A plain decimal the typed columns spell exactly (raw-codec.ts: at most 15 digits). */
const DEC = `'^(0|[1-9][0-9]*)(\\\\.[0-9]+)?$'`;
const MIN_TS = 100_000_000_000; // below: seconds (data.md "Event time")
const MAX_TS = 65_535 * 86_400_000; // the end of the Date type
const MAX_RECEIVED = 2 ** 41; // the horizon of the ingest sequence

export class ImportError extends Error {
  constructor(
    readonly file: string,
    /** What is wrong, without the file and row. */
    readonly reason: string,
    /** 0-based row of the file, where one row is at fault. */
    readonly row?: number,
  ) {
    super(`${file}${row === undefined ? '' : `, row ${row}`}: ${reason}`);
    this.name = 'ImportError';
  }
}

export interface ImportResult {
  file: string;
  source: string;
  /** The venue whose table the records went to (absent: exchange A, as PMXT). */
  venue?: Venue;
  /** Rows in the file. */
  rows: number;
  /** Rows of an event type the import does not store (counted, skipped). */
  skipped: number;
  /** What the skipped rows are, when not rows of event types the import does not store. */
  skippedWhat?: string;
  /** Records written now (rows whose identity was not stored yet). */
  inserted: number;
  /** Rows whose event was already stored (own capture, an earlier import or an earlier run of this one). */
  alreadyStored: number;
  /** Records of earlier imports in the file's markets and hours removed because own capture holds their event. */
  superseded: number;
  /** The (market, asset, UTC date) partitions the file touches: their summaries are to be rebuilt. */
  partitions: Array<{ market: string; asset: string; date: string; venue?: Venue }>;
  ms: number;
}

/** `import:<format>:<file name>` (docs/rules/imports.md#provenance). */
export function importSource(file: string, format = PMXT_FORMAT): string {
  return `import:${format}:${path.basename(file)}`;
}

/** Decimal column → its text without trailing zeros ("0.5000" → "0.5"), which toString gives. */
const text = (col: string) => `toString(assumeNotNull(${col}))`;
/** A decimal text's mantissa and scale (migration 012's layout). */
const mant = (t: string) => `toInt64(replaceOne(${t}, '.', ''))`;
const scale = (t: string) => `toUInt8(if(position(${t}, '.') > 0, length(${t}) - position(${t}, '.'), 0))`;
/** A plain decimal text that fits a mantissa of 15 digits. */
const plain = (t: string) => `(match(${t}, ${DEC}) AND length(replaceOne(${t}, '.', '')) <= 15)`;
const unitPrice = (t: string) => `(${plain(t)} AND toFloat64(${t}) <= 1)`;
const levelsOk = (col: string) =>
  `(isValidJSON(${col}) AND JSONType(${col}) = 'Array' AND arrayAll(l -> JSONType(l) = 'Array' AND JSONLength(l) = 2 AND JSONType(l, 1) = 'String' AND JSONType(l, 2) = 'String' AND ${unitPrice(
    'JSONExtractString(l, 1)',
  )} AND ${plain('JSONExtractString(l, 2)')}, JSONExtractArrayRaw(${col})))`;

/** Why a row cannot be imported ('' when it can): the first rule it breaks. */
const REASON = `multiIf(
  NOT match(market, '^0x[0-9a-fA-F]{64}$'), concat('market is not 0x + 64 hex digits: ', substring(market, 1, 80)),
  event_type NOT IN ${KNOWN_TYPES}, '',
  NOT match(asset_id, '^[0-9]{1,100}$'), concat('asset_id is not a decimal token id: ', substring(asset_id, 1, 80)),
  toUnixTimestamp64Milli(timestamp) < ${MIN_TS} OR toUnixTimestamp64Milli(timestamp) >= ${MAX_TS}, concat('timestamp outside the times the store holds: ', toString(timestamp)),
  toUnixTimestamp64Milli(timestamp_received) < 0 OR toUnixTimestamp64Milli(timestamp_received) >= ${MAX_RECEIVED}, concat('timestamp_received outside the times the store holds: ', toString(timestamp_received)),
  event_type = 'book' AND (bids IS NULL OR asks IS NULL), 'book without bids or asks',
  event_type = 'book' AND NOT ${levelsOk('assumeNotNull(bids)')}, 'bids is not a JSON array of ["price","size"] with plain decimals (price at most 1)',
  event_type = 'book' AND NOT ${levelsOk('assumeNotNull(asks)')}, 'asks is not a JSON array of ["price","size"] with plain decimals (price at most 1)',
  event_type IN ('price_change', 'last_trade_price') AND (price IS NULL OR size IS NULL OR side IS NULL), concat(event_type, ' without price, size or side'),
  event_type IN ('price_change', 'last_trade_price') AND side NOT IN ('BUY', 'SELL'), concat('side is neither BUY nor SELL: ', substring(assumeNotNull(side), 1, 20)),
  event_type IN ('price_change', 'last_trade_price') AND NOT (${unitPrice(text('price'))}), concat('price is not between 0 and 1: ', ${text('price')}),
  event_type IN ('price_change', 'last_trade_price') AND NOT (${plain(text('size'))}), concat('size is negative or too long: ', ${text('size')}),
  event_type = 'price_change' AND best_bid IS NOT NULL AND NOT (${unitPrice(text('best_bid'))}), concat('best_bid is not between 0 and 1: ', ${text('best_bid')}),
  event_type = 'price_change' AND best_ask IS NOT NULL AND NOT (${unitPrice(text('best_ask'))}), concat('best_ask is not between 0 and 1: ', ${text('best_ask')}),
  event_type = 'tick_size_change' AND (old_tick_size IS NULL OR new_tick_size IS NULL), 'tick_size_change without old_tick_size or new_tick_size',
  event_type = 'tick_size_change' AND NOT (${unitPrice(text('old_tick_size'))} AND ${unitPrice(text('new_tick_size'))}), 'tick sizes are not between 0 and 1',
  '')`;

/** The engine's `file(…)` of the path: only for the embedded engine, which reads local files. */
function fileFn(file: string): string {
  return `file(${sqlString(file)}, 'Parquet', ${sqlString(STRUCTURE)})`;
}

type Params = Record<string, unknown>;

async function rows<T>(ch: ClickHouse, query: string, params: Params = {}): Promise<T[]> {
  return (await ch.client.query({ query, format: 'JSONEachRow', query_params: params })).json<T>();
}

/** The file's own schema must be PMXT v2's: every column present, of the kind expected. */
async function checkSchema(ch: ClickHouse, file: string): Promise<void> {
  let described: Array<{ name: string; type: string }>;
  try {
    described = await rows(ch, `DESCRIBE file(${sqlString(file)}, 'Parquet')`);
  } catch (e) {
    throw new ImportError(file, `not a readable Parquet file (${firstLine(e)})`);
  }
  const have = new Map(described.map((c) => [c.name, c.type]));
  const missing = COLUMNS.filter(([n]) => !have.has(n)).map(([n]) => n);
  if (missing.length > 0) throw new ImportError(file, `not a PMXT v2 file: missing column(s) ${missing.join(', ')}`);
  for (const [n, , family] of COLUMNS) {
    const t = have.get(n)!;
    if (!family.test(t)) throw new ImportError(file, `not a PMXT v2 file: column ${n} is ${t}`);
  }
}

function firstLine(e: unknown): string {
  return String((e as Error).message ?? e).split('\n')[0]!.slice(0, 300);
}

interface Scan {
  rows: string;
  known: string;
  bad: string;
  bad_row: string;
  bad_reason: string;
  min_ts: string;
  max_ts: string;
  /** The file's markets (lower case), read once here: the store reads below are scoped to them. */
  markets: string[];
}

/**
 * Imports one PMXT v2 file into raw_exchange_a. Throws ImportError (naming the file and, for
 * a bad row, the row) before writing anything when the file cannot be imported whole.
 */
export async function importPmxtFile(ch: ClickHouse, file: string): Promise<ImportResult> {
  const started = Date.now();
  const source = importSource(file);
  if (ch.mode !== 'embedded') throw new ImportError(file, 'import reads files through the embedded engine; with a ClickHouse server (CLICKHOUSE_URL) it is not available yet');
  const size = await stat(file).then(
    (s) => s.size,
    (e: NodeJS.ErrnoException) => {
      throw new ImportError(file, e.code === 'ENOENT' ? 'no such file' : firstLine(e));
    },
  );
  if (size === 0) throw new ImportError(file, 'empty file (0 bytes): not Parquet (an hour without events is a Parquet file with no rows)');
  await checkSchema(ch, file);
  const result: ImportResult = { file, source, rows: 0, skipped: 0, inserted: 0, alreadyStored: 0, superseded: 0, partitions: [], ms: 0 };

  let scan: Scan;
  try {
    [scan] = (await rows<Scan>(
      ch,
      `SELECT toString(count()) AS rows, toString(countIf(event_type IN ${KNOWN_TYPES})) AS known,
         toString(countIf(reason != '')) AS bad, toString(minIf(rn, reason != '')) AS bad_row, argMinIf(reason, rn, reason != '') AS bad_reason,
         toString(minIf(toUnixTimestamp64Milli(timestamp), event_type IN ${KNOWN_TYPES})) AS min_ts,
         toString(maxIf(toUnixTimestamp64Milli(timestamp), event_type IN ${KNOWN_TYPES})) AS max_ts,
         arraySort(groupUniqArray(lower(market))) AS markets
       FROM (SELECT _row_number AS rn, *, ${REASON} AS reason FROM ${fileFn(file)})`,
    )) as [Scan];
  } catch (e) {
    throw new ImportError(file, `cannot read the rows (${firstLine(e)})`);
  }
  result.rows = Number(scan.rows);
  result.skipped = result.rows - Number(scan.known);
  if (Number(scan.bad) > 0) throw new ImportError(file, `${scan.bad_reason} (${scan.bad} bad row(s) in all; nothing imported)`, Number(scan.bad_row));
  if (Number(scan.known) === 0) {
    result.ms = Date.now() - started;
    return result;
  }

  const table = ch.table('raw_exchange_a');
  // Imported copies (of earlier imports) of events captured since go first (own capture first).
  result.superseded = await supersedeWhere(ch, storedScope(scan), scopeParams(scan));
  const before = await storedCount(ch, file, scan);
  // The capture's identities are computed only where the capture holds records (a FINAL read).
  const captured = await holds(ch, storedScope(scan), `source = ''`, scopeParams(scan));
  await ch.client.command({ query: insertSql(table, file, source, scan, captured), query_params: scopeParams(scan) });
  const after = await storedCount(ch, file, scan);
  result.inserted = after - before;
  result.alreadyStored = Number(scan.known) - result.inserted;
  result.partitions = await rows<{ market: string; asset: string; date: string }>(
    ch,
    `SELECT DISTINCT lower(market) AS market, asset_id AS asset, toString(toDate(timestamp)) AS date
     FROM ${fileFn(file)} WHERE event_type IN ${KNOWN_TYPES} ORDER BY market, asset, date`,
  );
  result.ms = Date.now() - started;
  return result;
}

/**
 * The rule's identities (docs/rules/imports.md#matching-a-captured-record) of the own-capture
 * records (`source = ''`) that `where` selects, one per level of a `price_change` frame and
 * one per other record, in the engine: the capture's typed columns (or, for a record kept
 * whole in `residue`, that JSON) give the same text the import hashes (decimals as values
 * without trailing zeros; a book's levels as spelled), and n numbers equal levels in the
 * capture's order (ingest sequence, then the level's place in its frame). Read with FINAL:
 * two copies of one captured frame (two workers) are one.
 */
function capturedIdentitiesSql(table: string, where: string): string {
  // A typed decimal as its value's text: 0.50 (50, 2) → "0.5", 200.000000 → "200".
  const frac = (m: string, s: string) => `trim(TRAILING '0' FROM leftPad(toString(abs(${m}) % intExp10(least(${s}, 18))), ${s}, '0'))`;
  const value = (m: string, s: string) => `if(${s} = 0, toString(${m}), concat(toString(intDiv(abs(${m}), intExp10(least(${s}, 18)))), if(${frac(m, s)} = '', '', concat('.', ${frac(m, s)}))))`;
  // A typed decimal as spelled (the served record's text, migration 012's `rebuilt`).
  const spelled = (m: string, s: string) => `if(${s} = 0, toString(${m}), concat(toString(intDiv(abs(${m}), intExp10(least(${s}, 18)))), '.', leftPad(toString(abs(${m}) % intExp10(least(${s}, 18))), ${s}, '0')))`;
  // A venue field as decimal text without trailing zeros: from `extra`, or the residue's JSON.
  const valueText = (t: string) => `if(position(${t}, '.') > 0, trim(TRAILING '.' FROM trim(TRAILING '0' FROM ${t})), ${t})`;
  const field = (json: string, name: string) => `JSONExtractString(${json}, '${name}')`;
  const book = (side: 'bid' | 'ask') =>
    `arrayStringConcat(arrayMap((p, ps, z, zs) -> concat(${spelled('p', 'ps')}, ':', ${spelled('z', 'zs')}), ${side}_price, ${side}_price_scale, ${side}_size, ${side}_size_scale), ',')`;
  const bookJson = (side: 'bids' | 'asks') => `arrayStringConcat(arrayMap(l -> concat(JSONExtractString(l, 'price'), ':', JSONExtractString(l, 'size')), JSONExtractArrayRaw(residue, '${side}')), ',')`;
  const one = (body: string) => `[(toUInt32(1), ${body})]`;
  const trade = (json: string) => one(`concat(${field(json, 'side')}, '|', ${valueText(field(json, 'price'))}, '|', ${valueText(field(json, 'size'))})`);
  const tick = (json: string) => one(`concat(${valueText(field(json, 'old_tick_size'))}, '|', ${valueText(field(json, 'new_tick_size'))})`);
  const extraJson = `concat('{', extra, '}')`;
  // The typed columns; a record kept whole in residue is read from it, as books read it (book-rows.ts).
  const typed = `multiIf(
      event_type = 'price_change', arrayMap((i, p, ps, sd, z, zs) -> (toUInt32(i), concat(toString(sd), '|', ${value('p', 'ps')}, '|', ${value('z', 'zs')})),
        arrayEnumerate(chg_price), chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale),
      event_type = 'book', ${one(`concat(${book('bid')}, '|', ${book('ask')})`)},
      event_type = 'last_trade_price', ${trade(extraJson)},
      event_type = 'tick_size_change', ${tick(extraJson)},
      CAST([], 'Array(Tuple(UInt32, String))'))`;
  const fromResidue = `multiIf(
      event_type = 'price_change', arrayMap((i, c) -> (toUInt32(i), concat(${field('c', 'side')}, '|', ${valueText(field('c', 'price'))}, '|', ${valueText(field('c', 'size'))})),
        arrayEnumerate(JSONExtractArrayRaw(residue, 'changes')), JSONExtractArrayRaw(residue, 'changes')),
      event_type = 'book', ${one(`concat(${bookJson('bids')}, '|', ${bookJson('asks')})`)},
      event_type = 'last_trade_price', ${trade('residue')},
      event_type = 'tick_size_change', ${tick('residue')},
      CAST([], 'Array(Tuple(UInt32, String))'))`;
  const levels = `if(residue = '', ${typed}, ${fromResidue})`;
  return `
    SELECT lower(hex(SHA1(concat(k, '|', toString(row_number() OVER (PARTITION BY k ORDER BY ingest_seq, lvl)))))) AS id
    FROM (
      SELECT concat('pmxt1|', asset_id, '|', toString(toUnixTimestamp64Milli(event_ts)), '|', event_type, '|', lv.2) AS k, ingest_seq, lv.1 AS lvl
      FROM ${table} FINAL
      ARRAY JOIN ${levels} AS lv
      WHERE source = '' AND ${where}
    )`;
}

/** Whether raw_exchange_a holds a record `cond` and `where` select: reads until the first, without FINAL. */
async function holds(ch: ClickHouse, where: string, cond: string, params: Params = {}): Promise<boolean> {
  return (await rows<{ x: number }>(ch, `SELECT 1 AS x FROM ${ch.table('raw_exchange_a')} WHERE ${cond} AND ${where} LIMIT 1`, params)).length > 0;
}

/**
 * Capture after import (docs/rules/imports.md#which-copy-wins): removes the imported records
 * whose identity an own-capture record of the same event holds, among the records `where`
 * selects (whole assets and milliseconds: a partition, or an import's markets and hours).
 * Only imported rows are removed, and only where the capture's copy is stored, so no event
 * is lost. Returns how many were removed; a scope without imported records costs one read.
 * `params`: the values `where` binds.
 */
async function supersedeWhere(ch: ClickHouse, where: string, params: Params = {}): Promise<number> {
  const table = ch.table('raw_exchange_a');
  // The common cases (a captured day without imports, an imported hour without capture) read
  // one column of the scope until the first match, without FINAL.
  if (!(await holds(ch, where, `source != ''`, params)) || !(await holds(ch, where, `source = ''`, params))) return 0;
  const count = async () => Number((await rows<{ n: string }>(ch, `SELECT toString(count()) AS n FROM ${table} FINAL WHERE source != '' AND ${where}`, params))[0]?.n ?? 0);
  const before = await count();
  await ch.client.command({ query: `DELETE FROM ${table} WHERE source != '' AND ${where} AND dedup_id IN (${capturedIdentitiesSql(table, where)})`, query_params: params });
  return before - (await count());
}

/** supersedeWhere for one asset-day (the rollup's partition) of exchange A. */
export function supersedeImported(ch: ClickHouse, p: { market: string; asset: string; date: string }): Promise<number> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(p.date)) return Promise.reject(new RangeError(`not a date: ${p.date}`));
  return supersedeWhere(ch, `market = ${sqlString(p.market)} AND event_date = toDate(${sqlString(p.date)}) AND asset_id = ${sqlString(p.asset)}`);
}

/**
 * Whether the exchange A asset-day bound as {market:String}, {asset:String}, {date:Date}
 * holds imported records (UInt8), as a scalar subquery for another read: `holds`' first
 * check of `supersedeImported` (read until the first, without FINAL), asked without a round
 * trip of its own. Only when it is 1 has `supersedeImported` anything to do.
 */
export function holdsImportsSql(ch: ClickHouse): string {
  return `toUInt8(ifNull((SELECT count() FROM (SELECT 1 FROM ${ch.table('raw_exchange_a')}
    WHERE market = {market:String} AND event_date = {date:Date} AND asset_id = {asset:String} AND source != '' LIMIT 1)), 0))`;
}

/**
 * holdsImportsSql for the books of a read of several (`{ms:Array(String)}` markets and
 * `{as:Array(String)}` assets at the same index, `{date:Date}` bound): the assets whose day
 * holds imported records, one row each (`kind` 'i', `k` the asset), for a UNION of facts.
 */
export function holdsImportsManySql(ch: ClickHouse): string {
  return `SELECT 'i' AS kind, asset_id AS k, '1' AS v FROM ${ch.table('raw_exchange_a')}
    WHERE market IN {ms:Array(String)} AND asset_id IN {as:Array(String)} AND transform(asset_id, {as:Array(String)}, {ms:Array(String)}, '') = market
      AND event_date = {date:Date} AND source != '' GROUP BY asset_id`;
}

/** The exchange A partitions among `parts` that hold imported records (one read; other venues' are ignored). */
export async function partitionsWithImports(ch: ClickHouse, parts: ReadonlyArray<{ venue: string; market: string; asset: string; date: string }>): Promise<Array<{ market: string; asset: string; date: string }>> {
  const a = parts.filter((p) => p.venue === PMXT_VENUE && /^\d{4}-\d{2}-\d{2}$/.test(p.date));
  if (a.length === 0) return [];
  const tuples = a.map((p) => `(${sqlString(p.market)}, ${sqlString(p.asset)}, toDate(${sqlString(p.date)}))`).join(', ');
  const markets = [...new Set(a.map((p) => sqlString(p.market)))].join(', ');
  return rows<{ market: string; asset: string; date: string }>(
    ch,
    `SELECT DISTINCT market, asset_id AS asset, toString(event_date) AS date FROM ${ch.table('raw_exchange_a')}
     WHERE market IN (${markets}) AND (market, asset_id, event_date) IN (${tuples}) AND source != ''`,
  );
}

/**
 * The records stored (FINAL: a stored duplicate counts once) in `parts`, asset-days of any
 * venue, one read per venue that has some: what an import's insert added is the count after
 * it less the count before.
 */
export async function storedInPartitions(ch: ClickHouse, parts: ReadonlyArray<{ venue: Venue; market: string; asset: string; date: string }>): Promise<number> {
  let n = 0;
  for (const venue of VENUES) {
    const ps = parts.filter((p) => p.venue === venue);
    if (ps.length === 0) continue;
    const tuples = ps.map((p) => `(${sqlString(p.market)}, ${sqlString(p.asset)}, toDate(${sqlString(p.date)}))`).join(', ');
    const { table, market, asset } = VENUE_STORAGE[venue];
    const [r] = await rows<{ n: string }>(ch, `SELECT toString(count()) AS n FROM ${ch.table(table)} FINAL WHERE (${market}, ${asset}, event_date) IN (${tuples})`);
    n += Number(r?.n ?? 0);
  }
  return n;
}

/**
 * The file's markets and hour in the store (what the insert's anti-join reads). The markets
 * are bound (scopeParams), not written into the query: an hour of a few thousand markets
 * would exceed the engine's query size (max_query_size, 256 KiB) as literals.
 */
function storedScope(scan: Scan): string {
  return `market IN {markets:Array(String)}
    AND event_date BETWEEN toDate(fromUnixTimestamp64Milli(${Number(scan.min_ts)}, 'UTC')) AND toDate(fromUnixTimestamp64Milli(${Number(scan.max_ts)}, 'UTC'))
    AND event_ts BETWEEN fromUnixTimestamp64Milli(${Number(scan.min_ts)}, 'UTC') AND fromUnixTimestamp64Milli(${Number(scan.max_ts)}, 'UTC')`;
}

const scopeParams = (scan: Scan): Params => ({ markets: scan.markets });

async function storedCount(ch: ClickHouse, file: string, scan: Scan): Promise<number> {
  const [r] = await rows<{ n: string }>(ch, `SELECT toString(count()) AS n FROM ${ch.table('raw_exchange_a')} FINAL WHERE ${storedScope(scan)} AND source = ${sqlString(importSource(file))}`, scopeParams(scan));
  return Number(r?.n ?? 0);
}

/**
 * The conversion (docs/rules/imports.md#pmxt-v2-polymarket-hourly-parquet), in three levels:
 * the repeat number n (a window function over the file's columns, in file order); the
 * row's fields as texts, its identity and ingest sequence; the typed columns of the record.
 */
function insertSql(table: string, file: string, source: string, scan: Scan, captured: boolean): string {
  const levels = (col: string) => `arrayMap(l -> (JSONExtractString(l, 1), JSONExtractString(l, 2)), JSONExtractArrayRaw(ifNull(${col}, '[]')))`;
  const levelKey = (lv: string) => `arrayStringConcat(arrayMap(l -> concat(l.1, ':', l.2), ${lv}), ',')`;
  const opt = (col: string) => `if(${col} IS NULL, '', ${text(col)})`;
  const member = (name: string, value: string) => `concat(',"${name}":', toJSONString(${value}))`;
  // The repeat number n is a window function over the file's own columns (narrow rows:
  // sorting them is cheap), in file order. The ingest sequence needs none: the row's number
  // in the file below the receive millisecond orders the rows of one millisecond as the file
  // does, and no offset below 2^23 can reach the next millisecond's numbers.
  const numbered = `
    SELECT *, _row_number AS rn,
      row_number() OVER (PARTITION BY asset_id, timestamp, event_type, side, price, size, bids, asks, old_tick_size, new_tick_size ORDER BY _row_number) AS n
    FROM ${fileFn(file)}
    WHERE event_type IN ${KNOWN_TYPES}`;
  const fields = `
    SELECT lower(market) AS mkt, asset_id AS asset, event_type AS type, timestamp AS ts, timestamp_received AS received,
      ${levels('bids')} AS bl, ${levels('asks')} AS al,
      ${opt('price')} AS px, ${opt('size')} AS sz, ifNull(side, '') AS sd, ${opt('best_bid')} AS bb, ${opt('best_ask')} AS ba,
      ${opt('old_tick_size')} AS old_tick, ${opt('new_tick_size')} AS new_tick, fee_rate_bps AS fee, transaction_hash AS tx,
      lower(hex(SHA1(concat('pmxt1|', asset, '|', toString(toUnixTimestamp64Milli(ts)), '|', type, '|', multiIf(
        type = 'book', concat(${levelKey('bl')}, '|', ${levelKey('al')}),
        type = 'tick_size_change', concat(old_tick, '|', new_tick),
        concat(sd, '|', px, '|', sz)), '|', toString(n))))) AS dedup_id,
      bitShiftLeft(toUInt64(toUnixTimestamp64Milli(received)), 23) + bitAnd(toUInt64(rn), 8388607) AS seq
    FROM (${numbered})`;
  const pc = `type = 'price_change'`;
  const one = (v: string, empty: string) => `if(${pc}, [${v}], ${empty})`;
  const claim = (t: string) => [`if(${t} = '', 0, ${mant(t)})`, `if(${t} = '', toUInt8(255), ${scale(t)})`];
  const extra = `multiIf(
      type = 'last_trade_price', substring(concat(${member('price', 'px')}, ${member('size', 'sz')}, if(fee IS NULL, '', ${member('fee_rate_bps', 'toString(assumeNotNull(fee))')}), ${member('side', 'sd')}, if(tx IS NULL, '', ${member('transaction_hash', 'assumeNotNull(tx)')})), 2),
      type = 'tick_size_change', substring(concat(${member('old_tick_size', 'old_tick')}, ${member('new_tick_size', 'new_tick')}), 2),
      '')`;
  return `
    INSERT INTO ${table}
      (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, extra,
       bid_price, bid_price_scale, bid_size, bid_size_scale, ask_price, ask_price_scale, ask_size, ask_size_scale,
       chg_price, chg_price_scale, chg_side, chg_size, chg_size_scale, chg_hash, chg_best_bid, chg_best_bid_scale, chg_best_ask, chg_best_ask_scale,
       residue, received_at, worker_id, kafka_partition, kafka_offset, source)
    SELECT mkt, toDate(ts), ts, asset, type, dedup_id, seq,
      if(type = 'last_trade_price' AND ifNull(tx, '') != '', assumeNotNull(tx), dedup_id), ${extra},
      arrayMap(l -> ${mant('l.1')}, bl), arrayMap(l -> ${scale('l.1')}, bl), arrayMap(l -> ${mant('l.2')}, bl), arrayMap(l -> ${scale('l.2')}, bl),
      arrayMap(l -> ${mant('l.1')}, al), arrayMap(l -> ${scale('l.1')}, al), arrayMap(l -> ${mant('l.2')}, al), arrayMap(l -> ${scale('l.2')}, al),
      ${one(mant('px'), 'CAST([], \'Array(Int64)\')')}, ${one(scale('px'), 'CAST([], \'Array(UInt8)\')')},
      ${one(`CAST(sd, 'Enum8(\\'\\' = 0, \\'BUY\\' = 1, \\'SELL\\' = 2)')`, `CAST([], 'Array(Enum8(\\'\\' = 0, \\'BUY\\' = 1, \\'SELL\\' = 2))')`)},
      ${one(mant('sz'), 'CAST([], \'Array(Int64)\')')}, ${one(scale('sz'), 'CAST([], \'Array(UInt8)\')')}, ${one("''", 'CAST([], \'Array(String)\')')},
      ${one(claim('bb')[0]!, 'CAST([], \'Array(Int64)\')')}, ${one(claim('bb')[1]!, 'CAST([], \'Array(UInt8)\')')},
      ${one(claim('ba')[0]!, 'CAST([], \'Array(Int64)\')')}, ${one(claim('ba')[1]!, 'CAST([], \'Array(UInt8)\')')},
      '', received, 0, -1, -1, ${sqlString(source)}
    FROM (${fields})
    WHERE dedup_id NOT IN (SELECT dedup_id FROM ${table} WHERE ${storedScope(scan)})
      ${captured ? `-- Own capture first: a row whose event a captured record holds is not stored again.
      AND dedup_id NOT IN (${capturedIdentitiesSql(table, storedScope(scan))})` : ''}
    -- Rows of one import never share an identity (n tells repeats apart): collapsing
    -- duplicates at insert would find none and costs twice the write itself.
    SETTINGS optimize_on_insert = 0`;
}
