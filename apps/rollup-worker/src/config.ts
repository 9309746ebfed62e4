import { envInt, parseEnv, platformEnvSchema, type PlatformConfig } from '@booktape/config';
import { DEFAULT_ROLLUP_WORKER_BEAT_MS } from '@booktape/messaging';
import { CHECKPOINT_EVENTS } from '@booktape/summaries';
import type { RollupWorkerOptions } from './worker.ts';

export const rollupEnvSchema = platformEnvSchema.extend({
  /** Rollup jobs run at once in one process (one asset never runs twice at once). A run mostly waits for
   * engine and Redis round trips, so more runs than cores keep the worker busy (docs/BENCHMARKS.md). */
  ROLLUP_CONCURRENCY: envInt(4, 1, 64),
  /** How often the sweep looks for days to finalise, outdated engine versions and lost notifications. */
  ROLLUP_SWEEP_MS: envInt(60_000, 1000, 86_400_000),
  /** A UTC day is finalised this long after it ended (later data still triggers a rebuild). */
  ROLLUP_CLOSE_GRACE_MS: envInt(60_000, 0, 86_400_000),
  /** Book events between the full-book checkpoints the book-at-an-instant answers start from (docs/BENCHMARKS.md). */
  ROLLUP_CHECKPOINT_EVENTS: envInt(CHECKPOINT_EVENTS, 100, 1_000_000),
  /** A rollup claim held by a process that stopped renewing it (died) is taken over after this. */
  ROLLUP_CLAIM_LEASE_MS: envInt(60_000, 1000, 3_600_000),
  /** Assets of a venue one rollup run claims and rolls together (one read, one insert per table); 1: one at a time. */
  ROLLUP_BATCH_ASSETS: envInt(16, 1, 256),
  /** An asset whose dirty dates are all past days fed by the sink waits until the sink has stored no past day's records for this long (0: never held). */
  ROLLUP_PAST_DAY_QUIET_MS: envInt(10_000, 0, 3_600_000),
  /** …but at most this long from its first notification since its last run. */
  ROLLUP_PAST_DAY_HOLD_MAX_MS: envInt(300_000, 0, 86_400_000),
});

/** The worker's options from the environment (exits with a ConfigError naming a bad variable). */
export function rollupOptions(env: NodeJS.ProcessEnv, platform: PlatformConfig): RollupWorkerOptions {
  const e = parseEnv(rollupEnvSchema, env);
  return {
    concurrency: e.ROLLUP_CONCURRENCY,
    sweepEveryMs: e.ROLLUP_SWEEP_MS,
    closeGraceMs: e.ROLLUP_CLOSE_GRACE_MS,
    checkpointEvery: e.ROLLUP_CHECKPOINT_EVENTS,
    queuePrefix: platform.rollup.queuePrefix,
    debounceMs: platform.rollup.debounceMs,
    claimLeaseMs: e.ROLLUP_CLAIM_LEASE_MS,
    beatMs: DEFAULT_ROLLUP_WORKER_BEAT_MS,
    batchAssets: e.ROLLUP_BATCH_ASSETS,
    pastDayQuietMs: e.ROLLUP_PAST_DAY_QUIET_MS,
    pastDayHoldMaxMs: e.ROLLUP_PAST_DAY_HOLD_MAX_MS,
  };
}
