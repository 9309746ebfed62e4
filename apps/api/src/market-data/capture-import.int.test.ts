import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { ExchangeAEvent, ExchangeAMessage } from '@booktape/domain';
import { importPmxtFile, SummariesRepository } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { writePmxtFile, type PmxtRow } from '../../../../libs/storage/src/pmxt.test-support.ts';
import { bearer, conditionId, ingestSeq, startTestApi, type TestApi } from '../testing.ts';

/**
 * One record per real event across a capture and an import (docs/rules/imports.md#which-copy-wins):
 * a captured hour and a PMXT file of the same events (one row per level of the capture's
 * multi-level frames, decimals spelled otherwise, received later by another recorder) plus
 * events only the file has. Whichever comes first, every answer (raw pages, book at an
 * instant, summaries, coverage with its sources) is the one of the reference market: the
 * same capture plus a file of only the extra events, both stored by the paths that existed
 * before capture and import were matched. Three markets in one store: the reference R,
 * import after capture X, capture after import Y; answers compare with the market id
 * replaced.
 */

const D = Date.UTC(2026, 2, 10);
const H = D + 14 * 3_600_000;
const DATE = '2026-03-10';
const A1 = '5551';
const A2 = '5552';
const FILE = 'polymarket_orderbook_2026-03-10T14.parquet';
const MR = conditionId(2401);
const MX = conditionId(2402);
const MY = conditionId(2403);

let t: TestApi;
let key: string;
let roller: Roller;

const chg = (price: string, side: 'BUY' | 'SELL', size: string, bb: string, ba: string) => ({ price, side, size, best_bid: bb, best_ask: ba });

/** The captured hour: records as the capture stores them (several levels in one price_change). */
function captured(market: string): ExchangeAMessage[] {
  const ev: Array<[number, number, string, Omit<ExchangeAEvent, 'market' | 'timestamp' | 'hash'>]> = [
    [H + 1000, H + 1007, 'b1', { asset_id: A1, event_type: 'book', bids: [{ price: '0.45', size: '100' }, { price: '0.47', size: '50' }], asks: [{ price: '0.55', size: '70' }, { price: '0.52', size: '30' }], extra: { tick_size: '0.01' } }],
    [H + 1500, H + 1507, 'b2', { asset_id: A2, event_type: 'book', bids: [], asks: [{ price: '0.6', size: '10' }] }],
    // One frame, three levels; spellings the file writes otherwise ("20.00" → 20, "0.460" → 0.46).
    [H + 2000, H + 2007, 'p1', { asset_id: A1, event_type: 'price_change', changes: [chg('0.48', 'BUY', '20.00', '0.48', '0.52'), chg('0.52', 'SELL', '0', '0.48', '0.55'), chg('0.460', 'BUY', '15', '0.48', '0.55')] }],
    // A level set to 200, 100, then 200 again in one millisecond: three events.
    [H + 3000, H + 3007, 'p2', { asset_id: A1, event_type: 'price_change', changes: [chg('0.48', 'BUY', '200', '0.48', '0.55'), chg('0.48', 'BUY', '100', '0.48', '0.55')] }],
    [H + 3000, H + 3008, 'p3', { asset_id: A1, event_type: 'price_change', changes: [chg('0.48', 'BUY', '200', '0.48', '0.55')] }],
    [H + 3500, H + 3507, 't1', { asset_id: A1, event_type: 'last_trade_price', extra: { price: '0.550', size: '219.217767', fee_rate_bps: '0', side: 'BUY' } }],
    [H + 4000, H + 4007, 'k1', { asset_id: A1, event_type: 'tick_size_change', extra: { old_tick_size: '0.01', new_tick_size: '0.001' } }],
  ];
  return ev.map(([ts, recv, tag, e], i) => ({
    venue: 'exchange-a',
    received_at: new Date(recv).toISOString(),
    worker_id: 3,
    ingest_seq: ingestSeq(recv, i),
    dedup_id: `0x${tag}`,
    event: { market, timestamp: String(ts), hash: `0x${tag}${'0'.repeat(8)}`, ...e },
  }));
}

const pc = (market: string, asset: string, ts: number, recv: number, side: string, price: string, size: string, bb: string, ba: string): PmxtRow => ({
  timestamp: ts, timestamp_received: recv, market, event_type: 'price_change', asset_id: asset, price, size, side, best_bid: bb, best_ask: ba,
});

/** Events only the file holds: a level of another asset, a level in a captured millisecond the capture did not see, a later change. */
const extraRows = (m: string): PmxtRow[] => [
  pc(m, A1, H + 2000, H + 2090, 'BUY', '0.44', '1', '0.48', '0.55'),
  pc(m, A1, H + 5000, H + 5040, 'SELL', '0.56', '5', '0.48', '0.55'),
  pc(m, A2, H + 5200, H + 5240, 'BUY', '0.3', '7', '0.3', '0.6'),
  { timestamp: H + 6000, timestamp_received: H + 6040, market: m, event_type: 'last_trade_price', asset_id: A2, price: '0.6', size: '2', side: 'SELL', fee_rate_bps: 0, transaction_hash: '0xfeed' },
];

/** The captured events as PMXT rows (one per level), received 500 ms later by another recorder; the extra events first. */
function fullRows(m: string): PmxtRow[] {
  const r = (ts: number, o: Partial<PmxtRow>): PmxtRow => ({ timestamp: ts, timestamp_received: ts + 500, market: m, event_type: 'price_change', asset_id: A1, ...o });
  return [
    ...extraRows(m),
    r(H + 1000, { event_type: 'book', bids: '[["0.45","100"],["0.47","50"]]', asks: '[["0.55","70"],["0.52","30"]]' }),
    r(H + 1500, { event_type: 'book', asset_id: A2, bids: '[]', asks: '[["0.6","10"]]' }),
    r(H + 2000, { price: '0.48', side: 'BUY', size: '20', best_bid: '0.48', best_ask: '0.52' }),
    r(H + 2000, { price: '0.52', side: 'SELL', size: '0', best_bid: '0.48', best_ask: '0.55' }),
    r(H + 2000, { price: '0.46', side: 'BUY', size: '15', best_bid: '0.48', best_ask: '0.55' }),
    r(H + 3000, { price: '0.48', side: 'BUY', size: '200', best_bid: '0.48', best_ask: '0.55' }),
    r(H + 3000, { price: '0.48', side: 'BUY', size: '100', best_bid: '0.48', best_ask: '0.55' }),
    r(H + 3000, { price: '0.48', side: 'BUY', size: '200', best_bid: '0.48', best_ask: '0.55' }),
    r(H + 3500, { event_type: 'last_trade_price', price: '0.55', size: '219.217767', side: 'BUY', fee_rate_bps: 0 }),
    r(H + 4000, { event_type: 'tick_size_change', old_tick_size: '0.01', new_tick_size: '0.001' }),
  ];
}

async function importFile(market: string, rows: PmxtRow[]) {
  // The same file name in every market's directory: the same source.
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-cap-imp-'));
  try {
    const file = path.join(dir, FILE);
    await writePmxtFile(t.ch, file, rows);
    return await importPmxtFile(t.ch, file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function roll(market: string): Promise<void> {
  for (const asset of [A1, A2]) await roller.rollFrom({ venue: 'exchange-a', market, asset }, DATE);
}

async function get(url: string): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.body;
}

/** Every answer the comparison covers, with the market id cut out. */
async function answers(m: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  // A cursor names the market inside its signed text: compared as a mark.
  const add = async (name: string, url: string) => (out[name] = (await get(url)).split(m).join('<M>').replace(/"next_cursor":"[^"]+"/g, '"next_cursor":"<cursor>"'));
  await add('raw', `/exchange-a/market/data?condition_id=${m}&date=${DATE}&include=source`);
  await add('raw-csv', `/exchange-a/market/data?condition_id=${m}&date=${DATE}&format=csv&include=source`);
  await add('range', `/exchange-a/market/data/range?condition_id=${m}&start_timestamp=${H}&end_timestamp=${H + 3_599_999}&limit=3`);
  for (const at of [H + 1200, H + 2000, H + 2999, H + 3000, H + 3600, H + 5100, H + 7000])
    for (const asset of [A1, A2]) await add(`book ${asset} ${at}`, `/exchange-a/market/book?condition_id=${m}&asset_id=${asset}&timestamp=${at}`);
  for (const asset of [A1, A2]) await add(`summary ${asset}`, `/exchange-a/market/orderbook-summary?condition_id=${m}&asset_id=${asset}&date=${DATE}`);
  await add('coverage', `/exchange-a/market/coverage?condition_id=${m}&start_date=${DATE}&end_date=${DATE}`);
  return out;
}

let reference: Record<string, string>;

beforeAll(async () => {
  t = await startTestApi();
  key = await t.newKey();
  roller = new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs: 0 });
  // The reference: the capture alone, then a file of only the extra events.
  await t.filler.insert('exchange-a', captured(MR));
  expect(await importFile(MR, extraRows(MR))).toMatchObject({ inserted: 4, alreadyStored: 0 });
  await roll(MR);
  reference = await answers(MR);
}, 120_000);
afterAll(async () => t?.close());

describe('a capture and an import of the same events', () => {
  it('reference: capture records and the extra events, by hand', () => {
    const data = (JSON.parse(reference.raw!) as { data: Array<{ hash: string; source: string }> }).data;
    // 7 captured records (the frames whole), 4 imported.
    expect(data.map((r) => r.source).sort()).toEqual([...Array(7).fill('capture:worker-3'), ...Array(4).fill(`import:pmxt-v2:${FILE}`)]);
    const cov = JSON.parse(reference.coverage!) as { data: Array<{ events: number; sources: Array<{ source: string; events: number }>; checks: { venue_best_mismatches: number } }> };
    expect(cov.data[0]!.events).toBe(11);
    expect(cov.data[0]!.checks.venue_best_mismatches).toBe(0);
    expect(cov.data[0]!.sources.map((s) => [s.source, s.events])).toEqual([
      ['capture:worker-3', 7],
      [`import:pmxt-v2:${FILE}`, 4],
    ]);
  });

  it('import after capture: the rows of captured events are not stored again; the answers are the reference; importing again changes nothing', async () => {
    await t.filler.insert('exchange-a', captured(MX));
    const r = await importFile(MX, fullRows(MX));
    expect(r).toMatchObject({ rows: 14, inserted: 4, alreadyStored: 10, superseded: 0 });
    await roll(MX);
    expect(await answers(MX)).toEqual(reference);

    const again = await importFile(MX, fullRows(MX));
    expect(again).toMatchObject({ rows: 14, inserted: 0, alreadyStored: 14, superseded: 0 });
    await roll(MX);
    expect(await answers(MX)).toEqual(reference);
  });

  it('capture after import: the capture replaces the imported copies of its events at the rollup; the answers are the reference', async () => {
    const first = await importFile(MY, fullRows(MY));
    expect(first).toMatchObject({ rows: 14, inserted: 14, alreadyStored: 0 });
    await roll(MY);
    await t.filler.insert('exchange-a', captured(MY));
    await roll(MY);
    expect(await answers(MY)).toEqual(reference);

    // The file again: its captured events stay the capture's, nothing is added or lost.
    const again = await importFile(MY, fullRows(MY));
    expect(again).toMatchObject({ rows: 14, inserted: 0, alreadyStored: 14, superseded: 0 });
    await roll(MY);
    expect(await answers(MY)).toEqual(reference);
  });
});
