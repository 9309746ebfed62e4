import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { SubscriptionsRepository } from '@booktape/storage';
import { freePort, OwnRedis, uniqueId, waitFor } from '@booktape/testkit';
import { createRedis, type Redis } from '../redis.ts';
import { UNLIMITED_PLANS, periodOf, type PlanLimits } from './limits.ts';
import { quotaExceededSchema } from './schemas.ts';
import { bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * Plans and quotas against the real Redis and ClickHouse: exact under concurrency (also
 * across two API processes), only successful calls count, the burst limit, plan changes,
 * and a Redis that restarts empty (the counters come back from the request log).
 */

let t: TestApi;

beforeAll(async () => {
  t = await startTestApi();
});
afterAll(async () => t?.close());

const plans = (free: Partial<PlanLimits['free']>, rest: Partial<PlanLimits> = {}): PlanLimits => ({ ...UNLIMITED_PLANS, free: { ...UNLIMITED_PLANS.free, ...free }, ...rest });
const LIST = '/api/v1/exchange-b/market/list';
const DATE_RANGE = (ticker = 'KX-Q') => `/api/v1/exchange-b/market/date-range?ticker=${ticker}`;

async function appWith(p: PlanLimits, extra: Parameters<TestApi['another']>[0] = {}, redis?: Redis) {
  return t.another({ plans: p, redisKeyPrefix: `${uniqueId('bt-quota')}:`, ...extra }, redis);
}

async function keyOn(app: FastifyInstance, user: string): Promise<string> {
  const r = await app.inject({ method: 'POST', url: `/api/v1/keys?name=q&user_id=${encodeURIComponent(user)}` });
  expect(r.statusCode).toBe(200);
  return r.json().data.api_key as string;
}

async function usage(app: FastifyInstance, user: string) {
  const r = await app.inject({ url: `/api/v1/usage?user_id=${encodeURIComponent(user)}` });
  expect(r.statusCode, r.body).toBe(200);
  return r.json() as { calls_this_period: number; limit: number | null; remaining: number | null; tier: string; unlimited: boolean };
}

function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

describe('monthly quota', () => {
  it('N parallel requests against a quota of Q let exactly Q through; the others get 429 with the documented body', async () => {
    const Q = 25;
    const N = 80;
    const app = await appWith(plans({ monthly: Q }));
    const key = await keyOn(app, 'parallel-user');
    const before = Date.now();
    const results = await Promise.all(Array.from({ length: N }, (_, i) => app.inject({ url: i % 2 ? LIST : DATE_RANGE(), headers: bearer(key) })));
    expect(tally(results.map((r) => r.statusCode))).toEqual({ 200: Q, 429: N - Q });

    const refused = results.find((r) => r.statusCode === 429)!;
    const body = refused.json();
    expect(quotaExceededSchema.strict().parse(body)).toEqual(body);
    const period = periodOf(before);
    expect(body).toEqual({
      error: { code: 'rate_limited', message: expect.stringContaining('monthly request quota of the free plan') },
      quota: {
        limit: 'monthly',
        plan: 'free',
        allowed: Q,
        used: Q,
        remaining: 0,
        requested: 1,
        window: period.id,
        resets_at: new Date(period.endMs).toISOString(),
        retry_after_seconds: expect.any(Number),
      },
    });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBe(body.quota.retry_after_seconds);
    expect(Math.abs(retryAfter - Math.ceil((period.endMs - before) / 1000))).toBeLessThanOrEqual(5);
    expect(refused.headers['content-type']).toMatch(/application\/json/);

    // The (Q+1)th, asked alone afterwards, is refused the same way; /usage agrees.
    const next = await app.inject({ url: LIST, headers: bearer(key) });
    expect(next.statusCode).toBe(429);
    expect(await usage(app, 'parallel-user')).toMatchObject({ calls_this_period: Q, limit: Q, remaining: 0, tier: 'free', unlimited: false });
  });

  it('holds exactly across two API processes sharing Redis', async () => {
    const Q = 30;
    const prefix = `${uniqueId('bt-quota')}:`;
    const a = await appWith(plans({ monthly: Q }), { redisKeyPrefix: prefix });
    const b = await appWith(plans({ monthly: Q }), { redisKeyPrefix: prefix });
    const key = await keyOn(a, 'two-process-user');
    const results = await Promise.all(Array.from({ length: 90 }, (_, i) => (i % 2 ? a : b).inject({ url: DATE_RANGE(`KX-${i % 7}`), headers: bearer(key) })));
    expect(tally(results.map((r) => r.statusCode))).toEqual({ 200: Q, 429: 90 - Q });
  });

  it('only successful calls count: 4xx and unauthenticated requests give their reservation back', async () => {
    const app = await appWith(plans({ monthly: 3 }));
    const key = await keyOn(app, 'failing-user');
    const bad = await Promise.all([
      app.inject({ url: '/api/v1/exchange-b/market/list?limit=-1', headers: bearer(key) }),
      app.inject({ url: '/api/v1/exchange-a/market/data?condition_id=zz&date=2026-03-01', headers: bearer(key) }),
      // Passes the schema, refused by the handler (start after end): reserved, then given back.
      app.inject({ url: '/api/v1/exchange-a/market/data/range?condition_id=0xab&start_timestamp=1772323300&end_timestamp=1772323200', headers: bearer(key) }),
      app.inject({ url: '/api/v1/exchange-a/market/data?condition_id=0xab&date=2020-01-01', headers: bearer(key) }),
      app.inject({ url: '/api/v1/exchange-b/market/date-range', headers: bearer(key) }),
      app.inject({ url: LIST }),
      app.inject({ url: LIST, headers: bearer(`bt_live_${'A'.repeat(43)}`) }),
    ]);
    expect(bad.map((r) => r.statusCode)).toEqual([400, 400, 400, 400, 400, 401, 401]);
    expect((await usage(app, 'failing-user')).calls_this_period).toBe(0);
    const ok = await Promise.all(Array.from({ length: 5 }, () => app.inject({ url: LIST, headers: bearer(key) })));
    expect(tally(ok.map((r) => r.statusCode))).toEqual({ 200: 3, 429: 2 });
    // Over the quota, malformed input is still told so (parameters are checked before the quota).
    expect((await app.inject({ url: '/api/v1/exchange-b/market/list?limit=-1', headers: bearer(key) })).statusCode).toBe(400);
    expect((await app.inject({ url: LIST, headers: bearer(key) })).statusCode).toBe(429);
    expect((await usage(app, 'failing-user')).calls_this_period).toBe(3);
  });

  it('a streamed raw page counts once, and every billable endpoint counts', async () => {
    const app = await appWith(plans({ monthly: 100 }));
    const key = await keyOn(app, 'every-endpoint-user');
    const M = conditionId(77);
    const urls = [
      `/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01`,
      `/api/v1/market/data?condition_id=${M}&date=2026-03-01`,
      `/api/v1/exchange-b/market/data?ticker=KX-1&date=2026-03-01`,
      `/api/v1/exchange-a/market/data/range?condition_id=${M}&start_timestamp=1772323200&end_timestamp=1772323300`,
      `/api/v1/market/data/range?condition_id=${M}&start_timestamp=1772323200&end_timestamp=1772323300`,
      `/api/v1/exchange-b/market/data/range?ticker=KX-1&start_timestamp=1772323200&end_timestamp=1772323300`,
      `/api/v1/exchange-a/market/date-range?condition_id=${M}`,
      `/api/v1/exchange-b/market/date-range?ticker=KX-1`,
      `/api/v1/exchange-a/market/list`,
      `/api/v1/exchange-b/market/list`,
      `/api/v1/exchange-a/market/orderbook-summary?condition_id=${M}&asset_id=1&date=2026-03-01`,
      `/api/v1/exchange-b/market/orderbook-summary?ticker=KX-1&date=2026-03-01`,
      `/api/v1/exchange-a/market/book?condition_id=${M}&asset_id=1&timestamp=1772323200`,
      `/api/v1/exchange-b/market/book?ticker=KX-1&timestamp=1772323200`,
      `/api/v1/exchange-b/market/book-snapshots?ticker=KX-1&start_timestamp=1772323200&end_timestamp=1772326800`,
      `/api/v1/exchange-b/market/export?ticker=KX-1&start_date=2026-03-01&end_date=2026-03-01`,
    ];
    for (const url of urls) expect((await app.inject({ url, headers: bearer(key) })).statusCode, url).toBe(200);
    // Not billable: health, lookup (its answer does not matter here), usage itself.
    await app.inject({ url: '/api/v1/health' });
    await app.inject({ url: '/api/v1/lookup/slug?slug=%20' });
    for (let i = 0; i < 3; i++) await usage(app, 'every-endpoint-user');
    expect((await usage(app, 'every-endpoint-user')).calls_this_period).toBe(urls.length);
  });
});

describe('over a real socket', () => {
  it('a streamed page is counted and logged with the bytes the client received; a 429 is logged too', async () => {
    const prefix = `${uniqueId('bt-quota')}:`;
    const app = await appWith(plans({ monthly: 1 }), { redisKeyPrefix: prefix, requestLogFlushMs: 50 });
    const key = await keyOn(app, 'socket-user');
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const M = conditionId(78);
    // Logged bytes are the bytes on the wire (compressed when the client accepts it); fetch
    // would decode a compressed body, so this client asks for it plain to compare.
    const page = await fetch(`${address}/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01`, { headers: { ...bearer(key), 'accept-encoding': 'identity' } });
    expect(page.status).toBe(200);
    const body = Buffer.from(await page.arrayBuffer());
    const refused = await fetch(`${address}/api/v1/exchange-b/market/list`, { headers: bearer(key) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    await refused.arrayBuffer();
    const rows = (await waitFor('two log rows', async () => {
      const rs = await t.ch.client.query({
        query: `SELECT endpoint, status, bytes, market FROM ${t.ch.table('request_log')} WHERE user_id = 'socket-user' ORDER BY ts`,
        format: 'JSONEachRow',
      });
      const r = await rs.json<{ endpoint: string; status: number; bytes: string; market: string }>();
      return r.length === 2 ? r : null;
    }, 10_000))!;
    expect(rows[0]).toMatchObject({ endpoint: '/exchange-a/market/data', status: 200, market: M });
    expect(Number(rows[0]!.bytes)).toBe(body.length);
    expect(rows[1]).toMatchObject({ endpoint: '/exchange-b/market/list', status: 429, market: '' });
    expect((await usage(app, 'socket-user')).calls_this_period).toBe(1);
  });
});

describe('burst limit', () => {
  it('per user per second, all keys together: the rest get 429 with Retry-After 1', async () => {
    const app = await appWith(plans({ perSecond: 4 }));
    const k1 = await keyOn(app, 'burst-user');
    const k2 = await keyOn(app, 'burst-user');
    // Warm up (plan and counter cached), so the volley below takes milliseconds.
    expect((await usage(app, 'burst-user')).calls_this_period).toBe(0);
    // Start right after a second begins, so the whole volley falls into one window.
    await waitFor('the start of a second', () => Date.now() % 1000 < 100, 2000, 5);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => app.inject({ url: LIST, headers: bearer(i % 2 ? k1 : k2) })));
    expect(tally(results.map((r) => r.statusCode))).toEqual({ 200: 4, 429: 8 });
    const refused = results.find((r) => r.statusCode === 429)!;
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json().quota).toMatchObject({ limit: 'per_second', plan: 'free', allowed: 4, used: 4, retry_after_seconds: 1 });
    // The next second has room again; refused requests did not use the monthly quota.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await app.inject({ url: LIST, headers: bearer(k1) })).statusCode).toBe(200);
    expect((await usage(app, 'burst-user')).calls_this_period).toBe(5);
  });
});

describe('plans', () => {
  it('the plan in force decides: an upgrade (the webhook write-through) lifts the 429 on the next request', async () => {
    const limits = plans({ monthly: 2 }, { starter: { monthly: 5, perSecond: null } });
    const prefix = `${uniqueId('bt-quota')}:`;
    const app = await appWith(limits, { redisKeyPrefix: prefix });
    const user = 'upgrading-user';
    const key = await keyOn(app, user);
    const first = await Promise.all(Array.from({ length: 3 }, () => app.inject({ url: LIST, headers: bearer(key) })));
    expect(tally(first.map((r) => r.statusCode))).toEqual({ 200: 2, 429: 1 });
    expect(await usage(app, user)).toMatchObject({ tier: 'free', limit: 2, remaining: 0 });

    // What the Stripe webhook does on a subscription becoming active: write ClickHouse, then over the cache.
    const now = new Date().toISOString();
    const row = {
      user_id: user,
      email: 'u@example.com',
      stripe_customer_id: 'cus_1',
      stripe_subscription_id: 'sub_1',
      tier: 'starter',
      status: 'active',
      plan: 'starter',
      current_period_end: null,
      cancel_at_period_end: false,
      event_created: Math.floor(Date.now() / 1000),
      last_event_id: 'evt_1',
      updated_at: now,
      version: Date.now(),
    };
    await new SubscriptionsRepository(t.ch).save(row);
    await t.redis.set(`${prefix}sub:user:${user}`, JSON.stringify(row), 'EX', 300);

    const after = await Promise.all(Array.from({ length: 4 }, () => app.inject({ url: LIST, headers: bearer(key) })));
    expect(tally(after.map((r) => r.statusCode))).toEqual({ 200: 3, 429: 1 });
    expect(after.find((r) => r.statusCode === 429)!.json().quota).toMatchObject({ plan: 'starter', allowed: 5, used: 5 });
    expect(await usage(app, user)).toMatchObject({ tier: 'starter', calls_this_period: 5, limit: 5, remaining: 0 });
  });

  it('an unlimited plan is never refused for the month, and its calls are still counted', async () => {
    const app = await appWith(plans({ monthly: null, perSecond: null }));
    const key = await keyOn(app, 'unlimited-user');
    const results = await Promise.all(Array.from({ length: 40 }, () => app.inject({ url: LIST, headers: bearer(key) })));
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    expect(await usage(app, 'unlimited-user')).toMatchObject({ calls_this_period: 40, limit: null, remaining: null, unlimited: true });
  });
});

// ---- Redis restart ------------------------------------------------------------------------


describe('a Redis restart does not reset usage', () => {
  let own: OwnRedis;
  beforeAll(async () => {
    own = new OwnRedis(await freePort());
    await own.start();
  });
  afterAll(async () => own?.cleanup());

  it('the counters are rebuilt from the request log: rows still in memory, then rows in ClickHouse', async () => {
    const Q = 10;
    const user = 'restart-user';
    const url = `redis://127.0.0.1:${own.port}`;
    const redisA = createRedis(url, { connectionName: 'quota-test-a' });
    redisA.on('error', () => undefined);
    const prefix = `${uniqueId('bt-quota')}:`;
    // A long flush interval: the rows of A stay in its memory until it closes.
    const a = await appWith(plans({ monthly: Q }), { redisKeyPrefix: prefix, requestLogFlushMs: 600_000 }, redisA);
    const key = await keyOn(a, user);
    const first = await Promise.all(Array.from({ length: 6 }, (_, i) => a.inject({ url: DATE_RANGE(`KX-R${i}`), headers: bearer(key) })));
    expect(first.every((r) => r.statusCode === 200)).toBe(true);
    expect((await a.inject({ url: `${LIST}?limit=0`, headers: bearer(key) })).statusCode).toBe(400); // not counted
    expect((await usage(a, user)).calls_this_period).toBe(6);

    // Redis dies and comes back empty.
    await own.kill();
    expect((await a.inject({ url: LIST, headers: bearer(key) })).statusCode).toBe(503);
    await own.start();
    await waitFor('app A reconnected', async () => redisA.status === 'ready' && (await redisA.ping()) === 'PONG', 15_000, 50);
    expect(await redisA.dbsize()).toBe(0);

    // Nothing is in ClickHouse yet: the count comes from A's memory.
    expect((await usage(a, user)).calls_this_period).toBe(6);
    const second = await Promise.all(Array.from({ length: 2 }, () => a.inject({ url: LIST, headers: bearer(key) })));
    expect(second.every((r) => r.statusCode === 200)).toBe(true);
    expect((await usage(a, user)).calls_this_period).toBe(8);

    // Lost again, and A goes away (its close writes the log): another process rebuilds from ClickHouse.
    await redisA.flushall();
    await a.close();
    const redisB = createRedis(url, { connectionName: 'quota-test-b' });
    redisB.on('error', () => undefined);
    const b = await appWith(plans({ monthly: Q }), { redisKeyPrefix: prefix }, redisB);
    expect((await usage(b, user)).calls_this_period).toBe(8);
    const third = await Promise.all(Array.from({ length: 5 }, () => b.inject({ url: LIST, headers: bearer(key) })));
    expect(tally(third.map((r) => r.statusCode))).toEqual({ 200: 2, 429: 3 });
    expect(third.find((r) => r.statusCode === 429)!.json().quota).toMatchObject({ limit: 'monthly', used: Q, allowed: Q });

    // Concurrent rebuilds (many requests find the counter missing at once) do not add up.
    await redisB.flushall();
    const fourth = await Promise.all(Array.from({ length: 20 }, () => b.inject({ url: LIST, headers: bearer(key) })));
    expect(tally(fourth.map((r) => r.statusCode))).toEqual({ 429: 20 });
    expect((await usage(b, user)).calls_this_period).toBe(Q);
  });
});

describe('bulk exports count by the days they cover', () => {
  it('a 3-day export is 3 units; one that does not fit is refused whole; failures give their units back; a rebuild sums units', async () => {
    const Q = 10;
    const user = 'export-user';
    const app = await appWith(plans({ monthly: Q }), { requestLogFlushMs: 50 });
    const key = await keyOn(app, user);
    const exportOf = (from: string, to: string) => app.inject({ url: `/api/v1/exchange-b/market/export?ticker=KX-EXP&start_date=${from}&end_date=${to}`, headers: bearer(key) });
    expect((await exportOf('2026-03-01', '2026-03-03')).statusCode).toBe(200);
    expect((await usage(app, user)).calls_this_period).toBe(3);
    // 3 + 8 > 10: refused whole, nothing counted.
    const refused = await exportOf('2026-03-01', '2026-03-08');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().quota).toMatchObject({ limit: 'monthly', used: 3, remaining: 7, requested: 8, allowed: Q });
    // A range the export refuses is a 400 before the quota is asked, whatever remains.
    for (const [from, to] of [['2026-03-01', '2026-04-01'], ['2026-03-05', '2026-03-01']]) {
      const bad = await exportOf(from!, to!);
      expect(bad.statusCode, `${from} ${to}`).toBe(400);
    }
    expect((await usage(app, user)).calls_this_period).toBe(3);
    expect((await exportOf('2026-03-01', '2026-03-06')).statusCode).toBe(200);
    expect((await app.inject({ url: LIST, headers: bearer(key) })).statusCode).toBe(200);
    expect((await usage(app, user)).calls_this_period).toBe(10);
    // Redis loses the counter: rebuilt from the log, as units, it is 10 again and nothing more fits.
    await waitFor('the log rows stored', async () => {
      const rs = await t.ch.client.query({ query: `SELECT sum(units) AS u FROM ${t.ch.table('request_log')} WHERE user_id = '${user}' AND status = 200`, format: 'JSONEachRow' });
      return Number((await rs.json<{ u: string }>())[0]?.u ?? 0) === Q;
    }, 10_000);
    const keys = await t.redis.keys(`*quota:{${user}}:m:*`);
    expect(keys.length).toBe(1);
    await t.redis.del(...keys);
    expect((await usage(app, user)).calls_this_period).toBe(Q);
    expect((await exportOf('2026-03-01', '2026-03-01')).statusCode).toBe(429);
    expect((await exportOf('2026-03-05', '2026-03-01')).statusCode).toBe(400);
  });
});
