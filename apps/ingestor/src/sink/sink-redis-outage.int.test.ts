import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import type { ExchangeAMessage } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { RollupQueue, partitionOf, type Topics } from '@booktape/messaging';
import { OwnRedis, requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { createSink, type SinkHealth } from './sink.ts';
import { sinkTestBed } from './sink.test-support.ts';

const log = silentLogger();

/** One exchange A record of `market` on `day` (its own date partition), the i-th of the test. */
function aMessage(market: string, day: string, i: number): ExchangeAMessage {
  const ts = Date.parse(`${day}T12:00:00Z`) + i;
  return {
    venue: 'exchange-a',
    received_at: new Date(ts + 3).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ts + 3) * 2n ** 23n + BigInt(i % 1000)).toString(),
    dedup_id: `o-${market}-${i}`,
    event: { market, asset_id: 'tok1', timestamp: String(ts), hash: `o-${market}-${i}`, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(i) }] },
  };
}

describe('sink: faults outside ClickHouse', () => {
  const bed = sinkTestBed('sinkfault');
  let redis: OwnRedis;

  beforeAll(async () => {
    redis = await OwnRedis.create();
  });
  afterAll(async () => {
    await redis?.cleanup();
  });

  it(
    'a 90 s Redis outage during ingest: every record is stored, the sink stays up, notifications arrive afterwards',
    async () => {
      const { t, kafka, topics, repo, produce } = bed;
      // The stored-partition notifications go to a real rollup queue on this test's own
      // redis-server, which is stopped for 90 s: three times the sink's session timeout.
      const rollups = new RollupQueue({ redisUrl: redis.url, prefix: uniqueId('rq'), debounceMs: 60_000 });
      const sink = createSink({ kafka, topics, ch: t.ch, log, groupId: uniqueId('g'), onStored: (p) => rollups.notify(p), options: { sessionTimeoutMs: 10_000 } });
      const samples: SinkHealth[] = [];
      const sampler = setInterval(() => samples.push(sink.health()), 500);
      let n = 0;
      const batch = (day: string, k: number) => Array.from({ length: k }, () => aMessage(`0xm${n % 3}`, day, n++));
      try {
        await sink.start();
        await produce(batch('2026-05-01', 100));
        await waitFor('stored before the outage', async () => (await repo.count('exchange-a')) === 100);

        await redis.kill();
        const outage: ExchangeAMessage[] = [];
        const outageEnds = Date.now() + 90_000;
        while (Date.now() < outageEnds) {
          const b = batch('2026-05-02', 20);
          outage.push(...b);
          await produce(b);
          await new Promise((r) => setTimeout(r, 1000));
        }
        // The sink kept storing while Redis was away (it never waited for it).
        expect(await repo.count('exchange-a')).toBeGreaterThan(100 + outage.length / 2);
        await redis.start();

        await produce(batch('2026-05-03', 100));
        const total = n;
        await waitFor('every record stored', async () => (await repo.count('exchange-a')) === total, 60_000, 250);
        expect(await repo.count('exchange-a')).toBe(total);

        // The consumer never died: at no point did health report it as not running.
        expect(samples.length).toBeGreaterThan(150);
        const down = samples.filter((h) => h.consumer !== 'running');
        expect(down.map((h) => `${h.consumer}: ${h.reason}`)).toEqual([]);
        expect(sink.health()).toMatchObject({ ok: true, consumer: 'running' });
        // The partitions stored while Redis was away were notified once it was back (the
        // restarted redis-server lost everything, so only a later notification puts them there).
        const outageParts = [...new Map(outage.map((m) => [JSON.stringify(partitionOf(m)), partitionOf(m)])).values()];
        await waitFor('outage partitions notified', async () => (await rollups.unsettled(outageParts)) === outageParts.length, 30_000, 250);
      } finally {
        clearInterval(sampler);
        await sink.stop();
        await rollups.close();
      }
    },
    170_000,
  );

  it('health reports a crashed consumer as down, and the consumer recovers by itself', async () => {
    const { t, topics, producer } = bed;
    // The dead-letter topic is gone: the first undecodable message makes every attempt at
    // its batch fail (a send to a missing topic), so the consumer crashes on each try.
    const crashTopics: Topics = { ...topics, raw: { ...topics.raw }, deadLetter: `${uniqueId('missing')}.dead-letter` };
    // Few producer retries, so a failing dead-letter send gives up within a second.
    const fastKafka = new Kafka({ clientId: 'sink-crash-test', brokers: requireEnv('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 200 } });
    const sink = createSink({ kafka: fastKafka, topics: crashTopics, ch: t.ch, log, groupId: uniqueId('gc'), options: { sessionTimeoutMs: 6_000 } });
    try {
      await sink.start();
      expect(sink.health()).toMatchObject({ ok: true, consumer: 'running' });
      await producer.send({ topic: topics.raw['exchange-a'], key: '0xbad', value: 'not json' });
      await producer.flush();
      const down = await waitFor('health reports the consumer down', () => {
        const h = sink.health();
        return !h.ok && h.consumer !== 'running' ? h : null;
      }, 60_000, 50);
      expect(down!.consumer).toBe('restarting');
      expect(down!.reason).toMatch(/consumer crashed/);
      expect(sink.stats.crashes).toBeGreaterThanOrEqual(1);
      // The topic comes back: the consumer, restarted by itself, dead-letters the message and runs on.
      const admin = fastKafka.admin();
      await admin.connect();
      try {
        await admin.createTopics({ topics: [{ topic: crashTopics.deadLetter, numPartitions: 1, replicationFactor: -1 }], waitForLeaders: true });
        await waitFor('the message dead-lettered for real', async () => (await admin.fetchTopicOffsets(crashTopics.deadLetter)).some((o) => Number(o.high) >= 1), 90_000, 250);
      } finally {
        await admin.disconnect();
      }
      await waitFor('consumer recovered', () => sink.health().ok && sink.health().consumer === 'running', 30_000, 100);
      expect(sink.health().reason).toBeNull();
    } finally {
      await sink.stop();
    }
  }, 150_000);
});
