import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from './testing.ts';

/**
 * Hostile input: random and malicious query strings against every endpoint. Nothing may
 * answer 5xx, nothing may crash, every error has the documented body, and the stored data
 * is the same afterwards.
 */

const DAY = Date.UTC(2026, 2, 1);
const M = conditionId(7);
let t: TestApi;
let key: string;

const ENDPOINTS: Array<['GET' | 'POST' | 'DELETE', string]> = [
  ['GET', '/exchange-a/market/data'],
  ['GET', '/market/data'],
  ['GET', '/exchange-b/market/data'],
  ['GET', '/exchange-a/market/data/range'],
  ['GET', '/market/data/range'],
  ['GET', '/exchange-b/market/data/range'],
  ['GET', '/exchange-a/market/date-range'],
  ['GET', '/exchange-b/market/date-range'],
  ['GET', '/exchange-a/market/list'],
  ['GET', '/exchange-b/market/list'],
  ['GET', '/keys'],
  ['POST', '/keys'],
  ['DELETE', '/keys/'],
  ['GET', '/health'],
];
const NAMES = ['condition_id', 'ticker', 'date', 'offset', 'limit', 'start_timestamp', 'end_timestamp', 'cursor', 'prefix', 'user_id', 'name', 'key_id', 'x', '__proto__', 'constructor', 'limit[]', 'a[b]'];

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
const arbQuery = fc
  .array(fc.tuple(fc.constantFrom(...NAMES), arbValue), { maxLength: 8 })
  .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&'));

async function snapshot(): Promise<string> {
  const out: string[] = [];
  const tables = await t.ch.client.query({
    query: `SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name`,
    query_params: { db: t.ch.database },
    format: 'JSONEachRow',
  });
  out.push(JSON.stringify(await tables.json()));
  for (const [table, cols] of [
    ['raw_exchange_a', 'market, event_ts, dedup_id, payload, ingest_seq'],
    ['raw_exchange_b', 'ticker, event_ts, dedup_id, payload, ingest_seq'],
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
  t = await startTestApi();
  await t.filler.insert('exchange-a', Array.from({ length: 50 }, (_, i) => aMessage({ market: M, ts: DAY + Math.floor(i / 5), hash: `0xf${i}`, record: i % 5 })));
  await t.filler.insert('exchange-b', Array.from({ length: 30 }, (_, i) => bMessage({ ticker: 'KXBTCD-26MAR01', ms: DAY + i, seq: i })));
  key = await t.newKey('fuzzer');
});
afterAll(async () => t?.close());

describe('hostile query strings', () => {
  it('never answer 5xx, always answer a JSON body, and leave the stored data unchanged', async () => {
    const before = await snapshot();
    let created = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), arbQuery, fc.oneof(fc.constant(''), fc.constantFrom(...HOSTILE.slice(0, 6)).map(encodeURIComponent)), async ([method, path], query, suffix) => {
        const url = `/api/v1${path}${path.endsWith('/') ? suffix : ''}${query ? `?${query}` : ''}`;
        const res = await t.app.inject({ method, url, headers: bearer(key) });
        expect(res.statusCode, url).toBeLessThan(500);
        const body = res.json() as Record<string, any>;
        if (res.statusCode >= 400) {
          expect(body.error, url).toMatchObject({ code: expect.any(String), message: expect.any(String) });
          expect(JSON.stringify(body)).not.toMatch(/\bat .+\.ts:\d+|node_modules|Error:/);
        } else if (method === 'POST') {
          created++;
        }
      }),
      { numRuns: 600 },
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
