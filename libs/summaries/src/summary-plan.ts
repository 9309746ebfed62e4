import { planBuckets, type BucketPlan } from '@booktape/book';

/** A summary request: its window (inclusive bounds, ms), bucket size and the buckets they make. */
export interface SummaryPlan {
  window: { startMs: number; endMs: number };
  resolution: number;
  plan: BucketPlan;
}

/** Throws the book's RangeError (TooManyBucketsError past the cap) for a window or resolution it refuses. */
export function planSummary(window: { startMs: number; endMs: number }, resolution: number): SummaryPlan {
  return { window, resolution, plan: planBuckets(window, resolution) };
}

/** Buckets after "now" hold nothing yet: the series stops at the current bucket. */
export function clampToNow(p: SummaryPlan, now = Date.now()): BucketPlan {
  if (p.window.endMs <= now) return p.plan;
  return planBuckets({ startMs: p.window.startMs, endMs: Math.max(p.window.startMs - 1, now) }, p.resolution);
}
