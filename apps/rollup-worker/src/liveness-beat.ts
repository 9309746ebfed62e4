import type { Logger } from '@booktape/config';
import { ROLLUP_WORKER_BEAT_VERSION, removeRollupWorkerBeat, writeRollupWorkerBeat, type RollupQueue } from '@booktape/messaging';

/**
 * Tells monitoring this worker is alive (libs/messaging rollup-worker-liveness.ts): a beat
 * every `beatMs`, skipped while the previous one still waits (Redis away), so none pile up;
 * removed on a clean stop.
 */
export class LivenessBeat {
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private failing = false;

  constructor(
    private readonly redis: () => RollupQueue['redis'] | undefined,
    private readonly o: { prefix: string; instance: string; beatMs: number; concurrency: number },
    private readonly log: Logger,
  ) {}

  start(startedAt = Date.now()): void {
    this.beat(startedAt);
    this.timer = setInterval(() => this.beat(startedAt), this.o.beatMs);
    this.timer.unref();
  }

  /** Ends the beats (the last one under way finishes) and removes this worker's. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
    const redis = this.redis();
    if (redis) await removeRollupWorkerBeat(redis, this.o.prefix, this.o.instance).catch(() => undefined);
  }

  private beat(startedAt: number): void {
    const redis = this.redis();
    if (this.beating || !redis) return;
    this.beating = writeRollupWorkerBeat(redis, this.o.prefix, {
      v: ROLLUP_WORKER_BEAT_VERSION,
      instance: this.o.instance,
      started_at: new Date(startedAt).toISOString(),
      published_at: new Date().toISOString(),
      interval_ms: this.o.beatMs,
      concurrency: this.o.concurrency,
    })
      .then(() => {
        if (this.failing) this.log.info('rollup worker liveness written again');
        this.failing = false;
      })
      .catch((err: Error) => {
        if (!this.failing) this.log.warn({ err: err.message }, 'cannot write the rollup worker liveness; monitoring will show this worker as stopped');
        this.failing = true;
      })
      .finally(() => (this.beating = undefined));
  }
}
