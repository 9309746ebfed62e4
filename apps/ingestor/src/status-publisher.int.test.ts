import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import { silentLogger } from '@booktape/config';
import { createKafka, ensureTopics, topicNames, type Topics } from '@booktape/messaging';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { buildReport, createStatusPublisher, createStatusRedis, ingestorReportKeys, type IngestorHealth, type IngestorReport } from './status-publisher.ts';

/** The ingestor's status report: what it contains, how it reaches Redis, and that outages never break it. */

const T0 = Date.parse('2026-03-01T12:00:00Z');

function health(o: { recordsA?: number; recordsB?: number; stored?: number; paused?: boolean; lastDataAt?: string | null } = {}): IngestorHealth {
  return {
    sink: { ok: !o.paused, batches: 3, stored: o.stored ?? 0, deadLettered: 1, insertFailures: 2, paused: o.paused ?? false, lastStoredAt: T0 - 500 },
    catalogue: null,
    capture: {
      counters: {
        'exchange-a': { frames: 40, records: o.recordsA ?? 0, controls: 1, deadLetters: 2, lastFrameAt: T0 },
        'exchange-b': { frames: 0, records: o.recordsB ?? 0, controls: 0, deadLetters: 0, lastFrameAt: null },
      },
      producer: { buffered: 17, sent: 100, flushes: 10, errors: 0 },
      sources: [
        // Exchange A wraps its capture stats in `feeds`; exchange B's status is the stats.
        { venue: 'exchange-a', resolving: false, lastError: null, feeds: { venue: 'exchange-a', enabled: true, markets: 4, connections: 2, connected: 1, framesReceived: 40, dataFramesReceived: 38, reconnects: 3, lastDataAt: o.lastDataAt === undefined ? new Date(T0 - 1200).toISOString() : o.lastDataAt, feeds: [] } },
        { venue: 'exchange-b', enabled: false, markets: 0, connections: 0, connected: 0, framesReceived: 0, dataFramesReceived: 0, reconnects: 0, lastDataAt: null, feeds: [] },
      ],
    },
  } as unknown as IngestorHealth;
}

const ctx = {
  instance: 'host-w7-capture+sink',
  workerId: 7,
  roles: ['capture', 'sink'] as IngestorReport['roles'],
  venues: { 'exchange-a': true, 'exchange-b': true },
  groupId: 'g',
  startedAt: T0 - 60_000,
  intervalMs: 5000,
  kafka: { ok: true, checked_at: new Date(T0).toISOString(), lag: 4, lag_by_venue: { 'exchange-a': 3, 'exchange-b': 1 } },
};

describe('buildReport', () => {
  it('per venue: feed state, freshness and records per second over the interval', () => {
    const first = buildReport(health({ recordsA: 1000, stored: 400 }), ctx, { at: T0 - 5000, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 }, T0);
    expect(first.report.capture!.venues).toEqual([
      { venue: 'exchange-a', enabled: true, resolving: false, markets: 4, connections: 2, connected: 1, reconnects: 3, last_event_at: new Date(T0 - 1200).toISOString(), records_total: 1000, events_per_second: 200, frames_total: 40, dead_letters_total: 2 },
      { venue: 'exchange-b', enabled: false, resolving: false, markets: 0, connections: 0, connected: 0, reconnects: 0, last_event_at: null, records_total: 0, events_per_second: 0, frames_total: 0, dead_letters_total: 0 },
    ]);
    expect(first.report.capture!.producer_backlog).toBe(17);
    expect(first.report.sink).toEqual({ group_id: 'g', paused: false, stored_total: 400, stored_per_second: 80, last_stored_at: new Date(T0 - 500).toISOString(), insert_failures: 2, dead_lettered: 1, kafka: ctx.kafka });
    expect(first.report).toMatchObject({ v: 1, worker_id: 7, roles: ['capture', 'sink'], published_at: new Date(T0).toISOString(), started_at: new Date(T0 - 60_000).toISOString(), interval_ms: 5000 });
    // The next interval is measured against the counters the first one returned.
    const second = buildReport(health({ recordsA: 1300, stored: 400 }), ctx, first.counters, T0 + 2000);
    expect(second.report.capture!.venues[0]!.events_per_second).toBe(150);
    expect(second.report.sink!.stored_per_second).toBe(0);
  });

  it('a venue outside CAPTURE_VENUES is reported as not enabled; no capture role, no capture section', () => {
    const r = buildReport(health(), { ...ctx, venues: { 'exchange-a': false, 'exchange-b': true } }, { at: T0, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 }, T0);
    expect(r.report.capture!.venues[0]!.enabled).toBe(false);
    const sinkOnly = buildReport({ ...health(), capture: null } as IngestorHealth, ctx, { at: T0, records: { 'exchange-a': 0, 'exchange-b': 0 }, stored: 0 }, T0);
    expect(sinkOnly.report.capture).toBeNull();
  });
});

describe('createStatusPublisher (real Redis and Kafka)', () => {
  let kafka: Kafka;
  let topics: Topics;
  let closedPort: number;
  const redis = createStatusRedis(requireEnv('REDIS_URL'));
  const prefix = uniqueId('bt-status-test');
  const keys = ingestorReportKeys(prefix);
  const config = (groupId: string) => ({ roles: { capture: true, sink: true }, venues: { 'exchange-a': true, 'exchange-b': true }, sinkGroupId: groupId, platform: { workerId: 7 } });
  const read = async (instance: string) => {
    const v = await redis.get(keys.report(instance));
    return v === null ? null : (JSON.parse(v) as IngestorReport);
  };

  beforeAll(async () => {
    kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'status-publisher-test' }, silentLogger());
    topics = topicNames(`${uniqueId('st')}.`);
    await ensureTopics(kafka, topics, 2);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.raw['exchange-a'], messages: Array.from({ length: 5 }, (_, i) => ({ key: `m${i}`, value: '[]' })) });
    await producer.send({ topic: topics.raw['exchange-b'], messages: Array.from({ length: 3 }, (_, i) => ({ key: `t${i}`, value: '[]' })) });
    await producer.send({ topic: topics.gaps, messages: [{ key: 'g', value: '{}' }] });
    await producer.disconnect();
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    closedPort = (srv.address() as { port: number }).port;
    await new Promise<void>((r) => srv.close(() => r()));
  });
  afterAll(async () => {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 100);
      cursor = next;
      if (found.length) await redis.del(...found);
    } while (cursor !== '0');
    redis.disconnect();
  });

  it('writes the report with a TTL and an index entry, with the consumer lag per venue, and removes it on stop', async () => {
    const groupId = uniqueId('status-group');
    let h = health({ recordsA: 0 });
    const publisher = createStatusPublisher({ redis, prefix, log: silentLogger(), ingestor: { topics, health: () => h }, config: config(groupId), kafka, intervalMs: 300, retentionMs: 60_000, instance: 'host/w7 capture' });
    expect(publisher.instance).toBe('host_w7_capture');
    publisher.start();
    try {
      // The group never committed: everything from the low watermark counts (5 + 3 + 1 gap).
      const first = (await waitFor('a report with the consumer lag', async () => {
        const r = await read(publisher.instance);
        return r?.sink?.kafka.ok ? r : null;
      }))!;
      expect(first.sink!.kafka).toMatchObject({ lag: 9, lag_by_venue: { 'exchange-a': 5, 'exchange-b': 3 } });
      expect(first.capture!.venues[0]).toMatchObject({ venue: 'exchange-a', connected: 1, connections: 2 });
      const ttl = await redis.pttl(keys.report(publisher.instance));
      expect(ttl).toBeGreaterThan(50_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      expect(Number(await redis.zscore(keys.index, publisher.instance))).toBe(Date.parse(first.published_at));

      // The sink stores exchange A's messages (committed offsets move to the end): its lag is gone.
      const admin = kafka.admin();
      await admin.connect();
      const ends = await admin.fetchTopicOffsets(topics.raw['exchange-a']);
      await admin.setOffsets({ groupId, topic: topics.raw['exchange-a'], partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) });
      await admin.disconnect();
      h = health({ recordsA: 3000 });
      const later = (await waitFor('the lag after the commit, and a rate', async () => {
        const r = await read(publisher.instance);
        return r?.sink?.kafka.lag === 4 && r.capture!.venues[0]!.events_per_second > 0 ? r : null;
      }))!;
      expect(later.sink!.kafka.lag_by_venue).toEqual({ 'exchange-a': 0, 'exchange-b': 3 });
    } finally {
      await publisher.stop();
    }
    expect(await redis.get(keys.report(publisher.instance))).toBeNull();
    expect(await redis.zscore(keys.index, publisher.instance)).toBeNull();
  });

  it('Kafka unreachable: the report says the lag cannot be read, and still arrives', async () => {
    const deadKafka = createKafka({ brokers: [`127.0.0.1:${closedPort}`], clientId: 'status-dead-kafka' }, silentLogger());
    const publisher = createStatusPublisher({ redis, prefix, log: silentLogger(), ingestor: { topics, health: () => health() }, config: config('g'), kafka: deadKafka, intervalMs: 500, instance: 'dead-kafka' });
    publisher.start();
    try {
      const r = (await waitFor('a report', () => read('dead-kafka'), 10_000))!;
      expect(r.sink!.kafka).toEqual({ ok: false, checked_at: null, lag: null, lag_by_venue: null });
      expect(r.capture!.venues).toHaveLength(2);
    } finally {
      await publisher.stop();
    }
  });

  it('Redis unreachable: the publisher keeps building reports, never throws, and stops promptly', async () => {
    const deadRedis = createStatusRedis(`redis://127.0.0.1:${closedPort}`);
    const publisher = createStatusPublisher({ redis: deadRedis, prefix, log: silentLogger(), ingestor: { topics, health: () => ({ ...health(), sink: null }) }, config: { ...config('g'), roles: { capture: true, sink: false } }, intervalMs: 200, instance: 'dead-redis' });
    publisher.start();
    await new Promise((r) => setTimeout(r, 700));
    expect(publisher.last).toMatchObject({ instance: 'dead-redis', roles: ['capture'], sink: null });
    const started = Date.now();
    await publisher.stop();
    expect(Date.now() - started).toBeLessThan(3000);
    deadRedis.disconnect();
  });
});
