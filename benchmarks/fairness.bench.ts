/**
 * Fairness benchmark (issue 27; a script, not a timed test): `npm run bench -- fairness`.
 *
 * Runs fairness-run.ts (the real API in a process of its own over a stored whole day; one
 * key pulling whole-day R=1 summaries on 12 and 200 connections, then one free key reading
 * raw pages at 1 KB/s on 4 connections; meanwhile /health and another key's 5-row page,
 * billing against the answers received, the API's RSS) in a `git archive` of the commit
 * issue 27 started from (BENCH_BASELINE, `none` skips it) and then in this tree.
 *
 *   BENCH_SCENARIO_S=10 BENCH_EVENTS=100000   a quicker run
 */
import { runJson, sideBySide } from './baseline-tree.ts';

/** The landed main the fault probe of issue 27 ran against. */
const ISSUE_27_START = 'c1a169f';
const baseline = process.env.BENCH_BASELINE ?? ISSUE_27_START;
const RUNNER = 'benchmarks/fairness-run.ts';

type Figures = {
  health_p99_ms: number | null;
  other_page_p99_ms: number | null;
  other_5xx_or_timeout: number;
  billed: { load_diff: number | null; other_diff: number | null };
  rss_max_mb: number;
};
type Run = { scenarios: Record<string, Figures | { error: string }> };

const TARGETS = { health_p99_ms: 250, other_page_p99_ms: 1000, other_5xx: 0, billed_diff: 0, rss_max_mb: 1024 };

/** Per scenario: whether each target held. */
function met(run: Run | null) {
  if (!run) return null;
  return Object.fromEntries(
    Object.entries(run.scenarios).map(([name, f]) => {
      if ('error' in f) return [name, { error: f.error }];
      return [
        name,
        {
          health_p99: f.health_p99_ms !== null && f.health_p99_ms <= TARGETS.health_p99_ms,
          other_page_p99: f.other_page_p99_ms !== null && f.other_page_p99_ms <= TARGETS.other_page_p99_ms,
          other_no_5xx: f.other_5xx_or_timeout === 0,
          billed_equals_2xx: f.billed.load_diff === 0 && f.billed.other_diff === 0,
          rss_under_1_gib: f.rss_max_mb < TARGETS.rss_max_mb,
        },
      ];
    }),
  );
}

const { now, base, baseError } = await sideBySide(baseline, [RUNNER, 'benchmarks/bench-env.ts', 'benchmarks/fill-day.ts'], (root, label) => runJson<Run>(root, RUNNER, label));
console.log(
  JSON.stringify({
    this_tree: now,
    baseline: base && { commit: baseline, ...base },
    baseline_error: baseError,
    targets: TARGETS,
    met: { this_tree: met(now), baseline: met(base) },
  }),
);
