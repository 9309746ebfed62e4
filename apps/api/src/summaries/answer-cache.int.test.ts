import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ExchangeAEvent, ExchangeAMessage } from '@booktape/domain';
import { toSummaryBucket } from '@booktape/book';
// The deliberately simple implementation of docs/rules/summaries.md that the book package's properties use.
import { referenceBuckets, referenceObservationsA } from '@booktape/book/testing';
import { silentLogger } from '@booktape/config';
import { assetKey, rollupKeys } from '@booktape/messaging';
import { SummariesRepository } from '@booktape/storage';
import { Roller, SummaryReader } from '@booktape/summaries';
import { bearer, conditionId, ingestSeq, startTestApi, type TestApi } from '../testing.ts';

/**
 * Settled summary answers are kept as sent (answer-cache.ts): asked again, a finished,
 * rolled-up day is not rebuilt, and the kept bytes are exactly the answer of the data as it
 * stands (checked against the independent reference after every change of the data).
 */
const DAY = Date.UTC(2026, 2, 1);
const MARKET = conditionId(91);
const ASSET = '918273645';
const key = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };

let t: TestApi;
let apiKey: string;
const events: ExchangeAEvent[] = [];

function add(list: ExchangeAEvent[]): Promise<void> {
  events.push(...list);
  const msgs: ExchangeAMessage[] = list.map((event, i) => ({ venue: 'exchange-a', received_at: new Date(Number(event.timestamp) + 5).toISOString(), worker_id: 1, ingest_seq: ingestSeq(Number(event.timestamp) + 5, i % 7), dedup_id: event.hash, event }));
  return t.filler.insert('exchange-a', msgs);
}

const versionKey = () => rollupKeys(t.config.rollupQueuePrefix).version(assetKey(key));
/** As the rollup worker runs it: the asset's summaries version bumped around every write. */
async function rollUp(): Promise<void> {
  const versions = { current: async () => Number((await t.redis.get(versionKey())) ?? 0), bump: () => t.redis.incr(versionKey()) };
  await new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs: 0, checkpointEvery: 50, versions }).rollDay(key, '2026-03-01');
}

async function get(query: string, headers: Record<string, string> = {}) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&${query}`, headers: { ...bearer(apiKey), ...headers } });
  return { status: res.statusCode, raw: res.rawPayload, etag: res.headers.etag };
}
const expected = (R: number) => referenceBuckets(referenceObservationsA(events), R, DAY, DAY + 86_400_000 - 1).map(toSummaryBucket);

beforeAll(async () => {
  // Room for a whole day at R=1 (about 35 MB; an answer over a quarter of the bound is not kept).
  t = await startTestApi({ summaryAnswerCacheBytes: 256 * 1024 * 1024 });
  apiKey = await t.newKey();
  const list: ExchangeAEvent[] = [{ market: MARKET, asset_id: ASSET, timestamp: String(DAY + 60_000), hash: 'bk', event_type: 'book', bids: [{ price: '0.40', size: '10' }], asks: [{ price: '0.60', size: '7' }] }];
  for (let i = 0; i < 200; i++) {
    const side = i % 2 === 0 ? 'BUY' : 'SELL';
    list.push({ market: MARKET, asset_id: ASSET, timestamp: String(DAY + 120_000 + i * 97_000), hash: `pc${i}`, event_type: 'price_change', changes: [{ price: side === 'BUY' ? `0.4${i % 10}` : `0.6${i % 10}`, side, size: String(i % 4) }] });
  }
  await add(list);
  await rollUp();
});
afterAll(async () => {
  await t?.redis.del(versionKey());
  await t?.close();
});

describe('settled summary answers', () => {
  it('are built once, sent again byte for byte, and rebuilt as soon as a rollup changes the day', async () => {
    const built = vi.spyOn(SummaryReader.prototype, 'summaryAnswer');
    try {
      const first = await get('date=2026-03-01&resolution=1')
      expect(first.status).toBe(200);
      expect(JSON.parse(first.raw.toString()).data).toEqual(expected(1));
      expect(built).toHaveBeenCalledTimes(1);
      const again = await get('date=2026-03-01&resolution=1');
      expect(again.raw.equals(first.raw)).toBe(true);
      expect(again.etag).toBe(first.etag);
      expect(built).toHaveBeenCalledTimes(1);
      // Another format or resolution is another answer.
      const csv = await get('date=2026-03-01&resolution=1&format=csv');
      expect(built).toHaveBeenCalledTimes(2);
      expect((await get('date=2026-03-01&resolution=1&format=csv')).raw.equals(csv.raw)).toBe(true);
      expect(built).toHaveBeenCalledTimes(2);
      // A conditional request for a kept answer still gets its 304.
      expect((await get('date=2026-03-01&resolution=1', { 'if-none-match': first.etag! })).status).toBe(304);

      // Late data on the day: until it is rolled up the day is pending, and every answer is built.
      await add([{ market: MARKET, asset_id: ASSET, timestamp: String(DAY + 50_000_000), hash: 'late1', event_type: 'price_change', changes: [{ price: '0.55', side: 'BUY', size: '9' }] }]);
      const dirty = rollupKeys(t.config.rollupQueuePrefix).dirty(assetKey(key));
      await t.redis.zadd(dirty, Date.now(), '2026-03-01');
      try {
        const live = await get('date=2026-03-01&resolution=1');
        expect(JSON.parse(live.raw.toString()).data).toEqual(expected(1));
        expect(live.raw.equals(first.raw)).toBe(false);
        await get('date=2026-03-01&resolution=1');
        expect(built).toHaveBeenCalledTimes(4);
        // An answer never kept reads the asset's rollup state once, for its build: no stamp to check.
        const stateReads = vi.spyOn(t.redis, 'evalsha');
        await get('date=2026-03-01&resolution=60');
        expect(stateReads.mock.calls.filter((args) => (args as unknown[]).includes(dirty))).toHaveLength(1);
        stateReads.mockRestore();
        expect(built).toHaveBeenCalledTimes(5);
      } finally {
        await t.redis.del(dirty);
      }
      // Rolled up: settled again, built once under the new version, then kept.
      await rollUp();
      const rolled = await get('date=2026-03-01&resolution=1');
      expect(JSON.parse(rolled.raw.toString()).data).toEqual(expected(1));
      expect(rolled.etag).not.toBe(first.etag);
      expect(built).toHaveBeenCalledTimes(6);
      expect((await get('date=2026-03-01&resolution=1')).raw.equals(rolled.raw)).toBe(true);
      expect(built).toHaveBeenCalledTimes(6);
    } finally {
      built.mockRestore();
    }
  });

  it('are not kept for a window that is not over, nor when the cache is off', async () => {
    const built = vi.spyOn(SummaryReader.prototype, 'summaryAnswer');
    const off = await t.another({ summaryAnswerCacheBytes: 0 });
    try {
      const now = Date.now();
      const window = `start_timestamp=${now - 3_600_000}&end_timestamp=${now + 3_600_000}&resolution=60`;
      await get(window);
      await get(window);
      expect(built).toHaveBeenCalledTimes(2);
      const tags: unknown[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await off.inject({ method: 'GET', url: `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=2026-03-01&resolution=60`, headers: bearer(apiKey) });
        expect(JSON.parse(r.body).data).toEqual(expected(60));
        tags.push(r.headers.etag);
      }
      expect(built).toHaveBeenCalledTimes(4);
      // A settled answer's tag names its inputs: built again, or by another process, it is the same tag.
      const kept = await get('date=2026-03-01&resolution=60');
      expect(tags).toEqual([kept.etag, kept.etag]);
    } finally {
      built.mockRestore();
    }
  });

  it('show new rolled data in the next answer: the day rows are kept until the version moves, not for a time', async () => {
    const off = await t.another({ summaryAnswerCacheBytes: 0 });
    const windows = vi.spyOn(SummariesRepository.prototype, 'window');
    const ask = async (R: number) => {
      const r = await off.inject({ method: 'GET', url: `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=2026-03-01&resolution=${R}`, headers: bearer(apiKey) });
      expect(r.statusCode).toBe(200);
      return JSON.parse(r.body).data as unknown[];
    };
    const lock = rollupKeys(t.config.rollupQueuePrefix).lock(assetKey(key));
    try {
      expect(await ask(60)).toEqual(expected(60));
      const reads = windows.mock.calls.length;
      // Read at rest: kept past the 30 s a read while a writer is at work holds.
      const later = Date.now() + 120_000;
      const clock = vi.spyOn(Date, 'now').mockReturnValue(later);
      try {
        expect(await ask(60)).toEqual(expected(60));
      } finally {
        clock.mockRestore();
      }
      expect(windows.mock.calls.length).toBe(reads);

      // New data rolled up as the worker does (bumps around the write): the very next answer has it.
      await add([{ market: MARKET, asset_id: ASSET, timestamp: String(DAY + 60_000_000), hash: 'late2', event_type: 'price_change', changes: [{ price: '0.47', side: 'BUY', size: '3' }] }]);
      await rollUp();
      const rolled = windows.mock.calls.length;
      expect(await ask(60)).toEqual(expected(60));
      expect(windows.mock.calls.length).toBe(rolled + 1);

      // A writer that holds the lock, bumps, writes and dies before its last bump: an answer
      // read meanwhile may keep the old rows for a while, but only for readers that also see
      // a writer at work; once the lock is gone the next answer reads the day rows again.
      await t.redis.set(lock, 'dead-writer', 'PX', 60_000);
      await t.redis.incr(versionKey());
      await add([{ market: MARKET, asset_id: ASSET, timestamp: String(DAY + 70_000_000), hash: 'late3', event_type: 'price_change', changes: [{ price: '0.48', side: 'BUY', size: '4' }] }]);
      // Stored but not rolled up (and not marked dirty): the old rows' answer.
      const old = await ask(60);
      expect(old).not.toEqual(expected(60));
      await new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs: 0, checkpointEvery: 50 }).rollDay(key, '2026-03-01');
      await t.redis.del(lock);
      expect(await ask(60)).toEqual(expected(60));
    } finally {
      windows.mockRestore();
      await t.redis.del(lock);
    }
  });

  it('carry the state into a window starting within a held day from its columns, byte for byte as read from the store', async () => {
    // warm holds the day's columns (whole-day answers); cold never does (windows only).
    const warm = await t.another({ summaryAnswerCacheBytes: 0 });
    const cold = await t.another({ summaryAnswerCacheBytes: 0 });
    const path = `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}`;
    const ask = async (app: typeof warm, query: string) => {
      const r = await app.inject({ method: 'GET', url: `${path}&${query}`, headers: bearer(apiKey) });
      expect(r.statusCode).toBe(200);
      return r.rawPayload;
    };
    // Tops that differ in the last two buckets before some hours (what a window from there carries in).
    const edges: ExchangeAEvent[] = [];
    for (const h of [2, 14]) {
      edges.push({ market: MARKET, asset_id: ASSET, timestamp: String(DAY + h * 3_600_000 - 90_000), hash: `edge${h}a`, event_type: 'price_change', changes: [{ price: '0.491', side: 'BUY', size: '2' }] });
      edges.push({ market: MARKET, asset_id: ASSET, timestamp: String(DAY + h * 3_600_000 - 30_000), hash: `edge${h}b`, event_type: 'price_change', changes: [{ price: '0.492', side: 'BUY', size: '3' }] });
    }
    await add(edges);
    await rollUp();
    for (const R of [60, 7, 1]) await ask(warm, `date=2026-03-01&resolution=${R}`);
    const chunks = vi.spyOn(SummariesRepository.prototype, 'chunks');
    // Reads of the store (a read for no date asks nothing).
    const reads = () => chunks.mock.calls.filter((c) => c[1].size > 0).length;
    try {
      let windows = 0;
      for (const R of [60, 7, 1]) {
        for (const hour of [1, 2, 5, 7, 13, 14, 23]) {
          for (const offset of [0, 1_000, 59_999, 1_234_567]) {
            const start = DAY + hour * 3_600_000 + offset;
            const end = Math.min(DAY + 86_400_000 - 1, start + 2 * 3_600_000);
            const query = `start_timestamp=${start}&end_timestamp=${end}&resolution=${R}`;
            const before = reads();
            const held = await ask(warm, query);
            // Nothing read from the store for the held day: neither its chunks nor the carried hour.
            expect(reads()).toBe(before);
            expect(held.equals(await ask(cold, query))).toBe(true);
            windows++;
          }
        }
      }
      expect(windows).toBe(84);
    } finally {
      chunks.mockRestore();
    }
  });
});
