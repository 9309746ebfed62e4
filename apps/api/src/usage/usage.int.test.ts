import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { waitFor } from '@booktape/testkit';
import { UNLIMITED_PLANS, periodOf } from './limits.ts';
import { aMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * The request log and what is read from it: /usage, /user/{user_id}/requests/*, /stats,
 * /stats/popular-markets; who may read what; bad input; the OpenAPI document.
 */

const ADMIN = 'admin-token-for-usage-tests';
const admin = { 'x-admin-token': ADMIN };
let t: TestApi;
let alice: string;
let bob: string;
let carol: string;

const M1 = conditionId(0x51);
const M1_GIVEN = M1.slice(2).toUpperCase(); // no 0x, upper case: logged normalised
const DAY = Date.UTC(2026, 2, 1);
let rawPageBytes = 0;

async function get(url: string, headers: Record<string, string> = {}, app: FastifyInstance = t.app) {
  const res = await app.inject({ url: `/api/v1${url}`, headers } as InjectOptions);
  expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(500);
  return { status: res.statusCode, body: res.json() as any, res };
}

beforeAll(async () => {
  t = await startTestApi({
    adminToken: ADMIN,
    plans: { ...UNLIMITED_PLANS, free: { monthly: 1000, perSecond: null }, pro: { monthly: null, perSecond: 50 } },
  });
  alice = await t.newKey('alice');
  bob = await t.newKey('bob');
  carol = await t.newKey('carol');
  await t.filler.insert('exchange-a', Array.from({ length: 30 }, (_, i) => aMessage({ market: M1, ts: DAY + 1000 * i, hash: `0xu${i}` })));

  // alice: 3 availability + 1 raw page of M1, 2 of KX-POP, 2 malformed (400).
  for (let i = 0; i < 3; i++) expect((await get(`/exchange-a/market/date-range?condition_id=${M1_GIVEN}`, bearer(alice))).status).toBe(200);
  const raw = await get(`/exchange-a/market/data?condition_id=${M1}&date=2026-03-01&limit=20`, bearer(alice));
  expect(raw.status).toBe(200);
  expect(raw.body.data_count).toBe(20);
  rawPageBytes = raw.res.rawPayload.length;
  for (let i = 0; i < 2; i++) expect((await get('/exchange-b/market/date-range?ticker=kx-pop', bearer(alice))).status).toBe(200);
  for (let i = 0; i < 2; i++) expect((await get('/exchange-b/market/list?limit=0', bearer(alice))).status).toBe(400);
  // bob: 1 of KX-POP, 1 list.
  expect((await get('/exchange-b/market/date-range?ticker=KX-POP', bearer(bob))).status).toBe(200);
  expect((await get('/exchange-a/market/list', bearer(bob))).status).toBe(200);

  await waitFor('the request log in ClickHouse', async () => {
    const rs = await t.ch.client.query({ query: `SELECT count() AS n FROM ${t.ch.table('request_log')}`, format: 'JSONEachRow' });
    return Number((await rs.json<{ n: string }>())[0]?.n) === 10;
  }, 10_000);
});
afterAll(async () => t?.close());

describe('request log', () => {
  it('one row per request with user, key, endpoint, normalised parameters, status, latency and bytes', async () => {
    const rs = await t.ch.client.query({
      query: `SELECT user_id, key_id, endpoint, venue, market, params, status, billable, latency_ms, bytes FROM ${t.ch.table('request_log')} WHERE user_id = 'alice' ORDER BY ts`,
      format: 'JSONEachRow',
    });
    const rows = await rs.json<any>();
    expect(rows).toHaveLength(8);
    const keys = (await get('/keys?user_id=alice', admin)).body.api_keys;
    expect(new Set(rows.map((r: any) => r.key_id))).toEqual(new Set([keys[0].id]));
    const avail = rows.filter((r: any) => r.endpoint === '/exchange-a/market/date-range');
    expect(avail).toHaveLength(3);
    for (const r of avail) {
      expect(r).toMatchObject({ venue: 'exchange-a', market: M1, status: 200, billable: 1 });
      expect(JSON.parse(r.params)).toEqual({ condition_id: M1 });
      expect(r.latency_ms).toBeGreaterThan(0);
    }
    const page = rows.find((r: any) => r.endpoint === '/exchange-a/market/data');
    expect(JSON.parse(page.params)).toEqual({ condition_id: M1, date: '2026-03-01', offset: 0, limit: 20 });
    expect(Number(page.bytes)).toBe(rawPageBytes); // a streamed body, counted as written
    const bad = rows.filter((r: any) => r.status === 400);
    expect(bad).toHaveLength(2);
    expect(bad[0]).toMatchObject({ endpoint: '/exchange-b/market/list', market: '' });
  });
});

describe('GET /usage', () => {
  it('tier, calls this period, limit, remaining, period, unlimited', async () => {
    const now = Date.now();
    const p = periodOf(now);
    const r = await get('/usage?user_id=alice', bearer(alice));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      user_id: 'alice',
      tier: 'free',
      calls_this_period: 6,
      limit: 1000,
      remaining: 994,
      unlimited: false,
      per_second_limit: null,
      period: { month: p.id, start: new Date(p.startMs).toISOString(), end: new Date(p.endMs).toISOString() },
      resets_at: new Date(p.endMs).toISOString(),
    });
  });

  it('a pro user is unlimited for the month; a user without requests is at 0', async () => {
    const row = { user_id: 'carol', email: '', stripe_customer_id: 'cus_c', stripe_subscription_id: 'sub_c', tier: 'pro', status: 'active', plan: 'pro', current_period_end: null, cancel_at_period_end: false, event_created: 1, last_event_id: 'evt_c', updated_at: new Date().toISOString(), version: Date.now() };
    await t.redis.set(`${t.config.redisKeyPrefix}sub:user:carol`, JSON.stringify(row), 'EX', 300);
    const r = await get('/usage?user_id=carol', bearer(carol));
    expect(r.body).toMatchObject({ tier: 'pro', calls_this_period: 0, limit: null, remaining: null, unlimited: true, per_second_limit: 50 });
    expect((await get('/usage?user_id=nobody-at-all', admin)).body).toMatchObject({ tier: 'free', calls_this_period: 0, remaining: 1000 });
  });

  it('is not billable itself, nor are the history and statistics endpoints', async () => {
    for (let i = 0; i < 5; i++) {
      await get('/usage?user_id=bob', bearer(bob));
      await get('/user/bob/requests/count', bearer(bob));
      await get('/user/bob/requests/recent', bearer(bob));
      await get('/stats', admin);
    }
    expect((await get('/usage?user_id=bob', bearer(bob))).body.calls_this_period).toBe(2);
  });
});

describe('who may read', () => {
  it("a key reads its own user's usage only; the admin token reads anyone's", async () => {
    expect((await get('/usage?user_id=alice', bearer(alice))).status).toBe(200);
    const other = await get('/usage?user_id=alice', bearer(bob));
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('forbidden');
    for (const path of ['/user/alice/requests/count', '/user/alice/requests/timeframe', '/user/alice/requests/recent']) {
      expect((await get(path, bearer(bob))).status, path).toBe(403);
      expect((await get(path, bearer(alice))).status, path).toBe(200);
      expect((await get(path, admin)).status, path).toBe(200);
      expect((await get(path)).status, path).toBe(401);
    }
    expect((await get('/usage?user_id=alice', admin)).status).toBe(200);
    expect((await get('/usage?user_id=alice')).status).toBe(401);
    expect((await get('/usage?user_id=alice', { 'x-admin-token': 'wrong-token-wrong-token' })).status).toBe(401);
    expect((await get('/usage?user_id=alice', bearer(`bt_live_${'Z'.repeat(43)}`))).status).toBe(401);
  });

  it('a revoked key reads nothing (403)', async () => {
    const k = await t.newKey('dora');
    const keys = (await get('/keys?user_id=dora', admin)).body.api_keys;
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/keys/${keys[0].id}?user_id=dora`, headers: admin })).statusCode).toBe(200);
    expect((await get('/usage?user_id=dora', bearer(k))).status).toBe(403);
  });

  it('service-wide statistics need the admin token: a key alone is 403, nothing is 401', async () => {
    for (const path of ['/stats', '/stats/popular-markets']) {
      expect((await get(path, admin)).status, path).toBe(200);
      expect((await get(path, bearer(alice))).status, path).toBe(403);
      expect((await get(path)).status, path).toBe(401);
      expect((await get(path, { 'x-admin-token': 'nope-nope-nope-nope' })).status, path).toBe(401);
    }
  });

  it('without ADMIN_TOKEN they are open, like /keys; a key presented is still bound to its user', async () => {
    const open = await t.another({ adminToken: undefined });
    expect((await get('/usage?user_id=alice', {}, open)).status).toBe(200);
    expect((await get('/stats', {}, open)).status).toBe(200);
    expect((await get('/usage?user_id=alice', bearer(bob), open)).status).toBe(403);
  });
});

describe('GET /user/{user_id}/requests/*', () => {
  it('count: by outcome, filtered by window, endpoint and status', async () => {
    const all = await get('/user/alice/requests/count', bearer(alice));
    expect(all.body).toMatchObject({ user_id: 'alice', endpoint: null, status: null, count: 8, requests: 8, successful: 6, rate_limited: 0, failed: 2 });
    expect(all.body.bytes).toBeGreaterThanOrEqual(rawPageBytes);
    expect(all.body.from).toBe(new Date(periodOf(Date.now()).startMs).toISOString());
    expect((await get('/user/alice/requests/count?status=2xx', bearer(alice))).body.count).toBe(6);
    expect((await get('/user/alice/requests/count?status=400', bearer(alice))).body).toMatchObject({ count: 2, status: '400' });
    expect((await get('/user/alice/requests/count?endpoint=/exchange-a/market/date-range', bearer(alice))).body.count).toBe(3);
    expect((await get('/user/alice/requests/count?endpoint=/api/v1/exchange-b/market/date-range&status=2xx', bearer(alice))).body).toMatchObject({ count: 2, endpoint: '/exchange-b/market/date-range' });
    expect((await get('/user/alice/requests/count?to=2020-01-01', bearer(alice))).body).toMatchObject({ from: expect.any(String), count: 0 });
    expect((await get('/user/alice/requests/count?from=2020-01-01&to=2020-01-31', bearer(alice))).body.count).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    expect((await get(`/user/alice/requests/count?from=${today}&to=${today}`, bearer(alice))).body.count).toBe(8);
    expect((await get('/user/nobody/requests/count', admin)).body.count).toBe(0);
  });

  it('timeframe: every bucket of the window, zeros included, adding up to the count', async () => {
    const now = Date.now();
    const from = now - 5 * 3_600_000;
    const r = await get(`/user/alice/requests/timeframe?from=${from}&interval=hour`, bearer(alice));
    expect(r.status).toBe(200);
    expect(r.body.interval).toBe('hour');
    expect(r.body.data_points).toBe(r.body.data.length);
    expect(r.body.data.length).toBeGreaterThanOrEqual(6);
    expect(r.body.data.length).toBeLessThanOrEqual(7);
    const sum = r.body.data.reduce((a: number, b: any) => a + b.requests, 0);
    expect(sum).toBe(8);
    expect(r.body.data.reduce((a: number, b: any) => a + b.successful, 0)).toBe(6);
    for (const [i, b] of r.body.data.entries()) {
      expect(b.timestamp % 3_600_000).toBe(0);
      expect(b.start).toBe(new Date(b.timestamp).toISOString());
      if (i > 0) expect(b.timestamp - r.body.data[i - 1].timestamp).toBe(3_600_000);
    }
    expect(r.body.data.filter((b: any) => b.requests === 0).length).toBeGreaterThanOrEqual(4);
    const days = await get('/user/alice/requests/timeframe', bearer(alice));
    expect(days.body.interval).toBe('day');
    expect(days.body.data.at(-1).requests).toBe(8);
    expect(days.body.data[0].timestamp).toBe(periodOf(now).startMs);
  });

  it('recent: newest first, cursor pages that neither skip nor repeat, bound to the user', async () => {
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const r = await get(`/user/alice/requests/recent?limit=3${q}`, bearer(alice));
      expect(r.status).toBe(200);
      expect(r.body.data_count).toBe(r.body.data.length);
      expect(r.body.pagination.limit).toBe(3);
      seen.push(...r.body.data);
      cursor = r.body.pagination.next_cursor;
      expect(r.body.pagination.has_more).toBe(cursor !== null);
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(8);
    expect(new Set(seen.map((s) => s.request_id)).size).toBe(8);
    for (let i = 1; i < seen.length; i++) expect(Date.parse(seen[i - 1].time)).toBeGreaterThanOrEqual(Date.parse(seen[i].time));
    // The oldest were the three availability requests, with their normalised parameters.
    expect(seen.slice(-3).map((s) => [s.endpoint, s.params, s.market, s.venue, s.status])).toEqual(
      Array.from({ length: 3 }, () => ['/exchange-a/market/date-range', { condition_id: M1 }, M1, 'exchange-a', 200]),
    );
    expect(seen[0]).toMatchObject({ endpoint: '/exchange-b/market/list', status: 400, market: null, plan: null });
    expect(seen.at(-1).plan).toBe('free');

    // A cursor is bound to its user and cannot be edited.
    const first = await get('/user/alice/requests/recent?limit=1', bearer(alice));
    const c = first.body.pagination.next_cursor as string;
    const foreign = await get(`/user/bob/requests/recent?cursor=${encodeURIComponent(c)}`, admin);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toMatchObject({ code: 'invalid_cursor', param: 'cursor' });
    const edited = `${c.slice(0, -2)}${c.endsWith('AA') ? 'BB' : 'AA'}`;
    expect((await get(`/user/alice/requests/recent?cursor=${encodeURIComponent(edited)}`, bearer(alice))).body.error.code).toBe('invalid_cursor');
    expect((await get('/user/nobody/requests/recent', admin)).body).toMatchObject({ data: [], data_count: 0, pagination: { has_more: false, next_cursor: null } });
  });
});

describe('GET /stats and /stats/popular-markets', () => {
  it('requests today and this period, distinct users, per-endpoint counts, latency quantiles', async () => {
    const r = await get('/stats', admin);
    expect(r.status).toBe(200);
    expect(r.body.requests_today).toBe(10);
    expect(r.body.requests_this_period).toBe(10);
    expect(r.body.totals).toMatchObject({ requests: 10, successful: 8, failed: 2, rate_limited: 0, distinct_users: 2, distinct_keys: 2 });
    expect(r.body.totals.latency_ms.p50).toBeGreaterThan(0);
    expect(r.body.totals.latency_ms.p95).toBeGreaterThanOrEqual(r.body.totals.latency_ms.p50);
    const byEndpoint = Object.fromEntries(r.body.endpoints.map((e: any) => [e.endpoint, e.requests]));
    expect(byEndpoint).toEqual({
      '/exchange-a/market/date-range': 3,
      '/exchange-b/market/date-range': 3,
      '/exchange-b/market/list': 2,
      '/exchange-a/market/data': 1,
      '/exchange-a/market/list': 1,
    });
    expect(r.body.endpoints[0].requests).toBe(3);
    expect((await get('/stats?from=2020-01-01&to=2020-12-31', admin)).body.totals).toMatchObject({ requests: 0, distinct_users: 0, latency_ms: { p50: null, p95: null } });
  });

  it('popular markets: most requested first, by venue, limited', async () => {
    const both = await get('/stats/popular-markets', admin);
    expect(both.body).toMatchObject({ venue: null, period: '7d' });
    expect(both.body.markets.map((m: any) => [m.venue, m.market, m.requests, m.distinct_users])).toEqual([
      ['exchange-a', M1, 4, 1],
      ['exchange-b', 'KX-POP', 3, 2],
    ]);
    const b = await get('/stats/popular-markets?venue=exchange-b&period=today', admin);
    expect(b.body.markets.map((m: any) => m.market)).toEqual(['KX-POP']);
    expect(Date.parse(b.body.markets[0].last_requested_at)).toBeLessThanOrEqual(Date.now());
    expect((await get('/stats/popular-markets?limit=1&period=month', admin)).body.markets).toHaveLength(1);
  });
});

describe('bad input is a 400 naming the parameter, never a 500', () => {
  const cases: Array<[string, string, string?]> = [
    ['/usage', 'user_id', 'missing_parameter'],
    ['/usage?user_id=', 'user_id'],
    [`/usage?user_id=${'u'.repeat(200)}`, 'user_id'],
    ['/usage?user_id=a&user_id=b', 'user_id'],
    ['/user/alice/requests/count?from=2026-02-30', 'from'],
    ['/user/alice/requests/count?from=yesterday', 'from'],
    ['/user/alice/requests/count?from=-5', 'from'],
    ['/user/alice/requests/count?to=99999999999999999', 'to'],
    ['/user/alice/requests/count?from=2026-05-02&to=2026-05-01', 'from'],
    ['/user/alice/requests/count?status=600', 'status'],
    ['/user/alice/requests/count?endpoint=/nope', 'endpoint'],
    ['/user/alice/requests/count?endpoint=/usage', 'endpoint'],
    ['/user/alice/requests/timeframe?interval=minute', 'interval'],
    ['/user/alice/requests/timeframe?interval=hour&from=2026-01-01&to=2026-12-31', 'from'],
    ['/user/alice/requests/recent?limit=-1', 'limit'],
    ['/user/alice/requests/recent?limit=0', 'limit'],
    ['/user/alice/requests/recent?limit=1001', 'limit'],
    ['/user/alice/requests/recent?limit=abc', 'limit'],
    ['/user/alice/requests/recent?cursor=garbage', 'cursor', 'invalid_cursor'],
    ['/stats?from=never', 'from'],
    ['/stats?from=2026-05-02&to=2026-05-01', 'from'],
    ['/stats/popular-markets?venue=exchange-c', 'venue'],
    ['/stats/popular-markets?period=1y', 'period'],
    ['/stats/popular-markets?limit=-5', 'limit'],
    ['/stats/popular-markets?limit=101', 'limit'],
  ];
  it.each(cases)('%s', async (url, param, code = 'invalid_parameter') => {
    const r = await get(url, admin);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code, param });
  });

  it('a user id with odd characters is just a user without requests', async () => {
    for (const id of ['%F0%9F%98%80', "x'%3B%20DROP%20TABLE%20request_log%3B--", '%7Bbraces%7D']) {
      const r = await get(`/user/${id}/requests/count`, admin);
      expect(r.status).toBe(200);
      expect(r.body.count).toBe(0);
      expect((await get(`/usage?user_id=${id}`, admin)).body.calls_this_period).toBe(0);
    }
  });
});

describe('OpenAPI', () => {
  it('documents the usage and statistics endpoints, and the 429 of every billable route', async () => {
    const doc = (await get('/openapi.json')).body;
    for (const p of ['/api/v1/usage', '/api/v1/user/{user_id}/requests/count', '/api/v1/user/{user_id}/requests/timeframe', '/api/v1/user/{user_id}/requests/recent', '/api/v1/stats', '/api/v1/stats/popular-markets']) {
      expect(doc.paths[p]?.get, p).toBeDefined();
      expect(doc.paths[p].get.responses['200'], p).toBeDefined();
      expect(doc.paths[p].get.responses['429'], p).toBeUndefined();
    }
    const count = doc.paths['/api/v1/user/{user_id}/requests/count'].get.parameters.map((x: any) => x.name).sort();
    expect(count).toEqual(['endpoint', 'from', 'status', 'to', 'user_id']);
    const billable = Object.entries(doc.paths as Record<string, any>).filter(([p]) => /market\/(data|date-range|list|orderbook-summary)/.test(p));
    expect(billable.length).toBeGreaterThanOrEqual(13);
    for (const [p, ops] of billable) expect(ops.get.responses['429'], p).toBeDefined();
    expect(doc.paths['/api/v1/health'].get.responses['429']).toBeUndefined();
    expect(JSON.stringify(doc)).toContain('retry_after_seconds');
  });
});
