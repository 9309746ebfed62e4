import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeBRecord } from '@booktape/domain';
import { waitUntilStored } from '@booktape/ingestor';
import { RawEventsRepository } from '@booktape/storage';
import { waitFor } from '@booktape/testkit';
import { compareReplayedBooksB, referenceBookB } from '@booktape/book/testing';
import { startRoundTrip, type RoundTrip } from './round-trip.test-support.ts';

const t0 = Date.now();
const step = (what: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}`);

/**
 * The exchange B replay's round trip (issue 25): the simulator (all of the venue's price
 * shapes, and one lost message) → capture → store gives the source; the project's own
 * capture, pointed at the API's exchange B replay websocket the way it is pointed at the
 * venue (EXCHANGE_B_WS_URL), records a second copy of a window of it into another database.
 * The copy's books must equal the source's after every delta and at the end (deltas
 * matched by content, in order), every delta the source stored once it had the ticker's book
 * (after its gap too) must be in the copy, and the copy's seq must be continuous but for the one gap the source had inside
 * the window.
 */

type Row = Record<string, unknown>;
const lineage = ['received_at', 'worker_id', 'ingest_seq', 'dedup_id'];
const recordOf = (r: Row): ExchangeBRecord => {
  const out = { ...r };
  for (const k of lineage) delete out[k];
  return out as unknown as ExchangeBRecord;
};

describe('exchange B history → replay websocket → capture → a second copy', () => {
  let rt: RoundTrip;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  beforeAll(async () => {
    rt = await startRoundTrip({
      venue: 'exchange-b',
      // Every price shape the venue has sent (dollars, cents beside dollars, cents only).
      sim: { eventsPerSecond: 600, seed: 26, legacyShapes: true, markets: { exchangeA: 1, exchangeB: 3 } },
      copyDatabase: 'booktape_copy_b',
      venueEnv: (s, wsUrl) => ({
        EXCHANGE_B_WS_URL: wsUrl,
        EXCHANGE_B_TICKERS: s.markets.exchangeB.map((m) => m.ticker).join(','),
        EXCHANGE_B_API_KEY_ID: 'k1',
        EXCHANGE_B_PRIVATE_KEY: pem,
      }),
    });
  }, 120_000);

  afterAll(async () => rt?.close());

  it('records a copy whose books equal the source at every delta, with continuous seq but for the stored gap', async () => {
    const { t, sim, source, kafka, copyCh } = rt;
    const pipeline = source.pipeline!;
    await waitFor('source flowing', () => pipeline.counters['exchange-b'].records > 1500, 60_000);
    expect(sim.injectSeqGap()).toBeGreaterThan(0);
    await waitFor('source flowing after the gap', () => pipeline.counters['exchange-b'].records > 3000, 60_000);
    await source.stopCapture();
    await waitUntilStored(kafka, source.topics, rt.sourceGroup, { timeoutMs: 60_000 });
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

    const wsUrl = `${rt.apiWs}/exchange-b/replay/trade-api/ws/v2?from=${from}&to=${to}&api_key=${rt.apiKey}`;
    const { ingestor: copy, group: copyGroup } = await rt.startCopy(wsUrl);
    step('copy capturing the replay');
    // The replay closes (1000) after the window: the capture then reconnects; it is stopped first.
    const status = () => copy.sources.find((s) => s.venue === 'exchange-b')!.status() as { reconnects: number };
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
      const c = compareReplayedBooksB(before, win, mine);
      expect(c.mismatch, ticker).toBeNull();
      expect(c.deltas).toBe(c.applied);
      const deltas = c.deltas;
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
