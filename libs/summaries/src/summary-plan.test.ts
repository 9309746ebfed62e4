import { describe, expect, it } from 'vitest';
import { TooManyBucketsError, planBuckets } from '@booktape/book';
import { clampToNow, planSummary } from './summary-plan.ts';

const T = Date.UTC(2026, 2, 1);

describe('planSummary', () => {
  it('plans the buckets of the window', () => {
    const window = { startMs: T, endMs: T + 3_600_000 - 1 };
    expect(planSummary(window, 60)).toEqual({ window, resolution: 60, plan: planBuckets(window, 60) });
  });

  it('refuses what the bucketing refuses', () => {
    expect(() => planSummary({ startMs: T, endMs: T + 200_000_000 }, 1)).toThrow(TooManyBucketsError);
    expect(() => planSummary({ startMs: T, endMs: T + 1 }, 0)).toThrow(RangeError);
  });
});

describe('clampToNow', () => {
  const p = planSummary({ startMs: T, endMs: T + 86_400_000 - 1 }, 60);

  it('keeps a window that has ended', () => {
    expect(clampToNow(p, T + 86_400_000)).toBe(p.plan);
  });

  it('stops the series at the current bucket', () => {
    const c = clampToNow(p, T + 90_000);
    expect(c.firstStart).toBe(T);
    expect(c.lastStart).toBe(T + 60_000);
    expect(c.count).toBe(2);
  });

  it('plans nothing for a window that has not begun', () => {
    expect(clampToNow(p, T - 1).count).toBe(0);
  });
});
