import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExchangeBRecord } from '@booktape/domain';
import { referenceBookB, ReferenceBookStepperB } from './reference.test-support.ts';
import { compareReplayedBooksB } from './replay-compare.test-support.ts';
import { exchangeBStreamArb } from './streams.test-support.ts';

/** The replay tests' yardstick must itself be right: it must pass a faithful copy and catch a wrong one. */

describe('the exchange B copy comparison of the replay tests', () => {
  it('steps through a stream to the same books as the reference rebuilt from the start (property)', () => {
    fc.assert(
      fc.property(exchangeBStreamArb, (records) => {
        const s = new ReferenceBookStepperB();
        records.forEach((r, i) => {
          s.apply(r);
          expect(s.current()).toEqual(referenceBookB(records.slice(0, i + 1)));
        });
      }),
      { numRuns: 50 },
    );
  });

  const rec = (o: Partial<ExchangeBRecord>): ExchangeBRecord => ({ type: 'delta', ticker: 'KX-T', timestamp: '', epoch_ms: 0, sid: 1, seq: 1, ...o });
  const snap = rec({ type: 'snapshot', yes: [['0.40', '10']], no: [['0.55', '5']] });
  const d = (price: string, delta: string, ts: string) => rec({ side: 'yes', price, delta, venue_ts: ts });
  const before = [snap];
  const window = [d('0.40', '5', 'a'), rec({ type: 'gap' }), d('0.41', '3', 'b'), rec({ type: 'snapshot', yes: [['0.45', '1']], no: [] }), d('0.45', '2', 'c')];

  it('passes a copy that sees the gap, gets the deltas after it as the venue sent them, and resynchronises by snapshots', () => {
    // The copy: its opening snapshot, the first delta, a gap (its own), the delta after the gap, the fresh snapshot, the last delta.
    const copy = [snap, d('0.40', '5', 'a'), rec({ type: 'gap' }), d('0.41', '3', 'b'), rec({ type: 'snapshot', yes: [['0.45', '1']] }), d('0.45', '2', 'c')];
    expect(compareReplayedBooksB(before, window, copy)).toEqual({ deltas: 3, applied: 3, mismatch: null });
  });

  it('catches a copy that left out the deltas after a gap, or never saw a gap at the end of the window', () => {
    const quiet = compareReplayedBooksB(before, window, [snap, d('0.40', '5', 'a'), rec({ type: 'gap' }), rec({ type: 'snapshot', yes: [['0.45', '1']] }), d('0.45', '2', 'c')]);
    expect(quiet.mismatch).toBeNull();
    expect(quiet.deltas).toBeLessThan(quiet.applied);
    // The window ends after a gap and a delta: a copy still holding its book has not seen the gap.
    const stale = compareReplayedBooksB(before, window.slice(0, 3), [snap, d('0.40', '5', 'a')]);
    expect(stale.mismatch?.what).toBe('book at the end');
    expect(compareReplayedBooksB(before, window.slice(0, 3), [snap, d('0.40', '5', 'a'), rec({ type: 'gap' }), d('0.41', '3', 'b')])).toEqual({ deltas: 2, applied: 2, mismatch: null });
  });

  it('does not ask for deltas before the first snapshot of a book unknown at the start', () => {
    const fromNothing = [d('0.40', '5', 'a'), snap, d('0.41', '3', 'b')];
    expect(compareReplayedBooksB([], fromNothing, [snap, d('0.41', '3', 'b')])).toEqual({ deltas: 1, applied: 1, mismatch: null });
  });

  it('catches a copy whose book differs, a delta sent twice, and a delta missing', () => {
    const wrongOpening = [rec({ type: 'snapshot', yes: [['0.40', '11']], no: [['0.55', '5']] }), d('0.40', '5', 'a')];
    expect(compareReplayedBooksB(before, window, wrongOpening).mismatch?.what).toBe('book after copy delta 1');
    expect(compareReplayedBooksB(before, window, [snap, d('0.40', '5', 'a'), d('0.40', '5', 'a')]).mismatch?.what).toMatch(/not the source's next/);
    const missing = compareReplayedBooksB(before, window, [snap, rec({ type: 'gap' }), rec({ type: 'snapshot', yes: [['0.45', '1']] }), d('0.45', '2', 'c')]);
    expect(missing.mismatch).toBeNull();
    expect(missing.deltas).toBeLessThan(missing.applied);
  });
});
