import { randomUUID } from 'node:crypto';
import { DelayedError, type Job } from 'bullmq';
import { ENGINE_VERSION } from '@booktape/book';
import type { Logger } from '@booktape/config';
import { utcDate } from '@booktape/domain';
import { venueModule } from '@booktape/venues';
import { assetKey, partitionKey, STORED_RECENTLY_MS, type AssetRef, type PartitionRef, type BackfillProgress, type BackfillRequest, type RollupJobData, type RollupQueue } from '@booktape/messaging';
import type { SummariesRepository, SummaryKey } from '@booktape/storage';
import type { DayResult, Roller } from '@booktape/summaries';
import type { Unlock } from './asset-lock.ts';

/** What the jobs work with: each a unit of its own (or a fake in a test). */
export interface JobContext {
  queue: Pick<RollupQueue, 'lockAndClaimMany' | 'release' | 'renewClaim' | 'markDirty' | 'takeOverExpiredClaims' | 'enqueueAsset' | 'enqueueStalePending'>;
  roller: Pick<Roller, 'rollFrom' | 'rollMany'>;
  repo: Pick<SummariesRepository, 'assetsOf' | 'dataDates' | 'openDaysBefore' | 'outdatedDays' | 'recentPartitions'>;
  locks: { ttlMs: number; held(a: AssetRef, id: string): Unlock; waitLock(a: AssetRef): Promise<Unlock> };
  /** Hears every run's results (stats, logs, alerts). */
  afterRun(a: AssetRef, results: DayResult[]): void;
  log: Logger;
  opts: { closeGraceMs: number; sweepEveryMs: number; claimLeaseMs: number; batchAssets?: number; pastDayQuietMs?: number; pastDayHoldMaxMs?: number };
  now?: () => number;
}

type AnyJob = Pick<Job<RollupJobData>, 'id' | 'moveToDelayed' | 'updateProgress'>;

/**
 * `asset` job: the sink stored data of an asset. Its dirty dates are claimed (a lease kept
 * while the run lasts) under the asset's lock, both in one step, together with those of up
 * to `batchAssets` − 1 other assets of its venue that wait with dirty dates (each under its
 * lock too): the assets of a date are rolled in one run (`Roller.rollMany`: one read, one
 * insert per table), date after date, each followed by the later days whose carried state
 * changed. Each asset's dates are released as done, or as failed (dirty again) when its
 * run failed: the others' stand. The job fails when its own asset's run failed (BullMQ
 * retries it); another asset that failed gets a job of its own again. An asset locked by
 * another job (a back-fill) is tried again shortly, its dates left as they were. Each date's
 * late-data hint from the claim goes to the roller with it (unknown when the claim has none).
 */
export async function runAssetJob(ctx: JobContext, job: AnyJob, a: AssetRef, token: string | undefined): Promise<void> {
  // Unique per run: a retry of this job must not pass for the run that claimed before it.
  const claimId = `${job.id ?? 'job'}:${randomUUID()}`;
  const lockId = randomUUID();
  const now = (ctx.now ?? Date.now)();
  const quietMs = ctx.opts.pastDayQuietMs ?? 0;
  const hold = quietMs > 0 ? { closedBefore: utcDate(now - ctx.opts.closeGraceMs), quietMs, maxMs: ctx.opts.pastDayHoldMaxMs ?? quietMs } : undefined;
  const claimed = await ctx.queue.lockAndClaimMany(a, claimId, lockId, ctx.locks.ttlMs, Math.max(1, ctx.opts.batchAssets ?? 1) - 1, hold);
  if (claimed === null || !Array.isArray(claimed)) {
    // Locked by another job: tried again shortly. Held (its past days still fed): tried
    // again once it may have gone quiet; notifications meanwhile are deduplicated into
    // this job, and a mark without a hint (a replay's end) comes with a job of its own.
    await job.moveToDelayed(now + (claimed === null ? 500 : Math.max(100, claimed.heldForMs)), token);
    throw new DelayedError();
  }
  const unlocks = claimed.map((c) => ctx.locks.held(c.asset, lockId));
  const runs = claimed
    .filter((c) => c.claimed.length > 0)
    .map((c) => ({ a: c.asset, dates: c.claimed.map((h) => h.date).sort(), hints: new Map(c.claimed.map((h) => [h.date, h.earliestMs] as const)), error: undefined as unknown, failed: false }));
  let released: Promise<unknown> = Promise.resolve();
  try {
    if (runs.length === 0) return;
    const stops = runs.map((r) => keepClaim(ctx, r.a, claimId));
    try {
      for (const d of [...new Set(runs.flatMap((r) => r.dates))].sort()) {
        const group = runs.filter((r) => !r.failed && r.dates.includes(d));
        if (group.length === 0) continue;
        const hints = group.map((r) => r.hints.get(d) ?? null);
        const out =
          group.length === 1
            ? [await ctx.roller.rollFrom(group[0]!.a, d, false, hints[0]!).then((results) => ({ results }), (error: unknown) => ({ error }))]
            : await ctx.roller.rollMany(
                group.map((r) => r.a),
                d,
                hints,
              );
        out.forEach((o, i) => {
          const r = group[i]!;
          if ('error' in o) Object.assign(r, { failed: true, error: o.error });
          else ctx.afterRun(r.a, o.results);
        });
      }
    } catch (e) {
      for (const r of runs) if (!r.failed) Object.assign(r, { failed: true, error: e });
    } finally {
      for (const stop of stops) stop();
    }
    const own = runs.find((r) => r.a === claimed[0]!.asset);
    const failedOthers = runs.filter((r) => r.failed && r !== own);
    for (const r of failedOthers) ctx.log.warn({ ...r.a, err: (r.error as Error)?.message }, 'rollup of an asset run with another failed: its dates are dirty again');
    // A failure's release is awaited before the unlock (as a failed job's retry expects its
    // dates dirty again); a success's is sent together with the unlock, on one connection: a
    // release ends only the dates its own claim still holds, so either order would be safe.
    const failedReleases = runs.filter((r) => r.failed).map((r) => ctx.queue.release(r.a, r.dates, true, claimId));
    await Promise.all(failedReleases);
    await Promise.all(failedOthers.map((r) => ctx.queue.enqueueAsset(assetKey(r.a), r.a)));
    released = Promise.all(runs.filter((r) => !r.failed).map((r) => ctx.queue.release(r.a, r.dates, false, claimId)));
    if (own?.failed) throw own.error;
  } finally {
    await Promise.all([released, ...unlocks.map((u) => u())]);
  }
}

/**
 * Keeps a claim's lease while its rollup runs, however long that takes; a failed renewal
 * (Redis away for a moment) is tried again at the next tick, within the lease. Returns the stop.
 */
export function keepClaim(ctx: Pick<JobContext, 'queue' | 'log' | 'opts'>, a: AssetRef, claimId: string): () => void {
  let lost = false;
  const timer = setInterval(() => {
    ctx.queue
      .renewClaim(a, claimId)
      .then((held) => {
        if (held || lost) return;
        // Our lease ran out (this process stalled past it) and another job took the dates
        // over: they are rolled there; our writes are the same rebuild, so harmless.
        lost = true;
        ctx.log.warn({ ...a, claimId }, 'rollup claim lease ran out and was taken over by another job');
      })
      .catch(() => undefined);
  }, Math.max(100, Math.floor(ctx.opts.claimLeaseMs / 3)));
  return () => clearInterval(timer);
}

/**
 * `backfill` job: an operator's `booktape rollup`: full rebuilds (forced: even days that look
 * current, after an engine fix) of a date range, asset by asset under its lock, with progress
 * for the CLI's bar.
 */
export async function runBackfillJob(ctx: JobContext, job: AnyJob, req: BackfillRequest): Promise<{ days: number; assets: number }> {
  // A market of a venue without outcome tokens is its own one book (asset = market).
  const assets = req.asset !== undefined ? [req.asset] : !venueModule(req.venue).tokens ? [req.market] : await ctx.repo.assetsOf(req.market, req.from, req.to);
  const plan: { asset: string; dates: string[] }[] = [];
  for (const asset of assets) plan.push({ asset, dates: await ctx.repo.dataDates({ venue: req.venue, market: req.market, asset }, req.from, req.to) });
  const total = plan.reduce((n, p) => n + p.dates.length, 0);
  let done = 0;
  await job.updateProgress({ done, total } satisfies BackfillProgress);
  for (const { asset, dates } of plan) {
    const a = { venue: req.venue, market: req.market, asset };
    const unlock = await ctx.locks.waitLock(a);
    try {
      for (const date of dates) {
        ctx.afterRun(a, await ctx.roller.rollFrom(a, date, true));
        done++;
        await job.updateProgress({ done, total, asset, date } satisfies BackfillProgress);
      }
    } finally {
      await unlock();
    }
  }
  return { days: done, assets: plan.length };
}

/**
 * An asset pending (dirty dates nobody claimed) this long has lost its job: the sink records
 * the dates before the commit and adds the job after it (RollupQueue.notify), so a process
 * that stopped in between leaves the asset without one. Far above a job's debounce and wait.
 */
export const STALE_PENDING_MS = 30_000;

/**
 * `sweep` job (a job scheduler): marks dirty the days that ended but are not finalised (to
 * close them) unless stored to recently, days of an older engine version, and every
 * partition stored to recently (within `max(3 × sweepEveryMs, 5 min)`); gives a job to
 * assets pending without one; then takes over the claims whose process died holding them.
 * Its marks carry no late-data hint, or one below every covered time, so each of those days
 * is counted whole: a stored record whose notification was lost (Redis away, the sink's
 * notifyMaxPending exceeded, a process stopped) is found within a sweep even while the
 * asset's other notifications let its runs skip the count. A past day stays open while it
 * is stored to (a replay, a late tail) and is closed a look-back after its last record.
 */
export async function runSweepJob(ctx: JobContext): Promise<{ marked: number; takenOver: number }> {
  const closedBefore = utcDate((ctx.now ?? Date.now)() - ctx.opts.closeGraceMs);
  const [open, outdated, stale] = await Promise.all([
    ctx.repo.openDaysBefore(closedBefore, 1000),
    ctx.repo.outdatedDays(ENGINE_VERSION, 200),
    ctx.repo.recentPartitions(Math.max(3 * ctx.opts.sweepEveryMs, 300_000), 5000),
  ]);
  // A partition stored to recently is counted (its hint is below every covered time) and
  // kept open while its data may still arrive: a past open day is closed (no hint, so
  // counted too) once nothing was stored to it for a look-back.
  const recent = new Set(stale.map(partitionKey));
  const part = (p: SummaryKey & { date: string }) => ({ venue: p.venue, market: p.market, asset: p.asset, date: p.date });
  const parts: PartitionRef[] = [...open.filter((p) => !recent.has(partitionKey(p))).map(part), ...outdated.map(part), ...stale.map((p) => ({ ...part(p), earliestMs: STORED_RECENTLY_MS }))];
  await ctx.queue.markDirty(parts);
  await ctx.queue.enqueueStalePending(STALE_PENDING_MS);
  if (parts.length > 0) ctx.log.debug({ open: open.length, outdated: outdated.length, stale: stale.length }, 'sweep marked partitions');
  const takenOver = await ctx.queue.takeOverExpiredClaims();
  if (takenOver.length > 0) ctx.log.warn({ assets: takenOver.slice(0, 10), count: takenOver.length }, 'took over rollup claims whose lease ran out (their process stopped)');
  return { marked: parts.length, takenOver: takenOver.length };
}

/** A job of the `rollup` queue to its handler. */
export function runJob(ctx: JobContext, job: Job<RollupJobData>, token?: string): Promise<unknown> {
  const d = job.data;
  switch (d.kind) {
    case 'asset':
      return runAssetJob(ctx, job, { venue: d.venue, market: d.market, asset: d.asset }, token);
    case 'backfill':
      return runBackfillJob(ctx, job, d);
    case 'sweep':
      return runSweepJob(ctx);
    default:
      return Promise.reject(new Error(`unknown rollup job ${JSON.stringify(d)}`));
  }
}
