import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import zlib from 'node:zlib';
import { parse } from 'csv-parse/sync';
import type { ExchangeBMessage, RawMessage } from '@booktape/domain';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';
import { aCsv, bCsv } from './long-format.test-support.ts';

/**
 * Answer formats, compression and HTTP caching (issue 12, items 1 and 2) against the real
 * engine and Redis: NDJSON and CSV pages walked through their `Link` headers hold exactly
 * the records the reference (Filler.expected) says, read back by an independent CSV parser;
 * every encoding decodes to the identity bytes; finalised days get strong tags and 304s,
 * open days no-cache, and a late row changes the tag.
 */

const MA = conditionId(12);
const TB = 'KXFMT-26MAR01';
const DAY = Date.UTC(2026, 2, 1);
const ASSETS = ['1111', '2222'];

let t: TestApi;
let key: string;

function aDay(start: number, n: number): RawMessage[] {
  return Array.from({ length: n }, (_, i) =>
    aMessage({
      market: MA,
      ts: start + Math.floor(i / 3) * 1000,
      hash: `0xfa${i.toString(16).padStart(6, '0')}`,
      asset: ASSETS[i % 2],
      kind: i % 10 === 0 ? 'book' : i % 10 === 7 ? 'tick_size_change' : 'price_change',
      frame: i % 3,
    }),
  );
}

function bDay(start: number, n: number, seq0: number): RawMessage[] {
  return Array.from({ length: n }, (_, i): RawMessage => {
    const m = bMessage({ ticker: TB, ms: start + Math.floor(i / 2) * 1000, seq: seq0 + i, kind: i % 15 === 0 ? 'snapshot' : 'delta', frame: i % 2 });
    if (i % 15 === 9) return { ...m, record: { ...m.record, type: 'gap', expected_seq: seq0 + i - 1 } } as ExchangeBMessage;
    // A trade carries the venue's message, commas and quotes included, into a CSV field.
    if (i % 15 === 11) return { ...m, record: { ticker: TB, timestamp: m.record.timestamp, epoch_ms: m.record.epoch_ms, sid: 12, seq: seq0 + i, type: 'trade', data: { yes_price: 41, taker_side: 'yes', note: 'a "quoted", text' } } };
    return m;
  });
}

beforeAll(async () => {
  t = await startTestApi();
  await t.filler.insert('exchange-a', aDay(DAY + 3_600_000, 130));
  await t.filler.insert('exchange-b', bDay(DAY + 7_200_000, 90, 500));
  key = await t.newKey();
});
afterAll(async () => t?.close());

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await t.app.inject({ method: 'GET', url: url.startsWith('/api/v1') ? url : `/api/v1${url}`, headers: { ...bearer(key), ...headers } });
  return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, text: res.body };
}

/** Every page from `url` on, following `Link: <…>; rel="next"`. */
async function walk(url: string): Promise<string[]> {
  const bodies: string[] = [];
  for (let next: string | undefined = url; next !== undefined; ) {
    const r = await get(next);
    expect(r.status, r.text).toBe(200);
    bodies.push(r.text);
    const link = r.headers.link as string | undefined;
    next = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1];
    expect(bodies.length).toBeLessThan(500);
  }
  return bodies;
}

const ndjsonRecords = (bodies: string[]) => bodies.flatMap((b) => b.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>));
const csvRows = (bodies: string[]) => bodies.flatMap((b) => parse(b, { columns: true }) as Array<Record<string, string>>);

describe('formats: every page walked by its Link header holds the reference records', () => {
  it('exchange A by date and by range, ndjson and csv, any page size', async () => {
    const expected = t.filler.expected('exchange-a', MA);
    expect(expected.length).toBe(130);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 60 }), fc.constantFrom('ndjson', 'csv'), fc.boolean(), async (limit, format, byRange) => {
        const url = byRange
          ? `/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&limit=${limit}&format=${format}`
          : `/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&limit=${limit}&format=${format}`;
        const bodies = await walk(url);
        expect(bodies.length).toBe(Math.max(1, Math.ceil(130 / limit)));
        if (format === 'ndjson') expect(ndjsonRecords(bodies)).toEqual(expected);
        else expect(csvRows(bodies)).toEqual(expected.flatMap(aCsv));
      }),
      { numRuns: 8 },
    );
  });

  it('exchange B (snapshots, deltas, gaps, trades with quotes in their data) in csv and ndjson', async () => {
    const expected = t.filler.expected('exchange-b', TB);
    for (const limit of [1, 13, 1000]) {
      expect(ndjsonRecords(await walk(`/exchange-b/market/data?ticker=${TB}&date=2026-03-01&limit=${limit}&format=ndjson`))).toEqual(expected);
      const rows = csvRows(await walk(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&limit=${limit}&format=csv`));
      expect(rows).toEqual(expected.flatMap(bCsv));
    }
    expect(expected.some((r) => r.type === 'trade')).toBe(true);
  });

  it('json stays the default shape; date pages also name the next page and the total in headers', async () => {
    const r = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&limit=50`);
    const body = JSON.parse(r.text);
    expect(body.pagination).toEqual({ offset: 0, limit: 50, total_count: 130, has_more: true });
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.headers['x-total-count']).toBe('130');
    expect(r.headers.link).toBe(`</api/v1/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&limit=50&offset=50>; rel="next"`);
    const csv = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&limit=50&format=csv`);
    expect(csv.headers['content-type']).toMatch(/^text\/csv; charset=utf-8/);
    expect(csv.text.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at');
    const nd = await get(`/exchange-b/market/data?ticker=${TB}&date=2026-03-01&format=ndjson`);
    expect(nd.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
  });

  it('summaries: csv and ndjson rows equal the JSON buckets', async () => {
    const base = `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${ASSETS[0]}&date=2026-03-01&resolution=300`;
    const json = JSON.parse((await get(base)).text).data as Array<Record<string, unknown>>;
    expect(json.length).toBeGreaterThan(250); // buckets from the first event (01:00) on
    expect(json.some((b) => b.best_bid_ohlc !== null)).toBe(true);
    expect(ndjsonRecords([(await get(`${base}&format=ndjson`)).text])).toEqual(json);
    const rows = parse((await get(`${base}&format=csv`)).text, { columns: true }) as Array<Record<string, string>>;
    const num = (v: string) => (v === '' ? null : Number(v));
    const ohlc = (r: Record<string, string>, p: string) => (r[`${p}_open`] === '' ? null : { open: num(r[`${p}_open`]!), high: num(r[`${p}_high`]!), low: num(r[`${p}_low`]!), close: num(r[`${p}_close`]!) });
    const fromCsv = rows.map((r) => ({
      timestamp: Number(r.timestamp),
      quote_count: Number(r.quote_count),
      is_forward_filled: r.is_forward_filled === 'true',
      best_bid: num(r.best_bid!),
      best_bid_size: num(r.best_bid_size!),
      best_ask: num(r.best_ask!),
      best_ask_size: num(r.best_ask_size!),
      mid_price: num(r.mid_price!),
      spread: num(r.spread!),
      best_bid_ohlc: ohlc(r, 'best_bid'),
      best_ask_ohlc: ohlc(r, 'best_ask'),
      mid_price_ohlc: ohlc(r, 'mid_price'),
      spread_ohlc: ohlc(r, 'spread'),
    }));
    expect(fromCsv).toEqual(json);
  });

  it('a format the API does not have is a 400 naming the parameter, never cached', async () => {
    const r = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&format=xml`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ error: { code: 'invalid_parameter', param: 'format' } });
    expect(r.headers['cache-control']).toBe('private, no-store');
    expect(r.headers.etag).toBeUndefined();
  });
});

const DECODE: Record<string, (b: Buffer) => Buffer> = {
  gzip: zlib.gunzipSync,
  br: zlib.brotliDecompressSync,
  deflate: zlib.inflateSync,
  ...(typeof (zlib as any).zstdDecompressSync === 'function' ? { zstd: (zlib as any).zstdDecompressSync } : {}),
};

describe('compression', () => {
  const urls = [
    `/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&limit=100`,
    `/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&format=ndjson`,
    `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${ASSETS[1]}&date=2026-03-01&resolution=60&format=csv`,
  ];
  it('every accepted encoding decodes to exactly the identity bytes, streamed pages included', async () => {
    for (const url of urls) {
      const plain = await get(url, { 'accept-encoding': 'identity' });
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.raw.length).toBeGreaterThan(2048);
      for (const [coding, decode] of Object.entries(DECODE)) {
        const r = await get(url, { 'accept-encoding': coding });
        expect(r.headers['content-encoding'], `${url} ${coding}`).toBe(coding);
        expect(r.headers.vary).toMatch(/accept-encoding/i);
        expect(r.raw.length).toBeLessThan(plain.raw.length);
        expect(decode(r.raw).equals(plain.raw)).toBe(true);
      }
    }
  });

  it('without Accept-Encoding the answer is plain', async () => {
    const r = await get(urls[0]!);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(r.text).data_count).toBe(100);
  });
});

describe('caching', () => {
  const dateUrl = `/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&limit=40&format=csv`;
  const rangeUrl = `/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&limit=30`;
  const summaryUrl = `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${ASSETS[0]}&date=2026-03-01`;

  it('a finalised day: strong tag, immutable, and 304 for the tag the client holds', async () => {
    for (const url of [dateUrl, rangeUrl, summaryUrl]) {
      const r = await get(url);
      expect(r.headers.etag, url).toMatch(/^"[0-9a-f]{32}"$/);
      expect(r.headers['cache-control']).toBe('private, max-age=86400, immutable');
      const again = await get(url, { 'if-none-match': r.headers.etag as string });
      expect(again.status).toBe(304);
      expect(again.raw.length).toBe(0);
      expect(again.headers.etag).toBe(r.headers.etag);
      // Another tag, or the same request in another format, is a full answer.
      expect((await get(url, { 'if-none-match': '"0123456789abcdef0123456789abcdef"' })).status).toBe(200);
      const other = await get(`${url}&format=ndjson`);
      expect(other.headers.etag).not.toBe(r.headers.etag);
      // A compressed answer has its own tag; sending it back matches too.
      const gz = await get(url, { 'accept-encoding': 'gzip' });
      expect(gz.headers.etag).toBe(`${(r.headers.etag as string).slice(0, -1)}-gzip"`);
      const gz304 = await get(url, { 'accept-encoding': 'gzip', 'if-none-match': `"x", W/${gz.headers.etag as string}` });
      expect(gz304.status).toBe(304);
      expect(gz304.headers.etag).toBe(gz.headers.etag);
    }
  });

  it('a late row in a finalised day changes the tags of the answers it is part of', async () => {
    const before = await Promise.all([dateUrl, summaryUrl].map((u) => get(u)));
    await t.filler.insert('exchange-a', [aMessage({ market: MA, ts: DAY + 3_600_000 + 500, hash: '0xfalate', asset: ASSETS[0], kind: 'price_change' })]);
    const after = await Promise.all([dateUrl, summaryUrl].map((u) => get(u)));
    for (let i = 0; i < 2; i++) {
      expect(after[i]!.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(after[i]!.headers.etag).not.toBe(before[i]!.headers.etag);
      expect((await get([dateUrl, summaryUrl][i]!, { 'if-none-match': before[i]!.headers.etag as string })).status).toBe(200);
    }
  });

  it('an open day, or a window reaching into one, is no-cache with no tag', async () => {
    const now = Date.now();
    const today = new Date(now).toISOString().slice(0, 10);
    await t.filler.insert('exchange-b', [bMessage({ ticker: TB, ms: now - 5000, seq: 9000, kind: 'snapshot' })]);
    for (const url of [
      `/exchange-b/market/data?ticker=${TB}&date=${today}`,
      `/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${now}&format=csv`,
      `/exchange-b/market/orderbook-summary?ticker=${TB}&date=${today}&resolution=3600`,
    ]) {
      const r = await get(url);
      expect(r.status, r.text).toBe(200);
      expect(r.headers['cache-control']).toBe('private, no-cache');
      expect(r.headers.etag).toBeUndefined();
      expect((await get(url, { 'if-none-match': '*' })).status).toBe(200);
    }
  });
});
