import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { uniqueId, waitFor } from '@booktape/testkit';
import { createApp } from '../api.ts';
import { UNLIMITED_PLANS, periodOf, type PlanLimits } from '../usage/limits.ts';
import { bearer, startTestApi, type TestApi } from '../testing.ts';

/**
 * The fields every answer carries for the people and programs that call the API (issue 26,
 * item 6), against the real Redis and store: keyed answers are private to the caller's
 * cache, carry RateLimit fields that agree with the quota, every answer has a request id
 * that is also in its log lines and its request-log row, and CORS is off unless origins
 * are listed.
 */

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(async () => t?.close());

const LIST = '/api/v1/exchange-b/market/list';
const COVERAGE = '/api/v1/exchange-b/market/coverage?ticker=KX-HDR&start_date=2026-03-01&end_date=2026-03-02';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const plans = (free: Partial<PlanLimits['free']>): PlanLimits => ({ ...UNLIMITED_PLANS, free: { ...UNLIMITED_PLANS.free, ...free } });

async function appWith(p: PlanLimits, extra: Parameters<TestApi['another']>[0] = {}) {
  return t.another({ plans: p, redisKeyPrefix: `${uniqueId('bt-hdr')}:`, ...extra });
}
async function keyOn(app: FastifyInstance, user: string): Promise<string> {
  const r = await app.inject({ method: 'POST', url: `/api/v1/keys?name=h&user_id=${user}` });
  expect(r.statusCode).toBe(200);
  return r.json().data.api_key as string;
}
const rl = (h: Record<string, unknown>) => ({
  limit: h['ratelimit-limit'],
  remaining: h['ratelimit-remaining'],
  reset: h['ratelimit-reset'],
  policy: h['ratelimit-policy'],
});

describe('Cache-Control on keyed answers', () => {
  it('is private on every answer to a keyed request: data, lists, coverage, errors; the public routes keep theirs', async () => {
    const app = await appWith(UNLIMITED_PLANS);
    const key = await keyOn(app, 'cc-user');
    const cases: Array<[string, number, string]> = [
      [LIST, 200, 'private, no-cache'],
      [COVERAGE, 200, 'private, no-cache'],
      [`${LIST}?limit=0`, 400, 'private, no-store'],
      ['/api/v1/exchange-b/market/data?ticker=KX-HDR&date=2026-03-01', 200, 'private, max-age=86400, immutable'],
    ];
    for (const [url, status, cc] of cases) {
      const r = await app.inject({ url, headers: bearer(key) });
      expect(r.statusCode, url).toBe(status);
      expect(r.headers['cache-control'], url).toBe(cc);
    }
    // Unauthenticated: the error is no-store and marked private all the same (the route is keyed).
    expect((await app.inject({ url: LIST })).headers['cache-control']).toBe('private, no-store');
    expect((await app.inject({ url: '/api/v1/health' })).headers['cache-control']).toBeUndefined();
    expect((await app.inject({ url: '/status' })).headers['cache-control']).toBe('no-store');
  });
});

describe('RateLimit fields', () => {
  it('count down with the monthly quota, say when it resets, and 0 on the 429 that refuses', async () => {
    const app = await appWith(plans({ monthly: 4, perSecond: null }));
    const key = await keyOn(app, 'rl-monthly');
    const now = Date.now();
    const period = periodOf(now);
    const resetS = Math.ceil((period.endMs - now) / 1000);
    const policy = `4;w=${(period.endMs - period.startMs) / 1000}`;
    for (const remaining of [3, 2, 1, 0]) {
      const r = await app.inject({ url: LIST, headers: bearer(key) });
      expect(r.statusCode).toBe(200);
      expect(rl(r.headers)).toMatchObject({ limit: '4', remaining: String(remaining), policy });
      expect(Math.abs(Number(r.headers['ratelimit-reset']) - resetS)).toBeLessThanOrEqual(5);
    }
    const refused = await app.inject({ url: LIST, headers: bearer(key) });
    expect(refused.statusCode).toBe(429);
    expect(rl(refused.headers)).toMatchObject({ limit: '4', remaining: '0', policy });
    expect(refused.headers['ratelimit-reset']).toBe(refused.headers['retry-after']);
  });

  it('answers that count nothing (the coverage map, a 400, a 304) carry them too, unchanged', async () => {
    const app = await appWith(plans({ monthly: 10, perSecond: null }));
    const key = await keyOn(app, 'rl-peek');
    expect(rl((await app.inject({ url: LIST, headers: bearer(key) })).headers).remaining).toBe('9');
    for (const url of [COVERAGE, `${LIST}?limit=0`, COVERAGE]) {
      const r = await app.inject({ url, headers: bearer(key) });
      expect(rl(r.headers), url).toMatchObject({ limit: '10', remaining: '9' });
    }
    expect(rl((await app.inject({ url: LIST, headers: bearer(key) })).headers).remaining).toBe('8');
    // A 304 holds a reservation while it is handled and gives it back: the fields say so.
    const DATA = '/api/v1/exchange-b/market/data?ticker=KX-HDR&date=2026-03-01';
    const full = await app.inject({ url: DATA, headers: bearer(key) });
    expect(rl(full.headers).remaining).toBe('7');
    const same = await app.inject({ url: DATA, headers: { ...bearer(key), 'if-none-match': full.headers.etag as string } });
    expect(same.statusCode).toBe(304);
    expect(rl(same.headers)).toMatchObject({ limit: '10', remaining: '7' });
    expect(rl((await app.inject({ url: LIST, headers: bearer(key) })).headers).remaining).toBe('6');
  });

  it('describe the burst window when it is the closer limit, and its 429 says 0 and 1 s', async () => {
    const app = await appWith(plans({ monthly: 1000, perSecond: 3 }));
    const key = await keyOn(app, 'rl-burst');
    const first = await app.inject({ url: COVERAGE, headers: bearer(key) });
    expect(rl(first.headers).policy).toBe(`3;w=1, 1000;w=${(periodOf(Date.now()).endMs - periodOf(Date.now()).startMs) / 1000}`);
    // Parallel requests in one second of the Redis clock (retried when a second boundary splits them).
    await waitFor('three 429s in one second', async () => {
      const rs = await Promise.all(Array.from({ length: 6 }, () => app.inject({ url: LIST, headers: bearer(key) })));
      const refused = rs.filter((r) => r.statusCode === 429);
      if (refused.length < 3) return false;
      for (const r of refused) expect(rl(r.headers)).toMatchObject({ limit: '3', remaining: '0', reset: '1' });
      const remaining = rs.filter((r) => r.statusCode === 200).map((r) => rl(r.headers).remaining).sort();
      expect(remaining).toEqual(['0', '1', '2']);
      return true;
    }, 20_000);
  });

  it('are left out for a plan without limits', async () => {
    const app = await appWith(UNLIMITED_PLANS);
    const key = await keyOn(app, 'rl-none');
    const r = await app.inject({ url: LIST, headers: bearer(key) });
    expect(r.statusCode).toBe(200);
    expect(r.headers['ratelimit-limit']).toBeUndefined();
    expect(r.headers['ratelimit-policy']).toBeUndefined();
  });
});

describe('X-Request-Id', () => {
  it('is on every answer: made when the client sent none or a malformed one, kept when well-formed', async () => {
    const key = await t.newKey('rid-user');
    for (const [url, headers] of [
      ['/api/v1/health', {}],
      ['/api/v1/no/such/route', {}],
      [LIST, bearer(key)],
      [LIST, {}],
      ['/status', {}],
    ] as const) {
      const r = await t.app.inject({ url, headers });
      expect(r.headers['x-request-id'], url).toMatch(UUID);
    }
    // Refused before any route runs: a malformed URL, a body too large, an unknown method.
    for (const req of [
      { method: 'GET' as const, url: '/api/v1/exchange-b/market/list?limit=%zz' },
      { method: 'GET' as const, url: '/api/v1/%zz' },
      { method: 'POST' as const, url: '/api/v1/outages', payload: 'x'.repeat(70 * 1024), headers: { 'content-type': 'application/json' } },
      { method: 'PATCH' as const, url: '/api/v1/keys' },
    ]) {
      const r = await t.app.inject(req);
      expect(r.statusCode, req.url).toBeGreaterThanOrEqual(400);
      expect(String(r.headers['x-request-id']), `${req.method} ${req.url} ${r.statusCode}`).toMatch(UUID);
      expect(r.json().error.code, req.url).toEqual(expect.any(String));
    }
    const ids = new Set(await Promise.all(Array.from({ length: 20 }, async () => (await t.app.inject({ url: '/api/v1/health' })).headers['x-request-id'])));
    expect(ids.size).toBe(20);
    expect((await t.app.inject({ url: LIST, headers: { ...bearer(key), 'x-request-id': 'client-trace:42/a' } })).headers['x-request-id']).toBe('client-trace:42/a');
    expect((await t.app.inject({ url: LIST, headers: { ...bearer(key), 'x-request-id': 'two words' } })).headers['x-request-id']).toMatch(UUID);
  });

  it('names the request-log row of a billable call when the server made it', async () => {
    const key = await t.newKey('rid-log-user');
    const r = await t.app.inject({ url: LIST, headers: bearer(key) });
    const id = r.headers['x-request-id'] as string;
    expect(id).toMatch(UUID);
    await waitFor('the request-log row', async () => {
      const recent = await t.app.inject({ url: '/api/v1/user/rid-log-user/requests/recent', headers: bearer(key) });
      return (recent.json() as { data: Array<{ request_id: string }> }).data.some((row) => row.request_id === id);
    }, 20_000);
  });

  it('is in the log lines of its request', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const app = await createApp({ ch: t.ch, log: pino({ level: 'info' }, sink), redis: t.redis, config: { ...t.config, redisKeyPrefix: `${uniqueId('bt-hdr')}:` } });
    try {
      const body = { venue: 'exchange-b', from: '2026-03-01T00:00:00Z', to: '2026-03-01T01:00:00Z', reason: 'request id test' };
      const mine = await app.inject({ method: 'POST', url: '/api/v1/outages', payload: body, headers: { 'x-request-id': 'outage-req-1' } });
      expect(mine.statusCode, mine.body).toBe(200);
      const made = await app.inject({ method: 'POST', url: '/api/v1/outages', payload: body });
      const madeId = made.headers['x-request-id'] as string;
      const declared = lines.filter((l) => l.msg === 'outage declared');
      expect(declared.map((l) => l.request_id)).toEqual(['outage-req-1', madeId]);
    } finally {
      await app.close();
    }
  });
});

describe('CORS', () => {
  const ORIGIN = 'https://app.example.com';

  it('is off by default: no Access-Control fields, no preflight', async () => {
    const key = await t.newKey('cors-off');
    const r = await t.app.inject({ url: LIST, headers: { ...bearer(key), origin: ORIGIN } });
    expect(r.statusCode).toBe(200);
    expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const pre = await t.app.inject({ method: 'OPTIONS', url: LIST, headers: { origin: ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } });
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('with CORS_ORIGINS, answers the listed origins only, and exposes the fields a client reads', async () => {
    const app = await appWith(plans({ monthly: 100 }), { corsOrigins: [ORIGIN, 'http://localhost:5173'] });
    const key = await keyOn(app, 'cors-on');
    const r = await app.inject({ url: LIST, headers: { ...bearer(key), origin: ORIGIN } });
    expect(r.statusCode).toBe(200);
    expect(r.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(r.headers.vary).toMatch(/origin/i);
    const exposed = String(r.headers['access-control-expose-headers']).split(',').map((s) => s.trim().toLowerCase());
    for (const h of ['link', 'x-total-count', 'etag', 'content-disposition', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-request-id']) expect(exposed).toContain(h);
    expect(r.headers['access-control-allow-credentials']).toBeUndefined();

    const other = await app.inject({ url: LIST, headers: { ...bearer(key), origin: 'https://evil.example' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();

    const pre = await app.inject({ method: 'OPTIONS', url: LIST, headers: { origin: ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } });
    expect(pre.statusCode).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(pre.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
    // A preflight is not a data request: not billed.
    const usage = await app.inject({ url: '/api/v1/usage?user_id=cors-on' });
    expect(usage.json().calls_this_period).toBe(2);
  });
});
