import { randomUUID } from 'node:crypto';
import { DelayedError, Worker, type Job } from 'bullmq';
import { ENGINE_VERSION } from '@booktape/book';
import type { Logger } from '@booktape/config';
import { utcDate } from '@booktape/domain';
import { ROLLUP_QUEUE, RollupQueue, assetKey, rollupConnection, type AssetRef, type BackfillProgress, type BackfillRequest, type RollupJobData } from '@booktape/messaging';
import { SummariesRepository, type ClickHouse } from '@booktape/storage';
import { Roller, type DayResult } from './roller.ts';

export interface RollupWorkerOptions {
  /** Jobs run at once in this process (different assets; one asset never runs twice at once). */
  concurrency: number;
  /** How often the sweep looks for unfinished, outdated or unnoticed partitions. */
  sweepEveryMs: number;
  /** A day is finalised (covered to its end) this long after it ended. */
  closeGraceMs: number;
  queuePrefix: string;
  debounceMs: number;
}

export const DEFAULT_ROLLUP_OPTIONS: RollupWorkerOptions = {
  concurrency: 2,
  sweepEveryMs: 60_000,
  closeGraceMs: 60_000,
  queuePrefix: 'booktape',
  debounceMs: 1000,
};

export interface RollupWorkerDeps {
  ch: ClickHouse;
  redisUrl: string;
  log: Logger;
  options?: Partial<RollupWorkerOptions>;
}

const LOCK_TTL_MS = 60_000;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/**
 * The rollup worker (DESIGN §1): BullMQ jobs of the `rollup` queue.
 * - `asset`: the sink stored data of an asset; its dirty dates are claimed and rolled up
 *   (Roller), each followed by the later days whose carried state changed.
 * - `backfill`: an operator's `booktape rollup`: full rebuilds of a date range, with
 *   progress for the CLI's bar.
 * - `sweep` (a job scheduler): finalises days that ended, re-derives days of an older
 *   engine version, and re-enqueues recently stored partitions whose notification was lost.
 * One asset is rolled by one job at a time (a Redis lock per asset, on top of the queue's
 * per-asset deduplication, because back-fills and asset jobs share assets).
 */
export function createRollupWorker(deps: RollupWorkerDeps) {
  const opts = { ...DEFAULT_ROLLUP_OPTIONS, ...deps.options };
  const { log } = deps;
  const repo = new SummariesRepository(deps.ch);
  const roller = new Roller(repo, log, { closeGraceMs: opts.closeGraceMs });
  let queue: RollupQueue | undefined;
  let worker: Worker<RollupJobData> | undefined;
  let workerConnection: ReturnType<typeof rollupConnection> | undefined;
  let lastError: string | null = null;
  const stats = { jobs: 0, days: 0, failures: 0, lastJobAt: 0 };

  const lockKey = (a: AssetRef) => `${opts.queuePrefix}:rollup:lock:${assetKey(a)}`;

  async function tryLock(a: AssetRef): Promise<(() => Promise<void>) | null> {
    const id = randomUUID();
    const redis = queue!.redis;
    const ok = await redis.set(lockKey(a), id, 'PX', LOCK_TTL_MS, 'NX');
    if (ok !== 'OK') return null;
    const renew = setInterval(() => void redis.pexpire(lockKey(a), LOCK_TTL_MS).catch(() => undefined), LOCK_TTL_MS / 3);
    return async () => {
      clearInterval(renew);
      await redis.eval(RELEASE, 1, lockKey(a), id).catch(() => undefined);
    };
  }

  async function waitLock(a: AssetRef): Promise<() => Promise<void>> {
    for (;;) {
      const unlock = await tryLock(a);
      if (unlock) return unlock;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async function afterRun(a: AssetRef, results: DayResult[]): Promise<void> {
    if (results.some((r) => r.outcome === 'full' || r.outcome === 'incremental')) await queue!.bumpVersion(a);
    for (const r of results) {
      stats.days++;
      if (r.outcome !== 'unchanged' && r.outcome !== 'no-new-events') log.debug({ ...a, date: r.date, outcome: r.outcome, applied: r.applied }, 'rolled up');
    }
  }

  async function runAsset(job: Job<RollupJobData>, a: AssetRef, token: string | undefined): Promise<void> {
    const unlock = await tryLock(a);
    if (!unlock) {
      // Another job (a back-fill) holds the asset: try again shortly.
      await job.moveToDelayed(Date.now() + 500, token);
      throw new DelayedError();
    }
    try {
      const dates = (await queue!.claim(a, job.id ?? randomUUID())).sort();
      try {
        for (const d of dates) await afterRun(a, await roller.rollFrom(a, d));
        await queue!.release(a, dates, false);
      } catch (e) {
        await queue!.release(a, dates, true);
        throw e;
      }
    } finally {
      await unlock();
    }
  }

  async function runBackfill(job: Job<RollupJobData>, req: BackfillRequest): Promise<{ days: number; assets: number }> {
    const assets =
      req.asset !== undefined ? [req.asset] : req.venue === 'exchange-b' ? [req.market] : await repo.assetsOf(req.market, req.from, req.to);
    const plan: { asset: string; dates: string[] }[] = [];
    for (const asset of assets) plan.push({ asset, dates: await repo.dataDates({ venue: req.venue, market: req.market, asset }, req.from, req.to) });
    const total = plan.reduce((n, p) => n + p.dates.length, 0);
    let done = 0;
    await job.updateProgress({ done, total } satisfies BackfillProgress);
    for (const { asset, dates } of plan) {
      const a = { venue: req.venue, market: req.market, asset };
      const unlock = await waitLock(a);
      try {
        for (const date of dates) {
          // Forced: a back-fill re-derives even days that look current (a fixed engine).
          await afterRun(a, await roller.rollFrom(a, date, true));
          done++;
          await job.updateProgress({ done, total, asset, date } satisfies BackfillProgress);
        }
      } finally {
        await unlock();
      }
    }
    return { days: done, assets: plan.length };
  }

  async function runSweep(): Promise<{ marked: number }> {
    const closedBefore = utcDate(Date.now() - opts.closeGraceMs);
    const [open, outdated, stale] = await Promise.all([
      repo.openDaysBefore(closedBefore, 1000),
      repo.outdatedDays(ENGINE_VERSION, 200),
      repo.staleRecentPartitions(Math.max(3 * opts.sweepEveryMs, 300_000), 5000),
    ]);
    const parts = [...open, ...outdated, ...stale];
    await queue!.markDirty(parts);
    if (parts.length > 0) log.debug({ open: open.length, outdated: outdated.length, stale: stale.length }, 'sweep marked partitions');
    return { marked: parts.length };
  }

  async function process(job: Job<RollupJobData>, token?: string): Promise<unknown> {
    stats.jobs++;
    stats.lastJobAt = Date.now();
    const d = job.data;
    switch (d.kind) {
      case 'asset':
        return runAsset(job, { venue: d.venue, market: d.market, asset: d.asset }, token);
      case 'backfill':
        return runBackfill(job, d);
      case 'sweep':
        return runSweep();
      default:
        throw new Error(`unknown rollup job ${JSON.stringify(d)}`);
    }
  }

  return {
    async start(): Promise<void> {
      queue = new RollupQueue({ redisUrl: deps.redisUrl, prefix: opts.queuePrefix, debounceMs: opts.debounceMs });
      await queue.queue.upsertJobScheduler('rollup-sweep', { every: opts.sweepEveryMs }, { name: 'sweep', data: { kind: 'sweep' }, opts: { removeOnComplete: true, removeOnFail: 100 } });
      workerConnection = rollupConnection(deps.redisUrl, 'booktape-rollup-worker');
      workerConnection.on('error', () => undefined);
      worker = new Worker<RollupJobData>(ROLLUP_QUEUE, process, {
        connection: workerConnection,
        prefix: opts.queuePrefix,
        concurrency: opts.concurrency,
      });
      worker.on('failed', (job, err) => {
        stats.failures++;
        lastError = err.message;
        log.warn({ job: job?.name, data: job?.data, attempts: job?.attemptsMade, err: err.message }, 'rollup job failed');
      });
      worker.on('error', (err) => {
        lastError = err.message;
        log.warn({ err: err.message }, 'rollup worker error');
      });
      log.info({ concurrency: opts.concurrency, sweepEveryMs: opts.sweepEveryMs }, 'rollup worker started');
    },
    async stop(): Promise<void> {
      // Waits for running jobs; BullMQ leaves connections it was given open: ours are closed here.
      // A long back-fill is not waited for beyond 15 s: its job is retried after a restart.
      if (worker) await Promise.race([worker.close(), new Promise((r) => setTimeout(r, 15_000).unref()).then(() => worker!.close(true))]);
      workerConnection?.disconnect();
      await queue?.close();
    },
    /** The queue, for the sink's notifications in the same process. */
    get queue(): RollupQueue | undefined {
      return queue;
    },
    health: () => ({ ok: worker?.isRunning() ?? false, lastError, ...stats }),
    /** Runs one sweep now (tests, operators). */
    sweep: () => runSweep(),
  };
}

export type RollupWorker = ReturnType<typeof createRollupWorker>;
