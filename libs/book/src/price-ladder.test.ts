import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PriceLadder } from './price-ladder.ts';

type Op = { kind: 'set' | 'delete'; i: number } | { kind: 'clear' };

describe('PriceLadder', () => {
  it.each([101, 1_001, 10_001, 1_000_001])('tracks the best level and the next ones like a sorted set (%i slots)', (length) => {
    const index = fc.oneof(fc.integer({ min: 0, max: length - 1 }), fc.integer({ min: 0, max: Math.min(length - 1, 70) }));
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 10, arbitrary: fc.record({ kind: fc.constant('set' as const), i: index }) },
      { weight: 8, arbitrary: fc.record({ kind: fc.constant('delete' as const), i: index }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const) }) },
    );
    const ladder = new PriceLadder(length);
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        ladder.clear();
        const model = new Map<number, string>();
        ops.forEach((o, n) => {
          if (o.kind === 'set') {
            ladder.set(o.i, String(n + 1));
            model.set(o.i, String(n + 1));
          } else if (o.kind === 'delete') {
            ladder.delete(o.i);
            model.delete(o.i);
          } else {
            ladder.clear();
            model.clear();
          }
          const sorted = [...model.keys()].sort((a, b) => b - a);
          expect(ladder.best).toBe(sorted[0] ?? -1);
          expect(ladder.count).toBe(model.size);
        });
        const walked: [number, string][] = [];
        for (let i = ladder.best; i >= 0; i = ladder.below(i)) walked.push([i, ladder.sizes[i]!]);
        expect(walked).toEqual([...model.entries()].sort((a, b) => b[0] - a[0]));
      }),
      { numRuns: 150 },
    );
  });

  it('finds the level below any index across words and summary words', () => {
    const ladder = new PriceLadder(1_000_001);
    for (const i of [0, 31, 32, 1_023, 1_024, 500_000, 1_000_000]) ladder.set(i, '1');
    expect(ladder.below(1_000_000)).toBe(500_000);
    expect(ladder.below(500_000)).toBe(1_024);
    expect(ladder.below(1_024)).toBe(1_023);
    expect(ladder.below(1_023)).toBe(32);
    expect(ladder.below(32)).toBe(31);
    expect(ladder.below(31)).toBe(0);
    expect(ladder.below(0)).toBe(-1);
    expect(ladder.below(999_999)).toBe(500_000);
  });
});
