import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLogLevel } from './kafka.ts';

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
