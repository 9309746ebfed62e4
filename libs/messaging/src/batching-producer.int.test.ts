import { describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { BatchingProducer, createKafka, ensureTopics, topicNames } from './kafka.ts';

const log = silentLogger();

describe('batching producer', () => {
  it('keeps every key in order across coalescing and byte-capped requests, and leaves other topics alone', async () => {
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'bp-test' }, log);
    const topics = topicNames(`${uniqueId('bp')}.`);
    await ensureTopics(kafka, topics, 3);
    const raw = topics.raw['exchange-a'];
    const producer = new BatchingProducer(kafka, log, {
      lingerMs: 30,
      maxMessages: 1000,
      maxRequestBytes: 4 * 1024, // forces many requests per flush
      coalesce: (values) => `[${values.map((v) => v.slice(1, -1)).join(',')}]`,
      coalesceTopics: new Set([raw]),
    });
    await producer.connect();
    const keys = ['m1', 'm2', 'm3', 'm4', 'm5'];
    const n = 3000;
    for (let i = 0; i < n; i++) {
      const key = keys[i % keys.length]!;
      void producer.send({ topic: raw, key, value: JSON.stringify([{ key, i }]) });
      if (i % 500 === 0) void producer.send({ topic: topics.gaps, key, value: JSON.stringify({ gap: i }) });
    }
    await producer.flush();
    await producer.disconnect();

    const seen = new Map<string, number[]>();
    let gaps = 0;
    let rawMessages = 0;
    const consumer = kafka.consumer({ groupId: uniqueId('bp-g') });
    await consumer.connect();
    await consumer.subscribe({ topics: [raw, topics.gaps], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, message }) => {
        const v = JSON.parse(message.value!.toString());
        if (topic === topics.gaps) {
          expect(Array.isArray(v)).toBe(false);
          gaps += 1;
          return;
        }
        rawMessages += 1;
        for (const r of v as Array<{ key: string; i: number }>) {
          expect(r.key).toBe(message.key!.toString());
          const list = seen.get(r.key) ?? [];
          list.push(r.i);
          seen.set(r.key, list);
        }
      },
    });
    await waitFor('all consumed', () => [...seen.values()].reduce((s, l) => s + l.length, 0) === n && gaps === 6, 30_000);
    await consumer.disconnect();
    for (const [k, list] of seen) {
      const expected = Array.from({ length: n / keys.length }, (_, j) => j * keys.length + keys.indexOf(k));
      expect(list).toEqual(expected);
    }
    // Coalescing really happened: far fewer Kafka messages than records.
    expect(rawMessages).toBeLessThan(n / 5);
  });
});

describe('a message the broker refuses as too large', () => {
  it('is handed to onTooLarge once and does not stall the messages around it', async () => {
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'bp-big' }, log);
    const topics = topicNames(`${uniqueId('bpbig')}.`);
    await ensureTopics(kafka, topics, 1);
    const raw = topics.raw['exchange-b'];
    const rejected: string[] = [];
    const producer = new BatchingProducer(kafka, log, { lingerMs: 10, onTooLarge: (m) => rejected.push(m.key) });
    await producer.connect();
    void producer.send({ topic: raw, key: 'before', value: '[1]' });
    void producer.send({ topic: raw, key: 'huge', value: `["${'x'.repeat(2 * 1024 * 1024)}"]` }); // above the broker's 1 MiB default
    void producer.send({ topic: raw, key: 'after', value: '[2]' });
    await producer.flush();
    await producer.disconnect();
    expect(rejected).toEqual(['huge']);

    const keys: string[] = [];
    const consumer = kafka.consumer({ groupId: uniqueId('bpbig-g') });
    await consumer.connect();
    await consumer.subscribe({ topics: [raw], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void keys.push(message.key!.toString()) });
    await waitFor('both small messages', () => keys.length === 2, 30_000);
    await consumer.disconnect();
    expect(keys).toEqual(['before', 'after']);
  });
});
