import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import { parseEnv, silentLogger } from '@booktape/config';
import type { ExchangeBRecord } from '@booktape/domain';
import { createIngestor, ingestorConfig, ingestorEnvSchema, waitUntilStored, type Ingestor } from '@booktape/ingestor';
import { createKafka } from '@booktape/messaging';
import { startSimulator, type Simulator } from '@booktape/simulator';
import { migrate, openClickHouse, RawEventsRepository, type ClickHouse } from '@booktape/storage';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { referenceBookB } from '@booktape/book/testing';
import { startTestApi, type TestApi } from '@booktape/api/testing';

const log = silentLogger();
const t0 = Date.now();
const step = (what: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}`);

/**
 * The exchange B replay's round trip (issue 25): the simulator (all of the venue's price
 * shapes, and one lost message) → capture → store gives the source; the project's own
 * capture, pointed at the API's exchange B replay websocket the way it is pointed at the
 * venue (EXCHANGE_B_WS_URL), records a second copy of a window of it into another database.
 * The copy's books must equal the source's at every delta (matched by content, in order),
 * every delta the source applied to a known book must be in the copy, and the copy's seq
 * must be continuous but for the one gap the source had inside the window.
 */

type Row = Record<string, unknown>;
const lineage = ['received_at', 'worker_id', 'ingest_seq', 'dedup_id'];
const recordOf = (r: Row): ExchangeBRecord => {
  const out = { ...r };
  for (const k of lineage) delete out[k];
  return out as unknown as ExchangeBRecord;
};
const deltaKey = (r: ExchangeBRecord) => `${r.side}|${r.price}|${r.delta}|${r.venue_ts}`;

describe('exchange B history → replay websocket → capture → a second copy', () => {
  let t: TestApi;
  let sim: Simulator;
  let kafka: Kafka;
  let source: Ingestor;
  let copy: Ingestor | undefined;
  let copyCh: ClickHouse;
  let apiKey: string;
  const sourceGroup = uniqueId('rtb-src-g');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  const env = (prefix: string, group: string, wsUrl: string, tickers: string[]) => ({
    KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
    KAFKA_TOPIC_PREFIX: `${uniqueId(prefix)}.`,
    KAFKA_PARTITIONS: '2',
    SINK_GROUP_ID: group,
    CAPTURE_VENUES: 'exchange-b',
    EXCHANGE_B_WS_URL: wsUrl,
    EXCHANGE_B_TICKERS: tickers.join(','),
    EXCHANGE_B_API_KEY_ID: 'k1',
    EXCHANGE_B_PRIVATE_KEY: pem,
    WORKER_ID: '4',
  });

  beforeAll(async () => {
    t = await startTestApi({ dataFloors: { 'exchange-a': null, 'exchange-b': null } });
    apiKey = await t.newKey();
    sim = await startSimulator({ eventsPerSecond: 600, seed: 26, legacyShapes: true, markets: { exchangeA: 1, exchangeB: 3 } });
    const e = env('rtb-src', sourceGroup, sim.urls.exchangeB, sim.markets.exchangeB.map((m) => m.ticker));
    const config = ingestorConfig(parseEnv(ingestorEnvSchema, e), e);
    kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'replay-round-trip-b' }, log);
    source = createIngestor({ config, kafka, ch: t.ch, log });
    await source.start();
    copyCh = await openClickHouse({ database: 'booktape_copy_b', embeddedPath: t.ch.embeddedPath! });
    await migrate(copyCh);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
  }, 120_000);

  afterAll(async () => {
    await copy?.stop();
    await source?.stop();
    await sim?.close();
    await t?.close();
  });

  it('records a copy whose books equal the source at every delta, with continuous seq but for the stored gap', async () => {
    const pipeline = source.pipeline!;
    await waitFor('source flowing', () => pipeline.counters['exchange-b'].records > 1500, 60_000);
    expect(sim.injectSeqGap()).toBeGreaterThan(0);
    await waitFor('source flowing after the gap', () => pipeline.counters['exchange-b'].records > 3000, 60_000);
    await source.stopCapture();
    await waitUntilStored(kafka, source.topics, sourceGroup, { timeoutMs: 60_000 });
    const src = new RawEventsRepository(t.ch);
    await waitFor('source stored', async () => (await src.count('exchange-b')) >= 3000, 60_000);
    step('source stored');
    const tickers = sim.markets.exchangeB.map((m) => m.ticker);
    const srcRecords = new Map<string, ExchangeBRecord[]>();
    for (const ticker of tickers) srcRecords.set(ticker, (await src.dump('exchange-b', ticker)).map(recordOf));
    const all = [...srcRecords.values()].flat();
    const times = all.map((r) => r.epoch_ms);
    const first = Math.min(...times);
    const last = Math.max(...times);
    const gaps = all.filter((r) => r.type === 'gap');
    expect(gaps.length).toBeGreaterThan(0);
    // The window starts inside the stream, before the gap: the copy starts from the rebuilt books.
    const from = first + Math.floor((gaps[0]!.epoch_ms - first) / 2);
    const to = last;

    const port = (t.app.server.address() as AddressInfo).port;
    const wsUrl = `ws://127.0.0.1:${port}/api/v1/exchange-b/replay/trade-api/ws/v2?from=${from}&to=${to}&api_key=${apiKey}`;
    const copyGroup = uniqueId('rtb-copy-g');
    const e = env('rtb-copy', copyGroup, wsUrl, tickers);
    const config = ingestorConfig(parseEnv(ingestorEnvSchema, e), e);
    copy = createIngestor({ config, kafka, ch: copyCh, log });
    await copy.start();
    step('copy capturing the replay');
    // The replay closes (1000) after the window: the capture then reconnects; it is stopped first.
    const status = () => copy!.sources.find((s) => s.venue === 'exchange-b')!.status() as { reconnects: number };
    await waitFor('replay over', () => status().reconnects >= 1, 90_000, 20);
    await copy.stopCapture();
    await waitUntilStored(kafka, copy.topics, copyGroup, { timeoutMs: 60_000 });
    step('copy stored');
    const dst = new RawEventsRepository(copyCh);

    let compared = 0;
    for (const ticker of tickers) {
      let mine = (await dst.dump('exchange-b', ticker)).map(recordOf);
      // Only the first connection (a reconnect in the moment before the stop starts at seq 1 again).
      const again = mine.findIndex((r, i) => i > 0 && r.seq !== null && mine[i - 1]!.seq !== null && r.seq < mine[i - 1]!.seq!);
      if (again >= 0) mine = mine.slice(0, again);
      const s = srcRecords.get(ticker)!;
      const before = s.filter((r) => r.epoch_ms < from);
      const win = s.filter((r) => r.epoch_ms >= from && r.epoch_ms <= to);
      // The copy opens with the source's book just before the window.
      expect(mine[0]!.type).toBe('snapshot');
      expect(referenceBookB([mine[0]!])).toEqual(referenceBookB(before));
      const theirs = [...before];
      const got: ExchangeBRecord[] = [];
      let j = 0;
      let deltas = 0;
      for (const r of mine) {
        got.push(r);
        if (r.type !== 'delta') continue;
        while (j < win.length && !(win[j]!.type === 'delta' && deltaKey(win[j]!) === deltaKey(r))) theirs.push(win[j++]!);
        expect(j, `${ticker}: a delta the source does not have next`).toBeLessThan(win.length);
        theirs.push(win[j++]!);
        deltas++;
        // Every fifth delta and the end (the reference book is rebuilt from the start each time).
        if (deltas % 5 === 0) expect(referenceBookB(got), `${ticker} book after delta ${deltas}`).toEqual(referenceBookB(theirs));
      }
      theirs.push(...win.slice(j));
      expect(referenceBookB(got)).toEqual(referenceBookB(theirs));
      // Every delta the source applied to a known book is in the copy.
      let applied = 0;
      let known = referenceBookB(before).known;
      for (const r of win) {
        if (r.type === 'delta' && known) applied++;
        if (r.type === 'snapshot') known = r.yes !== null && r.no !== null;
        if (r.type === 'gap' || (r.type === 'delta' && (r.price === null || r.delta === null))) known = false;
      }
      expect(deltas).toBe(applied);
      compared += deltas;
      // The copy's capture saw the source's gap (and no other): one gap record per spell.
      const copyGaps = mine.filter((r) => r.type === 'gap');
      const srcGaps = win.filter((r) => r.type === 'gap');
      expect(srcGaps.length).toBeGreaterThan(0);
      expect(copyGaps.length).toBe(srcGaps.length);
    }
    console.log(`round trip B: ${compared} deltas compared over ${tickers.length} tickers, window ${to - from} ms`);
    expect(compared).toBeGreaterThan(1000);
  }, 240_000);
});
