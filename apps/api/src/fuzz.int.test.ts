import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { SERVED_RECORD_SQL } from '@booktape/storage';
import { freePort } from '@booktape/testkit';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from './testing.ts';

/**
 * Hostile input: random and malicious query strings against every endpoint of the OpenAPI
 * document. Nothing may answer 5xx, nothing may crash, every error has the documented body,
 * and the stored data is the same afterwards.
 */

const DAY = Date.UTC(2026, 2, 1);
const M = conditionId(7);
let t: TestApi;
let key: string;
let endpoints: Endpoint[];
let names: string[];

type Method = 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
interface Endpoint {
  method: Method;
  /** With `{name}` for path parameters, as in the OpenAPI document. */
  path: string;
  /** A non-JSON answer is documented (no JSON schema for 200: the status page, metrics). */
  json: boolean;
}

/** Every operation of the OpenAPI document: the fuzz list cannot fall behind the routes. */
function endpointsOf(doc: { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }>> }): Endpoint[] {
  const out: Endpoint[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['get', 'post', 'delete', 'put', 'patch'].includes(method)) continue;
      out.push({ method: method.toUpperCase() as Method, path, json: op.responses?.['200']?.content?.['application/json'] !== undefined });
    }
  }
  return out;
}

/** Query parameter names of the document, and some no endpoint has. */
function namesOf(doc: { paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>> }): string[] {
  const names = new Set<string>();
  for (const ops of Object.values(doc.paths)) for (const op of Object.values(ops)) for (const p of op.parameters ?? []) if (p.in === 'query') names.add(p.name);
  return [...names, 'x', '__proto__', 'constructor', 'limit[]', 'a[b]'];
}

const HOSTILE = [
  "' OR 1=1 --",
  "'; DROP TABLE booktape_test.raw_exchange_a; --",
  '0x1\'); SELECT * FROM system.users; --',
  '{market:String}',
  '\\N',
  '%00',
  '%zz',
  '%',
  '%E0%A4%A',
  '%F0%9F%92%A9',
  '1e309',
  '-0',
  '9'.repeat(40),
  '18446744073709551616',
  '-9223372036854775809',
  'NaN',
  'Infinity',
  '0x',
  '0X' + 'F'.repeat(64),
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  '2026-02-30',
  '2026-03-01T00:00:00Z',
  '9999-12-31',
  '0000-01-01',
  '1772323200',
  '1772323200000',
  encodeURIComponent('ﬁ𝔘𝔫𝔦𝔠𝔬𝔡𝔢\u202e\u0000'),
  encodeURIComponent('日本語のティッカー'),
  encodeURIComponent('\r\nX-Injected: 1'),
  'a'.repeat(5000),
  'v1.' + 'A'.repeat(3000) + '.B',
];

/** Percent-encodes every UTF-8 byte (lone surrogates included, as U+FFFD). */
function pct(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
}

const arbValue = fc.oneof(
  fc.constantFrom(...HOSTILE),
  fc.string({ maxLength: 30 }).map(pct),
  fc.string({ unit: 'binary', maxLength: 20 }).map(pct),
  fc.string({ unit: 'grapheme', maxLength: 10 }).map(pct),
  // Raw characters that are legal in a URL query but meaningful to parsers.
  fc.string({ unit: fc.constantFrom(...'=&;,+.[]{}()!*$@:/?-_~\'"<>`|^'), maxLength: 12 }).map((v) => v.replace(/[&#]/g, '%26')),
  fc.integer().map(String),
  fc.double().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.constantFrom(M, M.slice(2), 'KXBTCD-26MAR01', '2026-03-01', String(DAY), String(DAY + 1000)),
);
const arbQuery = () =>
  fc.array(fc.tuple(fc.constantFrom(...names), arbValue), { maxLength: 8 }).map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&'));
/** A path parameter: empty, hostile, or one that exists. */
const arbSegment = fc.oneof(fc.constant(''), fc.constantFrom(...HOSTILE.slice(0, 6)).map(encodeURIComponent), fc.constantFrom('fuzzer', 'key_000000000000000000000000', 'out_0000000000000000'));

async function snapshot(): Promise<string> {
  const out: string[] = [];
  const tables = await t.ch.client.query({
    query: `SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name`,
    query_params: { db: t.ch.database },
    format: 'JSONEachRow',
  });
  out.push(JSON.stringify(await tables.json()));
  for (const [table, cols] of [
    // The served record, as the raw endpoints select it (the raw tables hold typed columns).
    ['raw_exchange_a', `market, event_ts, dedup_id, ${SERVED_RECORD_SQL['exchange-a']}, ingest_seq`],
    ['raw_exchange_b', `ticker, event_ts, dedup_id, ${SERVED_RECORD_SQL['exchange-b']}, ingest_seq`],
    ['market_dates', 'venue, market, event_date'],
  ] as const) {
    const rs = await t.ch.client.query({
      query: `SELECT toString(count()) AS n, toString(sum(cityHash64(${cols}))) AS h FROM ${t.ch.table(table)}`,
      format: 'JSONEachRow',
    });
    out.push(`${table}:${JSON.stringify(await rs.json())}`);
  }
  return out.join('\n');
}

beforeAll(async () => {
  // Billing configured (against a port nobody listens on), so its routes check their input
  // rather than answer 503 "not configured" for everything.
  const stripe = `http://127.0.0.1:${await freePort()}`;
  t = await startTestApi({
    billing: { secretKey: 'sk_test_fuzz', webhookSecret: 'whsec_fuzz', prices: { starter: 'price_s', pro: 'price_p' }, apiBase: stripe, successUrl: undefined, cancelUrl: undefined, returnUrl: undefined, timeoutMs: 500 },
  });
  const doc = (await t.app.inject({ url: '/api/v1/openapi.json' })).json() as Parameters<typeof endpointsOf>[0] & Parameters<typeof namesOf>[0];
  endpoints = endpointsOf(doc);
  names = namesOf(doc);
  await t.filler.insert('exchange-a', Array.from({ length: 50 }, (_, i) => aMessage({ market: M, ts: DAY + Math.floor(i / 5), hash: `0xf${i}`, record: i % 5 })));
  await t.filler.insert('exchange-b', Array.from({ length: 30 }, (_, i) => bMessage({ ticker: 'KXBTCD-26MAR01', ms: DAY + i, seq: i })));
  key = await t.newKey('fuzzer');
});
afterAll(async () => t?.close());

describe('hostile query strings', () => {
  it('the list covers the whole API', () => {
    const listed = new Set(endpoints.map((e) => `${e.method} ${e.path}`));
    for (const e of ['GET /api/v1/exchange-a/market/orderbook-summary', 'GET /api/v1/lookup/slug', 'GET /api/v1/usage', 'GET /api/v1/stats', 'DELETE /api/v1/keys/{key_id}', 'POST /api/v1/webhooks/stripe', 'GET /status']) {
      expect(listed, e).toContain(e);
    }
  });

  it('never answer 5xx, always answer a JSON body, and leave the stored data unchanged', async () => {
    const before = await snapshot();
    let created = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...endpoints), arbQuery(), arbSegment, async ({ method, path, json }, query, segment) => {
        const url = `${path.replace(/\{[^}]+\}/g, segment)}${query ? `?${query}` : ''}`;
        const res = await t.app.inject({ method, url, headers: bearer(key) });
        expect(res.statusCode, url).toBeLessThan(500);
        if (res.statusCode < 400 && !json) return;
        const body = res.json() as Record<string, any>;
        if (res.statusCode >= 400) {
          expect(body.error, url).toMatchObject({ code: expect.any(String), message: expect.any(String) });
          expect(JSON.stringify(body)).not.toMatch(/\bat .+\.ts:\d+|node_modules|Error:/);
        } else if (method === 'POST') {
          created++;
        }
      }),
      { numRuns: 1500 },
    );
    // Hostile strings are data, not SQL: a created key stores its name verbatim.
    const r = await t.app.inject({ method: 'POST', url: `/api/v1/keys?name=${encodeURIComponent("'); DROP TABLE x; --")}&user_id=fuzzer`, headers: {} });
    expect(r.json().data.name).toBe("'); DROP TABLE x; --");
    const listed = await t.app.inject({ url: '/api/v1/keys?user_id=fuzzer' });
    expect(listed.json().api_keys.map((k: any) => k.name)).toContain("'); DROP TABLE x; --");
    expect(created).toBeGreaterThanOrEqual(0);

    expect(await snapshot()).toBe(before);
    // Still alive and serving.
    expect((await t.app.inject({ url: '/api/v1/health' })).statusCode).toBe(200);
    const ok = await t.app.inject({ url: `/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01`, headers: bearer(key) });
    expect(ok.json().data).toHaveLength(50);
  });

  it('hostile headers and bodies are refused cleanly', async () => {
    const cases = [
      { headers: { authorization: "Bearer ' OR 1=1 --" } },
      { headers: { authorization: `Bearer ${'x'.repeat(10_000)}` } },
      { headers: { authorization: 'Bearer bt_live_\u00e9' } },
      { method: 'POST' as const, url: '/api/v1/keys?name=a&user_id=b', headers: { 'content-type': 'application/json' }, payload: '{"broken": ' },
      { method: 'POST' as const, url: '/api/v1/keys?name=a&user_id=b', headers: { 'content-type': 'application/x-unknown' }, payload: 'zzz' },
      { method: 'POST' as const, url: '/api/v1/keys?name=a&user_id=b', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ a: 'x'.repeat(200_000) }) },
      { method: 'PUT' as const, url: '/api/v1/keys' },
    ];
    for (const c of cases) {
      const res = await t.app.inject({ method: c.method ?? 'GET', url: c.url ?? `/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01`, headers: c.headers ?? {}, ...(c.payload ? { payload: c.payload } : {}) });
      expect(res.statusCode, JSON.stringify(c).slice(0, 100)).toBeGreaterThanOrEqual(400);
      expect(res.statusCode).toBeLessThan(500);
      expect(res.json().error.code).toEqual(expect.any(String));
    }
  });
});
