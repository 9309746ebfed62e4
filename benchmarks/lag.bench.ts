/**
 * Ingest-to-summary lag (issue 11; a script, not a timed test): `npm run bench -- lag`.
 *
 * Runs lag-run.ts (simulator at 5,000 events/s → capture → Kafka → sink → rollup worker in
 * one process, as `npm start -- --simulate`; lag = now − covered_until of every asset with
 * a row today, sampled every 500 ms) in a `git archive` of the baseline commit
 * (BENCH_BASELINE, default the commit issue 11's work started from; `none` skips it) and
 * then in this tree, and prints both: only a comparison made in one run means much here.
 */
import { ratio, runJson, sideBySide } from './baseline-tree.ts';

const ISSUE_11_START = '99c55f8';
const baseline = process.env.BENCH_BASELINE ?? ISSUE_11_START;
const RUNNER = 'benchmarks/lag-run.ts';

type Run = { lag_ms: { p50: number; p95: number; p99: number; max: number }; assets: number; samples: number };

const { now, base, baseError } = await sideBySide(baseline, [RUNNER, 'benchmarks/bench-env.ts'], (root, label) => runJson<Run>(root, RUNNER, label));
console.log(
  JSON.stringify({
    this_tree: now,
    baseline: base && { commit: baseline, ...base },
    baseline_error: baseError,
    // Above 1: this tree's lag is shorter.
    improvement_vs_baseline: base && { p50: ratio(base.lag_ms.p50, now.lag_ms.p50), p99: ratio(base.lag_ms.p99, now.lag_ms.p99) },
    target_p99_ms: 5_000,
  }),
);
