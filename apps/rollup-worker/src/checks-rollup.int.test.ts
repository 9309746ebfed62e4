import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BookChecker, type ChecksState } from '@booktape/book';
import { silentLogger } from '@booktape/config';
import type { ExchangeAEvent, ExchangeBRecord, PriceChange, RawMessage } from '@booktape/domain';
import { RawEventsRepository, SummariesRepository, type SummaryKey } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';

/**
 * The rollup stores each asset-day's venue cross-checks (issue 9 point 4) with its summary
 * row, computed from the same ordered records: a wrong venue claim is a stored mismatch,
 * a B gap is a sequence_gap spell, and incremental runs store what one full run does.
 */

const DAY = Date.UTC(2026, 1, 10); // a closed day
const DATE = '2026-02-10';
const OPEN = 1e13; // close grace: the day never closes
const CLOSED = 0;

let t: TestClickHouse;
let raw: RawEventsRepository;
let repo: SummariesRepository;
let seq = 0;
let run = 0;

beforeAll(async () => {
  t = await tempClickHouse();
  raw = new RawEventsRepository(t.ch);
  repo = new SummariesRepository(t.ch);
});
afterAll(async () => t?.cleanup());

function aMsg(market: string, ev: Omit<ExchangeAEvent, 'market' | 'asset_id' | 'hash'> & { hash?: string }): RawMessage {
  seq++;
  const event = { market, asset_id: '123', hash: `0xh${seq}`, ...ev } as ExchangeAEvent;
  return { venue: 'exchange-a', received_at: new Date(Number(ev.timestamp)).toISOString(), worker_id: 1, ingest_seq: String(seq), dedup_id: `d${seq}`, event };
}

function bMsg(ticker: string, rec: Omit<ExchangeBRecord, 'ticker' | 'timestamp'>): RawMessage {
  seq++;
  const record = { ticker, timestamp: new Date(rec.epoch_ms).toISOString(), ...rec } as ExchangeBRecord;
  return { venue: 'exchange-b', received_at: record.timestamp, worker_id: 1, ingest_seq: String(seq), dedup_id: `b${seq}`, record };
}

const book = (ms: number) => ({ event_type: 'book' as const, timestamp: String(DAY + ms), bids: [{ price: '0.48', size: '30' }], asks: [{ price: '0.52', size: '25' }] });
const change = (ms: number, changes: PriceChange[]) => ({ event_type: 'price_change' as const, timestamp: String(DAY + ms), changes });

/** An A day: correct claims, one wrong claim at +3 s, a crossed book at +4 s, a burst that crosses and uncrosses within +5 s. */
function dayA(market: string): RawMessage[] {
  return [
    aMsg(market, book(1000)),
    aMsg(market, change(2000, [{ price: '0.49', side: 'BUY', size: '10', best_bid: '0.49', best_ask: '0.52' }])),
    // Wrong: the ask is now 0.51, the venue says 0.52.
    aMsg(market, change(3000, [{ price: '0.51', side: 'SELL', size: '5', best_bid: '0.49', best_ask: '0.52' }])),
    // Crossed at the end of the millisecond (claims agree with the rebuilt book).
    aMsg(market, change(4000, [{ price: '0.55', side: 'BUY', size: '1', best_bid: '0.55', best_ask: '0.51' }])),
    aMsg(market, change(4500, [{ price: '0.55', side: 'BUY', size: '0', best_bid: '0.49', best_ask: '0.51' }])),
    // A trade burst: crosses inside the millisecond, every frame claims the end state.
    aMsg(market, change(5000, [{ price: '0.51', side: 'BUY', size: '5', best_bid: '0.49', best_ask: '0.52' }])),
    aMsg(market, change(5000, [{ price: '0.51', side: 'BUY', size: '0', best_bid: '0.49', best_ask: '0.52' }])),
    aMsg(market, change(5000, [{ price: '0.51', side: 'SELL', size: '0', best_bid: '0.49', best_ask: '0.52' }])),
    aMsg(market, change(6000, [{ price: '0.47', side: 'BUY', size: '2', best_bid: '0.49', best_ask: '0.52' }])),
  ];
}

/** A B day: snapshot, delta, a gap at +3 s, a delta during it, the next snapshot at +7 s, a delta. */
function dayB(ticker: string): RawMessage[] {
  const base = { sid: 4 };
  return [
    bMsg(ticker, { ...base, seq: 1, type: 'snapshot', epoch_ms: DAY + 1000, yes: [['0.40', '10']], no: [['0.55', '4']] }),
    bMsg(ticker, { ...base, seq: 2, type: 'delta', epoch_ms: DAY + 2000, side: 'yes', price: '0.41', delta: '3' }),
    bMsg(ticker, { ...base, seq: 9, type: 'gap', epoch_ms: DAY + 3000, expected_seq: 3 }),
    bMsg(ticker, { ...base, seq: 10, type: 'delta', epoch_ms: DAY + 4000, side: 'yes', price: '0.42', delta: '1' }),
    bMsg(ticker, { ...base, seq: 11, type: 'snapshot', epoch_ms: DAY + 7000, yes: [['0.40', '10']], no: [['0.55', '4']] }),
    bMsg(ticker, { ...base, seq: 12, type: 'delta', epoch_ms: DAY + 8000, side: 'no', price: '0.56', delta: '2' }),
  ];
}

async function storedChecks(key: SummaryKey): Promise<ChecksState> {
  const day = await repo.day(key, DATE);
  expect(day).not.toBeNull();
  return JSON.parse(day!.checks) as ChecksState;
}

async function insert(venue: 'exchange-a' | 'exchange-b', msgs: RawMessage[]): Promise<void> {
  await raw.insert(venue, msgs.map((message) => ({ message, position: { partition: 0, offset: String(++run) } })), `t${run}`);
}

describe('stored cross-checks', () => {
  it('a wrong venue claim is a stored mismatch; a crossed book is counted; a trade burst is not', async () => {
    const market = `0x${'a1'.repeat(32)}`;
    const key: SummaryKey = { venue: 'exchange-a', market, asset: '123' };
    await insert('exchange-a', dayA(market));
    const [r] = await new Roller(repo, silentLogger(), { closeGraceMs: CLOSED }).rollFrom(key, DATE);
    const s = await storedChecks(key);
    expect(s.v).toBe(1);
    expect(s.checks).toMatchObject({
      book_events: 9,
      venue_best_checked: 8,
      venue_best_mismatches: 1,
      first_mismatch_ms: DAY + 3000,
      crossed_observations: 1,
      first_crossed_ms: DAY + 4000,
      unknown_book_ms: 0,
      spells: [],
    });
    expect(s.checks.first_mismatch).toContain('0.52');
    // The run hands the same findings to the worker (logs and metrics).
    expect(r!.alerts.map((a) => [a.kind, a.ts])).toEqual([
      ['mismatch', DAY + 3000],
      ['crossed', DAY + 4000],
    ]);
    // The coverage endpoint's read.
    expect(await repo.checksForMarket('exchange-a', market, DATE, DATE)).toEqual([{ asset: '123', date: DATE, coveredUntil: DAY + 86_400_000, complete: true, checks: s }]);
    expect(await repo.checksForMarket('exchange-a', market, '2026-02-11', '2026-02-20')).toEqual([]);
  });

  it('a B gap is a sequence_gap spell until the next snapshot', async () => {
    const ticker = 'KXCHECK-GAP';
    const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
    await insert('exchange-b', dayB(ticker));
    await new Roller(repo, silentLogger(), { closeGraceMs: CLOSED }).rollFrom(key, DATE);
    const s = await storedChecks(key);
    expect(s.checks).toMatchObject({ sequence_gaps: 1, unknown_book_ms: 4000, venue_best_checked: 0 });
    expect(s.checks.spells).toEqual([{ kind: 'sequence_gap', start_ms: DAY + 3000, end_ms: DAY + 7000, detail: expect.stringContaining('expected 3') }]);
    expect(s.open).toBeNull();
  });

  it.each([
    ['exchange-a', dayA],
    ['exchange-b', dayB],
  ] as const)('%s: incremental runs (open day, pieces, late data) store the checks of one full run', async (venue, make) => {
    const market = venue === 'exchange-a' ? `0x${'b2'.repeat(31)}${String(run).padStart(4, '0').slice(-4)}` : `KXCHECK-INC-${run}`;
    const key: SummaryKey = { venue, market, asset: venue === 'exchange-a' ? '123' : market };
    const all = make(market);
    const roller = new Roller(repo, silentLogger(), { closeGraceMs: OPEN });
    // Pieces in order, then a late piece that falls before what was covered (a rebuild).
    const pieces = [all.slice(0, 2), all.slice(3, 5), all.slice(5), [all[2]!]];
    const outcomes: string[] = [];
    for (const p of pieces) {
      await insert(venue, p);
      for (const r of await roller.rollFrom(key, DATE)) outcomes.push(r.outcome);
    }
    expect(outcomes).toContain('incremental');
    const incremental = await repo.day(key, DATE);
    await roller.rollDay(key, DATE, true);
    const full = await repo.day(key, DATE);
    expect(full!.coveredUntil).toBe(incremental!.coveredUntil);
    expect(JSON.parse(incremental!.checks)).toEqual(JSON.parse(full!.checks));
    // And the checks continue across runs: at least one of the pieces' runs resumed them.
    expect(() => BookChecker.resume(venue, JSON.parse(full!.checks))).not.toThrow();
  });

  it('pure incremental appends (no late data) equal one full run, and a row without checks is rebuilt', async () => {
    const ticker = 'KXCHECK-APPEND';
    const key: SummaryKey = { venue: 'exchange-b', market: ticker, asset: ticker };
    const all = dayB(ticker);
    const roller = new Roller(repo, silentLogger(), { closeGraceMs: OPEN });
    const outcomes: string[] = [];
    for (const p of [all.slice(0, 2), all.slice(2, 4), all.slice(4)]) {
      await insert('exchange-b', p);
      for (const r of await roller.rollFrom(key, DATE)) outcomes.push(r.outcome);
    }
    expect(outcomes).toEqual(['full', 'incremental', 'incremental']);
    const incremental = await repo.day(key, DATE);
    await roller.rollDay(key, DATE, true);
    expect(JSON.parse(incremental!.checks)).toEqual(JSON.parse((await repo.day(key, DATE))!.checks));

    // A row whose checks are missing (written before migration 008) cannot be continued.
    const day = (await repo.day(key, DATE))!;
    await repo.write(key, { ...day, version: day.version + 1, checks: '' }, []);
    await insert('exchange-b', [bMsg(ticker, { sid: 4, seq: 13, type: 'delta', epoch_ms: DAY + 9000, side: 'no', price: '0.56', delta: '1' })]);
    const [r] = await roller.rollFrom(key, DATE);
    expect(r!.outcome).toBe('full');
    expect(JSON.parse((await repo.day(key, DATE))!.checks)).toMatchObject({ v: 1, checks: { sequence_gaps: 1 } });
  });
});
