import type { Venue } from '@booktape/domain';
import { sqlString } from './clickhouse.ts';

/**
 * A stored raw record whole, as one JSON object: every column the raw tables store for it
 * (migrations 012, 013), by name. It is what the raw export adds with `include=record`
 * (docs/rules/imports.md#booktapes-own-exports) so that an import rebuilds the stored row
 * exactly: the typed columns, the venue fields and residue, the best bid / ask claims, the
 * identity (`dedup_id`) and the lineage (ingest sequence, receive time, worker, Kafka
 * position). The served long format cannot: it is one row per level and keeps only some
 * fields.
 *
 * Not in it: `inserted_at` (when this instance wrote the row: the importing instance
 * writes its own), the materialised and alias columns (computed from the others), and
 * `source`, which is given as `origin` (the stored value) so that a reader can tell where
 * the exporting instance had the record from; an import stores its own source
 * (`import:<format>:<file>`).
 *
 * 64-bit integers are JSON strings (the engine's setting on every query, clickhouse.ts), times
 * `YYYY-MM-DD hh:mm:ss.mmm` (UTC), decimals their mantissa and scale as stored: nothing in
 * it is a float, so nothing is rounded on the way.
 */

/** The stored columns of each venue's table and their types, in table order (a test compares them with the table). */
export const STORED_RECORD_COLUMNS: Record<Venue, ReadonlyArray<readonly [name: string, type: string]>> = {
  'exchange-a': [
    ['market', 'String'],
    ['event_date', 'Date'],
    ['event_ts', "DateTime64(3, 'UTC')"],
    ['asset_id', 'LowCardinality(String)'],
    ['event_type', 'LowCardinality(String)'],
    ['dedup_id', 'String'],
    ['ingest_seq', 'UInt64'],
    ['hash', 'String'],
    ['extra', 'String'],
    ['bid_price', 'Array(Int64)'],
    ['bid_price_scale', 'Array(UInt8)'],
    ['bid_size', 'Array(Int64)'],
    ['bid_size_scale', 'Array(UInt8)'],
    ['ask_price', 'Array(Int64)'],
    ['ask_price_scale', 'Array(UInt8)'],
    ['ask_size', 'Array(Int64)'],
    ['ask_size_scale', 'Array(UInt8)'],
    ['chg_price', 'Array(Int64)'],
    ['chg_price_scale', 'Array(UInt8)'],
    ['chg_side', "Array(Enum8('' = 0, 'BUY' = 1, 'SELL' = 2))"],
    ['chg_size', 'Array(Int64)'],
    ['chg_size_scale', 'Array(UInt8)'],
    ['chg_hash', 'Array(String)'],
    ['chg_best_bid', 'Array(Int64)'],
    ['chg_best_bid_scale', 'Array(UInt8)'],
    ['chg_best_ask', 'Array(Int64)'],
    ['chg_best_ask_scale', 'Array(UInt8)'],
    ['residue', 'String'],
    ['received_at', "DateTime64(3, 'UTC')"],
    ['worker_id', 'UInt32'],
    ['kafka_partition', 'Int32'],
    ['kafka_offset', 'Int64'],
  ],
  'exchange-b': [
    ['ticker', 'String'],
    ['event_date', 'Date'],
    ['event_ts', "DateTime64(3, 'UTC')"],
    ['record_type', 'LowCardinality(String)'],
    ['dedup_id', 'String'],
    ['ingest_seq', 'UInt64'],
    ['sid', 'Nullable(Int64)'],
    ['seq', 'Nullable(Int64)'],
    ['yes_null', 'UInt8'],
    ['yes_price', 'Array(Int64)'],
    ['yes_price_scale', 'Array(UInt8)'],
    ['yes_size', 'Array(Int64)'],
    ['yes_size_scale', 'Array(UInt8)'],
    ['no_null', 'UInt8'],
    ['no_price', 'Array(Int64)'],
    ['no_price_scale', 'Array(UInt8)'],
    ['no_size', 'Array(Int64)'],
    ['no_size_scale', 'Array(UInt8)'],
    ['side', 'LowCardinality(String)'],
    ['price', 'Int64'],
    ['price_scale', 'UInt8'],
    ['delta', 'Int64'],
    ['delta_scale', 'UInt8'],
    ['venue_ts', "Nullable(DateTime64(3, 'UTC'))"],
    ['market_id', 'LowCardinality(Nullable(String))'],
    ['expected_seq', 'Nullable(Int64)'],
    ['data', 'String'],
    ['residue', 'String'],
    ['received_at', "DateTime64(3, 'UTC')"],
    ['worker_id', 'UInt32'],
    ['kafka_partition', 'Int32'],
    ['kafka_offset', 'Int64'],
  ],
};

/** The record's JSON members besides the stored columns: the stored `source`. */
export const STORED_RECORD_ORIGIN = 'origin';

/** A type as a member of a Tuple type (LowCardinality is a storage detail: plain inside a tuple). */
const plainType = (t: string) => t.replace(/^LowCardinality\((.*)\)$/, '$1');

/** The Tuple type the record is written as and read back with (JSONExtract). */
export function storedRecordTupleType(venue: Venue): string {
  return `Tuple(${[...STORED_RECORD_COLUMNS[venue].map(([n, t]) => `${n} ${plainType(t)}`), `${STORED_RECORD_ORIGIN} String`].join(', ')})`;
}

/** The stored record of the current row of the venue's table, as JSON text (an expression over its columns). */
export function storedRecordSql(venue: Venue): string {
  const cols = STORED_RECORD_COLUMNS[venue].map(([n]) => n);
  return `toJSONString(CAST(tuple(${[...cols, 'source'].join(', ')}), ${sqlString(storedRecordTupleType(venue))}))`;
}
