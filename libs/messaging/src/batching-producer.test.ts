import { describe, expect, it, vi } from 'vitest';
import type { Kafka, ProducerBatch } from 'kafkajs';
import { silentLogger } from '@booktape/config';
import { BatchingProducer } from './kafka.ts';

/**
 * The retry contract after kafkajs gave up on a request (broker gone for longer than its
 * retries): the request may have been written before the connection died (its response lost),
 * and kafkajs sends the retry under the same producer sequence numbers. The broker takes a
 * request with the sequence range of one it has as that duplicate, whatever its content, and
 * refuses one with the same first number but another length as out of order. So the retry must
 * be the very same request: same messages, same values, nothing newer merged into it.
 *
 * kafkajs's producer is stood in for here (unit test: the broker's side of the contract is
 * Kafka's documented idempotence; kafka-restart.int.test.ts runs the real thing).
 */
function fakeKafka(failFirst: number) {
  const calls: ProducerBatch[] = [];
  let failures = 0;
  const producer = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    sendBatch: async (batch: ProducerBatch) => {
      calls.push(structuredClone(batch));
      if (failures < failFirst) {
        failures += 1;
        throw Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1'), { name: 'KafkaJSNonRetriableError' });
      }
      return [];
    },
  };
  return { kafka: { producer: () => producer } as unknown as Kafka, calls };
}

describe('BatchingProducer retry after a failed request', () => {
  it('sends exactly the failed request again, with newer messages only after it', async () => {
    const { kafka, calls } = fakeKafka(1);
    const p = new BatchingProducer(kafka, silentLogger(), { lingerMs: 1, maxMessages: 1_000, highWaterMark: 10_000, coalesce: (v) => v.join('|'), coalesceTopics: new Set(['raw']) });
    await p.connect();
    await p.send({ topic: 'raw', key: 'm1', value: 'a1' });
    await p.send({ topic: 'raw', key: 'm1', value: 'a2' });
    await p.send({ topic: 'other', key: 'k', value: 'o1' });
    const flushing = p.flush(); // fails once, waits, retries
    await new Promise((r) => setTimeout(r, 50));
    // Accepted while the first request is failing: same key, same topics.
    await p.send({ topic: 'raw', key: 'm1', value: 'a3' });
    await p.send({ topic: 'other', key: 'k', value: 'o2' });
    await flushing;
    await p.flush();

    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(calls[1]).toEqual(calls[0]); // the retry is the same request
    const sent = calls.slice(1).flatMap((c) => c.topicMessages!.flatMap((t) => t.messages.map((m) => `${t.topic}:${String(m.key)}=${String(m.value)}`)));
    expect(sent).toEqual(['raw:m1=a1|a2', 'other:k=o1', 'raw:m1=a3', 'other:k=o2']);
    expect(p.buffered).toBe(0);
    expect(p.error).toBeUndefined();
    expect(p.stats).toMatchObject({ sent: 5, errors: 1 });
  });
});

describe('BatchingProducer lingerAfterRequest', () => {
  it('leaves what is sent during a request to its own linger; flush still sends everything', async () => {
    const sent: string[][] = [];
    let requestDone: () => void = () => undefined;
    const producer = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      sendBatch: async (batch: ProducerBatch) => {
        sent.push(batch.topicMessages!.flatMap((t) => t.messages.map((m) => String(m.value))));
        await new Promise<void>((r) => (requestDone = r));
        return [];
      },
    };
    const kafka = { producer: () => producer } as unknown as Kafka;
    const p = new BatchingProducer(kafka, silentLogger(), { lingerMs: 30, lingerAfterRequest: true, coalesce: (v) => v.join('|'), coalesceTopics: new Set(['raw']) });
    await p.connect();
    await p.send({ topic: 'raw', key: 'm1', value: 'a1' });
    await vi.waitFor(() => expect(sent).toHaveLength(1)); // the linger passed: the first request is out
    await p.send({ topic: 'raw', key: 'm1', value: 'a2' });
    requestDone();
    // Drained at once, a2 would now be in a second request; it waits for its own linger.
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(1);
    await vi.waitFor(() => expect(sent).toHaveLength(2));
    await p.send({ topic: 'raw', key: 'm1', value: 'a3' });
    requestDone();
    const flushed = p.flush();
    await vi.waitFor(() => expect(sent).toHaveLength(3));
    requestDone();
    await flushed;
    expect(sent).toEqual([['a1'], ['a2'], ['a3']]);
    expect(p.buffered).toBe(0);
  });
});
