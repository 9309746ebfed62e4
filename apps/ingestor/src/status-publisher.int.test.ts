import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import { silentLogger } from '@booktape/config';
import { createKafka, ensureTopics, ingestorReportKeys, topicNames, type IngestorReport, type Topics } from '@booktape/messaging';
import { deleteRedisPrefix, freePort, requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { createStatusPublisher, createStatusRedis } from './status-publisher.ts';
import { health } from './status-publisher.test-support.ts';

/** The ingestor's status report against real services: how it reaches Redis, and that outages never break it (its content: status-publisher.test.ts). */

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
    closedPort = await freePort();
  });
  afterAll(async () => {
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
  });

  it('writes the report with a TTL and an index entry, with the consumer lag per venue, and removes it on stop', async () => {
    const groupId = uniqueId('status-group');
    // Records grow from the moment the capture "starts": the rate is per report interval, so a
    // count set once shows only in one report, perhaps one whose lag read predates the commit.
    let capturing = false;
    let recordsA = 0;
    const publisher = createStatusPublisher({ redis, prefix, log: silentLogger(), ingestor: { topics, health: () => health({ recordsA: capturing ? (recordsA += 100) : 0 }) }, config: config(groupId), kafka, intervalMs: 300, retentionMs: 60_000, instance: 'host/w7 capture' });
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
      capturing = true;
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
