import type { Logger } from '@booktape/config';
import type { RawMessage } from '@booktape/domain';
import { mergeEarliest, partitionsOf, type PartitionRef } from '@booktape/messaging';
import type { SinkStats } from './health.ts';

export interface NotifierOptions {
  /** A notification slower than this counts as failed and is sent again. */
  notifyTimeoutMs: number;
  /** Partitions kept while notifications fail; beyond, they are left to the rollup sweep. */
  notifyMaxPending: number;
  retryInitialMs: number;
  retryMaxMs: number;
}

const partitionKey = (p: PartitionRef) => `${p.venue}\u0000${p.market}\u0000${p.asset}\u0000${p.date}`;

/**
 * Tells the rollup queue which (venue, market, asset, date) partitions received data, once
 * stored. Calls `onStored` in the background, one call at a time, never holding up the
 * consumer for long: while it fails or hangs (Redis away) the partitions are kept
 * (deduplicated, at most notifyMaxPending) and sent again with back-off. Whatever is still
 * lost is found again by the rollup sweep.
 *
 * Each partition carries the lowest event time of its stored records (`earliestMs`, the
 * rollup's late-data hint); partitions kept for a retry keep the lowest of every merged one.
 */
export class StoredNotifier {
  private readonly pending = new Map<string, PartitionRef>();
  private notifying: Promise<void> | undefined;
  /** The last attempt failed: callers then do not wait for delivery at all. */
  private failing = false;
  private stopping = false;

  constructor(
    private readonly onStored: (partitions: PartitionRef[]) => Promise<void> | void,
    private readonly opts: NotifierOptions,
    private readonly log: Logger,
    private readonly stats: Pick<SinkStats, 'notifyFailures' | 'notifyDropped'>,
  ) {}

  /** Partitions waiting to be delivered. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Queues the partitions of stored messages. While notifications go through, waits (at most
   * notifyTimeoutMs) until these are delivered: the queue then hears of the data before its
   * offsets are committed, which `replay --wait` relies on (it waits for the commits, then for
   * the dirty partitions to settle). While they fail, it does not wait at all: the consumer
   * must never stall on Redis.
   */
  notify(messages: RawMessage[]): Promise<void> {
    // The same date the raw row is partitioned under (eventTimeMs, utcDate).
    for (const p of partitionsOf(messages).values()) this.keep(p);
    const drain = (this.notifying ??= this.drain().finally(() => (this.notifying = undefined)));
    if (this.failing) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => (timer = setTimeout(r, this.opts.notifyTimeoutMs)));
    return Promise.race([drain, bound]).finally(() => clearTimeout(timer));
  }

  /** (Again) ready to retry failed notifications. */
  start(): void {
    this.stopping = false;
  }

  /** Stops retrying; a notification under way gets a bounded moment to finish (the sweep covers the rest). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.notifying) await Promise.race([this.notifying, new Promise((r) => setTimeout(r, this.opts.notifyTimeoutMs).unref())]);
  }

  private keep(p: PartitionRef): void {
    const k = partitionKey(p);
    const had = this.pending.get(k);
    if (had !== undefined) {
      // A copy: the partition object may be the one a call under way is sending.
      this.pending.set(k, { ...had, earliestMs: mergeEarliest(had.earliestMs, p.earliestMs) });
      return;
    }
    if (this.pending.size >= this.opts.notifyMaxPending) this.stats.notifyDropped += 1;
    else this.pending.set(k, p);
  }

  /** Sends the queued partitions, one call at a time; a failed or timed-out call puts its partitions back and backs off. */
  private async drain(): Promise<void> {
    let delay = this.opts.retryInitialMs;
    while (this.pending.size > 0) {
      const parts = [...this.pending.values()];
      this.pending.clear();
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(() => this.onStored(parts)),
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${this.opts.notifyTimeoutMs} ms`)), this.opts.notifyTimeoutMs))),
        ]);
        if (this.failing) this.log.info({ partitions: parts.length }, 'stored-partition notifications delivered again');
        this.failing = false;
        delay = this.opts.retryInitialMs;
      } catch (e) {
        this.stats.notifyFailures += 1;
        for (const p of parts) this.keep(p);
        if (!this.failing) this.log.warn({ err: (e as Error).message, partitions: parts.length }, 'stored-partition notification failed; the sink stores on and sends it again');
        this.failing = true;
        if (this.stopping) return; // left to the sweep
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, this.opts.retryMaxMs);
        if (this.stopping) return;
      } finally {
        clearTimeout(timer);
      }
    }
  }
}
