import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv, silentLogger } from '@booktape/config';
import { createKafka } from '@booktape/messaging';
import { MarketCatalogueRepository, type CatalogueMarket } from '@booktape/storage';
import { startSimulator, type Simulator } from '@booktape/simulator';
import { requireEnv, tempClickHouse, uniqueId, waitFor, type TestClickHouse } from '@booktape/testkit';
import { ingestorConfig, ingestorEnvSchema } from '../config.ts';
import { createIngestor } from '../ingestor.ts';
import { createCatalogueSync } from './catalogue-sync.ts';

/**
 * The market catalogue is filled from the metadata API: the simulator's gamma routes
 * (which encode outcomes and token ids as JSON strings, as the venue does) stand in for it.
 */

const log = silentLogger();
let t: TestClickHouse;
let sim: Simulator;
let repo: MarketCatalogueRepository;

beforeAll(async () => {
  t = await tempClickHouse();
  repo = new MarketCatalogueRepository(t.ch);
  sim = await startSimulator({
    eventsPerSecond: 0,
    markets: {
      exchangeA: [
        { slug: 'fed-cut-25', question: 'Fed cuts 25 bps?', eventSlug: 'fed-decision-march', eventTitle: 'Fed decision in March' },
        { slug: 'fed-cut-50', question: 'Fed cuts 50 bps?', eventSlug: 'fed-decision-march', eventTitle: 'Fed decision in March' },
        { slug: 'fed-hold', question: 'Fed holds?', eventSlug: 'fed-decision-march', eventTitle: 'Fed decision in March', closed: true },
        { slug: 'btc-100k', question: 'Bitcoin above 100k?', eventSlug: 'btc-100k', eventTitle: 'Bitcoin above 100k?' },
        // An event whose every market closed: the venue no longer lists it as open.
        { slug: 'old-race', question: 'Old race?', eventSlug: 'old-election', eventTitle: 'Old election', closed: true, active: false },
        {}, {}, {}, {}, {}, {},
      ],
      exchangeB: 0,
    },
  });
});
afterAll(async () => {
  await sim?.close();
  await t?.cleanup();
});

function expected(m: Simulator['markets']['exchangeA'][number]) {
  return { conditionId: m.conditionId, slug: m.slug, question: m.question, tokenIds: m.tokenIds, outcomes: ['Yes', 'No'], eventSlug: m.eventSlug, active: m.active, closed: m.closed };
}

describe('market catalogue sync', () => {
  it('stores every market of every open event, token ids and outcomes decoded, paging through the events', async () => {
    const sync = createCatalogueSync({ ch: t.ch, log, options: { gammaUrl: sim.urls.gamma, intervalMs: 60_000, pageSize: 2 } });
    const r = await sync.syncOnce();
    const open = sim.markets.exchangeA.filter((m) => m.eventSlug !== 'old-election');
    expect(r).toMatchObject({ markets: open.length, written: open.length, complete: true });
    const stored = await repo.findByConditionIds(sim.markets.exchangeA.map((m) => m.conditionId));
    expect(stored.size).toBe(open.length);
    for (const m of open) expect(stored.get(m.conditionId)).toMatchObject(expected(m));
    const fed = await repo.findByEventSlug('fed-decision-march');
    expect(fed.map((m) => m.slug)).toEqual(['fed-cut-25', 'fed-cut-50', 'fed-hold']);
    expect(fed[0]).toMatchObject({ eventTitle: 'Fed decision in March', marketId: expect.stringMatching(/^\d+$/), eventId: expect.stringMatching(/^\d+$/) });
    expect(fed[2]!.closed).toBe(true);

    // Nothing changed at the venue: nothing is written again.
    expect((await sync.syncOnce()).written).toBe(0);
  });

  it('refreshes markets it holds as open that the venue no longer lists as open', async () => {
    const old = sim.markets.exchangeA.find((m) => m.slug === 'old-race')!;
    const stale: CatalogueMarket = {
      conditionId: old.conditionId,
      marketId: null,
      slug: 'old-race',
      question: 'Old race?',
      active: true,
      closed: false,
      tokenIds: old.tokenIds,
      outcomes: ['Yes', 'No'],
      eventId: null,
      eventSlug: 'old-election',
      eventTitle: 'Old election',
    };
    await repo.upsert([stale], Date.now() - 60_000);
    const sync = createCatalogueSync({ ch: t.ch, log, options: { gammaUrl: sim.urls.gamma, intervalMs: 60_000 } });
    const r = await sync.syncOnce();
    expect(r).toMatchObject({ refreshed: 1, written: 1 });
    const [now] = await repo.findByMarketSlug('old-race');
    expect(now).toMatchObject({ closed: true, active: false, eventTitle: 'Old election', marketId: expect.stringMatching(/^\d+$/) });
  });

  it('logs and retries a failing metadata API with back-off, never throwing, until a pass succeeds', async () => {
    let calls = 0;
    const warnings: string[] = [];
    const spy = { ...log, warn: (o: { err?: string }) => void warnings.push(String(o.err)), info: () => undefined, child: () => spy } as unknown as typeof log;
    const flaky: typeof fetch = async (input, init) => {
      calls++;
      if (calls <= 3) throw new TypeError('fetch failed: ECONNREFUSED');
      if (calls === 4) return new Response('upstream down', { status: 502 });
      return fetch(input, init);
    };
    const sync = createCatalogueSync({ ch: t.ch, log: spy, options: { gammaUrl: sim.urls.gamma, intervalMs: 60_000, retryMs: 20, fetch: flaky } });
    sync.start();
    await waitFor('a successful pass after failures', () => sync.status().passes === 1, 10_000, 20);
    await sync.stop();
    expect(sync.status()).toMatchObject({ failures: 4, consecutiveFailures: 0, lastError: null });
    expect(warnings).toHaveLength(4);
    expect(warnings[0]).toMatch(/market metadata API unreachable/);
    expect(warnings[3]).toMatch(/HTTP 502/);
  });

  it('stop() cancels a pass waiting on a silent API and the loop ends', async () => {
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason as Error)));
    const sync = createCatalogueSync({ ch: t.ch, log, options: { gammaUrl: sim.urls.gamma, intervalMs: 60_000, timeoutMs: 60_000, fetch: hanging } });
    sync.start();
    await waitFor('the pass started', () => sync.status().running, 5_000, 10);
    const started = Date.now();
    await sync.stop();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(sync.status().running).toBe(false);
  });
});

describe('ingestor wiring', () => {
  it('a sink-role ingestor fills the catalogue from EXCHANGE_A_GAMMA_URL on start', async () => {
    // One embedded engine per process: the same store, emptied.
    await t.ch.client.command({ query: `TRUNCATE TABLE ${t.ch.table('market_catalogue')}` });
    const env = {
      KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      KAFKA_TOPIC_PREFIX: `${uniqueId('cat')}.`,
      KAFKA_PARTITIONS: '1',
      SINK_GROUP_ID: uniqueId('cat-g'),
      INGESTOR_ROLES: 'sink',
      EXCHANGE_A_GAMMA_URL: sim.urls.gamma,
      EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '600',
    };
    const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
    expect(config.exchangeA.catalogueRefreshMs).toBe(600_000);
    const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'catalogue-test' }, log);
    const ingestor = createIngestor({ config, kafka, ch: t.ch, log });
    try {
      await ingestor.start();
      await waitFor('the catalogue filled', async () => (await repo.count()) === sim.markets.exchangeA.length - 1, 30_000);
      expect((await repo.findByMarketSlug('btc-100k'))[0]).toMatchObject({ eventSlug: 'btc-100k', tokenIds: sim.markets.exchangeA[3]!.tokenIds });
      expect(ingestor.health().catalogue).toMatchObject({ passes: 1, failures: 0 });
    } finally {
      await ingestor.stop();
    }
  });

  it('EXCHANGE_A_CATALOGUE_REFRESH_SECONDS=0 turns the catalogue off; a malformed value is named', () => {
    const off = ingestorConfig(parseEnv(ingestorEnvSchema, { EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '0' }), {});
    expect(off.exchangeA.catalogueRefreshMs).toBe(0);
    expect(ingestorConfig(parseEnv(ingestorEnvSchema, {}), {}).exchangeA.catalogueRefreshMs).toBe(900_000);
    expect(() => parseEnv(ingestorEnvSchema, { EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: 'soon' })).toThrow(/EXCHANGE_A_CATALOGUE_REFRESH_SECONDS/);
  });
});
