import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ExchangeAEvent, ExchangeAMessage, ExchangeBMessage, ExchangeBRecord } from '@booktape/domain';
// The deliberately simple implementation of docs/rules/summaries.md, not the book engine.
import { exchangeAStreamArb, exchangeBStreamArb, referenceBookA, referenceBookB, tsOf, type ReferenceBook } from '@booktape/book/testing';
import { parse } from 'csv-parse/sync';
import { bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * The book at any instant against the reference rebuilt from the raw events: random streams
 * (snapshots, changes, unknown books, malformed records, quiet spells across days) are
 * stored, and the book at random instants (on an event, just before and after one, before
 * the first, after the last) must equal the reference's book after every record at or
 * before the instant, level for level.
 */

let t: TestApi;
let key: string;
let run = 0;

beforeAll(async () => {
  t = await startTestApi();
  key = await t.newKey();
});
afterAll(async () => t?.close());

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  return { status: res.statusCode, body: res.json() as Record<string, any>, headers: res.headers };
}

/** Serving order = the stream's order: ingest_seq grows with the index within a millisecond. */
const seqOf = (ts: number, i: number) => (BigInt(ts) * 2n ** 23n + BigInt(i)).toString();

const instantsArb = fc.array(fc.tuple(fc.nat(), fc.constantFrom(-1, 0, 0, 1)), { minLength: 1, maxLength: 6 });

function instants(times: number[], picks: Array<[number, number]>): number[] {
  if (times.length === 0) return [Date.UTC(2026, 1, 12)];
  const out = picks.map(([i, d]) => times[i % times.length]! + d);
  return [...out, times[0]! - 1, times[times.length - 1]! + 1];
}

function expectedBook(ref: ReferenceBook, depth: number) {
  const lv = (l: [string, string][]) => l.slice(0, depth).map(([price, size]) => ({ price, size }));
  return { is_known: ref.known, first: lv(ref.bids), second: lv(ref.asks) };
}

/**
 * The series over (up to) a day from just before the first record: every snapshot equals the
 * reference at its instant (a multiple of the interval), and the csv and ndjson answers hold
 * the same snapshots as the json one.
 */
/** as_of_ms at an instant: the last book record at or before it, once a snapshot came (docs/api.md). */
function asOfA(events: ExchangeAEvent[], at: number): number | null {
  const upTo = events.filter((e) => Number(e.timestamp) <= at);
  const last = upTo.filter((e) => e.event_type === 'book' || e.event_type === 'price_change').at(-1);
  return upTo.some((e) => e.event_type === 'book') && last ? Number(last.timestamp) : null;
}
function asOfB(records: ExchangeBRecord[], at: number): number | null {
  const upTo = records.filter((r) => r.epoch_ms <= at);
  const last = upTo.filter((x) => x.type === 'snapshot' || x.type === 'delta' || x.type === 'gap').at(-1);
  return upTo.some((x) => x.type === 'snapshot') && last ? last.epoch_ms : null;
}

async function checkSeries(
  base: string,
  times: number[],
  depth: number,
  names: [string, string],
  csvSides: [string, string],
  ref: (at: number) => ReferenceBook,
  asOf: (at: number) => number | null,
) {
  if (times.length === 0) return;
  const interval = [60, 600, 3600][times.length % 3]!;
  const start = times[0]! - 90_000;
  const end = Math.min(start + 86_400_000, times[times.length - 1]! + 90_000);
  const url = `${base}&start_timestamp=${start}&end_timestamp=${end}&interval=${interval}&depth=${depth}`;
  const r = await get(url);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const data = r.body.data as Array<Record<string, any>>;
  const first = Math.ceil(start / (interval * 1000)) * interval * 1000;
  expect(data.map((s) => s.timestamp)).toEqual(Array.from({ length: Math.floor((end - first) / (interval * 1000)) + 1 }, (_, k) => first + k * interval * 1000));
  for (const s of data) {
    expect({ is_known: s.is_known, first: s[names[0]], second: s[names[1]] }, `snapshot at ${s.timestamp}`).toEqual(expectedBook(ref(s.timestamp), depth));
    expect(s.as_of_ms, `as_of_ms at ${s.timestamp}`).toBe(asOf(s.timestamp));
  }
  const nd = await t.app.inject({ method: 'GET', url: `/api/v1${url}&format=ndjson`, headers: bearer(key) });
  expect(nd.body.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))).toEqual(data);
  const csv = await t.app.inject({ method: 'GET', url: `/api/v1${url}&format=csv`, headers: bearer(key) });
  const rows = parse(csv.body, { columns: true }) as Array<Record<string, string>>;
  const fromJson = data.flatMap((s) => {
    const lv = (side: string, l: Array<{ price: string; size: string }>) => l.map((x, i) => ({ side, level: String(i), price: x.price, size: x.size }));
    const levels = [...lv(csvSides[0], s[names[0]]), ...lv(csvSides[1], s[names[1]])];
    return (levels.length ? levels : [{ side: '', level: '', price: '', size: '' }]).map((l) => ({ timestamp: String(s.timestamp), as_of_ms: s.as_of_ms === null ? '' : String(s.as_of_ms), is_known: String(s.is_known), ...l }));
  });
  expect(rows).toEqual(fromJson);
}

describe('book at any instant', () => {
  it('exchange A equals the reference book rebuilt from the raw events, another token in the same market left out', async () => {
    await fc.assert(
      fc.asyncProperty(exchangeAStreamArb, exchangeAStreamArb, instantsArb, fc.integer({ min: 1, max: 40 }), async (events, other, picks, depth) => {
        const market = conditionId(5000 + run++);
        const msgs = (evs: ExchangeAEvent[], asset: string): ExchangeAMessage[] =>
          evs.map((e, i) => {
            const event = { ...e, market, asset_id: asset };
            return { venue: 'exchange-a', received_at: new Date(Number(e.timestamp)).toISOString(), worker_id: 1, ingest_seq: seqOf(Number(e.timestamp), i), dedup_id: `${asset}-${i}`, event };
          });
        await t.filler.insert('exchange-a', [...msgs(events, '123'), ...msgs(other, '456')]);
        for (const at of instants(events.map(tsOf), picks)) {
          const upTo = events.filter((e) => Number(e.timestamp) <= at);
          const r = await get(`/exchange-a/market/book?asset_id=123&condition_id=${market}&timestamp=${at}&depth=${depth}`);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          const want = expectedBook(referenceBookA(upTo), depth);
          expect({ is_known: r.body.is_known, first: r.body.bids, second: r.body.asks }, `at ${at}`).toEqual(want);
          expect(r.body.as_of_ms).toBe(asOfA(events, at));
          expect(r.body).toMatchObject({ asset_id: '123', timestamp: at });
        }
        await checkSeries(
          `/exchange-a/market/book-snapshots?asset_id=123&condition_id=${market}`,
          events.map(tsOf),
          depth,
          ['bids', 'asks'],
          ['bid', 'ask'],
          (at) => referenceBookA(events.filter((e) => Number(e.timestamp) <= at)),
          (at) => asOfA(events, at),
        );
      }),
      { numRuns: 12 },
    );
  });

  it('exchange B equals the reference book (YES and NO bids, highest first), gaps and null sides unknown', async () => {
    await fc.assert(
      fc.asyncProperty(exchangeBStreamArb, instantsArb, fc.integer({ min: 1, max: 40 }), async (records, picks, depth) => {
        const ticker = `KXBOOK-${run++}`;
        const msgs: ExchangeBMessage[] = records.map((rec, i) => {
          const record: ExchangeBRecord = { ...rec, ticker };
          return { venue: 'exchange-b', received_at: rec.timestamp, worker_id: 1, ingest_seq: seqOf(rec.epoch_ms, i), dedup_id: `${ticker}-${i}`, record };
        });
        await t.filler.insert('exchange-b', msgs);
        for (const at of instants(records.map(tsOf), picks)) {
          const upTo = records.filter((r) => r.epoch_ms <= at);
          const r = await get(`/exchange-b/market/book?ticker=${ticker}&timestamp=${at}&depth=${depth}`);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          expect({ is_known: r.body.is_known, first: r.body.yes, second: r.body.no }, `at ${at}`).toEqual(expectedBook(referenceBookB(upTo), depth));
          expect(r.body.as_of_ms).toBe(asOfB(records, at));
        }
        await checkSeries(
          `/exchange-b/market/book-snapshots?ticker=${ticker}`,
          records.map(tsOf),
          depth,
          ['yes', 'no'],
          ['yes', 'no'],
          (at) => referenceBookB(records.filter((x) => x.epoch_ms <= at)),
          (at) => asOfB(records, at),
        );
      }),
      { numRuns: 12 },
    );
  });

  it('parameters: depth 1 to 500 (default 10), timestamps in seconds too, an unknown token without its condition id is a 404', async () => {
    const ticker = 'KXBOOK-PARAMS';
    const ms = Date.UTC(2026, 2, 3, 12);
    const yes = Array.from({ length: 30 }, (_, i): [string, string] => [`0.${String(i + 10)}`, String(i + 1)]);
    const rec: ExchangeBRecord = { type: 'snapshot', ticker, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq: 1, yes, no: [] };
    await t.filler.insert('exchange-b', [{ venue: 'exchange-b', received_at: rec.timestamp, worker_id: 1, ingest_seq: seqOf(ms, 0), dedup_id: 'params-1', record: rec }]);
    const r = await get(`/exchange-b/market/book?ticker=${ticker}&timestamp=${ms / 1000}`);
    expect(r.status).toBe(200);
    expect(r.body.yes).toHaveLength(10);
    expect(r.body.yes[0]).toEqual({ price: '0.39', size: '30' });
    expect(r.body.timestamp).toBe(ms);
    // A finalised instant is cacheable like every other answer about a finalised day.
    expect(r.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    for (const [depth, code] of [['0', 400], ['501', 400], ['ten', 400], ['500', 200]] as const) {
      expect((await get(`/exchange-b/market/book?ticker=${ticker}&timestamp=${ms}&depth=${depth}`)).status, depth).toBe(code);
    }
    expect((await get(`/exchange-b/market/book?ticker=${ticker}`)).body.error).toMatchObject({ code: 'missing_parameter', param: 'timestamp' });
    const series = `/exchange-b/market/book-snapshots?ticker=${ticker}&start_timestamp=${ms}`;
    expect((await get(`${series}&end_timestamp=${ms + 86_400_001}`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'end_timestamp' });
    expect((await get(`${series}&end_timestamp=${ms + 10_000_000}&interval=1`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'interval' });
    expect((await get(`${series}&end_timestamp=${ms - 1}`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'start_timestamp' });
    // A window holding no multiple of the interval: no snapshot, nothing read.
    const none = await get(`${series.replace(`start_timestamp=${ms}`, `start_timestamp=${ms + 1}`)}&end_timestamp=${ms + 59_000}&interval=60`);
    expect(none.status).toBe(200);
    expect(none.body.data).toEqual([]);
    const ok = await get(`${series}&end_timestamp=${ms + 9_999_000}&interval=1&depth=2`);
    expect(ok.body.data).toHaveLength(10_000);
    expect(ok.body.data[0]).toEqual({ timestamp: ms, as_of_ms: ms, is_known: true, yes: [{ price: '0.39', size: '30' }, { price: '0.38', size: '29' }], no: [] });
    expect(ok.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    const unknown = await get(`/exchange-a/market/book?asset_id=999999&timestamp=${ms}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_found', param: 'asset_id' });
  });
});
