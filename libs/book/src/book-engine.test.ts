import type { ExchangeAEvent, ExchangeBRecord, PriceChange, PriceLevel } from '@booktape/domain';
import { describe, expect, it } from 'vitest';
import { ExchangeABook, ExchangeBBook } from './book-engine.ts';

const TS = 1_770_700_000_000;

function aBook(ts: number, bids: [string, string][], asks: [string, string][]): ExchangeAEvent {
  const lv = (l: [string, string][]): PriceLevel[] => l.map(([price, size]) => ({ price, size }));
  return { market: '0xm', asset_id: 'a', timestamp: String(ts), hash: `b${ts}`, event_type: 'book', bids: lv(bids), asks: lv(asks) };
}

function aChange(ts: number, ...changes: [string, 'BUY' | 'SELL', string][]): ExchangeAEvent {
  const c: PriceChange[] = changes.map(([price, side, size]) => ({ price, side, size }));
  return { market: '0xm', asset_id: 'a', timestamp: String(ts), hash: `c${ts}`, event_type: 'price_change', changes: c };
}

function top(o: { best_bid: unknown; best_bid_size: unknown; best_ask: unknown; best_ask_size: unknown; mid_price: unknown; spread: unknown } | null) {
  if (o === null) return null;
  return [o.best_bid, o.best_bid_size, o.best_ask, o.best_ask_size, o.mid_price, o.spread];
}

const NULLS = [null, null, null, null, null, null];

describe('ExchangeABook', () => {
  it('reads the best levels of a snapshot whatever their order', () => {
    const book = new ExchangeABook();
    const o = book.apply(aBook(TS, [['0.48', '30'], ['0.49', '20'], ['0.3', '5']], [['0.53', '60'], ['0.52', '25'], ['0.9', '1']]));
    expect(o?.ts).toBe(TS);
    expect(top(o)).toEqual(['0.49', '20', '0.52', '25', '0.505', '0.03']);
  });

  it('sets absolute sizes, removes a level at "0" and falls back to the next level', () => {
    const book = new ExchangeABook();
    book.apply(aBook(TS, [['0.48', '30'], ['0.49', '20']], [['0.52', '25'], ['0.53', '60']]));
    expect(top(book.apply(aChange(TS + 1, ['0.49', 'BUY', '219.217767'])))).toEqual(['0.49', '219.217767', '0.52', '25', '0.505', '0.03']);
    expect(top(book.apply(aChange(TS + 2, ['0.49', 'BUY', '0'], ['0.52', 'SELL', '0'])))).toEqual(['0.48', '30', '0.53', '60', '0.505', '0.05']);
    expect(top(book.apply(aChange(TS + 3, ['0.48', 'BUY', '0'])))).toEqual([null, null, '0.53', '60', null, null]);
    expect(top(book.apply(aChange(TS + 4, ['0.53', 'SELL', '0'])))).toEqual(NULLS);
  });

  it('is unknown before its first snapshot: changes give observations with nulls and are not applied', () => {
    const book = new ExchangeABook();
    expect(top(book.apply(aChange(TS, ['0.5', 'BUY', '10'])))).toEqual(NULLS);
    expect(top(book.apply(aBook(TS + 1, [], [['0.6', '1']])))).toEqual([null, null, '0.6', '1', null, null]);
  });

  it('is not moved by events that are not book events', () => {
    const book = new ExchangeABook();
    const trade: ExchangeAEvent = { market: '0xm', asset_id: 'a', timestamp: String(TS), hash: 't', event_type: 'last_trade_price' };
    expect(book.apply(trade)).toBeNull();
    expect(book.lastObservation()).toBeNull();
  });

  it('keeps exact decimals where floats would not: mid at one more decimal, spread without noise', () => {
    const book = new ExchangeABook();
    expect(top(book.apply(aBook(TS, [['0.01', '1']], [['0.02', '1']])))).toEqual(['0.01', '1', '0.02', '1', '0.015', '0.01']);
    expect(top(book.apply(aBook(TS, [['0.1', '1']], [['0.3', '1']])))).toEqual(['0.1', '1', '0.3', '1', '0.2', '0.2']);
    expect(0.3 - 0.1).not.toBe(0.2);
    expect(top(book.apply(aBook(TS, [['0.7', '1']], [['0.71', '1']])))).toEqual(['0.7', '1', '0.71', '1', '0.705', '0.01']);
  });

  it('refines its tick when a finer price arrives, keeping the levels it has', () => {
    const book = new ExchangeABook();
    book.apply(aBook(TS, [['0.48', '30']], [['0.52', '25']]));
    expect(top(book.apply(aChange(TS + 1, ['0.485', 'BUY', '7'])))).toEqual(['0.485', '7', '0.52', '25', '0.5025', '0.035']);
    expect(top(book.apply(aChange(TS + 2, ['0.4851', 'BUY', '1'], ['0.000001', 'BUY', '1'])))).toEqual(['0.4851', '1', '0.52', '25', '0.50255', '0.0349']);
    expect(top(book.apply(aChange(TS + 3, ['0.4851', 'BUY', '0'], ['0.485', 'BUY', '0'])))).toEqual(['0.48', '30', '0.52', '25', '0.5', '0.04']);
    expect(top(book.apply(aBook(TS + 4, [['0', '5']], [['1', '6']])))).toEqual(['0', '5', '1', '6', '0.5', '1']);
  });

  it('reports a crossed book as it is (negative spread)', () => {
    const book = new ExchangeABook();
    expect(top(book.apply(aBook(TS, [['0.55', '1']], [['0.5', '2']])))).toEqual(['0.55', '1', '0.5', '2', '0.525', '-0.05']);
  });

  it('turns a record it cannot apply exactly into an unknown book until the next snapshot, and counts it', () => {
    const book = new ExchangeABook();
    book.apply(aBook(TS, [['0.48', '30']], [['0.52', '25']]));
    expect(top(book.apply(aChange(TS + 1, ['1.5', 'BUY', '1'])))).toEqual(NULLS);
    expect(book.anomalies).toBe(1);
    expect(book.lastAnomaly).toMatch(/1\.5/);
    expect(top(book.apply(aChange(TS + 2, ['0.5', 'BUY', '1'])))).toEqual(NULLS);
    expect(top(book.apply(aBook(TS + 3, [['0.4', '1.5']], [])))).toEqual(['0.4', '1.5', null, null, null, null]);
    expect(top(book.apply(aChange(TS + 4, ['0.4', 'BUY', '-1'])))).toEqual(NULLS);
    expect(book.anomalies).toBe(2);
  });

  it('round-trips its state through JSON', () => {
    const book = new ExchangeABook();
    book.apply(aBook(TS, [['0.48', '30'], ['0.4855', '2']], [['0.52', '25'], ['0.6', '1']]));
    const state = JSON.parse(JSON.stringify(book.toState())) as unknown;
    expect(state).toEqual({
      v: 1,
      venue: 'exchange-a',
      known: true,
      bids: ['0.4855', '2', '0.48', '30'],
      asks: ['0.52', '25', '0.6', '1'],
      last: { ts: TS, best_bid: '0.4855', best_bid_size: '2', best_ask: '0.52', best_ask_size: '25', mid_price: '0.50275', spread: '0.0345' },
    });
    const restored = ExchangeABook.fromState(state);
    expect(restored.toState()).toEqual(state);
    expect(top(restored.apply(aChange(TS + 1, ['0.4855', 'BUY', '0'])))).toEqual(['0.48', '30', '0.52', '25', '0.5', '0.04']);
  });

  it('reads the venue text of prices and sizes ("0.50", "309.00") and observes and stores canonical values', () => {
    const book = new ExchangeABook();
    expect(top(book.apply(aBook(TS, [['0.480', '309.00'], ['0.4900', '0.50']], [['0.52', '020'], ['1.00', '1.0']])))).toEqual([
      '0.49', '0.5', '0.52', '20', '0.505', '0.03',
    ]);
    expect(top(book.apply(aChange(TS + 1, ['0.490', 'BUY', '0.000'])))).toEqual(['0.48', '309', '0.52', '20', '0.5', '0.04']);
    expect(book.anomalies).toBe(0);
    expect(book.toState()).toMatchObject({ bids: ['0.48', '309'], asks: ['0.52', '20', '1', '1'] });
  });

  it('shows a change hook the top after each applied entry with a claim, and nothing while the book is unknown', () => {
    const book = new ExchangeABook();
    // Entries with a venue claim (best_bid / best_ask): the hook is there to check them.
    const claimed = (ev: ExchangeAEvent): ExchangeAEvent => ({ ...ev, changes: ev.changes!.map((c) => ({ ...c, best_bid: '0.01' })) });
    const seen: unknown[] = [];
    const hook = (e: PriceChange, bid: string | null, ask: string | null): void => void seen.push([e.price, bid, ask]);
    book.apply(claimed(aChange(TS, ['0.5', 'BUY', '1'])), hook);
    expect(seen).toEqual([]);
    book.apply(aBook(TS, [['0.48', '30']], [['0.52', '25']]), hook);
    const o = book.apply(claimed(aChange(TS + 1, ['0.55', 'BUY', '1'], ['0.52', 'SELL', '0'], ['0.55', 'BUY', '0'], ['0.48', 'BUY', '0'])), hook);
    expect(seen).toEqual([
      ['0.55', '0.55', '0.52'],
      ['0.52', '0.55', null],
      ['0.55', '0.48', null],
      ['0.48', null, null],
    ]);
    expect(top(o)).toEqual(NULLS); // known, both sides empty
    seen.length = 0;
    book.apply(aBook(TS + 2, [['0.48', '30']], [['0.52', '25']]));
    book.apply(claimed(aChange(TS + 3, ['0.49', 'BUY', '1'], ['7', 'BUY', '1'], ['0.47', 'BUY', '1'])), hook);
    expect(seen).toEqual([['0.49', '0.49', '0.52']]); // stops at the record it cannot apply
    expect(book.isKnown()).toBe(false);
    // Entries without a claim (the shape before 2025-09-15) are applied without the hook.
    seen.length = 0;
    book.apply(aBook(TS + 4, [['0.48', '30']], [['0.52', '25']]));
    const plain = book.apply(aChange(TS + 5, ['0.49', 'BUY', '1']), hook);
    expect(seen).toEqual([]);
    expect(plain?.best_bid).toBe('0.49');
  });

  it('refuses a malformed state', () => {
    expect(() => ExchangeABook.fromState({ v: 2 })).toThrow(RangeError);
    expect(() => ExchangeABook.fromState({ v: 1, venue: 'exchange-b', known: true, yes: [], no: [], last: null })).toThrow(/exchange-b/);
    expect(() => ExchangeABook.fromState({ v: 1, venue: 'exchange-a', known: true, bids: ['0.5'], asks: [], last: null })).toThrow(RangeError);
    expect(() => ExchangeABook.fromState({ v: 1, venue: 'exchange-a', known: true, bids: ['7', '1'], asks: [], last: null })).toThrow(RangeError);
    expect(() => ExchangeABook.fromState({ v: 1, venue: 'exchange-a', known: false, bids: ['0.5', '1'], asks: [], last: null })).toThrow(RangeError);
  });
});

function bRec(ts: number, r: Partial<ExchangeBRecord> & { type: ExchangeBRecord['type'] }): ExchangeBRecord {
  return { ticker: 'KX', timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 1, seq: null, ...r };
}

const snap = (ts: number, yes: [string, string][] | null, no: [string, string][] | null) => bRec(ts, { type: 'snapshot', yes, no });
const delta = (ts: number, side: 'yes' | 'no', price: string | null, d: string | null) => bRec(ts, { type: 'delta', side, price, delta: d });

describe('ExchangeBBook', () => {
  it('bids the best YES and asks 1 − the best NO bid, with that NO level’s size', () => {
    const book = new ExchangeBBook();
    const o = book.apply(snap(TS, [['0.41', '20'], ['0.42', '13']], [['0.54', '200'], ['0.56', '3']]));
    expect(o?.ts).toBe(TS);
    expect(top(o)).toEqual(['0.42', '13', '0.44', '3', '0.43', '0.02']);
  });

  it('adds signed, fractional deltas and removes a level at zero or below', () => {
    const book = new ExchangeBBook();
    book.apply(snap(TS, [['0.41', '20'], ['0.42', '13']], [['0.56', '3']]));
    expect(top(book.apply(delta(TS + 1, 'yes', '0.42', '50.25')))).toEqual(['0.42', '63.25', '0.44', '3', '0.43', '0.02']);
    expect(top(book.apply(delta(TS + 2, 'yes', '0.42', '-63.25')))).toEqual(['0.41', '20', '0.44', '3', '0.425', '0.03']);
    expect(top(book.apply(delta(TS + 3, 'no', '0.56', '-5')))).toEqual(['0.41', '20', null, null, null, null]);
    expect(top(book.apply(delta(TS + 4, 'no', '0.555', '0.5')))).toEqual(['0.41', '20', '0.445', '0.5', '0.4275', '0.035']);
    expect(top(book.apply(delta(TS + 5, 'yes', '0.6', '-1')))).toEqual(['0.41', '20', '0.445', '0.5', '0.4275', '0.035']);
  });

  it('is unknown after a gap record (not an observation) until the next snapshot', () => {
    const book = new ExchangeBBook();
    book.apply(snap(TS, [['0.41', '20']], [['0.56', '3']]));
    expect(book.apply(bRec(TS + 1, { type: 'gap', expected_seq: 5 }))).toBeNull();
    expect(book.lastObservation()?.ts).toBe(TS);
    expect(book.isKnown()).toBe(false);
    expect(top(book.apply(delta(TS + 2, 'yes', '0.41', '1')))).toEqual(NULLS);
    expect(top(book.apply(snap(TS + 3, [['0.4', '1']], [])))).toEqual(['0.4', '1', null, null, null, null]);
  });

  it('is unknown after a null price payload, in a delta or a snapshot side', () => {
    const book = new ExchangeBBook();
    book.apply(snap(TS, [['0.41', '20']], [['0.56', '3']]));
    expect(top(book.apply(delta(TS + 1, 'yes', null, '5')))).toEqual(NULLS);
    expect(top(book.apply(delta(TS + 2, 'yes', '0.41', '5')))).toEqual(NULLS);
    expect(top(book.apply(snap(TS + 3, [['0.41', '20']], [])))).toEqual(['0.41', '20', null, null, null, null]);
    expect(top(book.apply(snap(TS + 4, [['0.41', '20']], null)))).toEqual(NULLS);
    expect(top(book.apply(snap(TS + 5, [], [])))).toEqual(NULLS);
    expect(book.isKnown()).toBe(true);
  });

  it('reads the venue dollar text ("0.4200", "20.00", "-5.00") and observes canonical values', () => {
    const book = new ExchangeBBook();
    expect(top(book.apply(snap(TS, [['0.4200', '20.00']], [['0.5500', '3.50']])))).toEqual(['0.42', '20', '0.45', '3.5', '0.435', '0.03']);
    expect(top(book.apply(delta(TS + 1, 'yes', '0.4200', '-5.00')))).toEqual(['0.42', '15', '0.45', '3.5', '0.435', '0.03']);
    expect(top(book.apply(delta(TS + 2, 'no', '0.550', '-3.50')))).toEqual(['0.42', '15', null, null, null, null]);
    expect(book.anomalies).toBe(0);
    expect(book.toState()).toMatchObject({ yes: ['0.42', '15'], no: [] });
  });

  it('leaves the book as it is for non-book records (ticker, trade)', () => {
    const book = new ExchangeBBook();
    book.apply(snap(TS, [['0.41', '20']], [['0.56', '3']]));
    const before = book.toState();
    expect(book.apply(bRec(TS + 1, { type: 'ticker', data: { price: 41 } }))).toBeNull();
    expect(book.apply(bRec(TS + 2, { type: 'trade', data: { yes_price: 41, count: 2 } }))).toBeNull();
    expect(book.toState()).toEqual(before);
    expect(book.isKnown()).toBe(true);
  });

  it('treats a snapshot side the venue omitted as empty', () => {
    const book = new ExchangeBBook();
    expect(top(book.apply(bRec(TS, { type: 'snapshot', no: [['0.3', '2']] })))).toEqual([null, null, '0.7', '2', null, null]);
  });

  it('round-trips its state through JSON, unknown books included', () => {
    const book = new ExchangeBBook();
    book.apply(snap(TS, [['0.41', '20']], [['0.555', '3'], ['0.5', '1']]));
    const state = JSON.parse(JSON.stringify(book.toState())) as unknown;
    expect(state).toMatchObject({ v: 1, venue: 'exchange-b', known: true, yes: ['0.41', '20'], no: ['0.555', '3', '0.5', '1'] });
    expect(ExchangeBBook.fromState(state).toState()).toEqual(state);
    book.apply(bRec(TS + 1, { type: 'gap' }));
    const unknown = JSON.parse(JSON.stringify(book.toState())) as unknown;
    expect(unknown).toMatchObject({ known: false, yes: [], no: [], last: { ts: TS, best_ask: '0.445' } });
    const restored = ExchangeBBook.fromState(unknown);
    expect(top(restored.apply(delta(TS + 2, 'yes', '0.41', '1')))).toEqual(NULLS);
  });
});

describe('bestLevels', () => {
  it('is the first levels of toState, for every depth, through random streams of both venues', async () => {
    const fc = (await import('fast-check')).default;
    const { exchangeAStreamArb, exchangeBStreamArb } = await import('./streams.test-support.ts');
    const check = (book: ExchangeABook | ExchangeBBook, depth: number) => {
      const state = book.toState();
      const [first, second] = state.venue === 'exchange-a' ? [state.bids, state.asks] : [state.yes, state.no];
      expect(book.bestLevels(depth)).toEqual([first.slice(0, 2 * depth), second.slice(0, 2 * depth)]);
    };
    fc.assert(
      fc.property(exchangeAStreamArb, fc.integer({ min: 1, max: 30 }), (events, depth) => {
        const book = new ExchangeABook();
        for (const e of events) {
          book.apply(e);
          check(book, depth);
        }
      }),
    );
    fc.assert(
      fc.property(exchangeBStreamArb, fc.integer({ min: 1, max: 30 }), (records, depth) => {
        const book = new ExchangeBBook();
        for (const r of records) {
          book.apply(r);
          check(book, depth);
        }
      }),
    );
  });
});

describe('the level a record names, after it (the merged replay stream)', () => {
  const bRec = (r: Partial<ExchangeBRecord>): ExchangeBRecord => ({ type: 'delta', ticker: 'T', timestamp: '', epoch_ms: TS, sid: 1, seq: 1, ...r });

  it('exchange B: a YES bid is a bid at its price, a NO bid an ask at 1 − price, with the size after the delta', () => {
    const book = new ExchangeBBook();
    book.apply(bRec({ type: 'snapshot', yes: [['0.4100', '120.00'], ['0.4200', '15.00']], no: [['0.5500', '40.00'], ['0.5000', '3.00']] }));
    expect(book.bidsAsks(10)).toEqual([['0.42', '15', '0.41', '120'], ['0.45', '40', '0.5', '3']]);
    book.apply(bRec({ side: 'no', price: '0.5500', delta: '-10.00' }));
    expect(book.levelAfter('no', '0.5500')).toEqual({ side: 'ask', price: '0.45', size: '30' });
    book.apply(bRec({ side: 'yes', price: '0.4200', delta: '-15' }));
    expect(book.levelAfter('yes', '0.4200')).toEqual({ side: 'bid', price: '0.42', size: '0' });
    // A finer price than the book holds yet: re-indexed, and still 1 − price exactly.
    book.apply(bRec({ side: 'no', price: '0.555', delta: '2.5' }));
    expect(book.levelAfter('no', '0.555')).toEqual({ side: 'ask', price: '0.445', size: '2.5' });
    expect(book.bidsAsks(2)).toEqual([['0.41', '120'], ['0.445', '2.5', '0.45', '30']]);
    // Reads change nothing; a price finer than any held level is empty.
    expect(book.levelAfter('yes', '0.4111')).toEqual({ side: 'bid', price: '0.4111', size: '0' });
    expect(book.bidsAsks(1)).toEqual([['0.41', '120'], ['0.445', '2.5']]);
  });

  it('exchange B: on an unknown book the level is named but its size is unknown; an unreadable price or side names none', () => {
    const book = new ExchangeBBook();
    book.apply(bRec({ side: 'yes', price: '0.4200', delta: '5' }));
    expect(book.levelAfter('yes', '0.4200')).toEqual({ side: 'bid', price: '0.42', size: null });
    expect(book.levelAfter('no', '0.3')).toEqual({ side: 'ask', price: '0.7', size: null });
    expect(book.levelAfter('no', 'abc')).toBeNull();
    expect(book.levelAfter('maybe', '0.3')).toBeNull();
  });

  it('exchange A: a BUY names a bid, a SELL an ask, with the size the event left', () => {
    const book = new ExchangeABook();
    book.apply(aBook(TS, [['0.48', '30']], [['0.52', '25']]));
    book.apply(aChange(TS + 1, ['0.520', 'SELL', '0'], ['0.47', 'BUY', '10.50']));
    expect(book.levelAfter('SELL', '0.520')).toEqual({ side: 'ask', price: '0.52', size: '0' });
    expect(book.levelAfter('BUY', '0.47')).toEqual({ side: 'bid', price: '0.47', size: '10.5' });
  });
});
