import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { belowFloor, windowRate } from './slow-reader.ts';

describe('the slow-reader floor', () => {
  it('cuts exactly when the bytes of the last whole window are fewer than floor x window, and never before a whole window', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 200_000 }), { maxLength: 40 }), fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 12 }), (steps, floor, windowS) => {
        // Cumulative bytes handed out, sampled once a second (the first sample: 0 at the start).
        const samples = [0];
        for (const s of steps) samples.push(samples.at(-1)! + s);
        const o = { bytesPerSecond: floor, windowMs: windowS * 1000 };
        const got = belowFloor(samples, 1000, o);
        if (samples.length <= windowS) {
          expect(got).toBe(false);
          expect(windowRate(samples, 1000, o)).toBeNull();
        } else {
          // Reference: the sum of the last windowS per-second amounts.
          const last = steps.slice(-windowS).reduce((a, b) => a + b, 0);
          expect(got).toBe(last < floor * windowS);
          expect(windowRate(samples, 1000, o)).toBeCloseTo(last / windowS, 6);
        }
      }),
    );
  });

  it('has no floor at 0', () => {
    expect(belowFloor([0, 0, 0, 0, 0], 1000, { bytesPerSecond: 0, windowMs: 1000 })).toBe(false);
  });
});
