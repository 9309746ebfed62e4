import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { countCheckAlerts, registerCheckMetrics } from './check-metrics.ts';

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
});
