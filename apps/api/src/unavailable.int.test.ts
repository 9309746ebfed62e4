import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@booktape/testkit';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ClickHouse } from '@booktape/storage';
import { silentLogger } from '@booktape/config';
import { createApp } from './api.ts';
import { createRedis, type Redis } from './redis.ts';
import { bearer, conditionId, startTestApi, type TestApi } from './testing.ts';

/** A backing service that is down answers 503 fast: no hang, no 500. */

let t: TestApi;
let key: string;
let deadRedis: Redis;
let closedPort: number;


beforeAll(async () => {
  t = await startTestApi();
  key = await t.newKey();
  closedPort = await freePort();
  deadRedis = createRedis(`redis://127.0.0.1:${closedPort}`);
  deadRedis.on('error', () => undefined);
});
afterAll(async () => {
  deadRedis?.disconnect();
  await t?.close();
});

async function timed(app: FastifyInstance, opts: InjectOptions) {
  const started = Date.now();
  const res = await app.inject(opts);
  return { res, ms: Date.now() - started };
}

const DATA = `/api/v1/exchange-a/market/data?condition_id=${conditionId(1)}&date=2026-03-01`;

describe('Redis unreachable', () => {
  it('historical data, keys and health answer 503 within about a second', async () => {
    const app = await t.another({}, deadRedis);
    for (const opts of [
      { url: DATA, headers: bearer(key) },
      { url: '/api/v1/exchange-b/market/list', headers: bearer(key) },
      { method: 'POST' as const, url: '/api/v1/keys?name=a&user_id=u' },
      { url: '/api/v1/keys?user_id=user-1' },
    ]) {
      const { res, ms } = await timed(app, opts);
      expect(res.statusCode, String(opts.url)).toBe(503);
      expect(res.json()).toEqual({ error: { code: 'service_unavailable', message: expect.any(String) } });
      expect(res.headers['retry-after']).toBe('1');
      expect(ms).toBeLessThan(1000);
    }
    const health = await timed(app, { url: '/api/v1/health' });
    expect(health.res.statusCode).toBe(503);
    expect(health.res.json()).toMatchObject({ status: 'degraded', checks: { redis: false, clickhouse: true } });
    expect(health.ms).toBeLessThan(2000);
    // Bad input is still a 400 and a missing key a 401: those need no Redis.
    expect((await app.inject({ url: DATA })).statusCode).toBe(401);
  });

  it('the nothing-stored guarantee: a key creation that failed left no key behind', async () => {
    const app = await t.another({}, deadRedis);
    expect((await app.inject({ method: 'POST', url: '/api/v1/keys?name=ghost&user_id=ghost-user' })).statusCode).toBe(503);
    const listed = await t.app.inject({ url: '/api/v1/keys?user_id=ghost-user' });
    expect(listed.json().total).toBe(0);
  });
});

describe('ClickHouse unreachable', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    const client = createClient({ url: `http://127.0.0.1:${closedPort}`, request_timeout: 2000, log: { level: ClickHouseLogLevel.OFF } });
    const dead: ClickHouse = {
      client,
      database: 'booktape_test',
      mode: 'server',
      cluster: undefined,
      embeddedPath: undefined,
      table: (n) => `booktape_test.${n}`,
      close: () => client.close(),
    };
    // Same Redis prefix: the key is known from the cache, so requests get past authentication.
    app = await createApp({ ch: dead, log: silentLogger(), redis: t.redis, config: t.config });
  });
  afterAll(async () => app?.close());

  it('raw pages (streamed), ranges, availability and lists answer 503', async () => {
    for (const url of [
      DATA,
      `/api/v1/exchange-b/market/data/range?ticker=KX-1&start_timestamp=1772323200&end_timestamp=1772323300`,
      `/api/v1/exchange-a/market/date-range?condition_id=${conditionId(1)}`,
      '/api/v1/exchange-a/market/list',
    ]) {
      const { res, ms } = await timed(app, { url, headers: bearer(key) });
      expect(res.statusCode, url).toBe(503);
      expect(res.json().error.code).toBe('service_unavailable');
      expect(ms).toBeLessThan(1000);
    }
    const health = await app.inject({ url: '/api/v1/health' });
    expect(health.statusCode).toBe(503);
    expect(health.json().checks).toMatchObject({ clickhouse: false, redis: true });
  });

  it('an unknown key needs ClickHouse to be refused: 503, not 401 or 500', async () => {
    const { res } = await timed(app, { url: DATA, headers: bearer(`bt_live_${'Q'.repeat(43)}`) });
    expect(res.statusCode).toBe(503);
  });
});
