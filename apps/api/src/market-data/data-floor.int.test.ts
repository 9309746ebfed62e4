import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * The data floor (EXCHANGE_*_DATA_FLOOR): a replayed recording from before exchange A's
 * default floor is stored but refused; with the floor `none` the same store serves it
 * (raw data, range, date range, summary), and a floor set on exchange B refuses there.
 */

const MA = conditionId(31);
const ASSET = '424242';
const TB = 'KXOLD-25JUN01';
const OLD = Date.UTC(2025, 5, 1); // 2025-06-01, before exchange A's default floor (2026-02-08)
const OLD_DATE = '2025-06-01';

let t: TestApi;
let key: string;
let open: FastifyInstance;
let floored: FastifyInstance;

beforeAll(async () => {
  t = await startTestApi();
  await t.filler.insert('exchange-a', [
    aMessage({ market: MA, asset: ASSET, ts: OLD + 1000, hash: '0xold1', kind: 'book' }),
    ...Array.from({ length: 9 }, (_, i) => aMessage({ market: MA, asset: ASSET, ts: OLD + 2000 + i * 1000, hash: `0xold${i + 2}` })),
  ]);
  await t.filler.insert('exchange-b', Array.from({ length: 6 }, (_, i) => bMessage({ ticker: TB, ms: OLD + 1000 + i * 1000, seq: 100 + i, kind: i === 0 ? 'snapshot' : 'delta' })));
  key = await t.newKey();
  open = await t.another({ dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  floored = await t.another({ dataFloors: { 'exchange-a': null, 'exchange-b': '2026-01-01' } });
});
afterAll(async () => t?.close());

async function get(app: FastifyInstance, url: string) {
  const res = await app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
}

describe('the default floors', () => {
  it('exchange A: old dates answer 400 and the date range leaves them out', async () => {
    const data = await get(t.app, `/exchange-a/market/data?condition_id=${MA}&date=${OLD_DATE}`);
    expect(data.status).toBe(400);
    expect(data.body.error.message).toContain('2026-02-08');
    expect((await get(t.app, `/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${OLD}&end_timestamp=${OLD + 86_399_999}`)).status).toBe(400);
    expect((await get(t.app, `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${ASSET}&date=${OLD_DATE}`)).status).toBe(400);
    const range = await get(t.app, `/exchange-a/market/date-range?condition_id=${MA}`);
    expect(range.body).toMatchObject({ has_data: false, start_date: null, end_date: null, available_date_count: 0 });
  });

  it('exchange B: no floor, old dates are served', async () => {
    const data = await get(t.app, `/exchange-b/market/data?ticker=${TB}&date=${OLD_DATE}`);
    expect(data.status).toBe(200);
    expect(data.body.data).toHaveLength(6);
  });
});

describe('floor none: a replay from before the floor is served', () => {
  it('raw data by date and by range', async () => {
    const data = await get(open, `/exchange-a/market/data?condition_id=${MA}&date=${OLD_DATE}`);
    expect(data.status).toBe(200);
    expect(data.body.data).toEqual(t.filler.expected('exchange-a', MA));
    const range = await get(open, `/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${OLD}&end_timestamp=${OLD + 86_399_999}`);
    expect(range.status).toBe(200);
    expect(range.body.data_count).toBe(10);
  });

  it('the date range reports what is stored', async () => {
    const range = await get(open, `/exchange-a/market/date-range?condition_id=${MA}`);
    expect(range.body).toMatchObject({ has_data: true, start_date: OLD_DATE, end_date: OLD_DATE, available_date_count: 1 });
    const list = await get(open, `/exchange-a/market/list`);
    expect(list.body.market_condition_ids).toContain(MA);
  });

  it('the summary', async () => {
    const r = await get(open, `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${ASSET}&date=${OLD_DATE}&resolution=3600`);
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBeGreaterThan(0);
  });
});

describe('a floor on exchange B', () => {
  it('refuses earlier dates there and leaves them out of its date range', async () => {
    const data = await get(floored, `/exchange-b/market/data?ticker=${TB}&date=${OLD_DATE}`);
    expect(data.status).toBe(400);
    expect(data.body.error).toMatchObject({ code: 'invalid_parameter', param: 'date' });
    expect(data.body.error.message).toContain('2026-01-01');
    const range = await get(floored, `/exchange-b/market/date-range?ticker=${TB}`);
    expect(range.body).toMatchObject({ has_data: false, available_date_count: 0 });
  });
});
