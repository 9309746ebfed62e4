import { Counter, register } from 'prom-client';
import type { CheckAlert } from '@booktape/book';
import type { Roller } from '@booktape/summaries';

/**
 * Prometheus counters of the rollup runs' checks, in prom-client's default registry: the
 * API's /metrics includes it, so under `npm start` (all apps in one process) they are
 * scraped with the rest. Created once per process, however many workers it builds (tests
 * build many).
 *
 * The venue cross-checks (issue 9 point 4) count alerts found by rollup runs; a day that is
 * re-derived (a back-fill, late data, a new engine version) reports its alerts again, so
 * the stored per-day checks (coverage endpoint) are the exact record and these the signal.
 */
const METRICS: Record<CheckAlert['kind'], { name: string; help: string }> = {
  mismatch: {
    name: 'booktape_book_check_mismatches_total',
    help: 'Venue best bid/ask claims that the rebuilt book contradicts, found by rollup runs, by venue',
  },
  crossed: {
    name: 'booktape_crossed_books_total',
    help: 'Milliseconds that ended with a crossed rebuilt book (best bid >= best ask), found by rollup runs, by venue',
  },
};

function counter(kind: CheckAlert['kind']): Counter<'venue'> {
  const { name, help } = METRICS[kind];
  return (register.getSingleMetric(name) as Counter<'venue'> | undefined) ?? new Counter({ name, help, labelNames: ['venue'] });
}

/**
 * The late-data check (Roller.lateChecks): incremental runs that counted the stored events
 * before covered_until, and that skipped the count on their claim's hint: how much of the
 * counting the hints save.
 */
const LATE_CHECKS = {
  name: 'booktape_rollup_late_checks_total',
  help: "Incremental rollup runs by their late-data check: counted (the day's stored events were counted) or skipped (the claim's hint proved nothing late)",
};
const LATE_CHECK_RESULTS = ['counted', 'skipped'] as const;

function lateChecksCounter(): Counter<'result'> {
  return (register.getSingleMetric(LATE_CHECKS.name) as Counter<'result'> | undefined) ?? new Counter({ ...LATE_CHECKS, labelNames: ['result'] });
}

/** Registers the counters now, so /metrics lists them before the first alert (the late-data checks at 0). */
export function registerCheckMetrics(): void {
  counter('mismatch');
  counter('crossed');
  const late = lateChecksCounter();
  for (const result of LATE_CHECK_RESULTS) late.inc({ result }, 0);
}

/**
 * A roller's late-data checks to the counters: each call adds what it counted since the
 * call before (the roller's figures are its own since it was built).
 */
export function lateChecksReporter(checks: Roller['lateChecks']): () => void {
  const reported = { counted: 0, skipped: 0 };
  return () => {
    for (const result of LATE_CHECK_RESULTS) {
      const n = checks[result] - reported[result];
      reported[result] = checks[result];
      if (n > 0) lateChecksCounter().inc({ result }, n);
    }
  };
}

export function countCheckAlerts(venue: string, alerts: readonly CheckAlert[]): void {
  const n = { mismatch: 0, crossed: 0 };
  for (const a of alerts) n[a.kind]++;
  for (const kind of ['mismatch', 'crossed'] as const) if (n[kind] > 0) counter(kind).inc({ venue }, n[kind]);
}
