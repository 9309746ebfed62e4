import { randomUUID } from 'node:crypto';
import type { Logger } from '@booktape/config';
import type { RequestLogRow } from '@booktape/storage';
import type { PendingRequests } from './quota.service.ts';

/**
 * The request log writer: requests are noted in memory (never a ClickHouse write on the
 * request path) and written in batches every `flushMs`, or at once when `batchRows`
 * accumulate, and on close.
 *
 * ClickHouse down: a batch that failed is kept and retried as it was, with the same
 * deduplication token (so an insert that did land but whose answer was lost is not stored
 * twice); new rows queue behind it. The memory is bounded by `maxRows`: beyond that the
 * oldest queued rows are dropped, counted, and a warning says how many (at most every
 * WARN_EVERY_MS). Adding never blocks and never throws.
 */

export interface RequestLogSink {
  insert(rows: readonly RequestLogRow[], token: string): Promise<void>;
}

export interface RequestLogWriterOptions {
  repo: RequestLogSink;
  log: Logger;
  flushMs: number;
  batchRows?: number;
  maxRows?: number;
}

const WARN_EVERY_MS = 10_000;

export class RequestLogWriter implements PendingRequests {
  private queue: RequestLogRow[] = [];
  /** The batch being written (or that failed and will be retried first). */
  private batch: { token: string; rows: RequestLogRow[] } | null = null;
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readonly batchRows: number;
  private readonly maxRows: number;
  private droppedTotal = 0;
  private droppedSinceWarn = 0;
  private lastDropWarn = 0;
  private lastFailWarn = 0;

  constructor(private readonly opts: RequestLogWriterOptions) {
    this.batchRows = opts.batchRows ?? 5_000;
    this.maxRows = Math.max(opts.maxRows ?? 100_000, this.batchRows);
  }

  /** Rows dropped because ClickHouse stayed unavailable while the buffer was full. */
  get dropped(): number {
    return this.droppedTotal;
  }

  /** Rows held in memory (queued and in the batch being written). */
  get pending(): number {
    return this.queue.length + (this.batch?.rows.length ?? 0);
  }

  add(row: RequestLogRow): void {
    this.queue.push(row);
    if (this.pending > this.maxRows) {
      // Drop a tenth at once: amortised O(1) per row even while ClickHouse stays down.
      const n = Math.min(this.queue.length, Math.max(this.pending - this.maxRows, Math.ceil(this.maxRows / 10)));
      this.queue.splice(0, n);
      this.droppedTotal += n;
      this.droppedSinceWarn += n;
      const now = Date.now();
      if (now - this.lastDropWarn >= WARN_EVERY_MS) {
        this.opts.log.warn({ dropped: this.droppedSinceWarn, droppedTotal: this.droppedTotal, held: this.pending }, 'request log buffer full (ClickHouse unavailable): oldest rows dropped');
        this.lastDropWarn = now;
        this.droppedSinceWarn = 0;
      }
    }
    if (this.queue.length >= this.batchRows && !this.flushing) this.flushInBackground();
  }

  pendingSuccess(userId: string, fromMs: number): Map<string, number> {
    const out = new Map<string, number>();
    const scan = (rows: readonly RequestLogRow[]) => {
      for (const r of rows) if (r.user_id === userId && r.billable === 1 && r.status >= 200 && r.status < 300 && r.ts >= fromMs) out.set(r.request_id, r.units ?? 1);
    };
    if (this.batch) scan(this.batch.rows);
    scan(this.queue);
    return out;
  }

  private async drain(): Promise<void> {
    for (;;) {
      if (!this.batch) {
        if (this.queue.length === 0) return;
        this.batch = { token: `rl-${randomUUID()}`, rows: this.queue.splice(0, this.batchRows) };
      }
      await this.opts.repo.insert(this.batch.rows, this.batch.token);
      this.batch = null;
    }
  }

  /** Writes everything held now (and what arrives meanwhile); rejects when ClickHouse refuses. */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => (this.flushing = null));
    return this.flushing;
  }

  private flushInBackground(): void {
    this.flush().catch((err: unknown) => {
      const now = Date.now();
      if (now - this.lastFailWarn >= WARN_EVERY_MS) {
        this.opts.log.warn({ err, held: this.pending }, 'request log flush to ClickHouse failed; will retry');
        this.lastFailWarn = now;
      }
    });
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (!this.flushing && this.pending > 0) this.flushInBackground();
    }, this.opts.flushMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is held (best effort: logged when it fails). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    try {
      await this.flush();
    } catch (err) {
      this.opts.log.warn({ err, lost: this.pending }, 'final request log flush failed: these rows are lost');
    }
  }
}
