import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { holdsImportsManySql, holdsImportsSql } from './pmxt-import.ts';

/**
 * Migration 015: every rollup read asks whether its market-day holds imported records.
 * With the skip index on `source` the engine skips each granule of own capture instead of
 * reading the whole market-day (a replay's runs each re-read everything stored so far),
 * and an imported record is still found.
 */

let t: TestClickHouse;
const M = `0x${'cd'.repeat(32)}`;
const DATE = '2026-03-12';
const params = { market: M, asset: '7', date: DATE, ms: [M], as: ['7'] };

beforeAll(async () => {
  t = await tempClickHouse();
  // Own capture only: 30,000 rows of one asset-day, several granules.
  await t.ch.client.command({
    query: `INSERT INTO ${t.ch.table('raw_exchange_a')} (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq)
      SELECT '${M}', toDate('${DATE}'), toDateTime64('${DATE} 00:00:00', 3, 'UTC') + toIntervalMillisecond(number), '7', 'price_change', toString(number), number FROM numbers(30000)`,
  });
}, 60_000);
afterAll(async () => t?.cleanup());

async function holds(sql: string): Promise<unknown[]> {
  return (await t.ch.client.query({ query: sql, query_params: params, format: 'JSONEachRow' })).json();
}

describe('the imports check on a market-day', () => {
  it('skips every granule of own capture by the index', async () => {
    const explain = await (await t.ch.client.query({ query: `EXPLAIN indexes = 1 ${holdsImportsManySql(t.ch)}`, query_params: params, format: 'TabSeparatedRaw' })).text();
    const skip = explain.slice(explain.indexOf('source_idx'));
    expect(explain).toContain('source_idx');
    // "Granules: kept/total" after the skip index: none kept out of several.
    const m = /Granules: (\d+)\/(\d+)/.exec(skip);
    expect(m, explain).not.toBeNull();
    expect(Number(m![1])).toBe(0);
    expect(Number(m![2])).toBeGreaterThan(1);
    expect(await holds(holdsImportsManySql(t.ch))).toEqual([]);
    expect(await holds(`SELECT ${holdsImportsSql(t.ch)} AS i`)).toEqual([{ i: 0 }]);
  });

  it('still finds an imported record among them', async () => {
    await t.ch.client.command({
      query: `INSERT INTO ${t.ch.table('raw_exchange_a')} (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, source)
        VALUES ('${M}', '${DATE}', toDateTime64('${DATE} 00:00:05', 3, 'UTC'), '7', 'price_change', 'imported-1', 1, 'pmxt')`,
    });
    expect(await holds(holdsImportsManySql(t.ch))).toEqual([{ kind: 'i', k: '7', v: '1' }]);
    expect(await holds(`SELECT ${holdsImportsSql(t.ch)} AS i`)).toEqual([{ i: 1 }]);
  });
});
