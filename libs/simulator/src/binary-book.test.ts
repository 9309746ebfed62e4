import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BinaryBook, NO, YES } from './binary-book.ts';
import { Rng } from './prng.ts';

describe('BinaryBook random walk', () => {
  it('never crosses, keeps levels on the tick grid and sorted, and reports each change exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 }), fc.constantFrom(1, 10), fc.boolean(), (seed, tick, fractional) => {
        const rng = new Rng(seed);
        const book = new BinaryBook({ tick, fractional, targetLevels: 8 }, rng);
        // Plain checks in the hot loop: expect() per step would dominate the run time.
        const fail = (why: string): never => {
          throw new Error(`step invariant broken: ${why}`);
        };
        for (let i = 0; i < 1500; i++) {
          const ch = book.step(rng);
          const side = book.sides;
          if (side[ch.side].size(ch.price) !== ch.newSize) fail('reported size differs from the book');
          if (ch.newSize === ch.oldSize) fail('no-op change');
          if (ch.price % tick !== 0 || ch.price < tick || ch.price > 1000 - tick) fail(`price ${ch.price} off grid`);
          if (!fractional && ch.newSize % 100 !== 0) fail('fractional size in a whole-contract market');
          const yb = side[YES].best();
          const nb = side[NO].best();
          if (yb > 0 && nb > 0 && yb + nb >= 1000) fail(`crossed: ${yb} + ${nb}`);
          for (const l of side) {
            for (let k = 1; k < l.prices.length; k++) if (l.prices[k]! <= l.prices[k - 1]!) fail('ladder not ascending');
            for (const p of l.prices) if (!(l.size(p) > 0)) fail('empty level kept');
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  it('is deterministic for a seed', () => {
    const run = (): string => {
      const rng = new Rng(42);
      const book = new BinaryBook({ tick: 10, fractional: true, targetLevels: 10 }, rng);
      const out: string[] = [];
      for (let i = 0; i < 200; i++) out.push(JSON.stringify(book.step(rng)));
      return out.join('\n');
    };
    expect(run()).toBe(run());
  });
});
