import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseEnv } from '@booktape/config';
import { apiConfigFromEnv, apiEnvSchema } from '../config.ts';
import { quotaExceededSchema } from './schemas.ts';
import { DEFAULT_PLAN_LIMITS, dayStart, parseLimit, periodOf, quotaExceededBody, rateLimitFields, retryAfterSeconds } from './limits.ts';
import { endpointOf, marketOf, paramsJson, privateCacheControl, venueOf } from './billable.hooks.ts';

const MAX_MS = Date.UTC(2149, 5, 6);

describe('quota period: the calendar month in UTC', () => {
  it('contains the instant, starts on the 1st at 00:00 UTC and ends where the next month starts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        const p = periodOf(ms);
        expect(p.startMs).toBeLessThanOrEqual(ms);
        expect(ms).toBeLessThan(p.endMs);
        const start = new Date(p.startMs);
        expect([start.getUTCDate(), start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds()]).toEqual([1, 0, 0, 0, 0]);
        expect(periodOf(p.endMs).startMs).toBe(p.endMs);
        expect(periodOf(p.endMs - 1).id).toBe(p.id);
        expect(p.id).toBe(new Date(ms).toISOString().slice(0, 7));
      }),
    );
  });

  it('December rolls into January of the next year', () => {
    const p = periodOf(Date.UTC(2026, 11, 31, 23, 59, 59, 999));
    expect(p).toEqual({ id: '2026-12', startMs: Date.UTC(2026, 11, 1), endMs: Date.UTC(2027, 0, 1) });
  });

  it('dayStart is the UTC midnight at or before the instant', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        const d = dayStart(ms);
        expect(d).toBeLessThanOrEqual(ms);
        expect(ms - d).toBeLessThan(86_400_000);
        expect(new Date(d).toISOString().endsWith('T00:00:00.000Z')).toBe(true);
      }),
    );
  });

  it('Retry-After is whole seconds until the reset, at least 1', () => {
    expect(retryAfterSeconds(10_000, 9_999)).toBe(1);
    expect(retryAfterSeconds(10_000, 8_000)).toBe(2);
    expect(retryAfterSeconds(10_000, 8_001)).toBe(2);
    expect(retryAfterSeconds(10_000, 10_000)).toBe(1);
    expect(retryAfterSeconds(10_000, 20_000)).toBe(1);
  });
});

describe('plan limits from the environment', () => {
  it('a non-negative integer, with 0 and "unlimited" meaning no limit', () => {
    expect(parseLimit('1000')).toBe(1000);
    expect(parseLimit(' 7 ')).toBe(7);
    expect(parseLimit('0')).toBeNull();
    expect(parseLimit('unlimited')).toBeNull();
    expect(parseLimit('UNLIMITED')).toBeNull();
    for (const bad of ['-1', '1.5', 'lots', '1e3', '']) expect(parseLimit(bad)).toBeUndefined();
  });

  it('PLAN_* and REQUEST_LOG_FLUSH_MS are read once, with defaults, and a bad value names its variable', () => {
    const base = { CURSOR_SECRET: 'x'.repeat(32) };
    const cfg = apiConfigFromEnv(parseEnv(apiEnvSchema, base), base);
    expect(cfg.plans).toEqual(DEFAULT_PLAN_LIMITS);
    expect(cfg.requestLogFlushMs).toBe(2000);
    const env = { ...base, PLAN_FREE_MONTHLY: '50', PLAN_FREE_PER_SECOND: '0', PLAN_PRO_MONTHLY: 'unlimited', PLAN_STARTER_PER_SECOND: '9', REQUEST_LOG_FLUSH_MS: '500' };
    const c2 = apiConfigFromEnv(parseEnv(apiEnvSchema, env), env);
    expect(c2.plans).toEqual({ free: { monthly: 50, perSecond: null, concurrent: 2 }, starter: { monthly: 100_000, perSecond: 9, concurrent: 4 }, pro: { monthly: null, perSecond: 100, concurrent: 8 } });
    const c3env = { ...base, PLAN_FREE_CONCURRENT: '1', PLAN_STARTER_CONCURRENT: 'unlimited', PLAN_PRO_CONCURRENT: '0' };
    const c3 = apiConfigFromEnv(parseEnv(apiEnvSchema, c3env), c3env);
    expect([c3.plans.free.concurrent, c3.plans.starter.concurrent, c3.plans.pro.concurrent]).toEqual([1, null, null]);
    expect(() => parseEnv(apiEnvSchema, { ...base, PLAN_PRO_CONCURRENT: '-2' })).toThrow(/PLAN_PRO_CONCURRENT: must be a non-negative integer/);
    expect(c2.requestLogFlushMs).toBe(500);
    expect(() => parseEnv(apiEnvSchema, { ...base, PLAN_STARTER_MONTHLY: 'many' })).toThrow(/PLAN_STARTER_MONTHLY: must be a non-negative integer/);
  });
});

describe('the 429 body', () => {
  it('names the limit, the usage and when it resets, in the documented schema', () => {
    const body = quotaExceededBody({ limit: 'monthly', plan: 'free', allowed: 1000, used: 1000, requested: 1, window: '2026-05', resetsAtMs: Date.UTC(2026, 5, 1), retryAfterS: 3600 });
    expect(body).toEqual({
      error: { code: 'rate_limited', message: expect.stringContaining('2026-06-01T00:00:00.000Z') },
      quota: { limit: 'monthly', plan: 'free', allowed: 1000, used: 1000, remaining: 0, requested: 1, window: '2026-05', resets_at: '2026-06-01T00:00:00.000Z', retry_after_seconds: 3600 },
    });
    expect(quotaExceededSchema.parse(body)).toEqual(body);
    const burst = quotaExceededBody({ limit: 'per_second', plan: 'pro', allowed: 100, used: 100, requested: 1, window: '2026-05-02T10:00:00.000Z', resetsAtMs: Date.UTC(2026, 4, 2, 10, 0, 1), retryAfterS: 1 });
    expect(burst.error.message).toMatch(/100 requests per second/);
    expect(quotaExceededSchema.parse(burst)).toEqual(burst);
    // An export of 7 days with 3 of 10 used: 7 remain, and the message says what it needed.
    const big = quotaExceededBody({ limit: 'monthly', plan: 'free', allowed: 10, used: 4, requested: 7, window: '2026-05', resetsAtMs: Date.UTC(2026, 5, 1), retryAfterS: 3600 });
    expect(big.quota).toMatchObject({ used: 4, remaining: 6, requested: 7 });
    expect(big.error.message).toMatch(/counts 7 against the monthly request quota of the free plan, and 6 of 10 remain/);
    expect(quotaExceededSchema.strict().parse(big)).toEqual(big);
  });
});

describe('request log fields', () => {
  it('endpoint without the version prefix, venue from the path (legacy aliases are exchange A)', () => {
    expect(endpointOf('/api/v1/exchange-a/market/data', '/api/v1')).toBe('/exchange-a/market/data');
    expect(venueOf('/exchange-a/market/list')).toBe('exchange-a');
    expect(venueOf('/market/data/range')).toBe('exchange-a');
    expect(venueOf('/exchange-b/market/orderbook-summary')).toBe('exchange-b');
    expect(venueOf('/usage')).toBe('');
  });

  it('params: normalised query as JSON, cursors shortened, size capped', () => {
    expect(JSON.parse(paramsJson({ ticker: 'KX', limit: 10, absent: undefined }))).toEqual({ ticker: 'KX', limit: 10 });
    const cursor = `v1.${'a'.repeat(500)}.mac`;
    expect(JSON.parse(paramsJson({ cursor })).cursor).toBe(`${cursor.slice(0, 24)}…`);
    expect(paramsJson({ prefix: 'x'.repeat(10_000) }).length).toBeLessThan(2200);
    expect(paramsJson(null)).toBe('{}');
  });

  it('market: the condition id or ticker of the query', () => {
    expect(marketOf({ condition_id: '0xab', date: '2026-03-01' })).toBe('0xab');
    expect(marketOf({ ticker: 'KX-1' })).toBe('KX-1');
    expect(marketOf({ prefix: '0x' })).toBe('');
    expect(marketOf(undefined)).toBe('');
  });
});

describe('RateLimit fields (draft-ietf-httpapi-ratelimit-headers-06)', () => {
  const limitArb = fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: null });
  const at = (nowMs: number) => periodOf(nowMs);

  it('describe the limit closest to refusing: the fewest remaining, a tie to the later reset; Policy lists every limit', () => {
    fc.assert(
      fc.property(limitArb, limitArb, fc.nat(2_000_000), fc.nat(2_000), fc.integer({ min: 0, max: MAX_MS }), (monthly, perSecond, monthlyUsed, secondUsed, nowMs) => {
        const period = at(nowMs);
        const f = rateLimitFields({ limit: { monthly, perSecond }, period, monthlyUsed, secondUsed, nowMs });
        if (monthly === null && perSecond === null) {
          expect(f).toBeNull();
          return;
        }
        const monthRemaining = monthly === null ? Infinity : Math.max(0, monthly - monthlyUsed);
        const secondRemaining = perSecond === null ? Infinity : Math.max(0, perSecond - secondUsed);
        const monthlyWins = monthRemaining <= secondRemaining;
        const monthReset = retryAfterSeconds(period.endMs, nowMs);
        expect(f).toEqual({
          'ratelimit-limit': String(monthlyWins ? monthly : perSecond),
          'ratelimit-remaining': String(Math.min(monthRemaining, secondRemaining)),
          'ratelimit-reset': String(monthlyWins ? monthReset : 1),
          'ratelimit-policy': [perSecond === null ? '' : `${perSecond};w=1`, monthly === null ? '' : `${monthly};w=${(period.endMs - period.startMs) / 1000}`].filter(Boolean).join(', '),
        });
        expect(Number(f!['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
      }),
    );
  });

  it('a 429 describes the limit that refused it, whatever the other says', () => {
    const nowMs = Date.UTC(2026, 4, 31, 23, 59, 59, 500);
    const period = at(nowMs);
    const limit = { monthly: 1000, perSecond: 5 };
    expect(rateLimitFields({ limit, period, monthlyUsed: 990, secondUsed: 0, nowMs }, 'monthly')).toMatchObject({
      'ratelimit-limit': '1000',
      'ratelimit-remaining': '10',
      'ratelimit-reset': '1',
      'ratelimit-policy': '5;w=1, 1000;w=2678400',
    });
    expect(rateLimitFields({ limit, period, monthlyUsed: 0, secondUsed: 5, nowMs: Date.UTC(2026, 4, 2) }, 'per_second')).toMatchObject({ 'ratelimit-limit': '5', 'ratelimit-remaining': '0', 'ratelimit-reset': '1' });
  });
});

describe('Cache-Control of keyed answers', () => {
  it('is private: public dropped, the other directives kept, private, no-cache when none was set', () => {
    expect(privateCacheControl('public, max-age=86400, immutable')).toBe('private, max-age=86400, immutable');
    expect(privateCacheControl('private, max-age=60')).toBe('private, max-age=60');
    expect(privateCacheControl('no-store')).toBe('private, no-store');
    expect(privateCacheControl(undefined)).toBe('private, no-cache');
    expect(privateCacheControl('Public')).toBe('private, no-cache');
  });
});
