import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DelayedError } from 'bullmq';
import { silentLogger } from '@booktape/config';
import type { ExchangeBRecord, RawMessage } from '@booktape/domain';
import { RollupQueue, assetKey, partitionsOf, rollupKeys } from '@booktape/messaging';
import { SummariesRepository, type SummaryKey } from '@booktape/storage';
import { Roller, type DayResult } from '@booktape/summaries';
import { requireEnv, uniqueId } from '@booktape/testkit';
import { startTestApi, type TestApi } from '@booktape/api/testing';
import { AssetLocks } from './asset-lock.ts';
import { ClosedDaySettle } from './closed-day-settle.ts';
import { runAssetJob, type JobContext } from './jobs.ts';

/**
 * A past (closed) day fed in pieces, as a replay of a capture feeds it, on the real engine
 * and Redis: claims of the day inside its settle window are deferred, not rebuilt, and once
 * the data stops the deferred date is rolled and the stored day equals a full rebuild.
 */

const DATE = '2026-03-07';
const DAY = Date.UTC(2026, 2, 7);

let t: TestApi;
let queue: RollupQueue;
let prefix: string;

beforeAll(async () => {
  prefix = uniqueId('bt-closed-settle');
  t = await startTestApi({ rollupQueuePrefix: prefix, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  queue = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix, debounceMs: 600_000 });
}, 60_000);
afterAll(async () => {
  await queue?.queue.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await t?.close();
});

function records(ticker: string, offsets: number[], seq0: number): RawMessage[] {
  return offsets.map((off, i) => {
    const ms = DAY + off;
    const seq = seq0 + i;
    const rec: ExchangeBRecord =
      seq === 1
        ? { ticker, sid: 1, seq, type: 'snapshot', timestamp: new Date(ms).toISOString(), epoch_ms: ms, yes: [['0.40', '10']], no: [['0.55', '4']] }
        : { ticker, sid: 1, seq, type: 'delta', timestamp: new Date(ms).toISOString(), epoch_ms: ms, side: 'yes', price: '0.41', delta: String(seq) };
    return { venue: 'exchange-b', received_at: rec.timestamp, worker_id: 1, ingest_seq: String(seq), dedup_id: `1:${seq}`, record: rec };
  });
}

describe('a closed day fed again and again', () => {
  it('is rebuilt fewer times than it was fed, the deferred date is rolled once its window ends, and the day equals a full rebuild', async () => {
    const ticker = 'KXSETTLE-1';
    const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
    const repo = new SummariesRepository(t.ch);
    // The day is long closed (grace 0); the jobs' clock is a fake one, so the window is exact.
    const roller = new Roller(repo, silentLogger(), { closeGraceMs: 0 });
    let clock = Date.now();
    const rebuilds: DayResult[] = [];
    const ctx: JobContext = {
      queue,
      roller,
      repo,
      locks: new AssetLocks(() => queue.redis, prefix, 30_000),
      afterRun: (_a, results) => rebuilds.push(...results.filter((r) => r.date === DATE && r.outcome === 'full')),
      log: silentLogger(),
      opts: { closeGraceMs: 0, sweepEveryMs: 60_000, claimLeaseMs: 30_000, batchAssets: 1 },
      now: () => clock,
      settle: new ClosedDaySettle(),
    };
    const delayed: number[] = [];
    const job = { id: 'settle-1', moveToDelayed: async (ts: number) => void delayed.push(ts), updateProgress: async () => undefined };
    const rollup = () => runAssetJob(ctx, job, key, 'token').then(() => 'rolled', (e: unknown) => (e instanceof DelayedError ? 'deferred' : Promise.reject(e)));
    let seq = 1;
    const pieces = 6;
    const outcomes: string[] = [];
    for (let i = 0; i < pieces; i++) {
      // Pieces of a capture: each a stretch of the day's events, stored and notified as the sink does.
      const msgs = records(ticker, [i * 10_000 + 1, i * 10_000 + 2, i * 10_000 + 3], seq);
      seq += msgs.length;
      await t.filler.insert('exchange-b', msgs);
      await queue.notify([...partitionsOf(msgs).values()]);
      outcomes.push(await rollup());
      clock += 100;
    }
    // The first run builds the day and opens a 1 s window: the five claims within it are deferred.
    expect(outcomes).toEqual(['rolled', 'deferred', 'deferred', 'deferred', 'deferred', 'deferred']);
    expect(rebuilds.length).toBeLessThan(pieces);
    const start = clock - pieces * 100;
    expect(new Set(delayed)).toEqual(new Set([start + 1000]));
    // Meanwhile the date is dirty and its asset pending: what the delayed job (or, should this
    // process die, the sweep's stale-pending check) finds.
    const k = assetKey(key);
    const keys = rollupKeys(prefix);
    expect(await queue.redis.zscore(keys.dirty(k), DATE)).not.toBeNull();
    expect(await queue.redis.zscore(keys.pending, k)).not.toBeNull();
    expect(await queue.unsettled([{ ...key, date: DATE }])).toBe(1);
    // The stored day still lacks the deferred pieces ...
    expect((await repo.day(key, DATE))!.events).toBe(3);

    // ... until the delayed job runs at the window's end.
    clock = delayed[0]!;
    expect(await rollup()).toBe('rolled');
    expect(rebuilds.length).toBe(2);
    expect(await queue.unsettled([{ ...key, date: DATE }])).toBe(0);
    const day = (await repo.day(key, DATE))!;
    expect(day.complete).toBe(true);
    expect(day.events).toBe(await repo.countBookEvents(key, DATE, day.coveredUntil));
    expect(day.events).toBe(pieces * 3);
    await new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs: 0 }).rollDay(key, DATE, true);
    const full = (await repo.day(key, DATE))!;
    expect({ events: day.events, coveredUntil: day.coveredUntil, state: day.state, checks: day.checks }).toEqual({ events: full.events, coveredUntil: full.coveredUntil, state: full.state, checks: full.checks });
  }, 60_000);

  it('a new process (nothing remembered) rolls a date another deferred at once', async () => {
    const ticker = 'KXSETTLE-2';
    const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
    const repo = new SummariesRepository(t.ch);
    const mk = (settle: ClosedDaySettle): JobContext => ({
      queue,
      roller: new Roller(repo, silentLogger(), { closeGraceMs: 0 }),
      repo,
      locks: new AssetLocks(() => queue.redis, prefix, 30_000),
      afterRun: () => undefined,
      log: silentLogger(),
      opts: { closeGraceMs: 0, sweepEveryMs: 60_000, claimLeaseMs: 30_000, batchAssets: 1 },
      // A clock that stands still: the second claim is inside the first's window however slow the engine.
      now: () => still,
      settle,
    });
    const still = Date.now();
    const job = { id: 'settle-2', moveToDelayed: async () => undefined, updateProgress: async () => undefined };
    const first = mk(new ClosedDaySettle());
    const feed = async (offsets: number[], seq: number) => {
      const msgs = records(ticker, offsets, seq);
      await t.filler.insert('exchange-b', msgs);
      await queue.notify([...partitionsOf(msgs).values()]);
    };
    await feed([1, 2], 1);
    await runAssetJob(first, job, key, 'token');
    await feed([3, 4], 3);
    await expect(runAssetJob(first, job, key, 'token')).rejects.toBeInstanceOf(DelayedError);
    // That process stops; another (its memory empty) takes the asset's job.
    await runAssetJob(mk(new ClosedDaySettle()), job, key, 'token');
    expect(await queue.unsettled([{ ...key, date: DATE }])).toBe(0);
    expect((await repo.day(key, DATE))!.events).toBe(4);
  }, 60_000);
});
