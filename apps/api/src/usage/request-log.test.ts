import { describe, expect, it } from 'vitest';
import type { Logger } from '@booktape/config';
import type { RequestLogRow } from '@booktape/storage';
import { RequestLogWriter } from './request-log.ts';

/** The batching writer against a fake sink: batching, retries with the same token, bounded memory. */

function row(i: number, over: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    ts: 1_000 + i,
    request_id: `r${i}`,
    user_id: 'u',
    key_id: 'k',
    plan: 'free',
    endpoint: '/exchange-a/market/list',
    venue: 'exchange-a',
    market: '',
    params: '{}',
    status: 200,
    billable: 1,
    latency_ms: 1,
    bytes: 10,
    ...over,
  };
}

function fakeLog() {
  const warnings: Array<{ obj: unknown; msg: string }> = [];
  const log = { warn: (obj: unknown, msg: string) => warnings.push({ obj, msg }), info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;
  return { log, warnings };
}

class FakeSink {
  inserts: Array<{ token: string; ids: string[] }> = [];
  failing = false;
  failedTokens: string[] = [];
  async insert(rows: readonly RequestLogRow[], token: string): Promise<void> {
    if (this.failing) {
      this.failedTokens.push(token);
      throw new Error('connect ECONNREFUSED');
    }
    this.inserts.push({ token, ids: rows.map((r) => r.request_id) });
  }
  get stored(): string[] {
    return this.inserts.flatMap((i) => i.ids);
  }
}

describe('request log writer', () => {
  it('writes in batches of at most batchRows, in order, on flush', async () => {
    const sink = new FakeSink();
    const w = new RequestLogWriter({ repo: sink, log: fakeLog().log, flushMs: 60_000, batchRows: 3 });
    for (let i = 0; i < 7; i++) w.add(row(i));
    await w.flush();
    expect(sink.stored).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    expect(sink.inserts.every((b) => b.ids.length <= 3)).toBe(true);
    expect(w.pending).toBe(0);
  });

  it('a failed batch is retried as it was, with the same deduplication token, before newer rows', async () => {
    const sink = new FakeSink();
    const w = new RequestLogWriter({ repo: sink, log: fakeLog().log, flushMs: 60_000, batchRows: 2 });
    sink.failing = true;
    w.add(row(0));
    w.add(row(1)); // a full batch starts a write in the background: it fails
    await expect(w.flush()).rejects.toThrow();
    w.add(row(2));
    expect(w.pending).toBe(3);
    sink.failing = false;
    await w.flush();
    expect(sink.inserts[0]!.ids).toEqual(['r0', 'r1']);
    expect(sink.stored).toEqual(['r0', 'r1', 'r2']);
    // The retry carried the failed attempt's token (an insert that landed unseen is dropped as a duplicate).
    expect(sink.failedTokens.length).toBeGreaterThan(0);
    expect(new Set(sink.failedTokens)).toEqual(new Set([sink.inserts[0]!.token]));
    expect(sink.inserts[1]!.token).not.toBe(sink.inserts[0]!.token);
  });

  it('while ClickHouse is down memory stays bounded: the oldest rows are dropped, counted and warned about', async () => {
    const sink = new FakeSink();
    sink.failing = true;
    const { log, warnings } = fakeLog();
    const w = new RequestLogWriter({ repo: sink, log, flushMs: 60_000, batchRows: 10, maxRows: 100 });
    for (let i = 0; i < 1000; i++) w.add(row(i));
    await w.flush().catch(() => undefined);
    expect(w.pending).toBeLessThanOrEqual(100);
    expect(w.dropped).toBe(1000 - w.pending);
    expect(warnings.some((x) => /buffer full/.test(x.msg))).toBe(true);
    sink.failing = false;
    await w.flush();
    // The batch that was being written is kept whole; of the queue, the newest rows survived.
    expect(sink.stored.length).toBe(1000 - w.dropped);
    expect(sink.stored).toContain('r999');
    expect(sink.stored).not.toContain('r500');
  });

  it('adding never throws and never waits, whatever the sink does', () => {
    const w = new RequestLogWriter({ repo: { insert: () => new Promise(() => undefined) }, log: fakeLog().log, flushMs: 60_000, batchRows: 5, maxRows: 20 });
    const started = Date.now();
    for (let i = 0; i < 10_000; i++) w.add(row(i));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(w.pending).toBeLessThanOrEqual(20);
  });

  it('pendingSuccess: successful billable rows of the user in the period, queued or being written, with their units', async () => {
    const sink = new FakeSink();
    let release!: () => void;
    const slow = { insert: (rows: readonly RequestLogRow[], token: string) => new Promise<void>((r) => (release = () => r(void sink.insert(rows, token)))) };
    const w = new RequestLogWriter({ repo: slow, log: fakeLog().log, flushMs: 60_000, batchRows: 2 });
    w.add(row(0));
    w.add(row(1, { status: 429 }));
    const f = w.flush(); // r0, r1 now in the batch being written
    w.add(row(2, { user_id: 'other' }));
    w.add(row(3, { ts: 10 }));
    w.add(row(4, { billable: 0 }));
    w.add(row(5, { status: 204, units: 7 }));
    expect([...w.pendingSuccess('u', 100)].sort()).toEqual([['r0', 1], ['r5', 7]]);
    release();
    await new Promise((r) => setTimeout(r, 0));
    release();
    await new Promise((r) => setTimeout(r, 0));
    release();
    await f;
    expect([...w.pendingSuccess('u', 100)]).toEqual([]);
  });
});
