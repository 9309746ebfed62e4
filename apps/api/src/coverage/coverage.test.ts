import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { AssetDayChecks, CaptureGapSpan, DeclaredOutage } from '@booktape/storage';
import { DAY_MS, checksOf, coverageDays, datesBetween, type CoverageInput } from './coverage.ts';
import { parseInstant, parseOutage } from './outage-params.ts';

const D0 = Date.UTC(2026, 2, 1);
const DATES = ['2026-03-01', '2026-03-02', '2026-03-03'];

function state(o: Partial<{ mismatches: number; firstMismatch: number | null; crossed: number; unknownMs: number; events: number; spells: Array<{ kind: 'unknown_book' | 'sequence_gap'; start_ms: number; end_ms: number; detail: string }>; open: { kind: 'unknown_book' | 'sequence_gap'; start_ms: number; detail: string } | null }> = {}) {
  return {
    v: 1,
    checks: {
      book_events: o.events ?? 10,
      venue_best_checked: 5,
      venue_best_mismatches: o.mismatches ?? 0,
      first_mismatch_ms: o.firstMismatch ?? null,
      first_mismatch: o.firstMismatch ? 'claimed 0.5 vs 0.49' : null,
      crossed_observations: o.crossed ?? 0,
      first_crossed_ms: null,
      unknown_book_ms: o.unknownMs ?? 0,
      sequence_gaps: 0,
      spells: o.spells ?? [],
      spells_dropped: 0,
    },
    open: o.open ?? null,
  };
}

function input(o: Partial<CoverageInput>): CoverageInput {
  return { venue: 'exchange-a', dates: DATES, raw: [], captureGaps: [], checks: [], outages: [], now: D0 + 10 * DAY_MS, ...o };
}

const raw = (date: string, asset: string, events: number, first: number, last: number) => ({ date, asset, events, first_ms: first, last_ms: last });
const row = (date: string, asset: string, checks: unknown, complete = true, coveredUntil = Date.parse(`${date}T00:00:00Z`) + DAY_MS): AssetDayChecks => ({ asset, date, coveredUntil, complete, checks });

describe('coverageDays', () => {
  it('answers every date: missing without records, complete when clean, events and times over all assets', () => {
    const days = coverageDays(
      input({
        raw: [raw('2026-03-02', 'T1', 7, D0 + DAY_MS + 500, D0 + DAY_MS + 9000), raw('2026-03-02', 'T2', 3, D0 + DAY_MS + 100, D0 + DAY_MS + 5000)],
        checks: [row('2026-03-02', 'T1', state({ events: 6 })), row('2026-03-02', 'T2', state({ events: 2 }))],
      }),
    );
    expect(days.map((d) => [d.date, d.status, d.events, d.checks_complete])).toEqual([
      ['2026-03-01', 'missing', 0, true],
      ['2026-03-02', 'complete', 10, true],
      ['2026-03-03', 'missing', 0, true],
    ]);
    expect(days[1]).toMatchObject({ first_event_ms: D0 + DAY_MS + 100, last_event_ms: D0 + DAY_MS + 9000, checks: { book_events: 8, venue_best_checked: 10 } });
    expect(days[0]).toMatchObject({ first_event_ms: null, last_event_ms: null, gaps: [] });
  });

  it('capture gaps: clipped to each day, seq gaps as sequence_gap, open ones to now', () => {
    const gaps: CaptureGapSpan[] = [
      { connection_id: 'a-0#1', started_ms: D0 + DAY_MS - 1000, ended_ms: D0 + DAY_MS + 2000, reason: 'idle timeout', markets: [] },
      { connection_id: 'b-0#2', started_ms: D0 + 50, ended_ms: D0 + 80, reason: 'seq gap', markets: ['X'] },
      { connection_id: 'a-0#3', started_ms: D0 + 2 * DAY_MS + 100, ended_ms: null, reason: 'closed 1006', markets: [] },
    ];
    const days = coverageDays(input({ raw: DATES.map((d) => raw(d, 'T1', 1, Date.parse(`${d}T01:00:00Z`), Date.parse(`${d}T01:00:00Z`))), captureGaps: gaps, now: D0 + 2 * DAY_MS + 700 }));
    expect(days.map((d) => d.gaps.map((g) => [g.kind, g.start_ms - Date.parse(`${d.date}T00:00:00Z`), g.end_ms - Date.parse(`${d.date}T00:00:00Z`)]))).toEqual([
      [
        ['sequence_gap', 50, 80],
        ['disconnect', DAY_MS - 1000, DAY_MS],
      ],
      [['disconnect', 0, 2000]],
      [['disconnect', 100, 700]],
    ]);
    expect(days.every((d) => d.status === 'partial')).toBe(true);
    expect(days[2]!.gaps[0]!.detail).toContain('still open');
  });

  it('checks: sums assets, first mismatch is the earliest, spells become gaps (A details name the asset), open spells end at covered_until', () => {
    const d = '2026-03-01';
    const days = coverageDays(
      input({
        dates: [d],
        raw: [raw(d, 'T1', 5, D0, D0 + 10), raw(d, 'T2', 5, D0, D0 + 10)],
        checks: [
          row(d, 'T1', state({ mismatches: 2, firstMismatch: D0 + 900, spells: [{ kind: 'unknown_book', start_ms: D0 + 10, end_ms: D0 + 30, detail: 'delta before any snapshot' }], unknownMs: 20 })),
          row(d, 'T2', state({ mismatches: 1, firstMismatch: D0 + 400, crossed: 3, open: { kind: 'unknown_book', start_ms: D0 + 5000, detail: 'negative size' } }), false, D0 + 8000),
        ],
      }),
    );
    const day = days[0]!;
    expect(day.checks).toEqual({ book_events: 20, venue_best_checked: 10, venue_best_mismatches: 3, first_mismatch_ms: D0 + 400, crossed_observations: 3, unknown_book_ms: 20 + 3000 });
    expect(day.gaps).toEqual([
      { kind: 'unknown_book', start_ms: D0 + 10, end_ms: D0 + 30, detail: 'asset T1: delta before any snapshot' },
      { kind: 'unknown_book', start_ms: D0 + 5000, end_ms: D0 + 8000, detail: 'asset T2: negative size' },
    ]);
    // T2's day is not closed: its checks are partial.
    expect(day.checks_complete).toBe(false);
    expect(day.status).toBe('partial');
  });

  it('a mismatch or a crossed book alone makes a day partial; a day with records but no checks is not checks_complete', () => {
    const d = '2026-03-01';
    const one = (checks: unknown) => coverageDays(input({ dates: [d], raw: [raw(d, 'T1', 5, D0, D0 + 10)], checks: checks === undefined ? [] : [row(d, 'T1', checks)] }))[0]!;
    expect(one(state({ mismatches: 1, firstMismatch: D0 })).status).toBe('partial');
    expect(one(state({ crossed: 1 })).status).toBe('partial');
    expect(one(state()).status).toBe('complete');
    const none = one(undefined);
    expect(none).toMatchObject({ status: 'complete', checks_complete: false, checks: { book_events: 0, first_mismatch_ms: null } });
    // A malformed stored state is treated as absent, never a crash.
    expect(one({ v: 7 })).toMatchObject({ checks_complete: false, checks: { book_events: 0 } });
  });

  it('exchange B: sequence_gap spells keep their detail; outages of the other venue are ignored', () => {
    const d = '2026-03-01';
    const outages: DeclaredOutage[] = [
      { id: 'out_0000000000000001', venue: 'exchange-b', start_ms: D0 - 5000, end_ms: D0 + 60_000, reason: 'venue incident', created_at: '' },
      { id: 'out_0000000000000002', venue: 'exchange-a', start_ms: D0, end_ms: D0 + DAY_MS, reason: 'other venue', created_at: '' },
    ];
    const [day] = coverageDays(
      input({ venue: 'exchange-b', dates: [d], raw: [raw(d, 'KX', 3, D0, D0 + 1)], outages, checks: [row(d, 'KX', state({ spells: [{ kind: 'sequence_gap', start_ms: D0 + 100, end_ms: D0 + 200, detail: 'seq 5 expected, 7 arrived' }] }))] }),
    );
    expect(day!.gaps).toEqual([
      { kind: 'outage', start_ms: D0, end_ms: D0 + 60_000, detail: 'declared outage out_0000000000000001: venue incident' },
      { kind: 'sequence_gap', start_ms: D0 + 100, end_ms: D0 + 200, detail: 'seq 5 expected, 7 arrived' },
    ]);
  });

  it('property: every gap lies inside its day, and the days together hold exactly the overlap of each span with the range', () => {
    const span = fc.tuple(fc.integer({ min: -DAY_MS, max: 4 * DAY_MS }), fc.integer({ min: 1, max: 2 * DAY_MS }), fc.boolean());
    fc.assert(
      fc.property(fc.array(span, { maxLength: 8 }), fc.array(span, { maxLength: 5 }), fc.integer({ min: 0, max: 5 * DAY_MS }), (gs, os, nowOff) => {
        const now = D0 + nowOff;
        const captureGaps: CaptureGapSpan[] = gs.map(([s, len, open], i) => ({ connection_id: `c${i}`, started_ms: D0 + s, ended_ms: open ? null : D0 + s + len, reason: i % 2 ? 'seq gap' : 'closed', markets: [] }));
        const outages: DeclaredOutage[] = os.map(([s, len], i) => ({ id: `out_${i}`, venue: 'exchange-a', start_ms: D0 + s, end_ms: D0 + s + len, reason: 'r', created_at: '' }));
        const days = coverageDays(input({ captureGaps, outages, now }));
        const lo = D0;
        const hi = D0 + DATES.length * DAY_MS;
        const overlap = (s: number, e: number) => Math.max(0, Math.min(e, hi) - Math.max(s, lo));
        const expected = captureGaps.reduce((t, g) => t + overlap(g.started_ms, g.ended_ms ?? now), 0) + outages.reduce((t, o) => t + overlap(o.start_ms, o.end_ms), 0);
        let total = 0;
        for (const d of days) {
          const ds = Date.parse(`${d.date}T00:00:00Z`);
          for (const g of d.gaps) {
            expect(g.start_ms).toBeGreaterThanOrEqual(ds);
            expect(g.end_ms).toBeLessThanOrEqual(ds + DAY_MS);
            expect(g.end_ms).toBeGreaterThan(g.start_ms);
            total += g.end_ms - g.start_ms;
          }
          expect(d.status).toBe('missing'); // no records at all
        }
        expect(total).toBe(expected);
      }),
    );
  });
});

describe('checksOf', () => {
  it('a closed day counts an open spell to its end', () => {
    const c = checksOf('exchange-a', row('2026-03-01', 'T', state({ open: { kind: 'unknown_book', start_ms: D0 + DAY_MS - 100, detail: 'x' } })), D0);
    expect(c!.unknown_book_ms).toBe(100);
  });
});

describe('datesBetween', () => {
  it('lists inclusive UTC dates across month ends', () => {
    expect(datesBetween('2026-02-27', '2026-03-02')).toEqual(['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']);
  });
});

describe('outage input', () => {
  it('accepts ISO with a zone, dates, seconds and milliseconds; refuses the rest', () => {
    expect(parseInstant('2026-03-01T12:00:00Z')).toEqual({ ok: true, value: Date.UTC(2026, 2, 1, 12) });
    expect(parseInstant('2026-03-01T12:00:00+02:00')).toEqual({ ok: true, value: Date.UTC(2026, 2, 1, 10) });
    expect(parseInstant('2026-03-01')).toEqual({ ok: true, value: D0 });
    expect(parseInstant(1772323200)).toEqual({ ok: true, value: D0 });
    expect(parseInstant('1772323200000')).toEqual({ ok: true, value: D0 });
    for (const bad of ['2026-03-01T12:00', '2026-02-30', 'yesterday', '', -5, 1.5, null, {}]) expect(parseInstant(bad).ok).toBe(false);
  });

  it('needs a known venue, from before to, and a reason', () => {
    const ok = { venue: 'a', from: '2026-03-01', to: '2026-03-02', reason: ' venue down ' };
    expect(parseOutage(ok)).toEqual({ ok: true, value: { venue: 'exchange-a', start_ms: D0, end_ms: D0 + DAY_MS, reason: 'venue down' } });
    expect(parseOutage({ ...ok, venue: 'exchange-c' })).toMatchObject({ ok: false, field: 'venue' });
    expect(parseOutage({ ...ok, to: '2026-03-01' })).toMatchObject({ ok: false, field: 'to' });
    expect(parseOutage({ ...ok, reason: '   ' })).toMatchObject({ ok: false, field: 'reason' });
    expect(parseOutage({ venue: 'b', from: 1, to: 2 })).toMatchObject({ ok: false, field: 'reason', message: 'reason is required' });
  });
});

describe('coverageDays: sources (provenance)', () => {
  const src = (date: string, source: string, hours: number[], events = hours.length) => {
    const t0 = Date.parse(`${date}T00:00:00Z`);
    return { date, source, imported: source.startsWith('import:'), events, first_ms: t0 + hours[0]! * 3_600_000, last_ms: t0 + hours.at(-1)! * 3_600_000, hours };
  };

  it('lists each day its sources by name with their hours; imported_only only when every record of a day is imported', () => {
    const days = coverageDays(
      input({
        raw: [raw(DATES[0]!, 'T1', 5, D0, D0 + 1), raw(DATES[1]!, 'T1', 2, D0 + DAY_MS, D0 + DAY_MS + 1)],
        sources: [src(DATES[0]!, 'import:pmxt-v2:b.parquet', [3, 7]), src(DATES[0]!, 'capture:worker-2', [0, 1, 2]), src(DATES[1]!, 'import:pmxt-v2:a.parquet', [0, 23], 2)],
      }),
    );
    expect(days.map((d) => d.sources.map((s) => [s.source, s.hours]))).toEqual([
      [['capture:worker-2', [0, 1, 2]], ['import:pmxt-v2:b.parquet', [3, 7]]],
      [['import:pmxt-v2:a.parquet', [0, 23]]],
      [],
    ]);
    expect(days.map((d) => d.imported_only)).toEqual([false, true, false]);
    expect(days[0]!.sources[1]).toEqual({ source: 'import:pmxt-v2:b.parquet', imported: true, events: 2, first_event_ms: D0 + 3 * 3_600_000, last_event_ms: D0 + 7 * 3_600_000, hours: [3, 7] });
  });

  it('without sources given, every day lists none', () => {
    expect(coverageDays(input({ raw: [raw(DATES[0]!, 'T1', 5, D0, D0 + 1)] })).map((d) => [d.sources, d.imported_only])).toEqual([[[], false], [[], false], [[], false]]);
  });
});
