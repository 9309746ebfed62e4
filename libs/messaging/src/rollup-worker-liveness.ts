import type { Redis } from 'ioredis';
import { z } from 'zod';

/**
 * The liveness of rollup worker processes, for the API's `/monitoring/status`: without it a
 * dead worker shows only as a backlog that grows, and with no new data not even that. Each
 * worker writes a beat every few seconds; the beat's key expires after a few missed beats,
 * so a key that exists is a live worker and an index entry without one is a worker that
 * stopped. The writer is apps/rollup-worker/src/worker.ts, the reader
 * apps/api/src/monitoring/rollup-backlog.ts. Layout:
 *
 *   <prefix>:monitoring:rollup-worker:<instance>   the latest beat (JSON), expires after ttlMs
 *   <prefix>:monitoring:rollup-workers             sorted set: instance → time of its latest beat (ms), trimmed after retentionMs
 *
 * `<prefix>` is ROLLUP_QUEUE_PREFIX. Beats are validated with `rollupWorkerBeatSchema`: one
 * that does not parse counts as missing.
 */

export const ROLLUP_WORKER_BEAT_VERSION = 1;
export const DEFAULT_ROLLUP_WORKER_BEAT_MS = 5000;
/** How long a stopped worker is still listed as stopped (then it is forgotten). */
export const ROLLUP_WORKER_RETENTION_MS = 3_600_000;

/** A beat outlives three intervals (at least 15 s): one slow write is not a death. */
export const rollupWorkerBeatTtlMs = (intervalMs: number): number => Math.max(3 * intervalMs, 15_000);

export function rollupWorkerKeys(prefix: string): { index: string; beat: (instance: string) => string } {
  return { index: `${prefix}:monitoring:rollup-workers`, beat: (instance) => `${prefix}:monitoring:rollup-worker:${instance}` };
}

export const rollupWorkerBeatSchema = z.object({
  v: z.literal(ROLLUP_WORKER_BEAT_VERSION),
  instance: z.string().min(1).max(200),
  started_at: z.string(),
  published_at: z.string(),
  interval_ms: z.number().int().positive(),
  concurrency: z.number().int().nonnegative(),
});

export type RollupWorkerBeat = z.infer<typeof rollupWorkerBeatSchema>;

/** Writes one beat: the expiring key and the index entry, together. */
export async function writeRollupWorkerBeat(redis: Redis, prefix: string, beat: RollupWorkerBeat): Promise<void> {
  const keys = rollupWorkerKeys(prefix);
  const at = Date.parse(beat.published_at);
  const res = await redis
    .multi()
    .set(keys.beat(beat.instance), JSON.stringify(beat), 'PX', rollupWorkerBeatTtlMs(beat.interval_ms))
    .zadd(keys.index, at, beat.instance)
    .zremrangebyscore(keys.index, '-inf', at - ROLLUP_WORKER_RETENTION_MS)
    .exec();
  const failed = res?.find(([err]) => err)?.[0];
  if (failed) throw failed;
}

/** A clean stop: the worker is gone on purpose, so it is not listed as one that died. */
export async function removeRollupWorkerBeat(redis: Redis, prefix: string, instance: string): Promise<void> {
  const keys = rollupWorkerKeys(prefix);
  await redis.multi().del(keys.beat(instance)).zrem(keys.index, instance).exec();
}

export interface RollupWorkers {
  /** Workers whose beat has not expired. */
  live: number;
  /** Workers that beat within the retention and then stopped without a clean stop (died, hung, cut off). */
  stopped: number;
  /** The latest beat of a stopped worker (ms), or null. */
  lastStoppedBeatAt: number | null;
}

/** The workers in the index (at most `max`, newest first): live or stopped. */
export async function readRollupWorkers(redis: Redis, prefix: string, max = 200): Promise<RollupWorkers> {
  const keys = rollupWorkerKeys(prefix);
  const entries = await redis.zrevrange(keys.index, 0, max - 1, 'WITHSCORES');
  const out: RollupWorkers = { live: 0, stopped: 0, lastStoppedBeatAt: null };
  if (entries.length === 0) return out;
  const instances = entries.filter((_, i) => i % 2 === 0);
  const values = await redis.mget(...instances.map((i) => keys.beat(i)));
  values.forEach((v, i) => {
    let live = false;
    try {
      live = v !== null && rollupWorkerBeatSchema.safeParse(JSON.parse(v)).success;
    } catch {
      // not JSON: counts as missing
    }
    if (live) {
      out.live++;
    } else {
      out.stopped++;
      const at = Number(entries[2 * i + 1]);
      if (out.lastStoppedBeatAt === null || at > out.lastStoppedBeatAt) out.lastStoppedBeatAt = at;
    }
  });
  return out;
}
