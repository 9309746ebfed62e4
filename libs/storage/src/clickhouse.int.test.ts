import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';

/**
 * The settings the code relies on (clickhouse.ts, STABLE_SETTINGS) hold for every statement
 * of the handle's client, also on the embedded engine, where they are set once on the
 * session instead of before each statement.
 */
describe('the handle’s stable settings', () => {
  let t: TestClickHouse;
  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => t?.cleanup());

  it('quote 64-bit integers and keep decimals bare in JSON, statement after statement, bound or not', async () => {
    for (let i = 0; i < 3; i++) {
      const bound = await (await t.ch.client.query({ query: 'SELECT toUInt64({n:UInt64}) AS n, toDecimal64(1.5, 2) AS d', query_params: { n: '18446744073709551615' }, format: 'JSONEachRow' })).json();
      expect(bound).toEqual([{ n: '18446744073709551615', d: 1.5 }]);
      const plain = await (await t.ch.client.query({ query: 'SELECT toInt64(9007199254740993) AS n', format: 'JSONEachRow' })).json();
      expect(plain).toEqual([{ n: '9007199254740993' }]);
    }
  });

  it('read date-times written in any common spelling (best effort) on insert', async () => {
    const table = t.ch.table('settings_probe');
    await t.ch.client.command({ query: `CREATE TABLE ${table} (at DateTime64(3, 'UTC')) ENGINE = Memory` });
    await t.ch.client.insert({ table, values: [{ at: '2026-03-01T12:00:00.250Z' }], format: 'JSONEachRow' });
    const got = await (await t.ch.client.query({ query: `SELECT toString(at) AS at FROM ${table}`, format: 'JSONEachRow' })).json();
    expect(got).toEqual([{ at: '2026-03-01 12:00:00.250' }]);
  });
});
