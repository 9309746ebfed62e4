import { describe, expect, it } from 'vitest';
import { ingestorReportSchema, type IngestorReport } from '@booktape/messaging';
import { DEFAULT_THRESHOLDS, aggregateStatus, monitoringStatusSchema, type StatusInput } from './status.ts';

// The sink's Kafka consumer state in the monitoring status (issue 16, point 2): a crashed
// consumer used to be reported ok while nothing was stored.
const NOW = Date.parse('2026-03-01T12:00:00Z');
const iso = (agoMs: number) => new Date(NOW - agoMs).toISOString();

function report(worker: number, sink: Record<string, unknown>): IngestorReport {
  return ingestorReportSchema.parse({
    v: 1,
    instance: `host-w${worker}`,
    worker_id: worker,
    roles: ['sink'],
    started_at: iso(3_600_000),
    published_at: iso(2000),
    interval_ms: 5000,
    capture: null,
    sink: { group_id: 'booktape-sink', paused: false, stored_total: 100, stored_per_second: 5, last_stored_at: iso(500), insert_failures: 0, dead_lettered: 0, kafka: { ok: true, checked_at: iso(2100), lag: 0, lag_by_venue: { 'exchange-a': 0, 'exchange-b': 0 } }, ...sink },
  });
}

function status(reports: IngestorReport[]) {
  const input: StatusInput = {
    now: NOW,
    stores: { clickhouse: { ok: true, latencyMs: 3 }, redis: { ok: true, latencyMs: 1 } },
    reports,
    rollup: { waiting: 0, active: 0, delayed: 0, failed: 0, pendingAssets: 0, oldest: null, claimedAssets: 0, staleClaims: 0, oldestStaleClaim: null, workers: { live: 1, stopped: 0, lastStoppedBeatAt: null } },
    thresholds: DEFAULT_THRESHOLDS,
  };
  const s = aggregateStatus(input);
  expect(monitoringStatusSchema.parse(s)).toEqual(s);
  return s;
}

describe('sink consumer state in the monitoring status', () => {
  it('a crashed (restarting) consumer is down and degrades the status, with its reason', () => {
    const why = 'the Kafka consumer crashed (Connection timeout) and is restarting; nothing is stored meanwhile';
    const s = status([report(1, { consumer: 'running', reason: null }), report(2, { consumer: 'restarting', reason: why })]);
    expect(s.sink.state).toBe('down');
    expect(s.sink.detail).toContain('1 of 2');
    expect(s.status).toBe('degraded');
    expect(s.reasons).toContain(`Sink: ${why}`);
  });

  it('a sink joining its group is not a fault', () => {
    const s = status([report(1, { consumer: 'joining', reason: 'joining consumer group booktape-sink' })]);
    expect(s.sink.state).toBe('joining');
    expect(s.reasons.filter((r) => r.startsWith('Sink'))).toEqual([]);
  });

  it('running, or a report from a sink without the consumer state: ok', () => {
    expect(status([report(1, { consumer: 'running', reason: null })]).sink.state).toBe('ok');
    expect(status([report(1, {})]).sink.state).toBe('ok');
  });
});
