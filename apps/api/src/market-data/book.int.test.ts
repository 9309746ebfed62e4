import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ExchangeAEvent, ExchangeAMessage, ExchangeBMessage, ExchangeBRecord } from '@booktape/domain';
// The deliberately simple implementation of docs/rules/summaries.md, not the book engine.
import { exchangeAStreamArb, exchangeBStreamArb, referenceBookA, referenceBookB, tsOf, type ReferenceBook } from '@booktape/book/testing';
import { parse } from 'csv-parse/sync';
import { silentLogger } from '@booktape/config';
import { utcDate } from '@booktape/domain';
import { assetKey, rollupKeys } from '@booktape/messaging';
import type { SummaryKey } from '@booktape/storage';
import { BookEventsRepository, SummariesRepository as Summaries } from '@booktape/storage';
import { BookReader, bookAt, Roller } from '@booktape/summaries';
import { bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * The book at any instant against the reference rebuilt from the raw events: random streams
 * (snapshots, changes, unknown books, malformed records, quiet spells across days) are
 * stored, and the book at random instants (on an event, just before and after one, before
 * the first, after the last) must equal the reference's book after every record at or
 * before the instant, level for level. Half the runs are rolled up first, with a checkpoint
 * every few events, so the answers start from the rollup's checkpoints (carried across days)
 * instead of the raw snapshots: both must equal the reference.
 */

let t: TestApi;
let key: string;
let run = 0;

beforeAll(async () => {
  t = await startTestApi();
  key = await t.newKey();
});
afterAll(async () => t?.close());

/**
 * Rolls every data day of a series up, oldest first (all closed: their dates lie in the past),
 * with a checkpoint every `every` events; `rolled` false leaves the series raw.
 */
async function rollUp(key: SummaryKey, times: number[], rolled: boolean, every: number): Promise<void> {
  if (!rolled) return;
  const roller = new Roller(new Summaries(t.ch), silentLogger(), { closeGraceMs: 0, checkpointEvery: every });
  for (const date of [...new Set(times.map((ms) => utcDate(ms)))].sort()) await roller.rollDay(key, date);
}

/** Stored checkpoints of a series (to tell that the rolled-up runs do start from them). */
async function checkpointCount(key: SummaryKey): Promise<number> {
  const rs = await t.ch.client.query({ query: `SELECT count() AS n FROM ${t.ch.table('book_checkpoints')} WHERE venue = {v:String} AND market = {m:String} AND asset = {a:String}`, query_params: { v: key.venue, m: key.market, a: key.asset }, format: 'JSONEachRow' });
  return Number((await rs.json<{ n: string }>())[0]!.n);
}

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
      fc.asyncProperty(exchangeAStreamArb, exchangeAStreamArb, instantsArb, fc.integer({ min: 1, max: 40 }), fc.boolean(), fc.integer({ min: 1, max: 6 }), async (events, other, picks, depth, rolled, every) => {
        const market = conditionId(5000 + run++);
        const msgs = (evs: ExchangeAEvent[], asset: string): ExchangeAMessage[] =>
          evs.map((e, i) => {
            const event = { ...e, market, asset_id: asset };
            return { venue: 'exchange-a', received_at: new Date(Number(e.timestamp)).toISOString(), worker_id: 1, ingest_seq: seqOf(Number(e.timestamp), i), dedup_id: `${asset}-${i}`, event };
          });
        await t.filler.insert('exchange-a', [...msgs(events, '123'), ...msgs(other, '456')]);
        await rollUp({ venue: 'exchange-a', market, asset: '123' }, events.map(tsOf), rolled, every);
        await rollUp({ venue: 'exchange-a', market, asset: '456' }, other.map(tsOf), rolled, every);
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
      { numRuns: 16 },
    );
  });

  it('ids that hold quotes, backslashes, braces or any Unicode, and instants at the edges, reach the checkpoint reads as values: exact answers or a 400, never a 5xx', async () => {
    // What a query parameter may hold (parseText: trimmed, no control characters), leaning on what SQL text and placeholders treat specially.
    const hostile = fc
      .oneof(fc.string({ unit: fc.constantFrom("'", '\\', '"', '`', '{', '}', ':', 'x', 'Int64', 'String', ';', '-', '*', '?', '%', ' '), minLength: 1, maxLength: 24 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }))
      .filter((s) => s.trim() === s && s !== '' && !/[\u0000-\u001f\u007f]/.test(s));
    await fc.assert(
      fc.asyncProperty(exchangeAStreamArb, hostile, instantsArb, async (events, asset, picks) => {
        const market = conditionId(7000 + run++);
        const msgs = events.map((e, i): ExchangeAMessage => ({ venue: 'exchange-a', received_at: new Date(Number(e.timestamp)).toISOString(), worker_id: 1, ingest_seq: seqOf(Number(e.timestamp), i), dedup_id: `h-${i}`, event: { ...e, market, asset_id: asset } }));
        await t.filler.insert('exchange-a', msgs);
        await rollUp({ venue: 'exchange-a', market, asset }, events.map(tsOf), true, 2);
        for (const at of instants(events.map(tsOf), picks)) {
          const r = await get(`/exchange-a/market/book?asset_id=${encodeURIComponent(asset)}&condition_id=${market}&timestamp=${at}`);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          expect({ is_known: r.body.is_known, first: r.body.bids, second: r.body.asks }, `at ${at}`).toEqual(expectedBook(referenceBookA(events.filter((e) => Number(e.timestamp) <= at)), 10));
          expect(r.body).toMatchObject({ asset_id: asset, as_of_ms: asOfA(events, at) });
        }
        for (const at of ['99999999999999999', '-1', '1e3', '2149-06-07T00:00:00Z', 'NaN']) {
          expect((await get(`/exchange-a/market/book?asset_id=${encodeURIComponent(asset)}&condition_id=${market}&timestamp=${at}`)).status, at).toBe(400);
        }
        expect((await get(`/exchange-a/market/book?asset_id=${encodeURIComponent(asset)}&condition_id=${market}&timestamp=2149-06-06T23:59:59.999Z`)).status).toBe(200);
      }),
      { numRuns: 8 },
    );
  });

  it('a reader that keeps checkpoint states (hot day builds read whole) and starts from the last rollup state answers byte for byte as one that keeps none, across open days, later runs, dirty dates and rebuilds', async () => {
    /** The real repository, counting the states its whole-build reads (run in the background, a page at a time) load. */
    class Watched extends Summaries {
      override checkpointStatesOf(...args: Parameters<Summaries['checkpointStatesOf']>) {
        const p = super.checkpointStatesOf(...args);
        void p.then((all) => {
          statesLoaded += all.length;
          if (args[3] !== undefined && all.length === args[3].limit) fullPages++;
        }, () => undefined);
        return p;
      }
    }
    let statesLoaded = 0;
    let fullPages = 0;
    const preloadErrors: unknown[] = [];
    const events = new BookEventsRepository(t.ch);
    await fc.assert(
      fc.asyncProperty(exchangeAStreamArb, instantsArb, fc.integer({ min: 1, max: 4 }), fc.boolean(), fc.integer({ min: 1, max: 30 }), async (stream, picks, every, open, depth) => {
        {
          const market = conditionId(9000 + run++);
          const key: SummaryKey = { venue: 'exchange-a', market, asset: '123' };
          const msg = (e: ExchangeAEvent, i: number, dedup = `k-${i}`): ExchangeAMessage => ({ venue: 'exchange-a', received_at: new Date(Number(e.timestamp)).toISOString(), worker_id: 1, ingest_seq: seqOf(Number(e.timestamp), i), dedup_id: dedup, event: { ...e, market, asset_id: '123' } });
          const watched = new Watched(t.ch);
          // Pages of a few positions, so that a build's whole read takes several.
          const kept = new BookReader({ summaries: watched, events, redis: t.redis, queuePrefix: t.config.rollupQueuePrefix, preloadPage: 1 + (run % 3), onPreloadError: (e) => preloadErrors.push(e) });
          // The reference: a new reader for every answer (nothing kept, nothing started early).
          const reference = () => new BookReader({ summaries: new Summaries(t.ch), events, redis: t.redis, queuePrefix: t.config.rollupQueuePrefix });
          const roll = async (evs: ExchangeAEvent[]) => {
            const roller = new Roller(new Summaries(t.ch), silentLogger(), { closeGraceMs: open ? 1_000 * 86_400_000 : 0, checkpointEvery: every });
            for (const date of [...new Set(evs.map((e) => utcDate(tsOf(e))))].sort()) await roller.rollDay(key, date);
          };
          const same = async (evs: ExchangeAEvent[], why: string) => {
            // The instants (a build's second state read loads it whole), then again once the loads are in.
            const ats = instants(evs.map(tsOf), picks);
            for (const pass of [0, 1]) {
              for (const at of ats) {
                const a = JSON.stringify(await bookAt(kept, key, at, depth));
                expect(a, `${why}, pass ${pass}, at ${at}`).toBe(JSON.stringify(await bookAt(reference(), key, at, depth)));
              }
              await kept.preloadsSettled();
            }
          };
          // The first half rolled up, then the rest (an open day's later run adds positions to its build).
          const half = stream.slice(0, Math.ceil(stream.length / 2));
          await t.filler.insert('exchange-a', half.map((e, i) => msg(e, i)));
          await roll(half);
          await same(half, 'first half');
          // A date marked dirty (a late row's notification) and cleared: the reader's last rollup state is then stale each time.
          if (half.length > 0) {
            const dirty = rollupKeys(t.config.rollupQueuePrefix).dirty(assetKey(key));
            await t.redis.zadd(dirty, Date.now(), utcDate(tsOf(half[0]!)));
            await same(half, 'a date dirty');
            await t.redis.del(dirty);
            await same(half, 'dirty no more');
          }
          await t.filler.insert('exchange-a', stream.slice(half.length).map((e, i) => msg(e, half.length + i)));
          await roll(stream);
          await same(stream, 'whole');
          // A late copy of an early change with another size: the day is rebuilt (a new build), kept states of the old one unused.
          const early = stream.find((e) => e.event_type === 'price_change');
          if (early !== undefined && early.event_type === 'price_change') {
            const late = { ...early, changes: (early.changes ?? []).map((c) => ({ ...c, size: String(Number(c.size) + 7) })), hash: 'late' };
            await t.filler.insert('exchange-a', [msg(late, stream.length, 'late')]);
            await roll(stream);
            await same([...stream, late], 'after a late row');
          }
        }
      }),
      { numRuns: 10 },
    );
    expect(preloadErrors).toEqual([]);
    // Not vacuous: builds were read whole and answered from.
    expect(statesLoaded).toBeGreaterThan(0);
    // Some build took more than one page (a full page is followed by the next).
    expect(fullPages).toBeGreaterThan(0);
  }, 600_000);

  it('exchange B equals the reference book (YES and NO bids, highest first), gaps and null sides unknown', async () => {
    await fc.assert(
      fc.asyncProperty(exchangeBStreamArb, instantsArb, fc.integer({ min: 1, max: 40 }), fc.boolean(), fc.integer({ min: 1, max: 6 }), async (records, picks, depth, rolled, every) => {
        const ticker = `KXBOOK-${run++}`;
        const msgs: ExchangeBMessage[] = records.map((rec, i) => {
          const record: ExchangeBRecord = { ...rec, ticker };
          return { venue: 'exchange-b', received_at: rec.timestamp, worker_id: 1, ingest_seq: seqOf(rec.epoch_ms, i), dedup_id: `${ticker}-${i}`, record };
        });
        await t.filler.insert('exchange-b', msgs);
        await rollUp({ venue: 'exchange-b', market: ticker, asset: ticker }, records.map(tsOf), rolled, every);
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
      { numRuns: 16 },
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
    expect((await get(`${series}&end_timestamp=${ms + 86_401_000}`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'end_timestamp' });
    // A day in seconds, midnight to midnight, ends at the closing second's .999 and is still one day.
    const s0 = Math.floor(ms / 86_400_000) * 86_400;
    const day = await get(`/exchange-b/market/book-snapshots?ticker=${ticker}&start_timestamp=${s0}&end_timestamp=${s0 + 86_400}&interval=3600`);
    expect(day.status, JSON.stringify(day.body).slice(0, 300)).toBe(200);
    expect(day.body.end_timestamp).toBe((s0 + 86_400) * 1000 + 999);
    expect(day.body.data).toHaveLength(25);
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

  it('starts from the rollup checkpoints while they are exact, and from the raw events once late rows outgrow them', async () => {
    const ticker = 'KXBOOK-CHECKPOINTS';
    const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
    const t0 = Date.UTC(2026, 2, 4, 9);
    let n = 0;
    const msg = (ms: number, rec: Omit<ExchangeBRecord, 'ticker' | 'timestamp' | 'epoch_ms' | 'sid' | 'seq'>): ExchangeBMessage => {
      const record = { ...rec, ticker, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq: ++n } as ExchangeBRecord;
      return { venue: 'exchange-b', received_at: record.timestamp, worker_id: 1, ingest_seq: seqOf(ms, n), dedup_id: `cp-${n}`, record };
    };
    const delta = (ms: number, d: string) => msg(ms, { type: 'delta', side: 'yes', price: '0.4000', delta: d } as never);
    // A snapshot, then ten deltas of +1 a second apart: with a checkpoint every 3 events, at 3, 6, 9 and the day's end (11).
    await t.filler.insert('exchange-b', [msg(t0, { type: 'snapshot', yes: [['0.4000', '100.00']], no: [] } as never), ...Array.from({ length: 10 }, (_, i) => delta(t0 + (i + 1) * 1000, '1.00'))]);
    const summaries = new Summaries(t.ch);
    const books = new BookReader({ summaries, events: new BookEventsRepository(t.ch), redis: t.redis, queuePrefix: t.config.rollupQueuePrefix });
    const at = t0 + 9_500;
    const answer = async () => {
      const r = await get(`/exchange-b/market/book?ticker=${ticker}&timestamp=${at}`);
      expect(r.status).toBe(200);
      return { size: r.body.yes[0]?.size, asOf: r.body.as_of_ms };
    };
    const startOf = async () => {
      const src = await books.source(key, at);
      await src.close();
      return src.start?.asOfMs ?? null;
    };
    // As the worker runs it: the asset's summaries version is bumped around every write, and
    // the reader keeps the day builds it read while the version stands still.
    const versionKey = rollupKeys(t.config.rollupQueuePrefix).version(assetKey(key));
    const versions = { current: async () => Number((await t.redis.get(versionKey)) ?? 0), bump: () => t.redis.incr(versionKey) };
    const roller = (closeGraceMs: number) => new Roller(summaries, silentLogger(), { closeGraceMs, checkpointEvery: 3, versions });

    // An open day (its grace not over): a checkpoint counts once the day's rows up to it still number what was applied.
    await roller(1_000 * 86_400_000).rollDay(key, '2026-03-04');
    expect(await startOf()).toBe(t0 + 8_000);
    expect(await answer()).toEqual({ size: '109', asOf: t0 + 9_000 });
    await t.filler.insert('exchange-b', [delta(t0 + 2_500, '5.00')]);
    expect(await startOf()).toBeNull();
    expect(await answer()).toEqual({ size: '114', asOf: t0 + 9_000 });

    // Closed and rolled again (a rebuild: the late row): the new build's checkpoints count.
    await roller(0).rollDay(key, '2026-03-04');
    expect(await checkpointCount(key)).toBeGreaterThanOrEqual(4);
    // 12 events now: checkpoints after the 3rd, 6th, 9th (t0 + 7 s) and 12th.
    expect(await startOf()).toBe(t0 + 7_000);
    expect(await answer()).toEqual({ size: '114', asOf: t0 + 9_000 });
    // A later day with no data starts from the day's end checkpoint.
    const next = t0 + 86_400_000;
    expect((await books.source(key, next)).start?.asOfMs).toBe(t0 + 10_000);
    expect((await get(`/exchange-b/market/book?ticker=${ticker}&timestamp=${next}`)).body).toMatchObject({ as_of_ms: t0 + 10_000, is_known: true, yes: [{ price: '0.4', size: '115' }] });

    // A late row on a closed day the queue has marked dirty (the sink's notification): the
    // checkpoints after it are not used until the day is rolled again.
    await t.filler.insert('exchange-b', [delta(t0 + 4_500, '-50.00')]);
    const dirty = rollupKeys(t.config.rollupQueuePrefix).dirty(assetKey(key));
    await t.redis.zadd(dirty, Date.now(), '2026-03-04');
    try {
      expect(await startOf()).toBeNull();
      expect(await answer()).toEqual({ size: '64', asOf: t0 + 9_000 });
      // Rolled again but an earlier day dirty: no checkpoint of a later day is used (its start state may change).
      await roller(0).rollDay(key, '2026-03-04');
      await t.redis.del(dirty);
      // 13 events: the 12th checkpoint is at t0 + 9 s.
      expect(await startOf()).toBe(t0 + 9_000);
      await t.redis.zadd(dirty, Date.now(), '2026-03-03');
      expect(await startOf()).toBeNull();
      expect(await answer()).toEqual({ size: '64', asOf: t0 + 9_000 });
    } finally {
      await t.redis.del(dirty, versionKey);
    }
  });

  it('reads a checkpoint interval whole: a duplicate counts once and a late row after the checkpoint is applied', async () => {
    const ticker = 'KXBOOK-INTERVAL';
    const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
    const t0 = Date.UTC(2026, 2, 6, 9);
    let n = 0;
    const delta = (ms: number, d: string, dedup = `iv-${++n}`, seq = n): ExchangeBMessage => {
      const record = { type: 'delta', side: 'yes', price: '0.4000', delta: d, ticker, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq } as ExchangeBRecord;
      return { venue: 'exchange-b', received_at: record.timestamp, worker_id: 1, ingest_seq: seqOf(ms, n), dedup_id: dedup, record };
    };
    const snapshot: ExchangeBMessage = {
      venue: 'exchange-b',
      received_at: new Date(t0).toISOString(),
      worker_id: 1,
      ingest_seq: seqOf(t0, 0),
      dedup_id: 'iv-0',
      record: { type: 'snapshot', ticker, timestamp: new Date(t0).toISOString(), epoch_ms: t0, sid: 1, seq: 0, yes: [['0.4000', '100.00']], no: [] } as ExchangeBRecord,
    };
    // A snapshot, then ten deltas of +1 a second apart: checkpoints after the 3rd, 6th and 9th event and at the day's end.
    await t.filler.insert('exchange-b', [snapshot, ...Array.from({ length: 10 }, (_, i) => delta(t0 + (i + 1) * 1000, '1.00'))]);
    const summaries = new Summaries(t.ch);
    await new Roller(summaries, silentLogger(), { closeGraceMs: 0, checkpointEvery: 3 }).rollDay(key, '2026-03-06');
    // Between the checkpoints at t0 + 5 s (the 6th event) and t0 + 8 s: a copy of the delta at
    // t0 + 6 s (same record, later ingest) and a late delta of +10 at t0 + 6.5 s, neither rolled up.
    await t.filler.insert('exchange-b', [{ ...delta(t0 + 6_000, '1.00', 'iv-6', 6), ingest_seq: seqOf(t0 + 6_000, 99) }, delta(t0 + 6_500, '10.00')]);
    const events = new BookEventsRepository(t.ch);
    const bounded: boolean[] = [];
    const spy = Object.assign(Object.create(events) as BookEventsRepository, {
      after: (...args: Parameters<BookEventsRepository['after']>) => {
        bounded.push(args[6] === true);
        return events.after(...args);
      },
    });
    let stateReads = 0;
    const counting = Object.assign(Object.create(summaries) as Summaries, {
      checkpointState: (...args: Parameters<Summaries['checkpointState']>) => {
        stateReads++;
        return summaries.checkpointState(...args);
      },
    });
    const books = new BookReader({ summaries: counting, events: spy, redis: t.redis, queuePrefix: t.config.rollupQueuePrefix });
    const at = t0 + 7_000;
    const src = await books.source(key, at);
    await src.close();
    expect(src.start?.asOfMs).toBe(t0 + 5_000);
    expect(bounded).toEqual([true]);
    // 100 + 7 deltas of +1 (the copy once) + 10.
    const want = { as_of_ms: t0 + 7_000, is_known: true, yes: [{ price: '0.4', size: '117' }] };
    expect((await get(`/exchange-b/market/book?ticker=${ticker}&timestamp=${at}`)).body).toMatchObject(want);
    // The same answer again, its checkpoint's state now kept in memory: read once.
    for (let i = 0; i < 2; i++) {
      const b = await bookAt(books, key, at, 10);
      expect(b).toMatchObject({ asOfMs: want.as_of_ms, known: true, sides: [[{ price: '0.4', size: '117' }], []] });
    }
    expect(stateReads).toBe(1);
    // After the day's last checkpoint the span is not known to be small: streamed.
    const late = await books.source(key, t0 + 86_400_000);
    await late.close();
    expect(bounded).toEqual([true, true, true, false]);
  });
});
