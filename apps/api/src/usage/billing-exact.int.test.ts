import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import type { FastifyInstance } from 'fastify';
import { silentLogger } from '@booktape/config';
import type { ClickHouse } from '@booktape/storage';
import { freePort, OwnRedis, uniqueId, waitFor } from '@booktape/testkit';
import { createApp } from '../api.ts';
import { createRedis, type Redis } from '../redis.ts';
import { aMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';
import { UNLIMITED_PLANS } from './limits.ts';

/**
 * Billing counts exactly the answers a client received whole with 2xx, whatever goes
 * wrong on the way: a backing read that fails (5xx), a client that leaves in the middle of
 * a streamed page, and a Redis that answers too late (the quota reservation ran, but its
 * answer came after the command timeout and the request was answered 503). The usage
 * counter and the request log must both show the 2xx answers received, no more.
 */

const MARKET = conditionId(91);
const DAY = Date.UTC(2026, 2, 1);
const ROWS = 20_000;

let t: TestApi;
let own: OwnRedis;
let proxy: ReplyHoldingProxy;

/**
 * A TCP proxy in front of Redis that, once armed, holds Redis's replies (not the commands)
 * for `holdMs` from the first EVALSHA it forwards: the command runs in Redis at once, and
 * the API sees no answer before its command timeout, as during an event-loop stall.
 */
class ReplyHoldingProxy {
  private server: net.Server | undefined;
  private holdUntil = 0;
  private armedFor = 0;
  port = 0;

  constructor(private readonly upstreamPort: number) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.upstreamPort, '127.0.0.1');
      const held: Buffer[] = [];
      let timer: NodeJS.Timeout | undefined;
      const flush = () => {
        timer = undefined;
        for (const c of held.splice(0)) client.write(c);
      };
      client.on('data', (chunk: Buffer) => {
        if (this.armedFor > 0 && chunk.toString('latin1').toLowerCase().includes('evalsha')) {
          this.holdUntil = Date.now() + this.armedFor;
          this.armedFor = 0;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        const wait = this.holdUntil - Date.now();
        if (wait > 0 || held.length > 0) {
          held.push(chunk);
          timer ??= setTimeout(flush, Math.max(0, wait));
        } else client.write(chunk);
      });
      const end = () => {
        clearTimeout(timer);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  arm(holdMs: number): void {
    this.armedFor = holdMs;
  }

  close(): void {
    this.server?.close();
  }
}

beforeAll(async () => {
  t = await startTestApi({ streamSessions: 4 });
  const messages = Array.from({ length: ROWS }, (_, i) => aMessage({ market: MARKET, ts: DAY + i, hash: `0xbill${i.toString(16)}` }));
  for (let i = 0; i < messages.length; i += 10_000) await t.filler.insert('exchange-a', messages.slice(i, i + 10_000));
  own = await OwnRedis.create();
  proxy = new ReplyHoldingProxy(own.port);
  await proxy.start();
}, 120_000);
afterAll(async () => {
  proxy?.close();
  await t?.close();
  await own?.cleanup();
});

/** Sends a GET and closes the socket once `afterBytes` bytes of the answer arrived. */
function dropAfter(port: number, path: string, key: string, afterBytes: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const done = () => {
      s.destroy();
      resolve(got.subarray(0, 12).toString('latin1'));
    };
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAccept-Encoding: identity\r\n\r\n`));
    s.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= afterBytes) done();
    });
    s.on('error', done);
    s.on('close', done);
  });
}

/** A GET read to its end: the status, and whether the whole body arrived. */
async function whole(base: string, path: string, key: string): Promise<number> {
  const res = await fetch(`${base}${path}`, { headers: bearer(key) });
  await res.arrayBuffer();
  return res.status;
}

function deadClickHouse(): ClickHouse {
  const client = createClient({ url: 'http://127.0.0.1:1', request_timeout: 2000, log: { level: ClickHouseLogLevel.OFF } });
  return { client, database: 'booktape_test', mode: 'server', cluster: undefined, embeddedPath: undefined, table: (n) => `booktape_test.${n}`, close: () => client.close() };
}

describe('only answers received whole with 2xx are billed', () => {
  it('5xx, pages cut by the client, and reservations whose Redis answer came too late all give their units back', async () => {
    const user = uniqueId('exact-user');
    const prefix = `${uniqueId('bt-exact')}:`;
    const viaProxy: Redis = createRedis(`redis://127.0.0.1:${proxy.port}`, { connectionName: 'exact-a' });
    viaProxy.on('error', () => undefined);
    const direct: Redis = createRedis(own.url, { connectionName: 'exact-d' });
    direct.on('error', () => undefined);
    const config = { plans: UNLIMITED_PLANS, redisKeyPrefix: prefix, requestLogFlushMs: 50 };
    const a = await t.another(config, viaProxy);
    const base = await a.listen({ host: '127.0.0.1', port: 0 });
    const port = (a.server.address() as net.AddressInfo).port;
    // The same users, keys and counters, with a ClickHouse that does not answer: every read fails.
    const d: FastifyInstance = await createApp({ ch: deadClickHouse(), log: silentLogger(), redis: direct, config: { ...t.config, ...config } });
    try {
      const created = await a.inject({ method: 'POST', url: `/api/v1/keys?name=exact&user_id=${user}` });
      const key = created.json().data.api_key as string;
      const small = (i: number) => `/api/v1/exchange-b/market/date-range?ticker=KX-E${i}`;
      const big = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=100000`;
      let received = 0;

      // Answered whole (also loads the scripts into Redis, and caches the key and the plan).
      for (let i = 0; i < 4; i++) if ((await whole(base, small(i), key)) === 200) received += 1;
      expect((await whole(base, big.replace('limit=100000', 'limit=10'), key))).toBe(200);
      received += 1;

      // Pages the client leaves after their status line: 200 sent, the answer cut. (Each on a
      // key of its own, of the same user: one key may stream only two pages at once.)
      const keys = await Promise.all(Array.from({ length: 6 }, async () => (await a.inject({ method: 'POST', url: `/api/v1/keys?name=exact&user_id=${user}` })).json().data.api_key as string));
      const statusLines = await Promise.all(keys.map((k) => dropAfter(port, big, k, 60_000)));
      expect(statusLines.every((l) => l === 'HTTP/1.1 200')).toBe(true);

      // A backing read that fails: 503 after the reservation was made.
      for (const url of [small(1), big]) {
        const r = await d.inject({ url, headers: bearer(key) });
        expect(r.statusCode, url).toBe(503);
      }

      // Redis runs the reservation, but its answer comes after the API's command timeout.
      proxy.arm(1_800);
      const stalled = await Promise.all(Array.from({ length: 8 }, (_, i) => whole(base, small(100 + i), key)));
      expect(stalled.filter((s) => s === 503).length).toBeGreaterThan(0);
      received += stalled.filter((s) => s === 200).length;
      // Afterwards all is well again.
      for (let i = 0; i < 3; i++) if ((await whole(base, small(200 + i), key)) === 200) received += 1;

      // The counter settles on exactly the 2xx answers received (give-backs retry until Redis confirms).
      let used = -1;
      const settled = await waitFor(
        'usage = 2xx answers received',
        async () => {
          const u = await a.inject({ url: `/api/v1/usage?user_id=${user}` });
          if (u.statusCode !== 200) return null;
          used = (u.json() as { calls_this_period: number }).calls_this_period;
          return used === received ? used : null;
        },
        15_000,
        200,
      ).catch(() => null);
      expect(settled === null ? used : settled, `${received} answers received with 2xx`).toBe(received);

      // The request log agrees: its 2xx rows are the answers received, the cut pages 499.
      const rows = (await waitFor(
        'the log rows of A',
        async () => {
          const rs = await t.ch.client.query({
            query: `SELECT status, count() AS n, sum(units) AS u FROM ${t.ch.table('request_log')} WHERE user_id = {u:String} GROUP BY status ORDER BY status`,
            query_params: { u: user },
            format: 'JSONEachRow',
          });
          const r = (await rs.json<{ status: number; n: string; u: string }>()).map((x) => ({ status: x.status, n: Number(x.n), units: Number(x.u) }));
          // Every answer received and every cut page has its row. (A stalled request whose key
          // check itself went unanswered is refused before it is tracked: no row, nothing billed.)
          const okUnits = r.filter((x) => x.status >= 200 && x.status < 300).reduce((s, x) => s + x.units, 0);
          return okUnits >= received && (r.find((x) => x.status === 499)?.n ?? 0) >= 6 ? r : null;
        },
        15_000,
      ))!;
      const ok = rows.filter((r) => r.status >= 200 && r.status < 300);
      expect(ok.reduce((s, r) => s + r.units, 0)).toBe(received);
      expect(rows.find((r) => r.status === 499)?.n).toBe(6);
    } finally {
      await d.close();
      await a.close();
      viaProxy.disconnect();
      direct.disconnect();
    }
  });
});

/** A GET whose answer is never read: the request stays in progress (the socket's back-pressure holds it). */
function hold(port: number, path: string, key: string): { statusLine: Promise<string>; close: () => void } {
  const s = net.connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAccept-Encoding: identity\r\n\r\n`));
  const statusLine = new Promise<string>((resolve) => {
    s.once('data', (chunk: Buffer) => {
      s.pause();
      resolve(chunk.subarray(0, 12).toString('latin1'));
    });
  });
  return { statusLine, close: () => s.destroy() };
}

describe('requests in progress per key', () => {
  it('a key at its plan cap gets 429 too_many_concurrent_requests with Retry-After, not counted; other keys are served; a slot comes back when a request ends', async () => {
    const user = uniqueId('conc-user');
    const plans = { ...UNLIMITED_PLANS, free: { monthly: null, perSecond: null, concurrent: 2 } };
    const app = await t.another({ plans, redisKeyPrefix: `${uniqueId('bt-conc')}:`, requestLogFlushMs: 50 });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as net.AddressInfo).port;
    try {
      const newKey = async () => (await app.inject({ method: 'POST', url: `/api/v1/keys?name=c&user_id=${user}` })).json().data.api_key as string;
      const [k1, k2] = [await newKey(), await newKey()];
      const big = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=100000`;
      const small = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=5`;
      const held = [hold(port, big, k1), hold(port, big, k1)];
      expect(await Promise.all(held.map((h) => h.statusLine))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);

      const refused = await fetch(`${base}${small}`, { headers: bearer(k1) });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toEqual({
        error: { code: 'too_many_concurrent_requests', message: expect.stringContaining('2 requests in progress') },
        concurrency: { limit: 'requests', allowed: 2, retry_after_seconds: 1 },
      });
      // Per key: the user's other key is served meanwhile.
      expect(await whole(base, small, k2)).toBe(200);

      // One held request ends: its slot is free again.
      held[0]!.close();
      const again = await waitFor('a slot of k1 free again', async () => ((await whole(base, small, k1)) === 200 ? true : null), 10_000, 100);
      expect(again).toBe(true);
      held[1]!.close();

      // Billed: the 2xx answers received whole (k2's and k1's after the slot came back); the 429s and the cut pages not.
      // (The held pages hold their reservations until the server sees their sockets close.)
      let used = -1;
      await waitFor('the cut pages given back', async () => {
        used = (await app.inject({ url: `/api/v1/usage?user_id=${user}` })).json().calls_this_period as number;
        return used <= 2 ? true : null;
      }, 10_000, 100).catch(() => undefined);
      expect(used).toBe(2);
    } finally {
      await app.close();
    }
  });

  it("one key never holds every stream session: beyond its share its raw pages get 429 naming the streams, another key's page is served at once", async () => {
    const user = uniqueId('stream-user');
    // No cap on requests in progress here: the stream-session share is what refuses.
    const app = await t.another({ plans: UNLIMITED_PLANS, redisKeyPrefix: `${uniqueId('bt-streams')}:`, streamSessions: 4, streamSessionsPerKey: 2 });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as net.AddressInfo).port;
    const held: Array<{ close: () => void }> = [];
    try {
      const newKey = async () => (await app.inject({ method: 'POST', url: `/api/v1/keys?name=s&user_id=${user}` })).json().data.api_key as string;
      const [k1, k2] = [await newKey(), await newKey()];
      const big = `/api/v1/exchange-a/market/data/range?condition_id=${MARKET}&start_timestamp=${DAY}&end_timestamp=${DAY + ROWS}&limit=100000`;
      const small = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=5`;
      for (let i = 0; i < 2; i++) {
        const h = hold(port, big, k1);
        held.push(h);
        expect(await h.statusLine).toBe('HTTP/1.1 200');
      }
      const started = Date.now();
      const refused = await fetch(`${base}${small}`, { headers: bearer(k1) });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      const body = (await refused.json()) as { error: { code: string; message: string }; concurrency: Record<string, unknown> };
      expect(body.error.code).toBe('too_many_concurrent_requests');
      expect(body.error.message).toMatch(/already has 2 raw-data pages streaming.*of the 4 stream sessions/);
      expect(body.error.message).not.toMatch(/ClickHouse/);
      expect(body.concurrency).toEqual({ limit: 'stream_sessions', allowed: 2, retry_after_seconds: 1 });
      expect(Date.now() - started).toBeLessThan(2_000);
      // Another key reads a small page at once.
      const t2 = Date.now();
      expect(await whole(base, small, k2)).toBe(200);
      expect(Date.now() - t2).toBeLessThan(2_000);
    } finally {
      for (const h of held) h.close();
      await app.close();
    }
  });

  it('a 429 too_many_concurrent_requests carries the RateLimit fields of the quota as it stands: it counts nothing, and the next success counts one', async () => {
    const user = uniqueId('conc-rl-user');
    const monthlyWindow = (now: number) => {
      const d = new Date(now);
      return (Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)) / 1000;
    };
    // Requests in progress refuse first (before the quota); stream sessions after it (the reservation is given back).
    const cases = [
      { name: 'requests', plans: { ...UNLIMITED_PLANS, free: { monthly: 100, perSecond: null, concurrent: 1 } }, perKey: 4 },
      { name: 'stream_sessions', plans: { ...UNLIMITED_PLANS, free: { monthly: 100, perSecond: null, concurrent: null } }, perKey: 1 },
    ];
    for (const c of cases) {
      const app = await t.another({ plans: c.plans, redisKeyPrefix: `${uniqueId('bt-conc-rl')}:`, streamSessions: 4, streamSessionsPerKey: c.perKey });
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const port = (app.server.address() as net.AddressInfo).port;
      let held: ReturnType<typeof hold> | undefined;
      try {
        const newKey = async () => (await app.inject({ method: 'POST', url: `/api/v1/keys?name=r&user_id=${user}-${c.name}` })).json().data.api_key as string;
        const [k1, k2] = [await newKey(), await newKey()];
        const big = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=100000`;
        const small = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=5`;
        held = hold(port, big, k1);
        expect(await held.statusLine).toBe('HTTP/1.1 200'); // reserved: 1 of 100 used
        const refused = await fetch(`${base}${small}`, { headers: bearer(k1) });
        expect(refused.status, c.name).toBe(429);
        expect(((await refused.json()) as { concurrency: { limit: string } }).concurrency.limit).toBe(c.name);
        expect(refused.headers.get('retry-after')).toBe('1');
        expect(refused.headers.get('ratelimit-limit'), c.name).toBe('100');
        expect(refused.headers.get('ratelimit-remaining'), c.name).toBe('99');
        expect(refused.headers.get('ratelimit-policy')).toBe(`100;w=${monthlyWindow(Date.now())}`);
        expect(Number(refused.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
        // The refusal counted nothing: the other key's success is the second unit.
        const ok = await fetch(`${base}${small}`, { headers: bearer(k2) });
        await ok.arrayBuffer();
        expect(ok.status).toBe(200);
        expect(ok.headers.get('ratelimit-remaining'), c.name).toBe('98');
      } finally {
        held?.close();
        await app.close();
      }
    }
  });
});
