import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAEvent, ExchangeAMessage, ExchangeBMessage, ExchangeBRecord } from '@booktape/domain';
import { summaryChunksFree, toSummaryBucket } from '@booktape/book';
// The deliberately simple implementation of docs/rules/summaries.md that the book package's properties use.
import { referenceBuckets, referenceObservationsA, referenceObservationsB } from '@booktape/book/testing';
import { bearer, conditionId, ingestSeq, startTestApi, type TestApi } from '../testing.ts';

const DAY1 = Date.UTC(2026, 2, 1);
const DAY2 = DAY1 + 86_400_000;
const MARKET = conditionId(77);
const ASSET = '123456789';
const TICKER = 'KXSUM-26MAR01';

let t: TestApi;
let key: string;
const aEvents: ExchangeAEvent[] = [];
const bRecords: ExchangeBRecord[] = [];

/** A small deterministic PRNG, so a failure can be replayed. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}
const price = (r: () => number) => (Math.floor(r() * 98) + 1) / 100;
const p2 = (x: number) => String(Number(x.toFixed(2)));

beforeAll(async () => {
  t = await startTestApi();
  key = await t.newKey();
  const r = rng(42);
  // Exchange A: a book on day 1, then changes on day 1 and day 2 (no snapshot on day 2:
  // day 2 must start from the state carried over midnight). Some share a millisecond.
  let ts = DAY1 + 3_600_000;
  aEvents.push({ market: MARKET, asset_id: ASSET, timestamp: String(ts), hash: 'bk1', event_type: 'book', bids: [{ price: '0.40', size: '10' }, { price: '0.45', size: '5' }], asks: [{ price: '0.55', size: '7' }, { price: '0.60', size: '3' }] });
  for (let i = 0; i < 400; i++) {
    ts += r() < 0.2 ? 0 : Math.floor(r() * 300_000);
    const side = r() < 0.5 ? 'BUY' : 'SELL';
    const px = side === 'BUY' ? p2(0.3 + price(r) * 0.2) : p2(0.5 + price(r) * 0.2);
    aEvents.push({ market: MARKET, asset_id: ASSET, timestamp: String(ts), hash: `pc${i}`, event_type: 'price_change', changes: [{ price: px, side, size: r() < 0.25 ? '0' : String(Math.floor(r() * 100) + 1) }] });
  }
  const aMsgs: ExchangeAMessage[] = aEvents.map((event, i) => ({ venue: 'exchange-a', received_at: new Date(Number(event.timestamp) + 5).toISOString(), worker_id: 1, ingest_seq: ingestSeq(Number(event.timestamp) + 5, i % 7), dedup_id: event.hash, event }));
  await t.filler.insert('exchange-a', aMsgs);

  // Exchange B: snapshot, deltas, a seq gap (book unknown), a null-price delta, a fresh snapshot.
  let ms = DAY1 + 7_200_000;
  const common = (seq: number) => ({ ticker: TICKER, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 3, seq });
  bRecords.push({ ...common(1), type: 'snapshot', yes: [['0.41', '20'], ['0.42', '13']], no: [['0.54', '200'], ['0.56', '3']] });
  for (let i = 2; i < 200; i++) {
    ms += Math.floor(r() * 200_000);
    if (i === 80) bRecords.push({ ...common(i), type: 'gap', expected_seq: i });
    else if (i === 81) bRecords.push({ ...common(i), type: 'delta', side: 'yes', price: null, delta: '5' });
    else if (i === 120) bRecords.push({ ...common(i), type: 'snapshot', yes: [['0.3', '1.5']], no: [['0.6', '2.25']] });
    else bRecords.push({ ...common(i), type: 'delta', side: r() < 0.5 ? 'yes' : 'no', price: p2(0.3 + price(r) * 0.3), delta: String(Math.floor(r() * 40) - 15) });
  }
  const bMsgs: ExchangeBMessage[] = bRecords.map((record, i) => ({ venue: 'exchange-b', received_at: record.timestamp, worker_id: 1, ingest_seq: ingestSeq(record.epoch_ms, i % 5), dedup_id: `b${i}`, record }));
  await t.filler.insert('exchange-b', bMsgs);
});
afterAll(async () => t?.close());

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
}

const expectedA = (R: number, start: number, end: number) => referenceBuckets(referenceObservationsA(aEvents), R, start, end).map(toSummaryBucket);
const expectedB = (R: number, start: number, end: number) => referenceBuckets(referenceObservationsB(bRecords), R, start, end).map(toSummaryBucket);

describe('order-book summaries served from the raw events', () => {
  it('exchange A by date equals the reference at several resolutions, day 2 carrying day 1 state', async () => {
    for (const R of [1, 7, 60, 3600]) {
      for (const [date, start] of [['2026-03-01', DAY1], ['2026-03-02', DAY2]] as const) {
        const r = await get(`/exchange-a/market/orderbook-summary?condition_id=${MARKET.slice(2)}&asset_id=${ASSET}&date=${date}&resolution=${R}`);
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ market_condition_id: MARKET, asset_id: ASSET, date, resolution_seconds: R });
        expect(r.body.data).toEqual(expectedA(R, start, start + 86_400_000 - 1));
        expect(r.body.data_points).toBe(r.body.data.length);
      }
    }
    const day2 = await get(`/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=2026-03-02`);
    expect(day2.body.data[0].timestamp).toBe(DAY2); // carried over midnight, not empty
  });

  it('exchange A by window (seconds or milliseconds) equals the reference', async () => {
    const start = DAY1 + 5_000_000;
    const end = DAY2 + 1_234_567;
    for (const R of [13, 60, 900]) {
      const r = await get(`/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&start_timestamp=${start}&end_timestamp=${end}&resolution=${R}`);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ date: null, start_timestamp: start, end_timestamp: end });
      expect(r.body.data).toEqual(expectedA(R, start, end));
    }
    const secs = await get(`/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&start_timestamp=${start / 1000}&end_timestamp=${Math.floor(end / 1000)}`);
    expect(secs.body.start_timestamp).toBe(start);
  });

  it('exchange B equals the reference across a gap, a null price and a fresh snapshot', async () => {
    for (const R of [1, 30, 3600]) {
      const r = await get(`/exchange-b/market/orderbook-summary?ticker=${TICKER.toLowerCase()}&date=2026-03-01&resolution=${R}`);
      expect(r.status).toBe(200);
      expect(r.body.market_ticker).toBe(TICKER);
      expect(r.body.data).toEqual(expectedB(R, DAY1, DAY2 - 1));
    }
    const w = await get(`/exchange-b/market/orderbook-summary?ticker=${TICKER}&start_timestamp=${DAY1 + 10_000_000}&end_timestamp=${DAY2 + 50_000_000}&resolution=120`);
    expect(w.body.data).toEqual(expectedB(120, DAY1 + 10_000_000, DAY2 + 50_000_000));
    expect(w.body.data.some((b: { quote_count: number; best_bid: number | null }) => b.quote_count > 0 && b.best_bid === null)).toBe(true);
  });

  it('a large answer, sent part by part, has its length, its tag, and the same bytes compressed or not', async () => {
    for (const format of ['json', 'csv']) {
      const url = `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=2026-03-01&resolution=1&format=${format}`;
      const plain = await t.app.inject({ method: 'GET', url, headers: { ...bearer(key), 'accept-encoding': 'identity' } });
      expect(plain.statusCode).toBe(200);
      expect(plain.rawPayload.length).toBeGreaterThan(1024 * 1024);
      expect(Number(plain.headers['content-length'])).toBe(plain.rawPayload.length);
      const tag = plain.headers.etag as string;
      expect(tag).toMatch(/^"[0-9a-f]{32}"$/);
      const zipped = await t.app.inject({ method: 'GET', url, headers: { ...bearer(key), 'accept-encoding': 'gzip' } });
      expect(zipped.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(zipped.rawPayload).equals(plain.rawPayload)).toBe(true);
      const again = await t.app.inject({ method: 'GET', url, headers: { ...bearer(key), 'accept-encoding': 'identity', 'if-none-match': tag } });
      expect(again.statusCode).toBe(304);
      const head = await t.app.inject({ method: 'HEAD', url, headers: { ...bearer(key), 'accept-encoding': 'identity' } });
      expect(head.statusCode).toBe(200);
      expect(head.rawPayload.length).toBe(0);
      expect(Number(head.headers['content-length'])).toBe(plain.rawPayload.length);
      if (format === 'json') expect((JSON.parse(plain.payload) as { data_points: number }).data_points).toBe(86_400 - 3600);
    }
  });

  it('under inject too, the pooled Buffers of an answer are given back once it is out, and none is rewritten while another answer is out', async () => {
    // Nothing kept: every answer's Buffers go back to the pool when its response closes.
    const app = await t.another({ summaryAnswerCacheBytes: 0 });
    const url = (date: string, R: number) => `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=${date}&resolution=${R}`;
    // Whole days at R=60 (one pooled Buffer, sent joined) and R=5 (several, sent part by part).
    const urls = [url('2026-03-01', 60), url('2026-03-02', 60), url('2026-03-01', 5), url('2026-03-02', 5)];
    const alone: Buffer[] = [];
    for (const u of urls) {
      const r = await app.inject({ url: u, headers: bearer(key) });
      expect(r.statusCode).toBe(200);
      alone.push(r.rawPayload);
    }
    // Large enough to be written into pooled Buffers (a quarter of one and more).
    expect(Math.min(...alone.map((b) => b.length))).toBeGreaterThan(256 * 1024);
    expect(alone[2]!.length).toBeGreaterThan(2 * 1024 * 1024);
    await new Promise((r) => setImmediate(r));
    const before = summaryChunksFree();
    // Each answer alone was given back: the pool holds at least the Buffers of the largest.
    expect(before).toBeGreaterThanOrEqual(Math.ceil(alone[2]!.length / (1024 * 1024)));

    // Many at once, in an order that makes each reuse Buffers others just gave back: each
    // answer is still its own bytes.
    const order = Array.from({ length: 12 }, (_, i) => (i * 7) % urls.length);
    const together = await Promise.all(order.map((k) => app.inject({ url: urls[k]!, headers: bearer(key) })));
    together.forEach((r, i) => {
      expect(r.statusCode).toBe(200);
      expect(r.rawPayload.equals(alone[order[i]!]!), `answer ${i} (${urls[order[i]!]})`).toBe(true);
    });
    await new Promise((r) => setImmediate(r));
    // All given back again: none lost to the inject path.
    expect(summaryChunksFree()).toBeGreaterThanOrEqual(before);
  });

  it('a market without data answers 200 with no buckets', async () => {
    const r = await get(`/exchange-b/market/orderbook-summary?ticker=NOPE&date=2026-03-01`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([]);
  });

  it('refuses bad parameter combinations with a 400 that names the parameter', async () => {
    const base = `/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}`;
    const cases: Array<[string, string]> = [
      [`${base}&date=2026-03-01&start_timestamp=${DAY1}&end_timestamp=${DAY2}`, 'date'],
      [`${base}&start_timestamp=${DAY1}`, 'end_timestamp'],
      [`${base}`, 'date'],
      [`${base}&date=2026-03-01&resolution=0`, 'resolution'],
      [`${base}&date=2026-03-01&resolution=3601`, 'resolution'],
      [`${base}&start_timestamp=${DAY1}&end_timestamp=${DAY1 + 3 * 86_400_000}&resolution=1`, 'resolution'],
      [`${base}&date=2026-01-01`, 'date'],
      [`/exchange-a/market/orderbook-summary?condition_id=${MARKET}&date=2026-03-01`, 'asset_id'],
      [`${base}&start_timestamp=${DAY2}&end_timestamp=${DAY1}`, 'start_timestamp'],
    ];
    for (const [url, param] of cases) {
      const r = await get(url);
      expect(r.status, url).toBe(400);
      expect(r.body.error.param, url).toBe(param);
    }
    const noKey = await t.app.inject({ method: 'GET', url: `/api/v1${base}&date=2026-03-01` });
    expect(noKey.statusCode).toBe(401);
  });
});
