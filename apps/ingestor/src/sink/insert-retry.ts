import type { Logger } from '@booktape/config';
import { badDataRefusal } from '@booktape/storage';
import type { SinkStats } from './health.ts';

/**
 * What became of one insert:
 * - `stored`: the engine acknowledged it;
 * - `refused`: the engine refused the rows as bad data (retrying would never help);
 * - `abandoned`: the sink stops or lost the partition; the batch is left uncommitted and
 *   whoever holds the partition next reads it again from the last commit.
 */
export type InsertOutcome = { kind: 'stored' } | { kind: 'refused'; refusal: string; message: string } | { kind: 'abandoned' };

/** The hold on the partition an insert is for (kafkajs's batch payload, or a fake). */
export interface PartitionLease {
  /** False once the sink stops or the partition was rebalanced away. */
  held(): boolean;
  /** Rejects when the partition was rebalanced away meanwhile. */
  heartbeat(): Promise<void>;
}

export interface RetryContext {
  what: string;
  log: Logger;
  /** `paused` and `insertFailures` are kept here (the sink's health shows them). */
  stats: Pick<SinkStats, 'paused' | 'insertFailures'>;
  retryInitialMs: number;
  retryMaxMs: number;
  lease: PartitionLease;
  /** Waits between attempts (a test passes one that does not). */
  sleep?: (ms: number) => Promise<void>;
  /** Which errors are refusals of bad data, and their short name (the engine's error code). */
  refusalOf?: (e: unknown) => string | null;
}

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * One insert, retried with doubling back-off (retryInitialMs … retryMaxMs) while it fails for
 * a reason that may pass (the engine down, a timeout). The sink is `paused` from the first
 * failure until an insert is answered again, stored or refused: either way the engine is up.
 */
export async function insertWithRetry(fn: () => Promise<unknown>, ctx: RetryContext): Promise<InsertOutcome> {
  const { stats, log, what } = ctx;
  const sleep = ctx.sleep ?? realSleep;
  const refusalOf = ctx.refusalOf ?? badDataRefusal;
  let delay = ctx.retryInitialMs;
  for (;;) {
    try {
      await fn();
      if (stats.paused) log.info({ what }, 'clickhouse accepts inserts again; resuming');
      stats.paused = false;
      return { kind: 'stored' };
    } catch (e) {
      const refusal = refusalOf(e);
      if (refusal !== null) {
        stats.paused = false;
        return { kind: 'refused', refusal, message: (e as Error).message };
      }
      stats.insertFailures += 1;
      stats.paused = true;
      log.warn({ err: (e as Error).message, what, retryInMs: delay }, 'insert failed; holding the batch and retrying');
      if (!ctx.lease.held()) return { kind: 'abandoned' };
      await sleep(delay);
      delay = Math.min(delay * 2, ctx.retryMaxMs);
      try {
        await ctx.lease.heartbeat();
      } catch {
        return { kind: 'abandoned' }; // rebalanced away: another member takes the batch from the last commit
      }
    }
  }
}
