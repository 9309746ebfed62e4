import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { countCheckAlerts, lateChecksReporter, registerCheckMetrics } from './check-metrics.ts';

describe('cross-check metrics', () => {
  it('counts alerts by kind and venue in the default registry (what /metrics merges in)', async () => {
    registerCheckMetrics();
    registerCheckMetrics(); // a second worker in the same process reuses the counters
    countCheckAlerts('exchange-a', [
      { kind: 'mismatch', ts: 1, detail: 'x' },
      { kind: 'crossed', ts: 2, detail: 'y' },
      { kind: 'crossed', ts: 3, detail: 'z' },
    ]);
    countCheckAlerts('exchange-b', [{ kind: 'crossed', ts: 4, detail: 'w' }]);
    const text = await register.metrics();
    expect(text).toContain('booktape_book_check_mismatches_total{venue="exchange-a"} 1');
    expect(text).toContain('booktape_crossed_books_total{venue="exchange-a"} 2');
    expect(text).toContain('booktape_crossed_books_total{venue="exchange-b"} 1');
    expect(text).not.toContain('booktape_book_check_mismatches_total{venue="exchange-b"}');
  });

  it("counts the rollers' late-data checks, each report adding what its roller did since the last, from 0 before any run", async () => {
    const late = async () => {
      const text = await register.metrics();
      const of = (result: string) => Number(new RegExp(`^booktape_rollup_late_checks_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
      return { counted: of('counted'), skipped: of('skipped') };
    };
    registerCheckMetrics();
    expect(await late()).toEqual({ counted: 0, skipped: 0 });
    // Two workers' rollers in one process.
    const one = { counted: 0, skipped: 0 };
    const two = { counted: 0, skipped: 0 };
    const reportOne = lateChecksReporter(one);
    const reportTwo = lateChecksReporter(two);
    Object.assign(one, { counted: 1, skipped: 3 });
    reportOne();
    reportOne();
    expect(await late()).toEqual({ counted: 1, skipped: 3 });
    Object.assign(one, { counted: 2, skipped: 3 });
    Object.assign(two, { counted: 0, skipped: 4 });
    reportOne();
    reportTwo();
    expect(await late()).toEqual({ counted: 2, skipped: 7 });
  });
});
