import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { ExchangeBRecord, RawMessage } from '@booktape/domain';
import { RollupQueue, assetKey, partitionsOf, rollupKeys } from '@booktape/messaging';
import { SummariesRepository, type SummaryKey } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { requireEnv, uniqueId } from '@booktape/testkit';
import { bearer, startTestApi, type TestApi } from '@booktape/api/testing';
import { AssetLocks } from './asset-lock.ts';
import { runAssetJob, runSweepJob, type JobContext } from './jobs.ts';

/**
 * The late-data hint end to end, on the real engine and Redis: the sink's notifications
 * (their partitions' lowest event times) through the queue's claim to the roller. A run
 * whose hint proves nothing before covered_until was stored since skips the whole-day
 * count; every other run counts, and late data is never left out of the stored day.
 */

const OPEN = 1e13; // no day closes
const DATE = '2026-03-05';
const DAY = Date.UTC(2026, 2, 5);

let t: TestApi;
let queue: RollupQueue;
let prefix: string;
let run = 0;

beforeAll(async () => {
  prefix = uniqueId('bt-late-hint');
  t = await startTestApi({ rollupQueuePrefix: prefix, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  queue = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix, debounceMs: 600_000 });
}, 60_000);
afterAll(async () => {
  await queue?.queue.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await t?.close();
});

/** The real repository, recording whether each rollup read asked for the late-data count. */
class SpyRepository extends SummariesRepository {
  counted: boolean[] = [];
  override bookEventsRead(...a: Parameters<SummariesRepository['bookEventsRead']>) {
    this.counted.push(a[4] !== null);
    return super.bookEventsRead(...a);
  }
  override bookEventsReadMany(...a: Parameters<SummariesRepository['bookEventsReadMany']>) {
    for (const i of a[2]) this.counted.push(i.countBeforeMs !== null);
    return super.bookEventsReadMany(...a);
  }
}

/** One exchange B ticker's book: a snapshot, then deltas at the given offsets (ms into DAY). */
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

function setup(shared?: { repo: SpyRepository; roller: Roller }, batchAssets = 1, closeGraceMs = OPEN) {
  run++;
  const ticker = `KXLATE-${run}`;
  const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
  const repo = shared?.repo ?? new SpyRepository(t.ch);
  const roller = shared?.roller ?? new Roller(repo, silentLogger(), { closeGraceMs });
  const ctx: JobContext = {
    queue,
    roller,
    repo,
    locks: new AssetLocks(() => queue.redis, prefix, 30_000),
    afterRun: (_a, results) => outcomes.push(...results.filter((r) => r.date === DATE).map((r) => r.outcome)),
    log: silentLogger(),
    // One asset per job unless asked: other tests' dates (the sweep's marks) stay out of this one's.
    opts: { closeGraceMs, sweepEveryMs: 60_000, claimLeaseMs: 30_000, batchAssets },
  };
  /** Each run's outcome for DATE, in order. */
  const outcomes: string[] = [];
  const job = { id: `late-${run}`, moveToDelayed: async () => undefined, updateProgress: async () => undefined };
  let seq = 1;
  /** Stores records (as the sink does) and, unless the notification is lost, notifies their partitions with their hints. */
  const store = async (offsets: number[], notify = true) => {
    const msgs = records(ticker, offsets, seq);
    seq += offsets.length;
    await t.filler.insert('exchange-b', msgs);
    if (notify) await queue.notify([...partitionsOf(msgs).values()]);
  };
  const rollup = () => runAssetJob(ctx, job, key, undefined);
  /** `store`, then the asset's job. */
  const storeAndRollup = async (offsets: number[]) => {
    await store(offsets);
    await rollup();
  };
  /** `runs` runs of the sink's in-order ingest: three records a second, each batch rolled up. */
  const inOrderRuns = async (runs: number) => {
    for (let i = 0; i < runs; i++) await storeAndRollup([i * 1000 + 1, i * 1000 + 2, i * 1000 + 3]);
  };
  /** A replay of the ticker ended (`booktape replay` marks its partitions replayed). */
  const replayEnded = () => queue.markReplayed([...partitionsOf(records(ticker, [1], 1)).values()]);
  /** The stored day's events and what the store holds before its covered_until. */
  const state = async () => {
    const day = (await repo.day(key, DATE))!;
    return { events: day.events, stored: await repo.countBookEvents(key, DATE, day.coveredUntil), coveredUntil: day.coveredUntil };
  };
  /** The stored day holds every stored event before its covered_until (none left out); returns its state. */
  const expectNoneLeftOut = async () => {
    const st = await state();
    expect(st.events).toBe(st.stored);
    return st;
  };
  /** The stored day equals a full rebuild of it. */
  const expectExact = async () => {
    const incremental = await repo.day(key, DATE);
    await new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs }).rollDay(key, DATE, true);
    const full = await repo.day(key, DATE);
    const of = (d: typeof full) => ({ events: d!.events, coveredUntil: d!.coveredUntil, complete: d!.complete, state: d!.state, checks: d!.checks });
    expect(of(incremental)).toEqual(of(full));
  };
  /** `expectNoneLeftOut` and `expectExact`: the day is what it should be. Returns its state. */
  const expectRight = async () => {
    const st = await expectNoneLeftOut();
    await expectExact();
    return st;
  };
  return { key, repo, roller, ctx, store, rollup, storeAndRollup, inOrderRuns, replayEnded, state, expectNoneLeftOut, expectExact, expectRight, outcomes };
}

describe('late-data hint', () => {
  it('in-order ingest: every run after the first skips the whole-day count, and the day is what a full rebuild gives', async () => {
    const s = setup();
    await s.inOrderRuns(6);
    // The first run builds the day (no count); the other five continue it on their hints.
    expect(s.repo.counted).toEqual([false, false, false, false, false, false]);
    expect(s.roller.lateChecks).toEqual({ counted: 0, skipped: 5 });
    await s.expectRight();
  }, 60_000);

  it('assets rolled together (one read) each keep their own hint: the in-order one skips, the late one counts', async () => {
    const a = setup(undefined, 4);
    const b = setup({ repo: a.repo, roller: a.roller }, 4);
    await a.store([1000, 2000, 3000]);
    await b.store([1000, 2000, 3000]);
    await a.rollup();
    await a.store([4000, 4001]);
    await b.store([4000, 4001]);
    await a.rollup();
    expect(a.roller.lateChecks).toEqual({ counted: 0, skipped: 2 });
    await a.store([5000]);
    await b.store([2500, 5000]);
    await a.rollup();
    // The read of both asked the count of b alone; b's day, late data found, was rebuilt (a read without a count).
    expect(a.repo.counted.slice(-3)).toEqual([false, true, false]);
    expect(a.roller.lateChecks).toEqual({ counted: 1, skipped: 3 });
    for (const s of [a, b]) await s.expectRight();
  }, 60_000);

  it('a notified late record (its hint below covered_until) is counted and the day rebuilt', async () => {
    const s = setup();
    await s.storeAndRollup([1000, 2000, 3000]);
    const before = await s.state();
    await s.storeAndRollup([1500, 4000]);
    expect(s.roller.lateChecks.counted).toBe(1);
    const st = await s.expectRight();
    expect(st.coveredUntil).toBeGreaterThan(before.coveredUntil);
  }, 60_000);

  it('a hint that says "nothing late" is not trusted when the date was also marked without one (a sink from before hints): the count runs', async () => {
    const s = setup();
    await s.storeAndRollup([1000, 2000, 3000]);
    const { coveredUntil } = await s.state();
    // A late record stored by a sink that marks the date alone, as sinks did before hints.
    await s.store([1500], false);
    const k = assetKey(s.key);
    const keys = rollupKeys(prefix);
    await queue.redis.multi().zadd(keys.dirty(k), 'NX', Date.now(), DATE).zadd(keys.pending, 'NX', Date.now(), k).exec();
    // Then an in-order record, notified with its hint: alone it would say nothing is late.
    await s.store([5000]);
    expect(DAY + 5000).toBeGreaterThanOrEqual(coveredUntil);
    await s.rollup();
    expect(s.roller.lateChecks).toEqual({ counted: 1, skipped: 0 });
    await s.expectRight();
  }, 60_000);

  it('a lost notification cannot hide late data: the next sweep marks the partition without a hint and its run counts', async () => {
    const s = setup();
    await s.storeAndRollup([1000, 2000, 3000]);
    // A late record whose notification is lost (Redis away, the sink's notifyMaxPending exceeded).
    await s.store([1500], false);
    await s.storeAndRollup([5000]);
    // Its hint (5000) rightly skipped the count: the late record is not in the stored day yet.
    expect(s.roller.lateChecks).toEqual({ counted: 0, skipped: 1 });
    const hidden = await s.state();
    expect(hidden.events).toBe(hidden.stored - 1);
    // The sweep marks every recently stored partition without a hint.
    await runSweepJob(s.ctx);
    await s.rollup();
    expect(s.roller.lateChecks.counted).toBe(1);
    await s.expectRight();
  }, 60_000);

  it('a run that failed puts its dates back without their hint: the retry counts', async () => {
    const s = setup();
    await s.storeAndRollup([1000, 2000, 3000]);
    await s.store([1500]);
    // The claim of the late record's date fails its run (the engine refused, say).
    const real = s.roller.rollFrom.bind(s.roller);
    let fail = true;
    s.roller.rollFrom = async (...a) => {
      if (fail) throw new Error('engine away');
      return real(...a);
    };
    await expect(s.rollup()).rejects.toThrow('engine away');
    fail = false;
    // An in-order record notified meanwhile: its hint alone would skip the count.
    await s.storeAndRollup([6000]);
    expect(s.roller.lateChecks).toEqual({ counted: 1, skipped: 0 });
    await s.expectRight();
  }, 60_000);
});

describe('a past day whose data is still arriving (a replay)', () => {
  const PAST = 0; // DATE has ended: an unhinted run closes it
  const summary = async (key: SummaryKey, apiKey: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-b/market/orderbook-summary?ticker=${key.market}&date=${DATE}&resolution=60`, headers: bearer(apiKey) });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    return res.body;
  };

  it("stays open while the sink's hinted runs go on incrementally (no rebuild, no count); the replay's end closes it, equal to one full build", async () => {
    const s = setup(undefined, 1, PAST);
    await s.inOrderRuns(6);
    expect(s.outcomes).toEqual(['full', 'incremental', 'incremental', 'incremental', 'incremental', 'incremental']);
    expect(s.repo.counted).toEqual([false, false, false, false, false, false]);
    const open = (await s.repo.day(s.key, DATE))!;
    expect(open.complete).toBe(false);
    // The held millisecond waits: the API serves it from the raw events meanwhile.
    expect(open.coveredUntil).toBe(DAY + 5003);
    const apiKey = await t.newKey();
    const whileOpen = await summary(s.key, apiKey);

    await s.replayEnded();
    await s.rollup();
    expect(s.outcomes.at(-1)).toBe('incremental');
    const closed = (await s.repo.day(s.key, DATE))!;
    expect({ complete: closed.complete, coveredUntil: closed.coveredUntil, events: closed.events }).toEqual({ complete: true, coveredUntil: DAY + 86_400_000, events: 18 });
    expect(await summary(s.key, apiKey)).toBe(whileOpen);
    await s.expectExact();
  }, 60_000);

  it('a closed past day that gets more from the sink is rebuilt once, left open, then continued', async () => {
    const s = setup(undefined, 1, PAST);
    await s.storeAndRollup([1000, 2000, 3000]);
    await s.replayEnded();
    await s.rollup();
    expect((await s.repo.day(s.key, DATE))!.complete).toBe(true);
    await s.storeAndRollup([4000, 5000]);
    await s.storeAndRollup([6000, 7000]);
    expect(s.outcomes).toEqual(['full', 'incremental', 'full', 'incremental']);
    await s.expectNoneLeftOut();
    expect((await s.repo.day(s.key, DATE))!.complete).toBe(false);
  }, 60_000);

  it('the sweep counts a past day stored to recently but leaves it open', async () => {
    const s = setup(undefined, 1, PAST);
    await s.storeAndRollup([1000, 2000, 3000]);
    // A record whose notification was lost.
    await s.store([4000], false);
    await runSweepJob(s.ctx);
    await s.rollup();
    expect(s.roller.lateChecks.counted).toBe(1);
    const day = (await s.repo.day(s.key, DATE))!;
    expect({ complete: day.complete, events: day.events }).toEqual({ complete: false, events: 3 });
    expect(day.coveredUntil).toBe(DAY + 4000);
  }, 60_000);
});
