import type { Logger } from '@booktape/config';
import type { AssetRef } from '@booktape/messaging';
import type { DayResult } from '@booktape/summaries';
import { countCheckAlerts } from './check-metrics.ts';

export interface RunStats {
  days: number;
}

/** What a rollup run did, to the stats, the debug log and (its cross-check alerts) the warn log and metrics. */
export function reportRun(log: Logger, stats: RunStats, a: AssetRef, results: readonly DayResult[]): void {
  for (const r of results) {
    stats.days++;
    if (r.outcome !== 'unchanged' && r.outcome !== 'no-new-events') log.debug({ ...a, date: r.date, outcome: r.outcome, applied: r.applied }, 'rolled up');
    reportAlerts(log, a, r);
  }
}

/**
 * Cross-check alerts of a run go to the log and the metrics. One warn line per kind and
 * run, with how many and the first one (time and detail), rather than one per alert: a
 * book that stays crossed would otherwise write a line per millisecond.
 */
export function reportAlerts(log: Logger, a: AssetRef, r: DayResult): void {
  if (r.alerts.length === 0) return;
  countCheckAlerts(a.venue, r.alerts);
  for (const kind of ['mismatch', 'crossed'] as const) {
    const of = r.alerts.filter((x) => x.kind === kind);
    const first = of[0];
    if (first === undefined) continue;
    log.warn(
      { ...a, date: r.date, kind, count: of.length, first_ts: first.ts, first_at: new Date(first.ts).toISOString(), first: first.detail, outcome: r.outcome },
      kind === 'mismatch' ? 'rebuilt book contradicts the venue best bid/ask' : 'rebuilt book is crossed',
    );
  }
}
