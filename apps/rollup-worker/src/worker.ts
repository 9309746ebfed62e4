import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { pid } from 'node:process';
import { DelayedError, Worker, type Job } from 'bullmq';
import { ENGINE_VERSION } from '@booktape/book';
import type { Logger } from '@booktape/config';
import { utcDate } from '@booktape/domain';
import {
  DEFAULT_CLAIM_LEASE_MS,
  DEFAULT_ROLLUP_WORKER_BEAT_MS,
  ROLLUP_QUEUE,
  ROLLUP_WORKER_BEAT_VERSION,
  RollupQueue,
  assetKey,
  removeRollupWorkerBeat,
  rollupConnection,
  rollupKeys,
  writeRollupWorkerBeat,
  type AssetRef,
  type BackfillProgress,
  type BackfillRequest,
  type RollupJobData,
} from '@booktape/messaging';
import { SummariesRepository, type ClickHouse } from '@booktape/storage';
import { Roller, type DayResult } from '@booktape/summaries';
import { countCheckAlerts, registerCheckMetrics } from './check-metrics.ts';

export interface RollupWorkerOptions {
  /** Jobs run at once in this process (different assets; one asset never runs twice at once). */
  concurrency: number;
  /** How often the sweep looks for unfinished, outdated or unnoticed partitions. */
  sweepEveryMs: number;
  /** A day is finalised (covered to its end) this long after it ended. */
  closeGraceMs: number;
  /** Book events between full-book checkpoints (the book at any instant); default CHECKPOINT_EVENTS. */
  checkpointEvery?: number;
  queuePrefix: string;
  debounceMs: number;
  /**
   * A claim of an asset's dates lasts this long unless its job renews it (every third of
   * it while it runs): a process that died holding one loses it after this, and a live
   * worker rolls its dates (DEFAULT_CLAIM_LEASE_MS).
   */
  claimLeaseMs: number;
  /** How often the worker tells monitoring it is alive (libs/messaging rollup-worker-liveness.ts). */
  beatMs: number;
}

export const DEFAULT_ROLLUP_OPTIONS: RollupWorkerOptions = {
  concurrency: 4,
  sweepEveryMs: 60_000,
  closeGraceMs: 60_000,
  queuePrefix: 'booktape',
  debounceMs: 1000,
  claimLeaseMs: DEFAULT_CLAIM_LEASE_MS,
  beatMs: DEFAULT_ROLLUP_WORKER_BEAT_MS,
};

export interface RollupWorkerDeps {
  ch: ClickHouse;
  redisUrl: string;
  log: Logger;
  options?: Partial<RollupWorkerOptions>;
}

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/**
 * The rollup worker (docs/rules/shape.md): BullMQ jobs of the `rollup` queue.
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
  // The roller bumps the asset's version around each write (the API's caches key on it) and
  // skips reading back what it wrote while nobody else wrote the asset.
  const versions = {
    current: (a: AssetRef) => queue!.version(a),
    bump: (a: AssetRef) => queue!.bumpVersion(a),
  };
  const roller = new Roller(repo, log, { closeGraceMs: opts.closeGraceMs, versions, checkpointEvery: opts.checkpointEvery });
  registerCheckMetrics();
  let queue: RollupQueue | undefined;
  let worker: Worker<RollupJobData> | undefined;
  let workerConnection: ReturnType<typeof rollupConnection> | undefined;
  let lastError: string | null = null;
  const stats = { jobs: 0, days: 0, failures: 0, lastJobAt: 0 };
  const instance = `${hostname()}-${pid}-${randomUUID().slice(0, 8)}`.replace(/[^A-Za-z0-9_.+-]/g, '_');
  let beatTimer: NodeJS.Timeout | undefined;
  let beating: Promise<void> | undefined;
  let beatFailing = false;

  /** One beat; skipped while the previous one still waits (Redis away), so none pile up. */
  function beat(startedAt: number): void {
    if (beating || !queue) return;
    beating = writeRollupWorkerBeat(queue.redis, opts.queuePrefix, {
      v: ROLLUP_WORKER_BEAT_VERSION,
      instance,
      started_at: new Date(startedAt).toISOString(),
      published_at: new Date().toISOString(),
      interval_ms: opts.beatMs,
      concurrency: opts.concurrency,
    })
      .then(() => {
        if (beatFailing) log.info('rollup worker liveness written again');
        beatFailing = false;
      })
      .catch((err: Error) => {
        if (!beatFailing) log.warn({ err: err.message }, 'cannot write the rollup worker liveness; monitoring will show this worker as stopped');
        beatFailing = true;
      })
      .finally(() => (beating = undefined));
  }

  // The asset lock of a process that died must not outlive its claim's lease: a live
  // worker taking the claim over needs the lock too.
  const LOCK_TTL_MS = opts.claimLeaseMs;
  const lockKey = (a: AssetRef) => rollupKeys(opts.queuePrefix).lock(assetKey(a));

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

  function afterRun(a: AssetRef, results: DayResult[]): void {
    for (const r of results) {
      stats.days++;
      if (r.outcome !== 'unchanged' && r.outcome !== 'no-new-events') log.debug({ ...a, date: r.date, outcome: r.outcome, applied: r.applied }, 'rolled up');
      reportAlerts(a, r);
    }
  }

  /**
   * Cross-check alerts of a run go to the log and the metrics. One warn line per kind and
   * run, with how many and the first one (time and detail), rather than one per alert: a
   * book that stays crossed would otherwise write a line per millisecond.
   */
  function reportAlerts(a: AssetRef, r: DayResult): void {
    if (r.alerts.length === 0) return;
    countCheckAlerts(a.venue, r.alerts);
    for (const kind of ['mismatch', 'crossed'] as const) {
      const of = r.alerts.filter((x) => x.kind === kind);
      const first = of[0];
      if (first === undefined) continue;
      log.warn(
        { ...a, date: r.date, kind, count: of.length, first_ts: first.ts, first_at: new Date(first.ts).toISOString(), first: first.detail, outcome: r.outcome },
        kind === 'mismatch' ? 'rebuilt book contradicts the venue best bid/ask' : 'rebuilt book is crossed',
      );
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
      // Unique per run: a retry of this job must not pass for the run that claimed before it.
      const claimId = `${job.id ?? 'job'}:${randomUUID()}`;
      const dates = (await queue!.claim(a, claimId)).sort();
      if (dates.length === 0) return;
      const stopRenewing = renewClaim(a, claimId);
      try {
        for (const d of dates) afterRun(a, await roller.rollFrom(a, d));
        stopRenewing();
        await queue!.release(a, dates, false, claimId);
      } catch (e) {
        stopRenewing();
        await queue!.release(a, dates, true, claimId);
        throw e;
      }
    } finally {
      await unlock();
    }
  }

  /**
   * Keeps a claim's lease while its rollup runs, however long that takes; a failed renewal
   * (Redis away for a moment) is tried again at the next tick, within the lease. Returns
   * the stop.
   */
  function renewClaim(a: AssetRef, claimId: string): () => void {
    let lost = false;
    const timer = setInterval(() => {
      queue!
        .renewClaim(a, claimId)
        .then((held) => {
          if (held || lost) return;
          // Our lease ran out (this process stalled past it) and another job took the dates
          // over: they are rolled there; our writes are the same rebuild, so harmless.
          lost = true;
          log.warn({ ...a, claimId }, 'rollup claim lease ran out and was taken over by another job');
        })
        .catch(() => undefined);
    }, Math.max(100, Math.floor(opts.claimLeaseMs / 3)));
    return () => clearInterval(timer);
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
          afterRun(a, await roller.rollFrom(a, date, true));
          done++;
          await job.updateProgress({ done, total, asset, date } satisfies BackfillProgress);
        }
      } finally {
        await unlock();
      }
    }
    return { days: done, assets: plan.length };
  }

  async function runSweep(): Promise<{ marked: number; takenOver: number }> {
    const closedBefore = utcDate(Date.now() - opts.closeGraceMs);
    const [open, outdated, stale] = await Promise.all([
      repo.openDaysBefore(closedBefore, 1000),
      repo.outdatedDays(ENGINE_VERSION, 200),
      repo.staleRecentPartitions(Math.max(3 * opts.sweepEveryMs, 300_000), 5000),
    ]);
    const parts = [...open, ...outdated, ...stale];
    await queue!.markDirty(parts);
    if (parts.length > 0) log.debug({ open: open.length, outdated: outdated.length, stale: stale.length }, 'sweep marked partitions');
    // Claims whose process died holding them: their dates go back to dirty and get a job.
    const takenOver = await queue!.takeOverExpiredClaims();
    if (takenOver.length > 0) log.warn({ assets: takenOver.slice(0, 10), count: takenOver.length }, 'took over rollup claims whose lease ran out (their process stopped)');
    return { marked: parts.length, takenOver: takenOver.length };
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
      queue = new RollupQueue({ redisUrl: deps.redisUrl, prefix: opts.queuePrefix, debounceMs: opts.debounceMs, claimLeaseMs: opts.claimLeaseMs });
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
      const startedAt = Date.now();
      beat(startedAt);
      beatTimer = setInterval(() => beat(startedAt), opts.beatMs);
      beatTimer.unref();
      log.info({ concurrency: opts.concurrency, sweepEveryMs: opts.sweepEveryMs }, 'rollup worker started');
    },
    async stop(): Promise<void> {
      // Waits for running jobs. A long back-fill is not waited for beyond 15 s: its job is
      // retried after a restart.
      if (worker) await Promise.race([worker.close(), new Promise((r) => setTimeout(r, 15_000).unref()).then(() => worker!.close(true))]);
      // Beats go on while those jobs finish (the worker is still rolling), then end cleanly.
      clearInterval(beatTimer);
      await beating;
      if (queue) await removeRollupWorkerBeat(queue.redis, opts.queuePrefix, instance).catch(() => undefined);
      // BullMQ leaves connections it was given open: ours are closed here.
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
