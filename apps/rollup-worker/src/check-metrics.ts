import { Counter, register } from 'prom-client';
import type { CheckAlert } from '@booktape/book';

/**
 * Prometheus counters of the venue cross-checks (issue 9 point 4), in prom-client's default
 * registry: the API's /metrics includes it, so under `npm start` (all apps in one process)
 * they are scraped with the rest. They count alerts found by rollup runs; a day that is
 * re-derived (a back-fill, late data, a new engine version) reports its alerts again, so
 * the stored per-day checks (coverage endpoint) are the exact record and these the signal.
 * Created once per process, however many workers it builds (tests build many).
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

/** Registers the counters now, so /metrics lists them before the first alert. */
export function registerCheckMetrics(): void {
  counter('mismatch');
  counter('crossed');
}

export function countCheckAlerts(venue: string, alerts: readonly CheckAlert[]): void {
  const n = { mismatch: 0, crossed: 0 };
  for (const a of alerts) n[a.kind]++;
  for (const kind of ['mismatch', 'crossed'] as const) if (n[kind] > 0) counter(kind).inc({ venue }, n[kind]);
}
