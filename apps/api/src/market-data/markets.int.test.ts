import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/** Availability, market lists, the OpenAPI document and unknown routes. */

const DAY = Date.UTC(2026, 2, 1);
const EARLY = Date.UTC(2026, 1, 1);
let t: TestApi;
let key: string;

const A_MARKETS = Array.from({ length: 25 }, (_, i) => conditionId(i + 1)); // 0x0001…, 0x0002…, …
const B_TICKERS = [...Array.from({ length: 12 }, (_, i) => `KXBTC-26MAR${String(i).padStart(2, '0')}`), 'INXD-26MAR01-B5800', 'KXETH-26MAR01'];

beforeAll(async () => {
  t = await startTestApi();
  // Market 1 on three dates (one of them twice, in two batches); the others on one date.
  await t.filler.insert('exchange-a', [
    aMessage({ market: A_MARKETS[0]!, ts: DAY, hash: '0x1' }),
    aMessage({ market: A_MARKETS[0]!, ts: DAY + 86_400_000 * 3, hash: '0x2' }),
  ]);
  await t.filler.insert('exchange-a', [aMessage({ market: A_MARKETS[0]!, ts: DAY + 86_400_000 * 3 + 5, hash: '0x3' }), aMessage({ market: A_MARKETS[0]!, ts: DAY + 86_400_000 * 9, hash: '0x4' })]);
  await t.filler.insert('exchange-a', A_MARKETS.slice(1).map((m, i) => aMessage({ market: m, ts: DAY + i, hash: `0xm${i}` })));
  // A market with data only before exchange A's earliest date: not servable, so not listed.
  await t.filler.insert('exchange-a', [aMessage({ market: `0xffff${'0'.repeat(60)}`, ts: EARLY, hash: '0xe' })]);
  await t.filler.insert('exchange-b', B_TICKERS.map((tk, i) => bMessage({ ticker: tk, ms: DAY + i, seq: i })));
  await t.filler.insert('exchange-b', [bMessage({ ticker: B_TICKERS[0]!, ms: EARLY, seq: 99 })]);
  key = await t.newKey();
});
afterAll(async () => t?.close());

async function get(url: string, headers: Record<string, string> = bearer(key)) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
}

describe('date range (availability)', () => {
  it('exchange A: first and last stored date and the number of dates, id normalised', async () => {
    const r = await get(`/exchange-a/market/date-range?condition_id=${A_MARKETS[0]!.slice(2).toUpperCase()}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ market_condition_id: A_MARKETS[0], has_data: true, start_date: '2026-03-01', end_date: '2026-03-10', available_date_count: 3 });
  });

  it('exchange B: ticker upper-cased; dates before exchange A’s rule count for B', async () => {
    const r = await get(`/exchange-b/market/date-range?ticker=${B_TICKERS[0]!.toLowerCase()}`);
    expect(r.body).toEqual({ market_ticker: B_TICKERS[0], has_data: true, start_date: '2026-02-01', end_date: '2026-03-01', available_date_count: 2 });
  });

  it('no data: has_data false with nulls and 0, not an error', async () => {
    const a = await get(`/exchange-a/market/date-range?condition_id=0x${'ab'.repeat(32)}`);
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ market_condition_id: `0x${'ab'.repeat(32)}`, has_data: false, start_date: null, end_date: null, available_date_count: 0 });
    const b = await get('/exchange-b/market/date-range?ticker=NONE');
    expect(b.body).toEqual({ market_ticker: 'NONE', has_data: false, start_date: null, end_date: null, available_date_count: 0 });
    // Exchange A data that lies only before the earliest date is not available.
    const early = await get(`/exchange-a/market/date-range?condition_id=0xffff${'0'.repeat(60)}`);
    expect(early.body.has_data).toBe(false);
  });

  it('follows new data (the summary view is fed by every insert)', async () => {
    const m = conditionId(4242);
    expect((await get(`/exchange-a/market/date-range?condition_id=${m}`)).body.has_data).toBe(false);
    await t.filler.insert('exchange-a', [aMessage({ market: m, ts: DAY + 86_400_000 * 20, hash: '0xnew' })]);
    expect((await get(`/exchange-a/market/date-range?condition_id=${m}`)).body).toMatchObject({ has_data: true, start_date: '2026-03-21', end_date: '2026-03-21', available_date_count: 1 });
  });

  it('malformed ids are a 400 that names the parameter', async () => {
    const r = await get('/exchange-a/market/date-range?condition_id=0xZZ');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_parameter', param: 'condition_id' });
    expect(r.body.error.message).toMatch(/condition_id must be a hex condition id/);
    const m = await get('/exchange-b/market/date-range');
    expect(m.body.error).toMatchObject({ code: 'missing_parameter', param: 'ticker' });
  });
});

describe('market lists', () => {
  it('exchange A: every market with data, in id order, with offset paging', async () => {
    const all = await get('/exchange-a/market/list');
    expect(all.status).toBe(200);
    const ids = all.body.market_condition_ids as string[];
    expect(all.body).toMatchObject({ filter_prefix: null, returned_count: ids.length, total_markets: ids.length });
    expect(ids).toContain(A_MARKETS[24]);
    expect(ids).not.toContain(`0xffff${'0'.repeat(60)}`);
    expect(ids).toEqual([...ids].sort());
    expect(all.body.pagination).toEqual({ offset: 0, limit: 100, total_count: ids.length, has_more: false });

    const page = await get('/exchange-a/market/list?offset=5&limit=7');
    expect(page.body.market_condition_ids).toEqual(ids.slice(5, 12));
    expect(page.body).toMatchObject({ total_markets: ids.length, returned_count: 7 });
    expect(page.body.pagination).toEqual({ offset: 5, limit: 7, total_count: ids.length, has_more: true });
  });

  it('exchange A: the prefix is accepted with or without 0x, any case, and answered normalised', async () => {
    for (const p of ['0x001', '001', '0X001', '0x001'.toUpperCase()]) {
      const r = await get(`/exchange-a/market/list?prefix=${p}`);
      expect(r.status).toBe(200);
      expect(r.body.filter_prefix).toBe('0x001');
      expect(r.body.market_condition_ids).toEqual(A_MARKETS.filter((m) => m.startsWith('0x001')));
      expect(r.body.total_markets).toBe(10); // 0x0010 … 0x0019
    }
  });

  it('exchange B: prefix upper-cased, list of tickers', async () => {
    const r = await get('/exchange-b/market/list?prefix=kxbtc-26mar0&limit=5');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['filter_prefix', 'market_tickers', 'pagination', 'returned_count', 'total_markets']);
    expect(r.body).toMatchObject({ filter_prefix: 'KXBTC-26MAR0', total_markets: 10, returned_count: 5, market_tickers: B_TICKERS.slice(0, 5) });
    expect(r.body.pagination).toEqual({ offset: 0, limit: 5, total_count: 10, has_more: true });
    const none = await get('/exchange-b/market/list?prefix=ZZZ');
    expect(none.body).toEqual({ total_markets: 0, returned_count: 0, filter_prefix: 'ZZZ', market_tickers: [], pagination: { offset: 0, limit: 100, total_count: 0, has_more: false } });
  });

  it('limit bounds: 1 to 1000; bad prefixes named', async () => {
    expect((await get('/exchange-b/market/list?limit=1000')).status).toBe(200);
    for (const q of ['limit=1001', 'limit=0', 'limit=-1', 'limit=abc', 'offset=-5', 'offset=1.5']) {
      const r = await get(`/exchange-b/market/list?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.param).toBe(q.split('=')[0]);
    }
    const bad = await get('/exchange-a/market/list?prefix=0xnothex');
    expect(bad.body.error).toMatchObject({ code: 'invalid_parameter', param: 'prefix' });
    const badB = await get("/exchange-b/market/list?prefix=KX'%20OR%201=1");
    expect(badB.body.error).toMatchObject({ code: 'invalid_parameter', param: 'prefix' });
  });
});

describe('service routes', () => {
  it('serves the OpenAPI document built from the route schemas, and the Swagger UI', async () => {
    const r = await get('/openapi.json', {});
    expect(r.status).toBe(200);
    const paths = Object.keys(r.body.paths);
    for (const p of [
      '/api/v1/exchange-a/market/data',
      '/api/v1/market/data',
      '/api/v1/exchange-b/market/data',
      '/api/v1/exchange-a/market/data/range',
      '/api/v1/market/data/range',
      '/api/v1/exchange-b/market/data/range',
      '/api/v1/exchange-a/market/date-range',
      '/api/v1/exchange-b/market/date-range',
      '/api/v1/exchange-a/market/list',
      '/api/v1/exchange-b/market/list',
      '/api/v1/keys',
      '/api/v1/keys/{key_id}',
      '/api/v1/health',
    ]) {
      expect(paths, p).toContain(p);
    }
    const op = r.body.paths['/api/v1/exchange-a/market/data'].get;
    // A market may be named by its slug instead of its condition id (docs/api.md, "Slug and outcome").
    expect(op.parameters.map((p: any) => p.name).sort()).toEqual(['condition_id', 'date', 'format', 'include', 'limit', 'offset', 'slug']);
    expect(op.parameters.find((p: any) => p.name === 'format').schema.enum).toEqual(['json', 'ndjson', 'csv']);
    expect(op.security).toEqual([{ bearerAuth: [] }]);
    expect(r.body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const docs = await t.app.inject({ url: '/api/v1/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/text\/html/);
  });

  it('unknown routes: 404 in the error body', async () => {
    for (const url of ['/nope', '/exchange-c/market/data', '/keys/x/y']) {
      const r = await get(url);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
    }
    const outside = await t.app.inject({ url: '/market/data' });
    expect(outside.statusCode).toBe(404);
    expect(outside.json()).toMatchObject({ error: { code: 'not_found' } });
  });
});
