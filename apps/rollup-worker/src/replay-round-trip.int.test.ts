import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { utcDate, type ExchangeAEvent } from '@booktape/domain';
import { waitUntilStored, type Ingestor } from '@booktape/ingestor';
import type { Simulator } from '@booktape/simulator';
import { RawEventsRepository, SummariesRepository, type ClickHouse } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { waitFor } from '@booktape/testkit';
import { referenceBookStepsA } from '@booktape/book/testing';
import type { TestApi } from '@booktape/api/testing';
import { startRoundTrip, type RoundTrip } from './round-trip.test-support.ts';

const log = silentLogger();
const t0 = Date.now();
const step = (what: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}`);

/**
 * The replay's round trip (issue 25, the main test): the simulator → capture → store gives
 * the source; the project's own capture, pointed at the API's exchange A replay websocket
 * the way it is pointed at the venue (EXCHANGE_A_WS_URL), records a second copy of a window
 * of it into another database. The copy must hold the same events in the same order, its
 * books must equal the source's at every event, and its cross-checks (the rollup's claims
 * against the rebuilt book) must find no mismatch.
 */

/** Stored records of a venue as the events the capture made (lineage and serving order kept apart). */
type Row = Record<string, unknown>;
const lineage = ['received_at', 'worker_id', 'ingest_seq', 'dedup_id'];
function eventOf(r: Row): ExchangeAEvent {
  const { market, asset_id, timestamp, hash, event_type, bids, asks, changes, ...rest } = r;
  for (const k of lineage) delete rest[k];
  const e: ExchangeAEvent = { market: market as string, asset_id: asset_id as string, timestamp: timestamp as string, hash: hash as string, event_type: event_type as string };
  if (bids !== undefined) e.bids = bids as never;
  if (asks !== undefined) e.asks = asks as never;
  if (changes !== undefined) e.changes = changes as never;
  if (Object.keys(rest).length > 0) e.extra = rest;
  return e;
}
/** The repository's dump is per market in serving order; the books are per asset. */
const ofAsset = (rows: Row[], asset: string) => rows.filter((r) => r.asset_id === asset);
const isBookEvent = (e: ExchangeAEvent) => e.event_type === 'book' || e.event_type === 'price_change';

describe('exchange A history → replay websocket → capture → a second copy', () => {
  let rt: RoundTrip;
  let t: TestApi;
  let sim: Simulator;
  let copy: Ingestor | undefined;

  beforeAll(async () => {
    rt = await startRoundTrip({
      venue: 'exchange-a',
      sim: { eventsPerSecond: 600, seed: 25, markets: { exchangeA: 2, exchangeB: 1 } },
      copyDatabase: 'booktape_copy',
      venueEnv: (s, wsUrl) => ({ EXCHANGE_A_WS_URL: wsUrl, EXCHANGE_A_GAMMA_URL: s.urls.gamma, EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '0' }),
    });
    ({ t, sim } = rt);
  }, 120_000);

  afterAll(async () => rt?.close());

  it('records a copy whose events and books equal the source and whose cross-checks find nothing', async () => {
    const { source, kafka, copyCh } = rt;
    const pipeline = source.pipeline!;
    await waitFor('source flowing', () => pipeline.counters['exchange-a'].records > 3000, 60_000);
    await source.stopCapture();
    step('source captured');
    await waitUntilStored(kafka, source.topics, rt.sourceGroup, { timeoutMs: 60_000 });
    const src = new RawEventsRepository(t.ch);
    await waitFor('source stored', async () => (await src.count('exchange-a')) >= 3000, 60_000);
    step('source stored');
    const srcRows = (await Promise.all(sim.markets.exchangeA.map((m) => src.dump('exchange-a', m.conditionId)))).flat();
    const times = srcRows.map((r) => Number(r.timestamp));
    const [first, last] = [Math.min(...times), Math.max(...times)];
    // The window starts inside the stream: the copy's books start from the rebuilt book there.
    const from = first + Math.floor((last - first) / 3);
    const to = last;
    const tokens = sim.markets.exchangeA.flatMap((m) => m.tokenIds);

    const wsUrl = `${rt.apiWs}/exchange-a/replay/ws/market?from=${from}&to=${to}&api_key=${rt.apiKey}`;
    copy = (await rt.startCopy(wsUrl, { EXCHANGE_A_TOKENS: tokens.join(',') })).ingestor;
    step('copy capturing the replay');

    const inWindow = srcRows.filter((r) => Number(r.timestamp) >= from && Number(r.timestamp) <= to);
    const dst = new RawEventsRepository(copyCh);
    // Every event of the window, plus an opening book per token.
    await waitFor('copy stored', async () => (await dst.count('exchange-a')) >= inWindow.length + tokens.length, 90_000, 1000);
    step('copy stored');
    await copy.stopCapture();
    const dstRows = (await Promise.all(sim.markets.exchangeA.map((m) => dst.dump('exchange-a', m.conditionId)))).flat();

    let checkedEvents = 0;
    for (const asset of tokens) {
      const s = ofAsset(srcRows, asset).map(eventOf);
      const c = ofAsset(dstRows, asset).map(eventOf);
      const sWindow = s.filter((x) => Number(x.timestamp) >= from);
      // The copy: the opening book (the source's book just before `from`), then the window's events, same order, same content.
      const [opening, ...cWindow] = c;
      expect(opening!.event_type).toBe('book');
      expect(Number(opening!.timestamp)).toBeLessThan(from);
      expect(cWindow).toEqual(sWindow);
      // Books at every event: the source's from its whole history, the copy's from its opening book.
      const sBooks = [...referenceBookStepsA(s.filter(isBookEvent))];
      const cBooks = [...referenceBookStepsA(c.filter(isBookEvent))];
      const sBefore = s.filter((x) => Number(x.timestamp) < from && isBookEvent(x)).length;
      // cBooks[0] is the opening book: the source's book after its last event before the window.
      expect(cBooks.length).toBe(sBooks.length - sBefore + 1);
      for (let i = 0; i < cBooks.length; i++) {
        expect(cBooks[i], `${asset} book after event ${i}`).toEqual(sBooks[sBefore - 1 + i]);
        checkedEvents++;
      }
    }
    expect(checkedEvents).toBeGreaterThan(500);

    // The cross-checks of both copies: the rollup's claims against the rebuilt book.
    const mismatches = async (ch: ClickHouse) => {
      const repo = new SummariesRepository(ch);
      const roller = new Roller(repo, log, { closeGraceMs: 0 });
      let checked = 0;
      let bad = 0;
      for (const m of sim.markets.exchangeA) {
        for (const asset of m.tokenIds) {
          for (const date of new Set([utcDate(first), utcDate(last)])) await roller.rollDay({ venue: 'exchange-a', market: m.conditionId, asset }, date);
        }
        for (const row of await repo.checksForMarket('exchange-a', m.conditionId, utcDate(first), utcDate(last))) {
          checked += row.checks?.checks.venue_best_checked ?? 0;
          bad += (row.checks?.checks.venue_best_mismatches ?? 0) + (row.checks?.checks.crossed_observations ?? 0);
        }
      }
      return { checked, bad };
    };
    const srcChecks = await mismatches(t.ch);
    const dstChecks = await mismatches(copyCh);
    console.log(`round trip: ${inWindow.length} events in the window, ${checkedEvents} books compared; claims checked source ${srcChecks.checked} / copy ${dstChecks.checked}`);
    expect(dstChecks.checked).toBeGreaterThan(100);
    expect(dstChecks.bad).toBe(0);
    expect(srcChecks.bad).toBe(0);
  }, 240_000);
});
