import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { pid } from 'node:process';
import { Worker } from 'bullmq';
import type { Logger } from '@booktape/config';
import { DEFAULT_CLAIM_LEASE_MS, DEFAULT_DEBOUNCE_MS, DEFAULT_ROLLUP_WORKER_BEAT_MS, ROLLUP_QUEUE, RollupQueue, rollupConnection, type AssetRef, type RollupJobData } from '@booktape/messaging';
import { SummariesRepository, type ClickHouse } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { AssetLocks } from './asset-lock.ts';
import { lateChecksReporter, registerCheckMetrics } from './check-metrics.ts';
import { runJob, runSweepJob, type JobContext } from './jobs.ts';
import { LivenessBeat } from './liveness-beat.ts';
import { reportRun } from './run-report.ts';

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
  /**
   * Assets of a venue an asset job claims and rolls at once (its own and up to this many
   * less one others waiting with dirty dates): the assets of a date share one read and one
   * insert per table (docs/BENCHMARKS.md). 1: each asset alone.
   */
  batchAssets: number;
  /**
   * The past-day hold (libs/messaging rollup-queue.ts `PastDayHold`): an asset whose dirty
   * dates are all days that ended, each fed by the sink, is rolled once the sink has stored
   * no past day's records (of any asset) for this long (a replay or an import still feeding
   * past days), at most
   * `pastDayHoldMaxMs` after its first notification since its last run. 0: never held.
   * Today's dates are never held, and a replay's end (`--wait`) ends the hold at once.
   */
  pastDayQuietMs: number;
  pastDayHoldMaxMs: number;
}

export const DEFAULT_ROLLUP_OPTIONS: RollupWorkerOptions = {
  concurrency: 4,
  sweepEveryMs: 60_000,
  closeGraceMs: 60_000,
  queuePrefix: 'booktape',
  debounceMs: DEFAULT_DEBOUNCE_MS,
  claimLeaseMs: DEFAULT_CLAIM_LEASE_MS,
  beatMs: DEFAULT_ROLLUP_WORKER_BEAT_MS,
  batchAssets: 16,
  pastDayQuietMs: 10_000,
  pastDayHoldMaxMs: 300_000,
};

export interface RollupWorkerDeps {
  ch: ClickHouse;
  redisUrl: string;
  log: Logger;
  options?: Partial<RollupWorkerOptions>;
}

/**
 * The rollup worker (docs/rules/shape.md): BullMQ jobs of the `rollup` queue, put together
 * from units with one job each:
 * - `asset`, `backfill` and `sweep` jobs (jobs.ts): an asset's dirty dates claimed and
 *   rolled up (Roller); an operator's `booktape rollup` back-fill with progress; the sweep
 *   that finalises ended days, re-derives days of an older engine version and re-enqueues
 *   partitions whose notification was lost;
 * - AssetLocks (asset-lock.ts): one job per asset at a time, across processes;
 * - LivenessBeat (liveness-beat.ts): monitoring hears the worker is alive;
 * - reportRun (run-report.ts): stats, logs and cross-check alerts of each run;
 * - the roller's late-data checks (check-metrics.ts), reported as each job ends.
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
  const reportLateChecks = lateChecksReporter(roller.lateChecks);
  let queue: RollupQueue | undefined;
  let worker: Worker<RollupJobData> | undefined;
  let workerConnection: ReturnType<typeof rollupConnection> | undefined;
  let lastError: string | null = null;
  const stats = { jobs: 0, days: 0, failures: 0, lastJobAt: 0 };
  const instance = `${hostname()}-${pid}-${randomUUID().slice(0, 8)}`.replace(/[^A-Za-z0-9_.+-]/g, '_');
  const beat = new LivenessBeat(() => queue?.redis, { prefix: opts.queuePrefix, instance, beatMs: opts.beatMs, concurrency: opts.concurrency }, log);
  const ctx: JobContext = {
    get queue() {
      return queue!;
    },
    roller,
    repo,
    locks: new AssetLocks(() => queue!.redis, opts.queuePrefix, opts.claimLeaseMs),
    afterRun: (a, results) => reportRun(log, stats, a, results),
    log,
    opts,
  };

  return {
    async start(): Promise<void> {
      queue = new RollupQueue({ redisUrl: deps.redisUrl, prefix: opts.queuePrefix, debounceMs: opts.debounceMs, claimLeaseMs: opts.claimLeaseMs });
      await queue.queue.upsertJobScheduler('rollup-sweep', { every: opts.sweepEveryMs }, { name: 'sweep', data: { kind: 'sweep' }, opts: { removeOnComplete: true, removeOnFail: 100 } });
      workerConnection = rollupConnection(deps.redisUrl, 'booktape-rollup-worker');
      workerConnection.on('error', () => undefined);
      worker = new Worker<RollupJobData>(
        ROLLUP_QUEUE,
        (job, token) => {
          stats.jobs++;
          stats.lastJobAt = Date.now();
          return runJob(ctx, job, token).finally(reportLateChecks);
        },
        { connection: workerConnection, prefix: opts.queuePrefix, concurrency: opts.concurrency },
      );
      worker.on('failed', (job, err) => {
        stats.failures++;
        lastError = err.message;
        log.warn({ job: job?.name, data: job?.data, attempts: job?.attemptsMade, err: err.message }, 'rollup job failed');
      });
      worker.on('error', (err) => {
        lastError = err.message;
        log.warn({ err: err.message }, 'rollup worker error');
      });
      beat.start();
      log.info({ concurrency: opts.concurrency, sweepEveryMs: opts.sweepEveryMs }, 'rollup worker started');
    },
    async stop(): Promise<void> {
      // Waits for running jobs. A long back-fill is not waited for beyond 15 s: its job is
      // retried after a restart.
      if (worker) await Promise.race([worker.close(), new Promise((r) => setTimeout(r, 15_000).unref()).then(() => worker!.close(true))]);
      // Beats go on while those jobs finish (the worker is still rolling), then end cleanly.
      await beat.stop();
      // BullMQ leaves connections it was given open: ours are closed here.
      workerConnection?.disconnect();
      await queue?.close();
    },
    /** The queue, for the sink's notifications in the same process. */
    get queue(): RollupQueue | undefined {
      return queue;
    },
    health: () => ({ ok: worker?.isRunning() ?? false, lastError, ...stats, lateChecks: { ...roller.lateChecks } }),
    /** Runs one sweep now (tests, operators). */
    sweep: () => runSweepJob(ctx),
  };
}

export type RollupWorker = ReturnType<typeof createRollupWorker>;
