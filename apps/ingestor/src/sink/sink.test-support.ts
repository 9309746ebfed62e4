import { afterAll, beforeAll } from 'vitest';
import type { Kafka } from 'kafkajs';
import type { RawMessage } from '@booktape/domain';
import { marketKey } from '@booktape/venues';
import { silentLogger } from '@booktape/config';
import { BatchingProducer, createKafka, encodeRawMessages, ensureTopics, topicNames, type Topics } from '@booktape/messaging';
import { RawEventsRepository } from '@booktape/storage';
import { requireEnv, tempClickHouse, uniqueId, type TestClickHouse } from '@booktape/testkit';

/** What a sink test file works against: its own engine, its own topics, a producer. */
export interface SinkTestBed {
  t: TestClickHouse;
  kafka: Kafka;
  topics: Topics;
  producer: BatchingProducer;
  repo: RawEventsRepository;
  /** Sends each record as its own Kafka message, keyed by market, and waits until sent. */
  produce(messages: RawMessage[]): Promise<void>;
}

/**
 * Sets up the bed before the file's tests (a migrated embedded engine, topics under a fresh
 * prefix with `partitions` partitions each, a connected producer) and tears it down after.
 * Its fields are filled in once the file's tests run.
 */
export function sinkTestBed(name: string, partitions = 4): SinkTestBed {
  const log = silentLogger();
  const bed = {
    async produce(messages: RawMessage[]) {
      for (const m of messages) await bed.producer.send({ topic: bed.topics.raw[m.venue], key: marketKey(m), value: encodeRawMessages([m]) });
      await bed.producer.flush();
    },
  } as SinkTestBed;
  beforeAll(async () => {
    bed.t = await tempClickHouse();
    bed.repo = new RawEventsRepository(bed.t.ch);
    bed.kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: `${name}-test` }, log);
    bed.topics = topicNames(`${uniqueId(name)}.`);
    await ensureTopics(bed.kafka, bed.topics, partitions);
    bed.producer = new BatchingProducer(bed.kafka, log);
    await bed.producer.connect();
  });
  afterAll(async () => {
    await bed.producer?.disconnect();
    await bed.t?.cleanup();
  });
  return bed;
}
