import type { Redis } from 'ioredis';
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { ingestorReportSchema, topicNames, type IngestorReport } from '@booktape/messaging';
import { buildReport, createStatusPublisher, type IngestorHealth } from './status-publisher.ts';
import { T0, ctx, health } from './status-publisher.test-support.ts';

describe('buildReport', () => {
  it('per venue: feed state, freshness and records per second over the interval', () => {
    const first = buildReport(health({ recordsA: 1000, stored: 400 }), ctx, { at: T0 - 5000, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 }, T0);
    expect(first.report.capture!.venues).toEqual([
      { venue: 'exchange-a', enabled: true, off_reason: null, resolving: false, markets: 4, connections: 2, connected: 1, reconnects: 3, last_event_at: new Date(T0 - 1200).toISOString(), records_total: 1000, events_per_second: 200, frames_total: 40, dead_letters_total: 2 },
      { venue: 'exchange-b', enabled: false, off_reason: 'no_credentials', resolving: false, markets: 0, connections: 0, connected: 0, reconnects: 0, last_event_at: null, records_total: 0, events_per_second: 0, frames_total: 0, dead_letters_total: 0 },
    ]);
    expect(first.report.capture!.producer_backlog).toBe(17);
    expect(first.report.sink).toEqual({ group_id: 'g', paused: false, consumer: 'running', reason: null, stored_total: 400, stored_per_second: 80, last_stored_at: new Date(T0 - 500).toISOString(), insert_failures: 2, dead_lettered: 1, kafka: ctx.kafka });
    expect(first.report).toMatchObject({ v: 1, worker_id: 7, roles: ['capture', 'sink'], published_at: new Date(T0).toISOString(), started_at: new Date(T0 - 60_000).toISOString(), interval_ms: 5000 });
    // The next interval is measured against the counters the first one returned.
    const second = buildReport(health({ recordsA: 1300, stored: 400 }), ctx, first.counters, T0 + 2000);
    expect(second.report.capture!.venues[0]!.events_per_second).toBe(150);
    expect(second.report.sink!.stored_per_second).toBe(0);
  });

  it('a venue outside CAPTURE_VENUES is reported as not enabled; no capture role, no capture section', () => {
    const r = buildReport(health(), { ...ctx, venues: { 'exchange-a': false, 'exchange-b': true } }, { at: T0, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 }, T0);
    expect(r.report.capture!.venues[0]).toMatchObject({ enabled: false, off_reason: 'turned_off' });
    // Exchange B's own reason (no credentials) goes into the report as a code.
    expect(r.report.capture!.venues[1]).toMatchObject({ enabled: false, off_reason: 'no_credentials' });
    const sinkOnly = buildReport({ ...health(), capture: null } as IngestorHealth, ctx, { at: T0, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 }, T0);
    expect(sinkOnly.report.capture).toBeNull();
  });
});

describe('the report satisfies the contract the API reads it with', () => {
  it('parses with ingestorReportSchema, with both roles, one of them, and an unreadable lag', () => {
    const prev = { at: T0 - 5000, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 };
    const both = buildReport(health({ recordsA: 1000, stored: 400 }), ctx, prev, T0).report;
    expect(ingestorReportSchema.parse(both)).toEqual(both);
    const captureOnly = buildReport({ ...health(), sink: null }, { ...ctx, roles: ['capture'] }, prev, T0).report;
    expect(ingestorReportSchema.parse(captureOnly)).toEqual(captureOnly);
    const noLag = { ok: false, checked_at: null, lag: null, lag_by_venue: null };
    const sinkOnly = buildReport({ ...health({ paused: true }), capture: null }, { ...ctx, roles: ['sink'], kafka: noLag }, prev, T0).report;
    expect(ingestorReportSchema.parse(sinkOnly)).toEqual(sinkOnly);
  });

  it("still parses when the sink's reason is a long crash message: the text is cut to fit", () => {
    const prev = { at: T0 - 5000, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 };
    const h = health();
    const crashed = { ...h, sink: { ...h.sink!, reason: `the Kafka consumer crashed (${'x'.repeat(5000)})` } } as IngestorHealth;
    const r = buildReport(crashed, ctx, prev, T0).report;
    expect(ingestorReportSchema.parse(r)).toEqual(r);
    expect(r.sink!.reason).toHaveLength(1000);
    expect(r.sink!.reason!.startsWith('the Kafka consumer crashed (xxx')).toBe(true);
  });
});

describe('createStatusPublisher: the Kafka lag while reads are slow', () => {
  /** A broker whose every lag read succeeds but takes `readMs`. */
  function slowKafka(readMs: number): Kafka {
    const slow = <T>(v: T) => new Promise<T>((r) => setTimeout(() => r(v), readMs / 2));
    const admin = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      fetchTopicOffsets: () => slow([{ partition: 0, low: '0', high: '5', offset: '5' }]),
      fetchOffsets: ({ topics }: { topics: string[] }) => slow(topics.map((topic) => ({ topic, partitions: [{ partition: 0, offset: '3', metadata: null }] }))),
    };
    return { admin: () => admin } as unknown as Kafka;
  }

  /** Redis that keeps every report written. */
  function recordingRedis(reports: IngestorReport[]): Redis {
    const chain = {
      set: (_k: string, v: string) => (reports.push(JSON.parse(v) as IngestorReport), chain),
      zadd: () => chain,
      zremrangebyscore: () => chain,
      del: () => chain,
      zrem: () => chain,
      exec: async () => [],
    };
    return { multi: () => chain, del: async () => 1, zrem: async () => 1 } as unknown as Redis;
  }

  it('reads slower than two report intervals still report the lag (they once all said it could not be read)', async () => {
    const reports: IngestorReport[] = [];
    const publisher = createStatusPublisher({
      redis: recordingRedis(reports),
      prefix: 'bt-unit',
      log: silentLogger(),
      ingestor: { topics: topicNames('unit.'), health: () => health() },
      config: { roles: { capture: true, sink: true }, venues: { 'exchange-a': true, 'exchange-b': true }, sinkGroupId: 'g', platform: { workerId: 1 } },
      kafka: slowKafka(1000),
      intervalMs: 300,
      instance: 'unit',
    });
    publisher.start();
    await new Promise((r) => setTimeout(r, 4500));
    await publisher.stop();
    const afterFirstRead = reports.slice(reports.findIndex((r) => r.sink!.kafka.ok));
    expect(afterFirstRead.length).toBeGreaterThanOrEqual(3);
    // 3 topics (A, B, gaps), each 5 at the end and 3 committed.
    for (const r of afterFirstRead) expect(r.sink!.kafka).toMatchObject({ ok: true, lag: 6 });
  }, 15_000);
});
