import { describe, expect, it } from 'vitest';
import type { Logger } from '@booktape/config';
import type { CheckAlert } from '@booktape/book';
import type { DayResult } from '@booktape/summaries';
import { reportRun } from './run-report.ts';

const A = { venue: 'exchange-a' as const, market: '0xm', asset: 'tok' };

function recordingLog() {
  const warns: Array<{ o: Record<string, unknown>; msg: string }> = [];
  const log = { warn: (o: Record<string, unknown>, msg: string) => void warns.push({ o, msg }), debug: () => undefined } as unknown as Logger;
  return { log, warns };
}

describe('reportRun', () => {
  it('counts the days, and writes one warn line per kind of alert and run, with the count and the first', () => {
    const { log, warns } = recordingLog();
    const stats = { days: 0 };
    const alerts = [
      { kind: 'crossed', ts: 2000, detail: 'c1' },
      { kind: 'mismatch', ts: 1000, detail: 'm1' },
      { kind: 'crossed', ts: 3000, detail: 'c2' },
    ] as unknown as CheckAlert[];
    const day = (date: string, al: CheckAlert[]): DayResult => ({ date, outcome: 'full', applied: 5, endStateChanged: false, alerts: al, nextDataDate: null });
    reportRun(log, stats, A, [day('2026-04-01', alerts), day('2026-04-02', [])]);
    expect(stats.days).toBe(2);
    expect(warns.map((w) => [w.o.kind, w.o.count, w.o.first, w.o.first_at, w.msg])).toEqual([
      ['mismatch', 1, 'm1', new Date(1000).toISOString(), 'rebuilt book contradicts the venue best bid/ask'],
      ['crossed', 2, 'c1', new Date(2000).toISOString(), 'rebuilt book is crossed'],
    ]);
  });
});
