import { open, stat } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { VENUES, type Venue } from '@booktape/domain';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import { ImportError, importSource, supersedeImported, type ImportResult } from './pmxt-import.ts';
import { RAW_TABLE } from './raw-events.repository.ts';
import { STORED_RECORD_COLUMNS, STORED_RECORD_ORIGIN, storedRecordTupleType } from './stored-record.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/**
 * Import of booktape's own raw exports (`/market/export?kind=raw&include=record`, `booktape
 * export --include record`), Parquet or gzipped CSV, into the venue's raw table
 * (docs/rules/imports.md#booktapes-own-exports). The export's `record` column holds each
 * stored record whole (stored-record.ts) on the first row of the record; the engine reads the
 * file, checks every row, and writes the records back as they were stored, in one INSERT …
 * SELECT: no row goes through JavaScript. Only the source is the importer's own
 * (`import:booktape-parquet:<file>`).
 *
 * A file is checked whole before anything is written, so a bad file leaves nothing behind.
 * Records already stored (the same identity, by any source) are skipped: own capture and an
 * earlier import keep their copy, and importing the same file twice changes nothing.
 */

export const BOOKTAPE_PARQUET = 'booktape-parquet';
export const BOOKTAPE_CSV = 'booktape-csv';
export type BooktapeExportFormat = typeof BOOKTAPE_PARQUET | typeof BOOKTAPE_CSV;

/**
 * The raw export's columns (docs/api.md, Bulk export, and "Formats": the long CSV, one row
 * per price level change), before `include`'s: what the API writes, what import and format
 * detection read.
 */
export const RAW_EXPORT_COLUMNS: Record<Venue, readonly string[]> = {
  'exchange-a': ['timestamp', 'asset_id', 'event_type', 'side', 'price', 'size', 'hash', 'received_at'],
  'exchange-b': ['timestamp', 'ticker', 'type', 'side', 'price', 'size', 'delta', 'seq', 'sid', 'expected_seq', 'received_at', 'data'],
};

/**
 * Per venue, what VENUE_STORAGE does not say: the export's column naming the record's type
 * and the stored column it is; `csvTimeIsEventTime`: the CSV's timestamp column is the
 * stored event time (exchange B's is the venue's epoch ms). The market and asset columns
 * (the export's and the stored ones alike) are VENUE_STORAGE's.
 */
const LEAD: Record<Venue, { type: readonly [string, string]; csvTimeIsEventTime: boolean }> = {
  'exchange-a': { type: ['event_type', 'event_type'], csvTimeIsEventTime: true },
  'exchange-b': { type: ['type', 'record_type'], csvTimeIsEventTime: false },
};

const MIN_TS = 100_000_000_000; // below: seconds (data.md "Event time")
const MAX_TS = 65_535 * 86_400_000; // the end of the Date type

function firstLine(e: unknown): string {
  return String((e as Error).message ?? e).split('\n')[0]!.slice(0, 300);
}

async function rows<T>(ch: ClickHouse, query: string): Promise<T[]> {
  return (await ch.client.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** The venue whose raw export has exactly these columns (plus include's), or why none. */
function venueOf(file: string, names: readonly string[]): Venue {
  const has = (cols: readonly string[]) => cols.every((c) => names.includes(c));
  if (names.includes('quote_count')) throw new ImportError(file, 'a summary export: summaries are rebuilt from raw records, so import a raw export (kind=raw, include=record) instead; nothing imported');
  const venue = VENUES.find((v) => has(RAW_EXPORT_COLUMNS[v]));
  if (venue === undefined) throw new ImportError(file, `not a booktape raw export (columns ${names.slice(0, 14).join(', ')}); nothing imported`);
  const extra = names.filter((n) => !RAW_EXPORT_COLUMNS[venue].includes(n) && n !== 'source' && n !== 'record');
  if (extra.length > 0) throw new ImportError(file, `not a booktape raw export of ${venue}: unknown column(s) ${extra.join(', ')}; nothing imported`);
  if (!names.includes('record'))
    throw new ImportError(
      file,
      `a raw export of ${venue} without the stored records: the long format alone does not hold every field of a record; export it again with include=record (\`booktape export … --include record\`) to import it; nothing imported`,
    );
  return venue;
}

/** A gzip file's or a text file's header line (CSV). */
async function csvHeader(file: string): Promise<{ names: string[]; gzip: boolean }> {
  const fd = await open(file, 'r');
  try {
    const buf = Buffer.alloc(65_536);
    const { bytesRead } = await fd.read(buf, 0, buf.length, 0);
    const bytes = buf.subarray(0, bytesRead);
    const gzip = bytes[0] === 0x1f && bytes[1] === 0x8b;
    let text = bytes;
    if (gzip) {
      try {
        text = gunzipSync(bytes, { finishFlush: 2 });
      } catch (e) {
        throw new ImportError(file, `not a readable gzip file (${firstLine(e)}); nothing imported`);
      }
    }
    const line = text.toString('utf8', 0, Math.min(text.length, 4096)).split('\n')[0]!.replace(/\r$/, '');
    return { names: line.split(','), gzip };
  } finally {
    await fd.close();
  }
}

/** Imports one booktape raw export; throws ImportError (naming the file and, for a bad row, its 0-based row) before writing anything when it cannot be imported whole. */
export async function importBooktapeFile(ch: ClickHouse, file: string, format: BooktapeExportFormat, opts: { venue?: Venue } = {}): Promise<ImportResult & { venue: Venue }> {
  const started = Date.now();
  const source = importSource(file, format);
  if (ch.mode !== 'embedded') throw new ImportError(file, 'import reads files through the embedded engine; with a ClickHouse server (CLICKHOUSE_URL) it is not available yet');
  const size = await stat(file).then(
    (s) => s.size,
    (e: NodeJS.ErrnoException) => {
      throw new ImportError(file, e.code === 'ENOENT' ? 'no such file' : firstLine(e));
    },
  );
  if (size === 0) throw new ImportError(file, `empty file (0 bytes): not a ${format} export`);

  // The file as the engine reads it, and its columns.
  let names: string[];
  let reader: string;
  if (format === BOOKTAPE_PARQUET) {
    try {
      names = (await rows<{ name: string }>(ch, `DESCRIBE file(${sqlString(file)}, 'Parquet')`)).map((c) => c.name);
    } catch (e) {
      throw new ImportError(file, `not a readable Parquet file (${firstLine(e)}); nothing imported`);
    }
    reader = `file(${sqlString(file)}, 'Parquet')`;
  } else {
    const h = await csvHeader(file);
    names = h.names;
    // Every column as text: the stored record is in `record`, the rest is only compared with it.
    reader = `file(${sqlString(file)}, 'CSVWithNames', ${sqlString(names.map((n) => `\`${n.replaceAll('`', '')}\` String`).join(', '))}, ${sqlString(h.gzip ? 'gzip' : 'none')})`;
  }
  const venue = venueOf(file, names);
  if (opts.venue !== undefined && opts.venue !== venue) throw new ImportError(file, `an export of ${venue}, not of ${opts.venue} (--venue); nothing imported`);
  const cols = STORED_RECORD_COLUMNS[venue];
  const lead = { ...LEAD[venue], market: VENUE_STORAGE[venue].market, asset: VENUE_STORAGE[venue].asset };
  const tuple = storedRecordTupleType(venue);
  const r = (c: string) => `tupleElement(r, ${sqlString(c)})`;
  const keys = `[${[...cols.map(([n]) => n), STORED_RECORD_ORIGIN].map(sqlString).join(', ')}]`;
  // A record of another venue: it has that venue's first stored column, not this one's market.
  const ofOther = VENUES.filter((v) => v !== venue)
    .map((o) => `has(members, ${sqlString(STORED_RECORD_COLUMNS[o][0]![0])}) AND NOT has(members, ${sqlString(lead.market)}), 'record of ${o} in an export of ${venue}',`)
    .join('\n    ');
  // Parquet's times are timestamps; the CSV's are text (exchange A: ms; exchange B: epoch ms).
  const rowMs = format === BOOKTAPE_PARQUET ? 'toUnixTimestamp64Milli(ts)' : 'toInt64OrNull(ts)';
  // The record's members are read once (JSONExtractKeys: [] for text that is not a JSON
  // object), its values once (JSONExtract): two parses a row, whatever the number of columns.
  const reason = `multiIf(
    rec = '', '',
    empty(members) OR NOT isValidJSON(rec), 'record is not a JSON object: the file is cut or was changed',
    ${ofOther}
    NOT hasAll(members, ${keys}), concat('record without ', arrayFirst(k -> NOT has(members, k), ${keys})),
    -- JSONExtract reads a value of the wrong type as the type's default ("abc" as UInt64 is 0):
    -- the record must be exactly the text the export wrote of the values read back.
    toJSONString(r) != rec, 'record was changed: its values are not what the export wrote',
    ${r(lead.market)} = '', 'record without a market',
    ${r('dedup_id')} = '', 'record without an identity (dedup_id)',
    toUnixTimestamp64Milli(${r('event_ts')}) < ${MIN_TS} OR toUnixTimestamp64Milli(${r('event_ts')}) >= ${MAX_TS}, concat('record time outside the times the store holds: ', toString(${r('event_ts')})),
    ${r('event_date')} != toDate(${r('event_ts')}), 'record date is not the date of its time',
    ${r(lead.asset)} != row_asset, concat('the row''s ${lead.asset} is not its record''s: ', substring(row_asset, 1, 80)),
    ${r(lead.type[1])} != row_type, concat('the row''s ${lead.type[0]} is not its record''s: ', substring(row_type, 1, 40)),
    ${rowMs} IS NOT NULL AND ${rowMs} != toUnixTimestamp64Milli(${r('event_ts')}) AND ${lead.csvTimeIsEventTime || format === BOOKTAPE_PARQUET ? '1' : '0'}, 'the row''s timestamp is not its record''s',
    '')`;
  interface Scan {
    rows: string;
    records: string;
    bad: string;
    bad_row: string;
    bad_reason: string;
    min_date: string;
    max_date: string;
    parts: Array<[string, string, string]>;
  }
  let scan: Scan;
  try {
    // The exporting query's settings decide whether the record's 64-bit integers are JSON
    // strings or numbers (a raw page's read writes numbers, a Parquet export strings): the
    // check writes the values read back the way the file's first record has them.
    const [first] = await rows<{ quoted: number }>(ch, `SELECT toUInt8(position(rec, '"ingest_seq":"') > 0) AS quoted FROM (SELECT ifNull(toString(record), '') AS rec FROM ${reader}) WHERE rec != '' LIMIT 1`);
    [scan] = (await rows<Scan>(
      ch,
      `SELECT toString(count()) AS rows, toString(countIf(rec != '')) AS records,
         toString(countIf(reason != '')) AS bad, toString(minIf(rn, reason != '')) AS bad_row, argMinIf(reason, rn, reason != '') AS bad_reason,
         toString(minIf(${r('event_date')}, rec != '')) AS min_date, toString(maxIf(${r('event_date')}, rec != '')) AS max_date,
         arraySort(groupUniqArrayIf((${r(lead.market)}, ${r(lead.asset)}, toString(${r('event_date')})), rec != '')) AS parts
       FROM (SELECT rn, rec, row_asset, row_type, ts, JSONExtractKeys(rec) AS members, JSONExtract(rec, ${sqlString(tuple)}) AS r, ${reason} AS reason
             FROM (SELECT _row_number AS rn, ifNull(toString(record), '') AS rec, ifNull(toString(${lead.asset}), '') AS row_asset,
                     ifNull(toString(${lead.type[0]}), '') AS row_type, timestamp AS ts
                   FROM ${reader}))
       SETTINGS output_format_json_quote_64bit_integers = ${first?.quoted ?? 1}`,
    )) as [Scan];
  } catch (e) {
    throw new ImportError(file, `cannot read the rows (${firstLine(e)}); nothing imported`);
  }
  const result: ImportResult & { venue: Venue } = { file, source, venue, rows: Number(scan.rows), skipped: 0, inserted: 0, alreadyStored: 0, superseded: 0, partitions: [], ms: 0 };
  if (Number(scan.bad) > 0) throw new ImportError(file, `${scan.bad_reason} (${scan.bad} bad row(s) in all; nothing imported)`, Number(scan.bad_row));
  if (result.rows > 0 && Number(scan.records) === 0) throw new ImportError(file, 'the record column is empty on every row: not an export with include=record; nothing imported');
  if (Number(scan.records) === 0) {
    result.ms = Date.now() - started;
    return result;
  }

  const table = ch.table(RAW_TABLE[venue]);
  const records = `SELECT JSONExtract(rec, ${sqlString(tuple)}) AS r FROM (SELECT ifNull(toString(record), '') AS rec FROM ${reader}) WHERE rec != ''`;
  // The file's markets and days (an export is one market): what the anti-join reads.
  const markets = [...new Set(scan.parts.map(([m]) => m))];
  const scope = `${lead.market} IN (${markets.map(sqlString).join(', ')})
    AND event_date BETWEEN toDate(${sqlString(scan.min_date)}) AND toDate(${sqlString(scan.max_date)})`;
  const count = async () => Number((await rows<{ n: string }>(ch, `SELECT toString(count()) AS n FROM ${table} FINAL WHERE ${scope} AND source = ${sqlString(source)}`))[0]?.n ?? 0);
  const before = await count();
  try {
    await ch.client.command({
      query: `INSERT INTO ${table} (${cols.map(([n]) => n).join(', ')}, source)
        SELECT ${cols.map(([n]) => r(n)).join(', ')}, ${sqlString(source)}
        FROM (${records})
        -- Own capture and earlier imports first: a record whose identity is stored is not written again.
        WHERE ${r('dedup_id')} NOT IN (SELECT dedup_id FROM ${table} WHERE ${scope})`,
    });
  } catch (e) {
    throw new ImportError(file, `the insert failed (${firstLine(e)}); run the import again to complete it`);
  }
  result.inserted = (await count()) - before;
  result.alreadyStored = Number(scan.records) - result.inserted;
  result.partitions = scan.parts.map(([market, asset, date]) => ({ market, asset, date }));
  // Exchange A: records an earlier recorder imported from an archive (identities of the
  // archive rule) whose event this instance captured give way to the capture (as at rollup).
  if (VENUE_STORAGE[venue].imports) for (const p of result.partitions) result.superseded += await supersedeImported(ch, p);
  result.ms = Date.now() - started;
  return result;
}
