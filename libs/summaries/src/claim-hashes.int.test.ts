import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { ExchangeAEvent, ExchangeAMessage } from '@booktape/domain';
import type { ClaimHashRef } from '@booktape/book';
import { RawEventsRepository, SummariesRepository, type SummaryKey, type SummaryWrite } from '@booktape/storage';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { Roller, type DayResult } from './roller.ts';

/**
 * A closed day's fold reads exchange A rows without their entries' hashes and fetches those
 * that the details of claims that do not hold name afterwards (Roller.rollClosed,
 * SummariesRepository.claimHashes). What it stores and returns must be what reading every
 * hash with its row gives, byte for byte: the first mismatch's detail and every alert's,
 * with the entry's hash or the record's (the list shape stores the record's hash once, as
 * its first entry's), clipped the same; and when the rows changed between the read and the
 * fetch, the day is read again with its hashes.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;

class Captured extends SummariesRepository {
  written: SummaryWrite[] = [];
  fetches: Array<string[] | null> = [];
  /** Runs before a fetch (once): what changes the store between the read and the fetch. */
  beforeFetch: (() => Promise<void>) | null = null;
  override async writeMany(w: readonly SummaryWrite[]): Promise<void> {
    this.written.push(...w);
  }
  override async claimHashes(key: SummaryKey, date: string, fromMs: number, toMs: number, refs: readonly ClaimHashRef[]): Promise<string[] | null> {
    const f = this.beforeFetch;
    this.beforeFetch = null;
    if (f !== null) await f();
    const got = await super.claimHashes(key, date, fromMs, toMs, refs);
    this.fetches.push(got);
    return got;
  }
}

beforeAll(async () => {
  t = await tempClickHouse();
  raw = new RawEventsRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const DAY = Date.UTC(2026, 2, 3);
const DATE = '2026-03-03';
const T = DAY + 7_200_000;
let run = 0;

function stored(w: SummaryWrite[]) {
  return w.map(({ key, day, chunks, checkpoints }) => ({
    key,
    day: { ...day, version: 0, baseVersion: 0, computedAt: 0 },
    chunks: chunks.map((c) => ({ ...c, version: 0 })),
    checkpoints: checkpoints.map((c) => ({ ...c, version: 0, baseVersion: 0 })),
  }));
}

const h = (c: string, n = 64) => `0x${c.repeat(n)}`;

/** A day of both price_change shapes with claims that do not hold, several rows in one millisecond, some kept in their residue. */
function dayEvents(market: string, asset: string): ExchangeAEvent[] {
  const ev = (ts: number, e: Partial<ExchangeAEvent>): ExchangeAEvent => ({ market, asset_id: asset, timestamp: String(ts), hash: '', event_type: 'price_change', ...e }) as ExchangeAEvent;
  return [
    ev(T, { event_type: 'book', hash: h('b', 20), bids: [{ price: '0.4', size: '100' }], asks: [{ price: '0.6', size: '50' }] }),
    // Before 2025-09-15's shape: the record's hash, entries without one (no claims).
    ev(T + 1, { hash: h('1', 20), changes: [{ price: '0.41', side: 'BUY', size: '10' }] }),
    // A row kept in its residue (keys out of order) before the rows with claims at the same millisecond.
    ev(T + 2, { hash: h('2', 20), changes: [{ size: '5', price: '0.42', side: 'BUY' } as never] }),
    // The list shape: the record's hash is its first entry's (stored once); claims that do not hold.
    ev(T + 2, {
      hash: h('3'),
      changes: [
        { price: '0.43', side: 'BUY', size: '7', hash: h('3'), best_bid: '0.5', best_ask: '0.6' },
        // A hash long enough that the detail is clipped.
        { price: '0.59', side: 'SELL', size: '8', hash: h('4', 200), best_bid: '0.43', best_ask: '0.7' },
      ],
    }),
    // An entry without a hash names the record's; the record's own hash is stored.
    ev(T + 2, { hash: h('5'), changes: [{ price: '0.44', side: 'BUY', size: '1', best_bid: '0.1', best_ask: '0.59' }] }),
    // A first entry without a hash, and a record hash of '' (the stored hash is the record's, '').
    ev(T + 2, { hash: '', changes: [{ price: '0.45', side: 'BUY', size: '1', best_bid: '0.2', best_ask: '0.59' }, { price: '0.45', side: 'BUY', size: '2', hash: h('6'), best_bid: '0.3' }] }),
    // A claim that holds only at the end of its millisecond, and one that holds at once.
    ev(T + 3, { hash: h('7'), changes: [{ price: '0.46', side: 'BUY', size: '1', hash: h('7'), best_bid: '0.47', best_ask: '0.59' }] }),
    ev(T + 3, { hash: h('8'), changes: [{ price: '0.47', side: 'BUY', size: '1', hash: h('8'), best_bid: '0.47', best_ask: '0.59' }] }),
    // Later milliseconds: more mismatches, one per row.
    ...Array.from({ length: 30 }, (_, i) => ev(T + 10 + i, { hash: h(String.fromCharCode(97 + (i % 26))), changes: [{ price: '0.3', side: 'BUY', size: String(i + 1), hash: h(String.fromCharCode(97 + (i % 26))), best_bid: '0.9', best_ask: '0.95' }] })),
  ];
}

async function insert(events: ExchangeAEvent[], seq0 = 1, tag = 'x', key?: SummaryKey): Promise<void> {
  // `key`: the events stored as that asset's.
  const messages: ExchangeAMessage[] = events.map((e, i) => ({
    venue: 'exchange-a',
    received_at: new Date(Number(e.timestamp)).toISOString(),
    worker_id: 1,
    ingest_seq: String(seq0 + i),
    dedup_id: `c${run}-${tag}-${i}`,
    event: key === undefined ? e : { ...e, market: key.market, asset_id: key.asset },
  }));
  await raw.insert('exchange-a', messages.map((message, i) => ({ message, position: { partition: 0, offset: String(seq0 + i) } })), `claims-${run}-${tag}`);
}

async function roll(key: SummaryKey, readClaimHashes: boolean, beforeFetch: (() => Promise<void>) | null = null) {
  const repo = new Captured(t.ch);
  repo.beforeFetch = beforeFetch;
  const result = await new Roller(repo, silentLogger(), { closeGraceMs: 0, readClaimHashes }).rollDay(key, DATE, true);
  return { result, repo };
}

describe('claim hashes fetched after a closed day\'s fold', () => {
  it('stores and returns what reading every hash gives, for both price_change shapes', async () => {
    run++;
    const key = { venue: 'exchange-a' as const, market: `0x${String(run).padStart(64, '0')}`, asset: '42' };
    await insert(dayEvents(key.market, key.asset));
    const without = await roll(key, false);
    const withHashes = await roll(key, true);
    expect(without.repo.fetches).toHaveLength(1);
    expect(without.repo.fetches[0]).not.toBeNull();
    expect(withHashes.repo.fetches).toHaveLength(0);
    expect(without.result).toEqual(withHashes.result);
    expect(stored(without.repo.written)).toEqual(stored(withHashes.repo.written));
    // What the details name: the entry's hash, the record's where the entry has none, clipped.
    const details = without.result.alerts.filter((a) => a.kind === 'mismatch').map((a) => a.detail);
    expect(details.length).toBeGreaterThan(30);
    expect(details[0]).toMatch(new RegExp(`hash ${h('3')}$`));
    expect(details[1]).toMatch(/hash 0x4{150,}…$/);
    expect(details[1]!.length).toBe(300);
    expect(details[2]).toMatch(new RegExp(`hash ${h('5')}$`));
    expect(details[3]).toMatch(/hash $/);
    const checks = JSON.parse(without.repo.written[0]!.day.checks) as { checks: { first_mismatch: string } };
    expect(checks.checks.first_mismatch).toBe(details[0]);
  });

  it('reads the day again with its hashes when the rows changed between the read and the fetch', async () => {
    run++;
    const key = { venue: 'exchange-a' as const, market: `0x${String(run).padStart(64, '0')}`, asset: '42' };
    await insert(dayEvents(key.market, key.asset), 10);
    // A row served before the failing claims of T + 2 (a lower ingest_seq), stored after the read.
    const early = { market: key.market, asset_id: key.asset, timestamp: String(T + 2), hash: h('9'), event_type: 'price_change', changes: [{ price: '0.3', side: 'BUY', size: '3' }] } as ExchangeAEvent;
    const without = await roll(key, false, () => insert([early], 1, 'late'));
    expect(without.repo.fetches).toEqual([null]);
    const withHashes = await roll(key, true);
    expect(without.result).toEqual(withHashes.result);
    expect(stored(without.repo.written)).toEqual(stored(withHashes.repo.written));
    expect(without.result.applied).toBe(dayEvents(key.market, key.asset).length + 1);
  });
});

/** No day ever closes: every run is an open day's (records gathered, the last millisecond held back). */
const OPEN = 1e13;

/** An open day rolled in runs, one after each piece stored (`between` runs before each piece's run's fetch, once). */
async function rollOpen(key: SummaryKey, readClaimHashes: boolean, pieces: ExchangeAEvent[][], many: boolean, beforeFetch: (() => Promise<void>) | null = null) {
  const repo = new WritingCaptured(t.ch);
  const roller = new Roller(repo, silentLogger(), { closeGraceMs: OPEN, readClaimHashes });
  const results: DayResult[][] = [];
  let seq = 1;
  for (const [i, piece] of pieces.entries()) {
    await insert(piece, seq, `${readClaimHashes}-${i}`, key);
    seq += piece.length;
    repo.beforeFetch = i === pieces.length - 1 ? beforeFetch : null;
    const hint = Math.min(...piece.map((e) => Number(e.timestamp)));
    if (many) {
      // With a second asset of no events: the read of several books.
      const other = { ...key, asset: '43' };
      const [r] = await roller.rollMany([key, other], DATE, [hint, hint]);
      if (r === undefined || 'error' in r) throw r?.error;
      results.push(r.results);
    } else results.push(await roller.rollFrom(key, DATE, false, hint));
  }
  return { results, repo };
}

/** Captured, writing too (an open day's next run continues from what the last one stored). */
class WritingCaptured extends Captured {
  override async writeMany(w: readonly SummaryWrite[]): Promise<void> {
    this.written.push(...w);
    await SummariesRepository.prototype.writeMany.call(this, w);
  }
}

describe.each([false, true])("claim hashes fetched after an open day's read (several assets in one read: %s)", (many) => {
  const keyOf = (n: number) => ({ venue: 'exchange-a' as const, market: `0x${String(n).padStart(64, '0')}`, asset: '42' });

  it('stores and returns what reading every hash gives, run after run, for both price_change shapes', async () => {
    run++;
    const events = dayEvents('', '');
    // Cut inside the millisecond T + 2 (its rows wait for the next run) and among the later rows.
    const pieces = [events.slice(0, 4), events.slice(4, 20), events.slice(20)];
    const without = await rollOpen(keyOf(1000 + run), false, pieces, many);
    const withHashes = await rollOpen(keyOf(2000 + run), true, pieces, many);
    expect(without.repo.fetches.length).toBeGreaterThanOrEqual(2);
    expect(without.repo.fetches.every((f) => f !== null)).toBe(true);
    expect(withHashes.repo.fetches).toHaveLength(0);
    expect(without.results).toEqual(withHashes.results);
    expect(stored(without.repo.written).map((w) => ({ ...w, key: 0 }))).toEqual(stored(withHashes.repo.written).map((w) => ({ ...w, key: 0 })));
    expect(without.repo.written.every((w) => !w.day.complete)).toBe(true);
    // What the details name: the entry's hash, the record's where the entry has none, clipped.
    const details = without.results.flat().flatMap((r) => r.alerts.filter((a) => a.kind === 'mismatch').map((a) => a.detail));
    expect(details.length).toBeGreaterThan(30);
    expect(details[0]).toMatch(new RegExp(`hash ${h('3')}$`));
    expect(details[1]).toMatch(/hash 0x4{150,}…$/);
    expect(details[1]!.length).toBe(300);
    expect(details[2]).toMatch(new RegExp(`hash ${h('5')}$`));
    expect(details[3]).toMatch(/hash $/);
  });

  it('reads the day again with its hashes when the rows changed between the read and the fetch', async () => {
    run++;
    const a = keyOf(3000 + run);
    const b = keyOf(4000 + run);
    const events = dayEvents('', '');
    const pieces = [events.slice(0, 2), events.slice(2)];
    // A row served before the failing claims of T + 2 (a lower ingest_seq), stored after the second run's read.
    const early = (key: SummaryKey) => ({ market: key.market, asset_id: key.asset, timestamp: String(T + 2), hash: h('9'), event_type: 'price_change', changes: [{ price: '0.3', side: 'BUY', size: '3' }] }) as ExchangeAEvent;
    const without = await rollOpen(a, false, pieces, many, () => insert([early(a)], 0, 'late', a));
    expect(without.repo.fetches).toEqual([null]);
    const withHashes = await rollOpen(b, true, [pieces[0]!, [early(b), ...pieces[1]!]], many);
    expect(without.results).toEqual(withHashes.results);
    expect(stored(without.repo.written).map((w) => ({ ...w, key: 0 }))).toEqual(stored(withHashes.repo.written).map((w) => ({ ...w, key: 0 })));
  });
});
