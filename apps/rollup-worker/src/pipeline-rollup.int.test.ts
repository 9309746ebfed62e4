import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import { toSummaryBucket } from '@booktape/book';
import { parseEnv, silentLogger } from '@booktape/config';
import { utcDate } from '@booktape/domain';
import { createIngestor, ingestorConfig, ingestorEnvSchema, waitUntilStored, type Ingestor } from '@booktape/ingestor';
import { createKafka, type PartitionRef } from '@booktape/messaging';
import { startSimulator, type Simulator } from '@booktape/simulator';
import { BookEventsRepository, SummariesRepository } from '@booktape/storage';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { referenceBuckets, referenceObservationsA, referenceObservationsB } from '@booktape/book/testing';
import { bearer, startTestApi, type TestApi } from '@booktape/api/testing';
import { createRollupWorker, type RollupWorker } from './worker.ts';

const log = silentLogger();

/**
 * The whole path for both venues: simulator → capture → Kafka → sink → rollup queue →
 * rollup worker → API. Answers are compared with the reference computed from the raw rows
 * the store holds, right after capture stops (fresh: rollups still catching up) and once
 * the queue has settled (from stored summaries).
 */
describe('simulator → capture → Kafka → sink → rollup → API', () => {
  let t: TestApi;
  let sim: Simulator;
  let kafka: Kafka;
  let ingestor: Ingestor;
  let worker: RollupWorker;
  let apiKey: string;
  const queuePrefix = uniqueId('bt-pipe-rollup');
  const groupId = uniqueId('pipe-rollup-g');

  beforeAll(async () => {
    t = await startTestApi({ rollupQueuePrefix: queuePrefix, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
    apiKey = await t.newKey();
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    sim = await startSimulator({
      eventsPerSecond: 800,
      seed: 11,
      markets: { exchangeA: 2, exchangeB: 2 },
      kalshiKeyId: 'k1',
      kalshiPublicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    const env = {
      KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      KAFKA_TOPIC_PREFIX: `${uniqueId('piperoll')}.`,
      KAFKA_PARTITIONS: '2',
      SINK_GROUP_ID: groupId,
      EXCHANGE_A_WS_URL: sim.urls.exchangeA,
      EXCHANGE_A_GAMMA_URL: sim.urls.gamma,
      EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '0',
      EXCHANGE_B_WS_URL: sim.urls.exchangeB,
      EXCHANGE_B_TICKERS: sim.markets.exchangeB.map((m) => m.ticker).join(','),
      EXCHANGE_B_API_KEY_ID: 'k1',
      EXCHANGE_B_PRIVATE_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      WORKER_ID: '4',
    };
    const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
    kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'pipe-rollup-test' }, log);
    worker = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log, options: { queuePrefix, debounceMs: 200, sweepEveryMs: 5000 } });
    await worker.start();
    ingestor = createIngestor({ config, kafka, ch: t.ch, log, onStored: (parts) => worker.queue?.notify(parts) });
    await ingestor.start();
  }, 120_000);

  afterAll(async () => {
    await ingestor?.stop();
    await worker?.stop();
    await sim?.close();
    await t?.close();
  });

  async function summary(url: string) {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { data: unknown[] }).data;
  }

  it('serves summaries equal to the rules over everything stored, fresh and after the rollups settle', async () => {
    const pipeline = ingestor.pipeline!;
    await waitFor('both venues flowing', () => pipeline.counters['exchange-a'].records > 500 && pipeline.counters['exchange-b'].records > 300, 60_000);
    await new Promise((r) => setTimeout(r, 3000));
    await ingestor.stopCapture();
    await waitUntilStored(kafka, ingestor.topics, groupId, { timeoutMs: 60_000 });

    const events = new BookEventsRepository(t.ch);
    const summaries = new SummariesRepository(t.ch);
    const now = Date.now();
    const today = utcDate(now);
    const dayStart = Date.parse(`${today}T00:00:00Z`);
    const assets: { venue: 'exchange-a' | 'exchange-b'; market: string; asset: string; url: string; reference: (R: number, from: number, to: number) => unknown[] }[] = [];
    for (const m of sim.markets.exchangeA) {
      for (const asset of await summaries.assetsOf(m.conditionId, today, today)) {
        const recs = await events.exchangeA(m.conditionId, asset, dayStart, now + 1000);
        assets.push({
          venue: 'exchange-a',
          market: m.conditionId,
          asset,
          url: `/exchange-a/market/orderbook-summary?condition_id=${m.conditionId}&asset_id=${asset}`,
          reference: (R, from, to) => referenceBuckets(referenceObservationsA(recs), R, from, to).map(toSummaryBucket),
        });
      }
    }
    for (const m of sim.markets.exchangeB) {
      const recs = await events.exchangeB(m.ticker, dayStart, now + 1000);
      assets.push({
        venue: 'exchange-b',
        market: m.ticker,
        asset: m.ticker,
        url: `/exchange-b/market/orderbook-summary?ticker=${m.ticker}`,
        reference: (R, from, to) => referenceBuckets(referenceObservationsB(recs), R, from, to).map(toSummaryBucket),
      });
    }
    expect(assets.filter((a) => a.venue === 'exchange-a').length).toBeGreaterThanOrEqual(2);
    expect(assets.filter((a) => a.venue === 'exchange-b').length).toBe(2);

    // The window: the last minutes up to now (buckets after now are not answered).
    const from = Math.max(dayStart, now - 10 * 60_000);
    const check = async () => {
      for (const a of assets) {
        for (const R of [1, 7, 60]) {
          const got = await summary(`${a.url}&start_timestamp=${from}&end_timestamp=${now}&resolution=${R}`);
          expect(got, `${a.venue} ${a.asset} R=${R}`).toEqual(a.reference(R, from, now));
        }
      }
    };
    // Fresh: right after the data is stored, whatever the rollups have done so far.
    await check();

    // Settled: every stored partition rolled up; the answers now come from stored buckets.
    const parts: PartitionRef[] = assets.map((a) => ({ venue: a.venue, market: a.market, asset: a.asset, date: today }));
    await waitFor('rollups settled', async () => (await worker.queue!.unsettled(parts)) === 0, 60_000, 200);
    for (const a of assets) {
      const day = await summaries.day(a, today);
      expect(day, `${a.venue} ${a.asset} rolled up`).not.toBeNull();
      expect(day!.events).toBeGreaterThan(0);
    }
    await check();
    expect(worker.health().failures).toBe(0);

    // The simulator's own best_bid/best_ask claims (exchange A, every price_change entry)
    // must all hold on the rebuilt books, and no book may end a millisecond crossed (issue
    // 9 point 4): on correct venue data the cross-checks find nothing.
    for (const m of sim.markets.exchangeA) {
      const [day] = await summary(`/exchange-a/market/coverage?condition_id=${m.conditionId}&start_date=${today}&end_date=${today}`) as Array<{ checks: Record<string, number | null> }>;
      expect(day!.checks['venue_best_checked'], `${m.conditionId} claims checked`).toBeGreaterThan(0);
      expect(day!.checks, `${m.conditionId} checks`).toMatchObject({ venue_best_mismatches: 0, first_mismatch_ms: null, crossed_observations: 0 });
    }
    for (const m of sim.markets.exchangeB) {
      const [day] = await summary(`/exchange-b/market/coverage?ticker=${m.ticker}&start_date=${today}&end_date=${today}`) as Array<{ checks: Record<string, number | null> }>;
      expect(day!.checks['book_events'], `${m.ticker} book events`).toBeGreaterThan(0);
      expect(day!.checks, `${m.ticker} checks`).toMatchObject({ venue_best_mismatches: 0, crossed_observations: 0 });
    }
  }, 240_000);
});
