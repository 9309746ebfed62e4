import { describe, expect, it } from 'vitest';
import type { ExchangeAMessage } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { uniqueId, waitFor } from '@booktape/testkit';
import { createSink, type StoredPartition } from './sink.ts';
import { sinkTestBed } from './sink.test-support.ts';

const log = silentLogger();

function aMessage(market: string, i: number): ExchangeAMessage {
  const ts = Date.UTC(2026, 3, 2, 12) + i;
  return {
    venue: 'exchange-a',
    received_at: new Date(ts + 3).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ts + 3) * 2n ** 23n).toString(),
    dedup_id: `h-${market}-${i}`,
    event: { market, asset_id: 'tok1', timestamp: String(ts), hash: `h-${market}-${i}`, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(i) }] },
  };
}

describe('sink: Kafka → ClickHouse', () => {
  const bed = sinkTestBed('sink');

  it('stores every message once, reports partitions, and dead-letters garbage without stopping', async () => {
    const { t, kafka, topics, producer, repo, produce } = bed;
    const seen: StoredPartition[] = [];
    const sink = createSink({ kafka, topics, ch: t.ch, log, groupId: uniqueId('g'), onStored: (p) => void seen.push(...p) });
    await sink.start();
    try {
      const msgs = Array.from({ length: 300 }, (_, i) => aMessage(`0x${(i % 3) + 1}`, i));
      await produce(msgs.slice(0, 150));
      await producer.send({ topic: topics.raw['exchange-a'], key: '0x1', value: 'not json' });
      // A gap message that parses but could never be inserted: dead-lettered, not retried forever.
      await producer.send({ topic: topics.gaps, key: 'c', value: JSON.stringify({ venue: 'exchange-a', started_at: 'never' }) });
      await produce(msgs.slice(150));
      await produce(msgs.slice(0, 50)); // a re-send: must not double
      await waitFor('all rows stored', async () => (await repo.count('exchange-a')) === 300 && sink.stats.stored >= 350 && sink.stats.deadLettered === 2);
      expect(sink.stats.deadLettered).toBe(2);
      expect(new Set(seen.map((p) => p.market))).toEqual(new Set(['0x1', '0x2', '0x3']));
      expect(seen.every((p) => p.date === '2026-04-02' && p.asset === 'tok1')).toBe(true);
    } finally {
      await sink.stop();
    }
  });

  it('holds and retries while ClickHouse refuses inserts, then catches up with nothing lost', async () => {
    const { t, kafka, topics, repo, produce } = bed;
    const table = t.ch.table('raw_exchange_a');
    const before = await repo.count('exchange-a');
    const sink = createSink({ kafka, topics, ch: t.ch, log, groupId: uniqueId('g2'), options: { retryInitialMs: 50, retryMaxMs: 200 } });
    // A fresh group re-reads the topic from the beginning: the first test's rows arrive again
    // and must not double.
    await t.ch.client.command({ query: `DETACH TABLE ${table}` });
    await sink.start();
    try {
      const fresh = Array.from({ length: 200 }, (_, i) => aMessage('0x9', 1000 + i));
      await produce(fresh);
      await waitFor('sink paused on failing inserts', () => sink.stats.paused && sink.stats.insertFailures >= 3);
      await t.ch.client.command({ query: `ATTACH TABLE ${table}` });
      await waitFor('caught up', async () => (await repo.count('exchange-a')) === before + 200, 60_000);
      expect(sink.stats.paused).toBe(false);
      expect(await repo.count('exchange-a', '0x9')).toBe(200);
    } finally {
      await sink.stop();
    }
  });
});
