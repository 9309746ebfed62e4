import cliProgress from 'cli-progress';
import { parseEnv, platformConfig, platformEnvSchema, redactUrl } from '@booktape/config';
import { RollupQueue, type BackfillProgress, type BackfillRequest } from '@booktape/messaging';
import { VENUE_SHAPES } from '../args.ts';
import { chooseRedis } from '../local-services.ts';

const ENQUEUE_TIMEOUT_MS = 30_000;

export interface RollupOptions {
  request: BackfillRequest;
  /** Print the job, where it would go and the asset-days it covers; enqueue nothing. */
  dryRun: boolean;
  wait: boolean;
  timeoutMs: number;
}

/**
 * `booktape rollup`: enqueues a back-fill (full rebuilds of every data day of the range, in
 * order, each followed by the later days whose carried state changed) for the running
 * rollup workers. It talks to Redis only, so it works while `npm start` holds the embedded
 * store. With --wait it shows the job's progress and returns when it is done: 0 done,
 * 1 failed, 4 still running at the timeout.
 */
export async function runRollup(opts: RollupOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const redis = chooseRedis(env);
  const platform = platformConfig(parseEnv(platformEnvSchema, { ...env, REDIS_URL: redis.url }));
  const where = `Redis ${redactUrl(redis.url)} (${redis.source}), queue prefix ${platform.rollup.queuePrefix}`;
  if (opts.dryRun) {
    process.stdout.write(dryRunText(opts.request, where));
    return 0;
  }
  process.stderr.write(`rollup: ${where}\n`);
  const queue = new RollupQueue({ redisUrl: platform.redisUrl, prefix: platform.rollup.queuePrefix });
  try {
    // The Redis client queues commands while it cannot connect: an unreachable Redis is an
    // error after a while, not a wait forever.
    let timer: NodeJS.Timeout | undefined;
    const job = await Promise.race([
      queue.enqueueBackfill(opts.request),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer from Redis (${redactUrl(platform.redisUrl)}) within ${ENQUEUE_TIMEOUT_MS / 1000} s: is it running?`)), ENQUEUE_TIMEOUT_MS))),
    ]).finally(() => clearTimeout(timer));
    const what = `${opts.request.venue} ${opts.request.market}${opts.request.asset ? ` asset ${opts.request.asset}` : ''} ${opts.request.from}..${opts.request.to}`;
    process.stderr.write(`enqueued back-fill job ${job.id}: ${what}\n`);
    const workers = await queue.queue.getWorkers().catch(() => []);
    if (workers.length === 0) process.stderr.write('note: no rollup worker is connected right now; the job runs when one starts (npm start)\n');
    if (!opts.wait) return 0;

    const tty = process.stderr.isTTY;
    const bar = new cliProgress.SingleBar(
      { format: 'rollup [{bar}] {percentage}% | {value}/{total} asset-days | {date} | ETA {eta_formatted}', stream: process.stderr, noTTYOutput: !tty, notTTYSchedule: 5000, hideCursor: tty },
      cliProgress.Presets.shades_classic,
    );
    const deadline = Date.now() + opts.timeoutMs;
    let started = false;
    try {
      for (;;) {
        const current = await queue.queue.getJob(job.id!);
        const state = current ? await current.getState() : 'unknown';
        const p = (current?.progress ?? null) as BackfillProgress | null;
        if (p && typeof p === 'object' && typeof p.total === 'number') {
          if (!started) {
            bar.start(Math.max(p.total, 1), 0, { date: '' });
            started = true;
          }
          bar.setTotal(Math.max(p.total, 1));
          bar.update(p.done, { date: p.date ? `${p.asset ?? ''} ${p.date}`.trim() : '' });
        }
        if (state === 'completed') {
          if (started) bar.update(Math.max(p?.total ?? 0, 1));
          bar.stop();
          const r = current?.returnvalue as { days?: number; assets?: number } | undefined;
          process.stderr.write(`back-fill done: ${r?.days ?? 0} asset-days over ${r?.assets ?? 0} asset(s)\n`);
          return 0;
        }
        if (state === 'failed' || state === 'unknown') {
          bar.stop();
          process.stderr.write(`back-fill ${state}: ${current?.failedReason ?? 'the job is gone'}\n`);
          return 1;
        }
        if (Date.now() > deadline) {
          bar.stop();
          process.stderr.write(`still ${state} after ${Math.round(opts.timeoutMs / 1000)} s; it goes on in the worker (job ${job.id})\n`);
          return 4;
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    } finally {
      bar.stop();
    }
  } finally {
    // Closing waits for nothing that an unreachable Redis could withhold for long.
    await Promise.race([queue.close(), new Promise((r) => setTimeout(r, 2_000).unref())]);
  }
}

/** Every UTC date from `from` to `to`, both included (YYYY-MM-DD, checked and ordered by the caller). */
export function datesOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`), end = Date.parse(`${to}T00:00:00Z`); t <= end; t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/**
 * What `--dry-run` prints: the job as it would be enqueued, where, and the asset-days it
 * covers, one a line. The worker rebuilds those of them with stored data (it reads the
 * store, which the running service holds, so the CLI lists the candidates: every date of
 * the range, for the one book of a ticker or token, or every outcome token with data).
 */
export function dryRunText(req: BackfillRequest, where: string): string {
  const dates = datesOf(req.from, req.to);
  const asset = req.asset ?? (VENUE_SHAPES[req.venue].tokens ? null : req.market);
  const lines = [
    `dry run, nothing enqueued: would enqueue on ${where}`,
    `back-fill ${JSON.stringify({ kind: 'backfill', ...req })}`,
    asset !== null
      ? `asset-days: up to ${dates.length} (asset ${asset} × ${dates.length} day(s)); the worker rebuilds those with stored data, then later days whose carried state changed`
      : `asset-days: up to ${dates.length} per outcome token of ${req.market} with data in the range (${dates.length} day(s)); the worker rebuilds those with stored data, then later days whose carried state changed`,
    ...dates.map((d) => `${asset ?? '*'} ${d}`),
  ];
  return `${lines.join('\n')}\n`;
}
