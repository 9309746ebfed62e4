import type { ExchangeAEvent, ExchangeBRecord, PriceChange, PriceLevel } from '@booktape/domain';
import fc from 'fast-check';
import { turnTaking } from '@booktape/testkit/properties';
import { describe, expect, it } from 'vitest';
import { BookChecker, MAX_SPELLS, type BookChecks, type ChecksState } from './checks.ts';
import { category, checkHistory, referenceDayChecks, withClaims } from './checks-reference.test-support.ts';
import type { Observation } from './observation.ts';
import { referenceObservationsA, referenceObservationsB } from './reference.test-support.ts';
import { newBook, restoreBook, type AnyBook, type BookVenue } from './rollup.ts';
import { exchangeAStreamArb, exchangeBStreamArb, tsOf } from './streams.test-support.ts';

const DAY = 86_400_000;
const SLOW = 120_000;
type Rec = ExchangeAEvent | ExchangeBRecord;

const json = <T>(x: T): unknown => JSON.parse(JSON.stringify(x)) as unknown;

/** Records of one millisecond each, in order (the streams' times never decrease). */
function byMillisecond(records: readonly Rec[]): Rec[][] {
  const out: Rec[][] = [];
  for (const r of records) {
    const last = out[out.length - 1];
    if (last !== undefined && tsOf(last[0]!) === tsOf(r)) last.push(r);
    else out.push([r]);
  }
  return out;
}

/** Times floored to multiples of q: q > 1 turns a stream into same-millisecond bursts. */
function squash<R extends Rec>(records: readonly R[], q: number): R[] {
  return records.map((r) => {
    const ts = Math.floor(tsOf(r) / q) * q;
    return ('epoch_ms' in r ? { ...r, epoch_ms: ts, timestamp: new Date(ts).toISOString() } : { ...r, timestamp: String(ts) }) as R;
  });
}

/**
 * The rollup's way through a stream: day by day (each day from the previous day's book and
 * carried checks state, both through JSON), and within a day in runs resumed from stored
 * state at the millisecond groups `cut` picks. Returns each day's checks as of its end.
 */
function runDays(venue: BookVenue, records: readonly Rec[], cut: (group: number) => boolean, timed: (group: number) => boolean = () => false) {
  const days = new Map<number, BookChecks>();
  const observations: Observation[] = [];
  const alerts: ReturnType<BookChecker['drainAlerts']> = [];
  let book: AnyBook = newBook(venue);
  let checker: BookChecker | null = null;
  let day = Number.NaN;
  byMillisecond(records).forEach((group, g) => {
    const d = Math.floor(tsOf(group[0]!) / DAY) * DAY;
    if (checker === null || d !== day) {
      let carried: ChecksState | null = null;
      if (checker !== null) {
        days.set(day, checker.checksAt(day + DAY));
        alerts.push(...checker.drainAlerts());
        carried = json(checker.toState()) as ChecksState;
        book = restoreBook(venue, json(book.toState()));
      }
      checker = BookChecker.startDay(venue, d, book, carried);
      day = d;
    } else if (cut(g)) {
      alerts.push(...checker.drainAlerts());
      checker = BookChecker.resume(venue, json(checker.toState()));
      book = restoreBook(venue, json(book.toState()));
    }
    // The rollup hands each millisecond's time, read once (the groups `timed` picks here).
    checker.applyMillisecond(book, group, (o) => observations.push(o), timed(g) ? tsOf(group[0]!) : undefined);
  });
  if (checker !== null) {
    days.set(day, (checker as BookChecker).checksAt(day + DAY));
    alerts.push(...(checker as BookChecker).drainAlerts());
  }
  return { days, observations, alerts };
}

const streamArb = (venue: BookVenue): fc.Arbitrary<Rec[]> =>
  venue === 'exchange-a'
    ? fc
        .tuple(exchangeAStreamArb, fc.array(fc.nat(), { minLength: 1, maxLength: 300 }), fc.constantFrom(1, 1, 50, 1000, 60_000))
        .map(([records, picks, q]) => withClaims(squash(records, q), picks))
    : fc.tuple(exchangeBStreamArb, fc.constantFrom(1, 1, 50, 1000)).map(([records, q]) => squash(records, q));

describe.each(['exchange-a', 'exchange-b'] as const)('%s: the checker equals the naive reference', (venue) => {
  const v = venue === 'exchange-a' ? 'A' : 'B';

  it('day by day, with runs resumed from JSON state at any milliseconds, times handed or read from the records', async () => {
    await fc.assert(
      turnTaking(streamArb(venue), fc.array(fc.boolean(), { maxLength: 200 }), fc.array(fc.boolean(), { maxLength: 50 }), (records, cuts, times) => {
        const { days, observations, alerts } = runDays(
          venue,
          records,
          (g) => cuts[g % Math.max(1, cuts.length)] === true,
          (g) => times[g % Math.max(1, times.length)] !== false,
        );
        // The observations pushed are the engine's, record by record.
        expect(observations).toEqual(v === 'A' ? referenceObservationsA(records as ExchangeAEvent[]) : referenceObservationsB(records as ExchangeBRecord[]));
        const h = checkHistory(v, records);
        for (const [day, checks] of days) expect(category(checks)).toEqual(referenceDayChecks(h, day, day + DAY, MAX_SPELLS));
        const totals = [...days.values()];
        const mismatches = totals.reduce((t, c) => t + c.venue_best_mismatches, 0);
        const crossed = totals.reduce((t, c) => t + c.crossed_observations, 0);
        expect(alerts.filter((a) => a.kind === 'mismatch').length).toBe(Math.min(mismatches, alerts.length));
        if (mismatches + crossed <= 1000) {
          expect(alerts.filter((a) => a.kind === 'mismatch')).toHaveLength(mismatches);
          expect(alerts.filter((a) => a.kind === 'crossed')).toHaveLength(crossed);
        }
      }),
      { numRuns: 300 },
    );
  }, SLOW);

  it('as of any time after the last record (covered_until), open spells counted up to it', async () => {
    await fc.assert(
      turnTaking(streamArb(venue), fc.nat({ max: DAY }), (records, x) => {
        if (records.length === 0) return;
        const lastTs = tsOf(records[records.length - 1]!);
        const day = Math.floor(lastTs / DAY) * DAY;
        const until = Math.min(day + DAY, lastTs + x);
        const mine = records.filter((r) => tsOf(r) >= day);
        const before = records.filter((r) => tsOf(r) < day);
        const book = newBook(venue);
        let carried: ChecksState | null = null;
        // Rebuild the start-of-day book and carried state the simple way: a straight run.
        if (before.length > 0) {
          const straight = newBook(venue);
          let checker: BookChecker | null = null;
          let d = Number.NaN;
          for (const g of byMillisecond(before)) {
            const gd = Math.floor(tsOf(g[0]!) / DAY) * DAY;
            if (checker === null || gd !== d) {
              checker = BookChecker.startDay(venue, gd, straight, checker === null ? null : checker.toState());
              d = gd;
            }
            checker.applyMillisecond(straight, g, () => {});
          }
          carried = checker!.toState();
          for (const r of before) book.apply(r);
          expect(book.toState()).toEqual(straight.toState());
        }
        const checker = BookChecker.startDay(venue, day, book, carried);
        for (const g of byMillisecond(mine)) checker.applyMillisecond(book, g, () => {});
        const h = checkHistory(v, records);
        const got = checker.checksAt(until);
        expect(category(got)).toEqual(referenceDayChecks(h, day, until, MAX_SPELLS));
        // Pure: asking again, or for the day's end, changes nothing stored.
        expect(checker.checksAt(until)).toEqual(got);
        expect(json(checker.toState())).toEqual(checker.toState());
      }),
      { numRuns: 150 },
    );
  }, SLOW);
});

describe('exchange-a claims', () => {
  it('true claims (after the entry or at the end of the millisecond, in any venue text) never mismatch', async () => {
    await fc.assert(
      turnTaking(exchangeAStreamArb, fc.array(fc.nat(), { minLength: 1, maxLength: 300 }), fc.constantFrom(1, 50, 1000), (raw, picks, q) => {
        const records = withClaims(squash(raw, q), picks, true);
        const { days } = runDays('exchange-a', records, () => false);
        const h = checkHistory('A', records);
        expect(h.claims.filter((c) => c.mismatch !== null)).toEqual([]);
        for (const c of days.values()) {
          expect(c.venue_best_mismatches).toBe(0);
          expect(c.first_mismatch).toBeNull();
        }
      }),
      { numRuns: 200 },
    );
  }, SLOW);
});

// ---- examples ----

const T = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
const DAY0 = Date.UTC(2026, 2, 1);
let hashes = 0;

function snapshot(ts: number, bids: [string, string][], asks: [string, string][]): ExchangeAEvent {
  const lv = (l: [string, string][]): PriceLevel[] => l.map(([price, size]) => ({ price, size }));
  return { market: '0xm', asset_id: 'a', timestamp: String(ts), hash: `b${hashes++}`, event_type: 'book', bids: lv(bids), asks: lv(asks) };
}

type Entry = [price: string, side: 'BUY' | 'SELL', size: string, claim?: [bid: string, ask: string]];

function change(ts: number, ...entries: Entry[]): ExchangeAEvent {
  const hash = `c${hashes++}`;
  const changes: PriceChange[] = entries.map(([price, side, size, claim], k) => ({
    price,
    side,
    size,
    hash: `${hash}.${k}`,
    ...(claim !== undefined && { best_bid: claim[0], best_ask: claim[1] }),
  }));
  return { market: '0xm', asset_id: 'a', timestamp: String(ts), hash, event_type: 'price_change', changes };
}

/** Runs records (any order given) through a fresh day, one millisecond group at a time. */
function check(venue: BookVenue, records: Rec[], book: AnyBook = newBook(venue)) {
  const checker = BookChecker.startDay(venue, DAY0, book, null);
  const observations: Observation[] = [];
  for (const g of byMillisecond(records)) checker.applyMillisecond(book, g, (o) => observations.push(o));
  return { checker, observations, checks: checker.checksAt(DAY0 + DAY), book };
}

describe('BookChecker examples', () => {
  // A burst at T: a bid at 0.50 appears, then is removed; at T+1 an ask changes. Each
  // entry claims the venue's top right after it.
  const burst = (): ExchangeAEvent[] => [
    change(T, ['0.50', 'BUY', '3', ['0.5', '0.52']]),
    change(T, ['0.50', 'BUY', '0', ['0.48', '0.52']]),
  ];
  const opening = snapshot(T - 10, [['0.48', '10']], [['0.52', '10'], ['0.53', '5']]);
  const after = change(T + 1, ['0.53', 'SELL', '1', ['0.48', '0.52']]);

  it('venue order: every claim holds, nothing crossed', () => {
    const { checks } = check('exchange-a', [opening, ...burst(), after]);
    expect(checks).toMatchObject({ book_events: 4, venue_best_checked: 3, venue_best_mismatches: 0, crossed_observations: 0, unknown_book_ms: 0 });
    expect(checks.first_mismatch).toBeNull();
  });

  it('a burst applied in swapped order is caught: the next claim disagrees with the rebuilt book', () => {
    const [a, b] = burst();
    const { checker, checks } = check('exchange-a', [opening, b!, a!, after]);
    expect(checks.venue_best_mismatches).toBe(1);
    expect(checks.first_mismatch_ms).toBe(T + 1);
    expect(checks.first_mismatch).toContain('claimed bid "0.48" ask "0.52"; rebuilt bid 0.5 ask 0.52 after the entry');
    expect(checks.first_mismatch).toContain(`hash ${after.hash}.0`);
    expect(checker.drainAlerts()).toEqual([{ kind: 'mismatch', ts: T + 1, detail: checks.first_mismatch }]);
    expect(checker.drainAlerts()).toEqual([]);
  });

  it('a trade burst whose every entry claims the end-of-burst top is not flagged, nor crossed though it crosses inside the ms', () => {
    const book = snapshot(T - 5, [['0.48', '10'], ['0.47', '10']], [['0.52', '10'], ['0.53', '5'], ['0.60', '1']]);
    const end: [string, string] = ['0.55', '0.60'];
    const trade = [
      change(T, ['0.55', 'BUY', '20', end]), // the taker's order rests first: bid 0.55 over ask 0.52
      change(T, ['0.52', 'SELL', '0', end]),
      change(T, ['0.53', 'SELL', '0', end], ['0.55', 'BUY', '5', end]),
    ];
    const { checks, observations } = check('exchange-a', [book, ...trade]);
    expect(observations.map((o) => o.spread)).toEqual(['0.04', '-0.03', '-0.02', '0.05']);
    expect(checks).toMatchObject({ venue_best_checked: 4, venue_best_mismatches: 0, crossed_observations: 0, first_crossed_ms: null });
  });

  it('a book crossed at the end of a millisecond is counted, once per millisecond', () => {
    const { checker, checks } = check('exchange-a', [
      snapshot(T, [['0.50', '1']], [['0.55', '1']]),
      change(T + 1, ['0.56', 'BUY', '1']), // crossed at the end of T+1
      change(T + 2, ['0.55', 'SELL', '0']), // bid 0.56, ask empty: not crossed
      change(T + 3, ['0.56', 'SELL', '2']), // bid = ask: crossed
      change(T + 3, ['0.57', 'SELL', '1']), // still crossed at the end of T+3 (ask 0.56)
    ]);
    expect(checks.crossed_observations).toBe(2);
    expect(checks.first_crossed_ms).toBe(T + 1);
    expect(checker.drainAlerts()).toEqual([
      { kind: 'crossed', ts: T + 1, detail: 'best bid 0.56 >= best ask 0.55' },
      { kind: 'crossed', ts: T + 3, detail: 'best bid 0.56 >= best ask 0.56' },
    ]);
  });

  it('compares claims as decimals, an empty side as 0 / 1, and falls back to the record-level claim', () => {
    const old: ExchangeAEvent = { ...change(T + 1, ['0.52', 'SELL', '0']), extra: { best_bid: '0.480', best_ask: '1.00' } };
    const wrongOld: ExchangeAEvent = { ...change(T + 2, ['0.48', 'BUY', '0']), extra: { best_bid: '0.48' } };
    const { checks } = check('exchange-a', [snapshot(T, [['0.48', '10']], [['0.52', '10']]), old, wrongOld]);
    expect(checks).toMatchObject({ venue_best_checked: 2, venue_best_mismatches: 1, first_mismatch_ms: T + 2 });
    expect(checks.first_mismatch).toBe(`claimed bid "0.48" ask -; rebuilt bid 0 ask 1 after the entry, bid 0 ask 1 at the end of the millisecond; hash ${wrongOld.hash}`);
  });

  it('does not check claims while the book is unknown, and counts the unknown time from the first event', () => {
    const { checks } = check('exchange-a', [
      change(T, ['0.5', 'BUY', '1', ['0.9', '0.95']]),
      snapshot(T + 250, [['0.5', '1']], []),
      change(T + 300, ['2', 'BUY', '1', ['0.5', '1']]), // not a price: unknown until the next book
      snapshot(T + 1000, [], []),
    ]);
    expect(checks.venue_best_checked).toBe(0);
    expect(checks.unknown_book_ms).toBe(250 + 700);
    expect(checks.spells).toEqual([
      { kind: 'unknown_book', start_ms: T, end_ms: T + 250, detail: 'no snapshot yet' },
      { kind: 'unknown_book', start_ms: T + 300, end_ms: T + 1000, detail: expect.stringMatching(/^anomaly: price "2"/) as string },
    ]);
  });
});

function bRec(ts: number, r: Partial<ExchangeBRecord> & { type: ExchangeBRecord['type'] }): ExchangeBRecord {
  return { ticker: 'KX', timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 7, seq: null, ...r };
}

describe('BookChecker on exchange B', () => {
  it('records sequence gaps as spells until the next snapshot, and ignores ticker / trade records', () => {
    const { checks, observations, book } = check('exchange-b', [
      bRec(T, { type: 'snapshot', seq: 1, yes: [['0.4200', '20.00']], no: [['0.5500', '3']] }),
      bRec(T + 5, { type: 'ticker', seq: null, data: { price: 42 } }),
      bRec(T + 10, { type: 'gap', seq: 5, expected_seq: 2 }),
      bRec(T + 20, { type: 'delta', seq: 6, side: 'yes', price: '0.42', delta: '-5.00' }),
      bRec(T + 30, { type: 'gap', seq: 9, expected_seq: 7 }),
      bRec(T + 40, { type: 'trade', seq: null, data: { yes_price: 42 } }),
      bRec(T + 100, { type: 'snapshot', seq: 10, yes: [['0.41', '1']], no: [] }),
      bRec(T + 200, { type: 'delta', seq: 11, side: 'no', price: null, delta: '1' }),
    ]);
    expect(observations[0]).toMatchObject({ best_bid: '0.42', best_bid_size: '20', best_ask: '0.45', best_ask_size: '3' });
    expect(checks).toMatchObject({ book_events: 4, sequence_gaps: 2, venue_best_checked: 0 });
    expect(checks.spells).toEqual([
      { kind: 'sequence_gap', start_ms: T + 10, end_ms: T + 100, detail: 'gap: sid 7 seq 5 expected 2' },
      { kind: 'unknown_book', start_ms: T + 200, end_ms: DAY0 + DAY, detail: 'null price payload' },
    ]);
    expect(checks.unknown_book_ms).toBe(90 + (DAY0 + DAY - T - 200));
    expect(book.isKnown()).toBe(false);
  });

  it('carries an open spell into the next day, with its kind and detail', () => {
    const { checker, book } = check('exchange-b', [
      bRec(T, { type: 'snapshot', yes: [['0.42', '1']], no: [] }),
      bRec(T + 10, { type: 'gap', seq: 5, expected_seq: 2 }),
    ]);
    const next = BookChecker.startDay('exchange-b', DAY0 + DAY, restoreBook('exchange-b', json(book.toState())), json(checker.toState()) as ChecksState);
    expect(next.checksAt(DAY0 + DAY + 500)).toMatchObject({
      unknown_book_ms: 500,
      spells: [{ kind: 'sequence_gap', start_ms: DAY0 + DAY, end_ms: DAY0 + DAY + 500, detail: 'gap: sid 7 seq 5 expected 2' }],
    });
    // Without a carried state: an unknown book with earlier observations is still unknown.
    const bare = BookChecker.startDay('exchange-b', DAY0 + DAY, restoreBook('exchange-b', json(book.toState())), null);
    expect(bare.checksAt(DAY0 + DAY + 1).spells).toEqual([{ kind: 'unknown_book', start_ms: DAY0 + DAY, end_ms: DAY0 + DAY + 1, detail: 'unknown since an earlier day' }]);
    // A new asset is not unknown before its first event.
    expect(BookChecker.startDay('exchange-b', DAY0, newBook('exchange-b'), null).checksAt(DAY0 + DAY).unknown_book_ms).toBe(0);
  });

  it(`keeps at most ${MAX_SPELLS} spells, counting the rest and all their time`, () => {
    const records: ExchangeBRecord[] = [];
    for (let k = 0; k < 150; k++) {
      records.push(bRec(T + k * 10, { type: 'gap', seq: k, expected_seq: k - 1 }));
      records.push(bRec(T + k * 10 + 3, { type: 'snapshot', yes: [], no: [] }));
    }
    const { checks } = check('exchange-b', records);
    expect(checks.spells).toHaveLength(MAX_SPELLS);
    expect(checks.spells_dropped).toBe(50);
    expect(checks.unknown_book_ms).toBe(150 * 3);
    expect(checks.sequence_gaps).toBe(150);
  });
});

describe('checks state', () => {
  it('round-trips through JSON and refuses malformed state', () => {
    const { checker } = check('exchange-a', [change(T, ['0.5', 'BUY', '1'])]);
    const state = json(checker.toState());
    expect(BookChecker.resume('exchange-a', state).toState()).toEqual(state);
    const s = state as ChecksState;
    for (const bad of [
      null,
      { ...s, v: 2 },
      { ...s, checks: { ...s.checks, book_events: -1 } },
      { ...s, checks: { ...s.checks, first_mismatch: 3 } },
      { ...s, checks: { ...s.checks, spells: [{ kind: 'x', start_ms: 0, end_ms: 1, detail: '' }] } },
      { ...s, checks: { ...s.checks, spells: [{ kind: 'unknown_book', start_ms: 5, end_ms: 1, detail: '' }] } },
      { ...s, open: { kind: 'unknown_book', start_ms: 'x', detail: '' } },
    ]) {
      expect(() => BookChecker.resume('exchange-a', bad)).toThrow(RangeError);
    }
  });
});
