import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sqlString, type ClickHouse } from './clickhouse.ts';

/**
 * PMXT v2-shaped Parquet files for tests and the benchmark, written by the engine with the
 * column types of the public files: timestamp[ms, UTC] (DateTime64(3, 'UTC')),
 * fixed_size_binary[66] (FixedString(66)), decimal(9,4) / decimal(18,6), uint16, strings.
 */

export const PMXT_STRUCTURE =
  "timestamp_received DateTime64(3, 'UTC'), timestamp DateTime64(3, 'UTC'), market FixedString(66), event_type String, asset_id String, " +
  'bids Nullable(String), asks Nullable(String), price Nullable(Decimal(9, 4)), size Nullable(Decimal(18, 6)), side Nullable(String), ' +
  'best_bid Nullable(Decimal(9, 4)), best_ask Nullable(Decimal(9, 4)), fee_rate_bps Nullable(UInt16), transaction_hash Nullable(String), ' +
  'old_tick_size Nullable(Decimal(9, 4)), new_tick_size Nullable(Decimal(9, 4))';

/** One row; times in ms, decimals as text, absent fields null. */
export interface PmxtRow {
  timestamp_received: number;
  timestamp: number;
  market: string;
  event_type: string;
  asset_id: string;
  bids?: string | null;
  asks?: string | null;
  price?: string | null;
  size?: string | null;
  side?: string | null;
  best_bid?: string | null;
  best_ask?: string | null;
  fee_rate_bps?: number | null;
  transaction_hash?: string | null;
  old_tick_size?: string | null;
  new_tick_size?: string | null;
}

let files = 0;

/** Writes `rows` (in the order given) as a PMXT v2 Parquet file; no rows gives an empty hour's file. */
export async function writePmxtFile(ch: ClickHouse, file: string, rows: readonly PmxtRow[]): Promise<void> {
  const tmp = path.join(tmpdir(), `pmxt-rows-${process.pid}-${++files}.ndjson`);
  const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  const lines = rows.map((r) =>
    JSON.stringify({
      bids: null, asks: null, price: null, size: null, side: null, best_bid: null, best_ask: null,
      fee_rate_bps: null, transaction_hash: null, old_tick_size: null, new_tick_size: null,
      ...r,
      timestamp_received: iso(r.timestamp_received),
      timestamp: iso(r.timestamp),
    }),
  );
  await writeFile(tmp, lines.join('\n'));
  try {
    await ch.client.command({
      query: `INSERT INTO FUNCTION file(${sqlString(file)}, 'Parquet', ${sqlString(PMXT_STRUCTURE)})
        SELECT * FROM file(${sqlString(tmp)}, 'JSONEachRow', ${sqlString(PMXT_STRUCTURE)})
        SETTINGS engine_file_truncate_on_insert = 1, input_format_parallel_parsing = 0, max_threads = 1`,
    });
  } finally {
    await rm(tmp, { force: true });
  }
}

export interface SyntheticHour {
  rows: number;
  markets: number;
  /** The hour's first millisecond (UTC). */
  hourStartMs: number;
}

/**
 * A synthetic PMXT hour, generated inside the engine (no rows in JavaScript): `markets`
 * markets of two tokens each; per token, a `book` every 200 rows, otherwise mostly
 * `price_change` (one row per level, with best bid / ask), some `last_trade_price` and a rare
 * `tick_size_change`; sorted by (market, asset_id, timestamp_received) like the public files.
 * Deterministic. Event times spread over the hour; several rows share a millisecond.
 */
export async function writeSyntheticPmxtHour(ch: ClickHouse, file: string, h: SyntheticHour): Promise<void> {
  const tokens = h.markets * 2;
  const n = h.rows;
  await ch.client.command({
    query: `INSERT INTO FUNCTION file(${sqlString(file)}, 'Parquet', ${sqlString(PMXT_STRUCTURE)})
      SELECT
        fromUnixTimestamp64Milli(toInt64(ts + 40 + (i % 7)), 'UTC') AS timestamp_received,
        fromUnixTimestamp64Milli(toInt64(ts), 'UTC') AS timestamp,
        toFixedString(concat('0x', lower(hex(SHA256(concat('market', toString(intDiv(tok, 2))))))), 66) AS market,
        kind AS event_type,
        toString(cityHash64('token', tok)) AS asset_id,
        if(kind = 'book', '[["0.45","120.5"],["0.46","80"],["0.47","35.25"]]', NULL) AS bids,
        if(kind = 'book', '[["0.53","60"],["0.52","25"],["0.51","10"]]', NULL) AS asks,
        if(kind IN ('price_change', 'last_trade_price'), toDecimal32(0.4 + (i % 20) / 100, 4), NULL) AS price,
        if(kind IN ('price_change', 'last_trade_price'), toDecimal64((i % 500) * 1.5, 6), NULL) AS size,
        if(kind IN ('price_change', 'last_trade_price'), if(i % 2 = 0, 'BUY', 'SELL'), NULL) AS side,
        if(kind = 'price_change', toDecimal32(0.47, 4), NULL) AS best_bid,
        if(kind = 'price_change', toDecimal32(0.51, 4), NULL) AS best_ask,
        if(kind = 'last_trade_price', toUInt16(0), NULL) AS fee_rate_bps,
        if(kind = 'last_trade_price', concat('0x', lower(hex(SHA256(toString(i))))), NULL) AS transaction_hash,
        if(kind = 'tick_size_change', toDecimal32(0.01, 4), NULL) AS old_tick_size,
        if(kind = 'tick_size_change', toDecimal32(0.001, 4), NULL) AS new_tick_size
      FROM (
        SELECT number AS i, number % ${tokens} AS tok, intDiv(number, ${tokens}) AS k,
          ${h.hourStartMs} + intDiv(k * 3600000, ${Math.max(1, Math.ceil(n / tokens))}) AS ts,
          multiIf(k % 200 = 0, 'book', k % 50 = 7, 'last_trade_price', k % 997 = 3, 'tick_size_change', 'price_change') AS kind
        FROM numbers(${n})
      )
      ORDER BY market, asset_id, timestamp_received, i
      SETTINGS engine_file_truncate_on_insert = 1`,
  });
}
