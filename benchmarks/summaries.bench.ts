/**
 * Summaries benchmark (issue 11; a script, not a timed test): `npm run bench -- summaries`.
 *
 * Runs summaries-run.ts (a dense 1,000,000-event asset-day rolled up; whole-day answers at
 * R=60, 7 and 1 through the API; a 31-day back-fill of one busy market) in a `git archive`
 * of the baseline commit (BENCH_BASELINE, default the commit issue 11's work started from;
 * `none` skips it) and then in this tree, one after the other, and prints both with the
 * ratios: only a comparison made in one run means much on these machines.
 *
 *   BENCH_EVENTS=200000 BENCH_BACKFILL_DAYS=5   a quicker run
 */
import { ratio, runJson, sideBySide } from './baseline-tree.ts';

/** The last commit before issue 11's work: what the ratios are taken against. */
const ISSUE_11_START = '99c55f8';
const baseline = process.env.BENCH_BASELINE ?? ISSUE_11_START;
const RUNNER = 'benchmarks/summaries-run.ts';

type Serving = { p50: number; p95: number; buckets: number };
type Run = {
  rollup_s: number;
  rollup_events_per_s: number;
  rollup_peak_rss_mb: number;
  backfill: { days: number; events: number; rollup_s: number; events_per_s: number };
  serving_ms: Record<'R60' | 'R7' | 'R1', Serving | undefined>;
};

const { now, base, baseError } = await sideBySide(baseline, [RUNNER, 'benchmarks/bench-env.ts', 'benchmarks/fill-day.ts'], (root, label) => runJson<Run>(root, RUNNER, label));
console.log(
  JSON.stringify({
    this_tree: now,
    baseline: base && { commit: baseline, ...base },
    baseline_error: baseError,
    // Faster is a ratio above 1: baseline time / this tree's time.
    speedup_vs_baseline: base && {
      rollup: ratio(base.rollup_s, now.rollup_s),
      backfill: ratio(base.backfill.rollup_s, now.backfill.rollup_s),
      R60_p50: ratio(base.serving_ms.R60?.p50, now.serving_ms.R60?.p50),
      R7_p50: ratio(base.serving_ms.R7?.p50, now.serving_ms.R7?.p50),
      R1_p50: ratio(base.serving_ms.R1?.p50, now.serving_ms.R1?.p50),
    },
    targets: { rollup_s: 1, R60_p50_ms: 5, R7_p50_ms: 30, R1_p50_ms: 120 },
  }),
);
