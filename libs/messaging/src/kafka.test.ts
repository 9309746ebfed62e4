import fc from 'fast-check';
import { Partitioners, logLevel, type PartitionerArgs } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLogLevel, rememberingPartitioner } from './kafka.ts';

describe('kafkajs log levels in our log', () => {
  it('logs the coordinator and leader retries of a starting broker at debug, not error', () => {
    // What kafkajs's connection logs when a response carries a retriable protocol error.
    for (const error of [
      'The group coordinator is not available',
      "The coordinator is loading and hence can't process requests for this group",
      'This is not the correct coordinator for this group',
      'There is no leader for this topic-partition as we are in the middle of a leadership election',
      'The group is rebalancing, so a rejoin is needed',
    ]) {
      expect(kafkaLogLevel(logLevel.ERROR, 'Response FindCoordinator(key: 10, version: 2)', error), error).toBe('debug');
    }
    expect(kafkaLogLevel(logLevel.WARN, 'The group is rebalancing, re-joining')).toBe('debug');
  });

  it('shows a crash those retries ended in, and any restart, as warnings: the consumer recovers by itself', () => {
    expect(kafkaLogLevel(logLevel.ERROR, 'Crash: KafkaJSProtocolError: The group coordinator is not available')).toBe('warn');
    expect(kafkaLogLevel(logLevel.ERROR, 'Restarting the consumer in 300ms')).toBe('warn');
  });

  it('keeps every other entry at its own level', () => {
    expect(kafkaLogLevel(logLevel.ERROR, 'Crash: KafkaJSNumberOfRetriesExceeded: Connection error: connect ECONNREFUSED 127.0.0.1:1')).toBe('error');
    expect(kafkaLogLevel(logLevel.ERROR, 'Response Produce(key: 0, version: 7)', 'The request included a message larger than the max message size the server will accept')).toBe('error');
    expect(kafkaLogLevel(logLevel.ERROR, 'Connection error: connect ECONNREFUSED 127.0.0.1:19092')).toBe('error');
    expect(kafkaLogLevel(logLevel.NOTHING, 'x')).toBe('error');
    expect(kafkaLogLevel(logLevel.WARN, 'Consumer group received unsubscribed topics')).toBe('warn');
    expect(kafkaLogLevel(logLevel.INFO, 'Starting')).toBe('info');
    expect(kafkaLogLevel(logLevel.DEBUG, 'Request Metadata')).toBe('debug');
  });
});

describe('rememberingPartitioner', () => {
  const args = (topic: string, partitions: number, key: string | null, partition?: number): PartitionerArgs => ({
    topic,
    partitionMetadata: Array.from({ length: partitions }, (_, i) => ({ partitionId: i, leader: 1, partitionErrorCode: 0, replicas: [1], isr: [1] })),
    message: { key, value: 'v', ...(partition === undefined ? {} : { partition }) },
  });

  // Keys must land where every other client (and earlier releases) put them.
  it('answers what the default partitioner answers, asked again and after the partition count changed', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('t1', 't2'), fc.integer({ min: 1, max: 12 }), fc.string({ unit: 'binary', maxLength: 70 })), { minLength: 1, maxLength: 30 }), (calls) => {
        const remembering = rememberingPartitioner(Partitioners.DefaultPartitioner)();
        const plain = Partitioners.DefaultPartitioner();
        for (const [topic, n, key] of [...calls, ...calls]) expect(remembering(args(topic, n, key))).toBe(plain(args(topic, n, key)));
      }),
    );
  });

  it('keeps a partition the message names', () => {
    const remembering = rememberingPartitioner(Partitioners.DefaultPartitioner)();
    expect(remembering(args('t', 8, 'k', 5))).toBe(5);
    expect(remembering(args('t', 8, 'k', 3))).toBe(3);
  });
});
