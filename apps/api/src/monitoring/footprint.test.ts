import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { silentLogger } from '@booktape/config';
import type { Footprint } from '@booktape/storage';
import { FootprintMonitor, type FootprintReader } from './footprint.ts';
import { footprintStatus } from './status.ts';

const FIGURES: Footprint = {
  scope: 'database',
  tables: [
    { table: 'raw_exchange_a', raw: true, rows: 1000, bytesOnDisk: 40_800, uncompressedBytes: 300_000, parts: 3 },
    { table: 'summary_days', raw: false, rows: 10, bytesOnDisk: 2_000, uncompressedBytes: 5_000, parts: 1 },
  ],
};

/** A reader whose reads are counted and answered by `answer` (a promise per read). */
function reader(answer: () => Promise<Footprint>): FootprintReader & { reads: number } {
  const r = {
    reads: 0,
    read: () => {
      r.reads += 1;
      return answer();
    },
  };
  return r;
}

const never = () => new Promise<Footprint>(() => undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function monitor(rd: FootprintReader, o: { waitMs?: number; giveUpMs?: number } = {}) {
  const clock = { t: 1_000_000 };
  const m = new FootprintMonitor({ reader: rd, log: silentLogger(), cacheMs: 30_000, waitMs: o.waitMs ?? 50, giveUpMs: o.giveUpMs ?? 5_000, now: () => clock.t });
  return { m, clock };
}

describe('FootprintMonitor', () => {
  it('reads at most once per cache period, and again after it', async () => {
    const rd = reader(async () => FIGURES);
    const { m, clock } = monitor(rd);
    const first = await m.current({ clickhouseUp: true });
    expect(first).toEqual({ ok: true, at: 1_000_000, footprint: FIGURES });
    clock.t += 29_999;
    await Promise.all([m.current({ clickhouseUp: true }), m.current({ clickhouseUp: true })]);
    expect(rd.reads).toBe(1);
    clock.t += 1;
    expect(await m.current({ clickhouseUp: true })).toMatchObject({ ok: true, at: 1_030_000 });
    expect(rd.reads).toBe(2);
  });

  it('a failing read: unavailable with a fixed reason (never the error text), kept for the cache period, then tried again', async () => {
    let fail = true;
    const rd = reader(async () => {
      if (fail) throw new Error('Code: 497. secret-host.internal:9000 ACCESS_DENIED');
      return FIGURES;
    });
    const { m, clock } = monitor(rd);
    const r = await m.current({ clickhouseUp: true });
    expect(r).toEqual({ ok: false, at: 1_000_000, reason: 'the footprint query failed' });
    clock.t += 10_000;
    expect(await m.current({ clickhouseUp: true })).toBe(r);
    expect(rd.reads).toBe(1);
    fail = false;
    clock.t += 20_000;
    expect(await m.current({ clickhouseUp: true })).toMatchObject({ ok: true });
  });

  it('a read that hangs: the first status waits only waitMs, later ones not at all; given up after giveUpMs', async () => {
    const rd = reader(never);
    const { m } = monitor(rd, { waitMs: 50, giveUpMs: 300 });
    let started = performance.now();
    expect(await m.current({ clickhouseUp: true })).toMatchObject({ ok: false, reason: 'the footprint is being measured (the query is slow to answer)' });
    expect(performance.now() - started).toBeLessThan(250);
    started = performance.now();
    expect(await m.current({ clickhouseUp: true })).toMatchObject({ ok: false });
    expect(performance.now() - started).toBeLessThan(20);
    expect(rd.reads).toBe(1);
    await sleep(350);
    expect(await m.current({ clickhouseUp: true })).toMatchObject({ ok: false, reason: 'the footprint query did not answer within 300 ms' });
    expect(rd.reads).toBe(1);
  });

  it('a slow read that answers: the previous figures meanwhile, the new ones once they come', async () => {
    let slow = false;
    const rd = reader(async () => {
      if (slow) await sleep(150);
      return { ...FIGURES, tables: FIGURES.tables.map((t) => ({ ...t, rows: t.rows + (slow ? 1 : 0) })) };
    });
    const { m, clock } = monitor(rd, { waitMs: 20 });
    const first = await m.current({ clickhouseUp: true });
    expect(first.ok).toBe(true);
    slow = true;
    clock.t += 30_000;
    expect(await m.current({ clickhouseUp: true })).toBe(first);
    await sleep(200);
    const next = await m.current({ clickhouseUp: true });
    expect(next.ok && next.footprint.tables[0]!.rows).toBe(1001);
  });

  it('ClickHouse down: unavailable, nothing read', async () => {
    const rd = reader(async () => FIGURES);
    const { m } = monitor(rd);
    expect(await m.current({ clickhouseUp: false })).toMatchObject({ ok: false, reason: 'ClickHouse is not reachable' });
    expect(rd.reads).toBe(0);
  });
});

describe('footprintStatus', () => {
  const table = fc.record({
    table: fc.stringMatching(/^[a-z_]{1,20}$/),
    raw: fc.boolean(),
    rows: fc.nat(1e12),
    bytesOnDisk: fc.nat(1e13),
    uncompressedBytes: fc.nat(1e13),
    parts: fc.nat(10_000),
  });

  it('totals are the sums of the tables; bytes per row is bytes on disk over rows, for raw tables only', () => {
    fc.assert(
      fc.property(fc.array(table, { maxLength: 20 }), fc.constantFrom('database' as const, 'this_node' as const), (tables, scope) => {
        const f = footprintStatus({ ok: true, at: 0, footprint: { scope, tables } });
        const sum = (ts: typeof tables, k: 'rows' | 'bytesOnDisk' | 'uncompressedBytes' | 'parts') => ts.reduce((s, t) => s + t[k], 0);
        expect(f.state).toBe('ok');
        expect(f.scope).toBe(scope);
        expect(f.total).toEqual({ rows: sum(tables, 'rows'), bytes_on_disk: sum(tables, 'bytesOnDisk'), data_uncompressed_bytes: sum(tables, 'uncompressedBytes'), parts: sum(tables, 'parts') });
        const raw = tables.filter((t) => t.raw);
        expect(f.raw!.rows).toBe(sum(raw, 'rows'));
        expect(f.raw!.bytes_on_disk).toBe(sum(raw, 'bytesOnDisk'));
        expect(f.raw!.bytes_per_row).toBe(f.raw!.rows === 0 ? null : Math.round((f.raw!.bytes_on_disk / f.raw!.rows) * 10) / 10);
        for (const [i, t] of f.tables.entries()) {
          const src = tables[i]!;
          expect(t.bytes_per_row).toBe(src.raw && src.rows > 0 ? Math.round((src.bytesOnDisk / src.rows) * 10) / 10 : null);
        }
      }),
    );
  });

  it('unreadable: unavailable, the reason as detail, no figures', () => {
    expect(footprintStatus({ ok: false, at: 0, reason: 'the footprint query failed' })).toEqual({
      state: 'unavailable',
      detail: 'the footprint query failed',
      scope: null,
      measured_at: null,
      tables: [],
      total: null,
      raw: null,
    });
  });
});
