import { describe, expect, it } from 'vitest';
import { ingestorReportSchema, type IngestorReport, type VenueReport } from '@booktape/messaging';
import type { RollupBacklog } from './rollup-backlog.ts';
import { DEFAULT_THRESHOLDS, aggregateStatus, monitoringStatusSchema, type StatusInput } from './status.ts';
import { esc, renderStatusPage } from './status-page.ts';
import { statusRegistry } from './metrics.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const iso = (agoMs: number) => new Date(NOW - agoMs).toISOString();

function venue(v: Partial<VenueReport> & Pick<VenueReport, 'venue'>): VenueReport {
  return {
    enabled: true,
    resolving: false,
    markets: 10,
    connections: 2,
    connected: 2,
    reconnects: 0,
    last_event_at: iso(1000),
    records_total: 5000,
    events_per_second: 120.5,
    frames_total: 4000,
    dead_letters_total: 0,
    ...v,
  };
}

function report(o: { worker?: number; agoMs?: number; venues?: VenueReport[]; sink?: Partial<NonNullable<IngestorReport['sink']>> | null; startedAgoMs?: number } = {}): IngestorReport {
  const sink = o.sink === undefined ? {} : o.sink;
  return ingestorReportSchema.parse({
    v: 1,
    instance: `host-w${o.worker ?? 1}`,
    worker_id: o.worker ?? 1,
    roles: ['capture', 'sink'],
    started_at: iso(o.startedAgoMs ?? 3_600_000),
    published_at: iso(o.agoMs ?? 2000),
    interval_ms: 5000,
    capture: o.venues === undefined ? { venues: [venue({ venue: 'exchange-a' }), venue({ venue: 'exchange-b' })], producer_backlog: 0, producer_errors: 0 } : { venues: o.venues, producer_backlog: 0, producer_errors: 0 },
    sink:
      sink === null
        ? null
        : {
            group_id: 'booktape-sink',
            paused: false,
            stored_total: 100,
            stored_per_second: 240,
            last_stored_at: iso(500),
            insert_failures: 0,
            dead_lettered: 0,
            kafka: { ok: true, checked_at: iso(2100), lag: 12, lag_by_venue: { 'exchange-a': 10, 'exchange-b': 2 } },
            ...sink,
          },
  });
}

const backlog = (b: Partial<RollupBacklog> = {}): RollupBacklog => ({ waiting: 0, active: 0, delayed: 1, failed: 0, pendingAssets: 0, oldest: null, claimedAssets: 0, staleClaims: 0, oldestStaleClaim: null, workers: { live: 1, stopped: 0, lastStoppedBeatAt: null }, ...b });

function input(o: Partial<StatusInput> = {}): StatusInput {
  return {
    now: NOW,
    stores: { clickhouse: { ok: true, latencyMs: 3 }, redis: { ok: true, latencyMs: 1 } },
    reports: [report()],
    rollup: backlog(),
    thresholds: DEFAULT_THRESHOLDS,
    ...o,
  };
}

describe('aggregateStatus', () => {
  it('all healthy: ok, venues up with their rates, freshness and Kafka lag', () => {
    const s = aggregateStatus(input());
    expect(monitoringStatusSchema.parse(s)).toEqual(s);
    expect(s.status).toBe('ok');
    expect(s.reasons).toEqual([]);
    expect(s.venues.map((v) => [v.venue, v.state, v.connected, v.connections, v.events_per_second, v.last_event_age_ms, v.kafka_lag])).toEqual([
      ['exchange-a', 'up', 2, 2, 120.5, 1000, 10],
      ['exchange-b', 'up', 2, 2, 120.5, 1000, 2],
    ]);
    expect(s.kafka).toMatchObject({ state: 'ok', consumer_lag: 12 });
    expect(s.sink).toMatchObject({ state: 'ok', processes: 1, stored_per_second: 240 });
    expect(s.processes).toEqual([{ worker_id: 1, roles: ['capture', 'sink'], live: true, last_report_at: iso(2000), last_report_age_ms: 2000 }]);
  });

  it('reports in Redis that cannot be read degrade the status and are counted, one or several', () => {
    const one = aggregateStatus(input({ unreadableReports: 1 }));
    expect(one.status).toBe('degraded');
    expect(one.reasons).toEqual(['Capture: 1 ingestor status report in Redis cannot be read (another version, or a corrupted value); the state shown may leave that process out']);
    expect(aggregateStatus(input({ unreadableReports: 3 })).reasons[0]).toMatch(/^Capture: 3 ingestor status reports in Redis/);
    expect(aggregateStatus(input({ unreadableReports: 0 })).status).toBe('ok');
  });

  it('sums the capture processes of a venue and keeps the freshest event', () => {
    const a1 = report({ worker: 1, venues: [venue({ venue: 'exchange-a', connections: 2, connected: 2, events_per_second: 10, last_event_at: iso(9000) })], sink: null });
    const a2 = report({ worker: 2, venues: [venue({ venue: 'exchange-a', connections: 3, connected: 2, events_per_second: 5.5, last_event_at: iso(300) })] });
    const s = aggregateStatus(input({ reports: [a1, a2] }));
    const a = s.venues.find((v) => v.venue === 'exchange-a')!;
    expect(a).toMatchObject({ state: 'degraded', connections: 5, connected: 4, events_per_second: 15.5, last_event_age_ms: 300, detail: '4 of 5 connections up' });
    expect(s.status).toBe('degraded');
  });

  it('a venue without a connection is down; a venue turned off is shown as off and does not degrade', () => {
    const r = report({ venues: [venue({ venue: 'exchange-a', connected: 0 }), venue({ venue: 'exchange-b', enabled: false, connections: 0, connected: 0 })] });
    const s = aggregateStatus(input({ reports: [r] }));
    expect(s.venues.map((v) => [v.state, v.detail])).toEqual([
      ['down', 'no connection up (0 of 2)'],
      ['off', 'not captured (turned off in the capture configuration)'],
    ]);
    expect(s.reasons).toEqual(['Exchange A (Polymarket): no connection up (0 of 2)']);
  });

  it('a venue that is off says why (exchange B without credentials), on the JSON and the page, without degrading', () => {
    const r = report({ venues: [venue({ venue: 'exchange-a' }), venue({ venue: 'exchange-b', enabled: false, off_reason: 'no_credentials', connections: 0, connected: 0 })] });
    const s = aggregateStatus(input({ reports: [r] }));
    expect(monitoringStatusSchema.parse(s)).toEqual(s);
    const b = s.venues.find((v) => v.venue === 'exchange-b')!;
    expect(b).toMatchObject({ state: 'off', off_reason: 'no_credentials' });
    expect(b.detail).toMatch(/no API credentials are configured/);
    expect(s.venues[0]!.off_reason).toBeNull();
    expect(s.status).toBe('ok');
    expect(renderStatusPage(s, { jsonUrl: '/api/v1/monitoring/status' })).toContain('no API credentials are configured');
    // A code this API does not know yet still says "off"; a report without the field means configuration.
    const unknown = aggregateStatus(input({ reports: [report({ venues: [venue({ venue: 'exchange-b', enabled: false, off_reason: 'quota_exhausted' })] })] }));
    expect(unknown.venues[1]).toMatchObject({ state: 'off', off_reason: 'unknown', detail: 'not captured' });
    const old = aggregateStatus(input({ reports: [report({ venues: [venue({ venue: 'exchange-b', enabled: false })] })] }));
    expect(old.venues[1]).toMatchObject({ state: 'off', off_reason: 'turned_off' });
  });

  it('sink: refused records are summed over the live sinks (a report without the count is 0)', () => {
    const a = report({ worker: 1, sink: { group_id: 'g1', refused_records: 3 } });
    const b = report({ worker: 2, sink: { group_id: 'g2', refused_records: 4 } });
    const older = report({ worker: 3, sink: { group_id: 'g3' } });
    const dead = report({ worker: 4, agoMs: 600_000, sink: { group_id: 'g4', refused_records: 100 } });
    const s = aggregateStatus(input({ reports: [a, b, older, dead] }));
    expect(s.sink.refused_records).toBe(7);
    expect(aggregateStatus(input({ reports: [] })).sink.refused_records).toBe(0);
    expect(statusRegistry(s).getSingleMetric('booktape_sink_refused_records')).toBeDefined();
  });

  it('rollups: no live worker is down and degrades; a worker that stopped among live ones is counted only', async () => {
    const none = aggregateStatus(input({ rollup: backlog({ workers: { live: 0, stopped: 0, lastStoppedBeatAt: null } }) }));
    expect(monitoringStatusSchema.parse(none)).toEqual(none);
    expect(none.rollup).toMatchObject({ state: 'down', workers: 0, stopped_workers: 0, detail: 'no rollup worker is running' });
    expect(none.status).toBe('degraded');
    expect(none.reasons).toContain('Rollups: no rollup worker is running; summaries are not being rolled up');
    const dead = aggregateStatus(input({ rollup: backlog({ pendingAssets: 1, oldest: { venue: 'exchange-a', market: '0xabc', asset: '1', since: NOW - 1000, dates: ['2026-03-01'] }, workers: { live: 0, stopped: 1, lastStoppedBeatAt: NOW - 30_000 } }) }));
    expect(dead.rollup.state).toBe('down');
    expect(dead.rollup.detail).toMatch(/^no rollup worker is running, the last stopped reporting 30 s ago; 1 asset pending/);
    const text = await statusRegistry(dead).metrics();
    expect(text).toMatch(/^booktape_rollup_workers\{state="live"\} 0$/m);
    expect(text).toMatch(/^booktape_rollup_workers\{state="stopped"\} 1$/m);
    const one = aggregateStatus(input({ rollup: backlog({ workers: { live: 1, stopped: 1, lastStoppedBeatAt: NOW - 120_000 } }) }));
    expect(one.rollup).toMatchObject({ state: 'ok', workers: 1, stopped_workers: 1, detail: 'summaries are up to date' });
    expect(one.status).toBe('ok');
  });

  it('connected but silent for longer than the threshold is degraded', () => {
    const r = report({ venues: [venue({ venue: 'exchange-a', last_event_at: iso(400_000) }), venue({ venue: 'exchange-b', last_event_at: null })] });
    const s = aggregateStatus(input({ reports: [r] }));
    expect(s.venues.map((v) => [v.state, v.detail])).toEqual([
      ['degraded', 'connected, but no market data for 7 min'],
      ['degraded', 'connected, but no market data received yet'],
    ]);
  });

  it('a stale report (process stopped reporting) makes its venues down, and a live one for the venue wins', () => {
    const stale = report({ worker: 2, agoMs: 60_000 });
    const s = aggregateStatus(input({ reports: [stale] }));
    expect(s.venues.every((v) => v.state === 'down' && v.detail === 'its capture process stopped reporting 60 s ago')).toBe(true);
    expect(s.processes[0]).toMatchObject({ worker_id: 2, live: false, last_report_age_ms: 60_000 });
    expect(s.sink.state).toBe('unknown');
    expect(s.status).toBe('degraded');
    const both = aggregateStatus(input({ reports: [stale, report({ worker: 1 })] }));
    expect(both.venues.map((v) => v.state)).toEqual(['up', 'up']);
    expect(both.status).toBe('ok');
    // A live process that does not capture the venue does not hide the one that went silent.
    const offElsewhere = report({ worker: 1, venues: [venue({ venue: 'exchange-a' }), venue({ venue: 'exchange-b', enabled: false, connections: 0, connected: 0 })] });
    expect(aggregateStatus(input({ reports: [stale, offElsewhere] })).venues.map((v) => v.state)).toEqual(['up', 'down']);
  });

  it('no report at all: venues unknown, sink not reporting, degraded', () => {
    const s = aggregateStatus(input({ reports: [] }));
    expect(s.venues.map((v) => v.state)).toEqual(['unknown', 'unknown']);
    expect(s.kafka.state).toBe('unknown');
    expect(s.status).toBe('degraded');
    expect(s.reasons).toContain('Sink: no sink process is reporting, nothing is being stored');
  });

  it('Kafka: lag above the threshold, or unreadable, degrades; the freshest report per consumer group counts once', () => {
    const high = aggregateStatus(input({ reports: [report({ sink: { kafka: { ok: true, checked_at: iso(1000), lag: 200_000, lag_by_venue: { 'exchange-a': 200_000, 'exchange-b': 0 } } } })] }));
    expect(high.kafka).toMatchObject({ state: 'lagging', consumer_lag: 200_000 });
    expect(high.status).toBe('degraded');
    const unreadable = aggregateStatus(input({ reports: [report({ sink: { kafka: { ok: false, checked_at: null, lag: null, lag_by_venue: null } } })] }));
    expect(unreadable.kafka.state).toBe('unknown');
    expect(unreadable.reasons).toContain('Kafka: the consumer lag cannot be read (is Kafka reachable?)');
    const older = report({ worker: 1, sink: { kafka: { ok: true, checked_at: iso(9000), lag: 50, lag_by_venue: { 'exchange-a': 50, 'exchange-b': 0 } } } });
    const newer = report({ worker: 2, sink: { kafka: { ok: true, checked_at: iso(1000), lag: 7, lag_by_venue: { 'exchange-a': 7, 'exchange-b': 0 } } } });
    expect(aggregateStatus(input({ reports: [older, newer] })).kafka.consumer_lag).toBe(7);
  });

  it('a paused sink (ClickHouse refusing inserts) degrades', () => {
    const s = aggregateStatus(input({ reports: [report({ sink: { paused: true } })] }));
    expect(s.sink.state).toBe('paused');
    expect(s.status).toBe('degraded');
  });

  it('rollups: the oldest pending asset, behind past the threshold', () => {
    const oldest = { venue: 'exchange-b' as const, market: 'KXBTC-26MAR01', asset: 'KXBTC-26MAR01', since: NOW - 1_000_000, dates: ['2026-02-28', '2026-03-01'] };
    const s = aggregateStatus(input({ rollup: backlog({ waiting: 3, pendingAssets: 4, oldest }) }));
    expect(s.rollup).toMatchObject({ state: 'behind', waiting: 3, pending_assets: 4, oldest_pending: { venue: 'exchange-b', market: 'KXBTC-26MAR01', dates: ['2026-02-28', '2026-03-01'], age_ms: 1_000_000 } });
    expect(s.status).toBe('degraded');
    expect(aggregateStatus(input({ rollup: backlog({ pendingAssets: 1, oldest: { ...oldest, since: NOW - 5000 } }) })).rollup.state).toBe('ok');
  });

  it('rollups: a claim whose lease ran out (its process died) is reported and degrades, even with nothing pending', () => {
    const live = aggregateStatus(input({ rollup: backlog({ claimedAssets: 1 }) }));
    expect(live.rollup).toMatchObject({ state: 'ok', claimed_assets: 1, stale_claims: 0, oldest_stale_claim: null });
    expect(live.rollup.detail).not.toMatch(/up to date/);
    const oldestStaleClaim = { venue: 'exchange-a' as const, market: '0xabc', asset: '123', expiredAt: NOW - 4000, dates: ['2026-03-01'] };
    const s = aggregateStatus(input({ rollup: backlog({ claimedAssets: 2, staleClaims: 1, oldestStaleClaim }) }));
    expect(s.rollup).toMatchObject({ state: 'behind', claimed_assets: 2, stale_claims: 1, oldest_stale_claim: { market: '0xabc', asset: '123', dates: ['2026-03-01'], age_ms: 4000, expired_at: new Date(NOW - 4000).toISOString() } });
    expect(s.status).toBe('degraded');
    expect(s.reasons.some((r) => /Rollups: 1 claim is held by a rollup process that stopped/.test(r))).toBe(true);
    expect(monitoringStatusSchema.safeParse(s).success).toBe(true);
  });

  it('raw-read stream sessions: waiting reads or a recent timeout mean exhausted; all in use alone does not', () => {
    const pool = { inUse: 4, max: 4, waiting: 0, longestWaitMs: 0, busyTimeouts: 0, lastBusyTimeoutAt: null };
    const full = aggregateStatus(input({ streamPool: pool }));
    expect(full.stream_sessions).toMatchObject({ state: 'ok', in_use: 4, max: 4, waiting: 0 });
    expect(full.status).toBe('ok');
    expect(aggregateStatus(input({ streamPool: { ...pool, waiting: 2, longestWaitMs: 300 } })).stream_sessions.state).toBe('ok');
    const waiting = aggregateStatus(input({ streamPool: { ...pool, waiting: 2, longestWaitMs: 1500 } }));
    expect(waiting.stream_sessions).toMatchObject({ state: 'exhausted', waiting: 2, longest_wait_ms: 1500 });
    expect(waiting.status).toBe('degraded');
    expect(waiting.reasons).toContain('Raw data: all 4 sessions are in use and 2 reads are waiting (the longest for 2 s)');
    const timedOut = aggregateStatus(input({ streamPool: { ...pool, inUse: 1, busyTimeouts: 3, lastBusyTimeoutAt: NOW - 59_000 } }));
    expect(timedOut.stream_sessions).toMatchObject({ state: 'exhausted', busy_timeouts: 3, last_busy_timeout_at: new Date(NOW - 59_000).toISOString() });
    const longAgo = aggregateStatus(input({ streamPool: { ...pool, inUse: 1, busyTimeouts: 3, lastBusyTimeoutAt: NOW - 61_000 } }));
    expect(longAgo.stream_sessions.state).toBe('ok');
    expect(aggregateStatus(input({ streamPool: null })).stream_sessions).toMatchObject({ state: 'not_pooled', in_use: null });
    expect(monitoringStatusSchema.safeParse(waiting).success).toBe(true);
  });

  it('a store down makes the whole status down; with Redis down the capture state is unknown', () => {
    const ch = aggregateStatus(input({ stores: { clickhouse: { ok: false, latencyMs: null }, redis: { ok: true, latencyMs: 1 } } }));
    expect(ch.status).toBe('down');
    expect(ch.reasons[0]).toMatch(/ClickHouse/);
    const redis = aggregateStatus(input({ stores: { clickhouse: { ok: true, latencyMs: 1 }, redis: { ok: false, latencyMs: null } }, reports: null, rollup: null }));
    expect(redis.status).toBe('down');
    expect(redis.venues.map((v) => [v.state, v.detail])).toEqual([
      ['unknown', 'capture state cannot be read from Redis'],
      ['unknown', 'capture state cannot be read from Redis'],
    ]);
    expect(redis.rollup.state).toBe('unknown');
    expect(redis.reasons).toHaveLength(1);
  });
});

describe('renderStatusPage', () => {
  it('escapes every value that reaches the markup', () => {
    const oldest = { venue: 'exchange-b' as const, market: '<script>alert(1)</script>', asset: '"x"', since: NOW - 1000, dates: ["2026-03-01'"] };
    const html = renderStatusPage(aggregateStatus(input({ rollup: backlog({ pendingAssets: 1, oldest }) })), { jsonUrl: '/api/v1/monitoring/status?a=<b>' });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('2026-03-01&#39;');
    expect(html).toContain('/api/v1/monitoring/status?a=&lt;b&gt;');
    expect(esc(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('needs nothing from outside: no script, no external URL, refreshes itself', () => {
    const html = renderStatusPage(aggregateStatus(input()), { jsonUrl: '/api/v1/monitoring/status' });
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\//i);
    expect(html).toContain('<meta http-equiv="refresh" content="10">');
    expect(html).toMatch(/data-venue="exchange-a" data-state="up"/);
  });
});
