import fc from 'fast-check';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage } from '@booktape/domain';
import { ExchangeBNormaliser, Sequencer, normaliseExchangeA } from '@booktape/venues';

/**
 * Every frame shape of docs/rules/venue-frames.md (the venues' documentation and captured
 * traffic, old and new), run through the real normalisers and sequencer: the messages the
 * sink stores. Tests of the typed raw tables check that each one round-trips byte for byte.
 */

const M = `0x${'bd31'.repeat(16)}`;
const T1 = '65818619657568813474341868652308942079804919287380422192892211131408793125422';
const T2 = '52114319501245915516055106046884209969926127482827954674443846427813813222426';
const H = '0x' + 'a1b2c3d4e5'.repeat(4);

export const EXCHANGE_A_FRAMES: unknown[] = [
  [
    { event_type: 'book', asset_id: T1, market: M, bids: [{ price: '0.48', size: '30' }, { price: '0.49', size: '20' }], asks: [{ price: '0.53', size: '60' }, { price: '0.52', size: '25' }], timestamp: '1757908892351', hash: H, tick_size: '0.01', last_trade_price: '0.500' },
  ],
  [],
  // A book after a trade: no tick_size, another key order; an empty side.
  { market: M, asset_id: T2, timestamp: '1757908892352', hash: H, event_type: 'book', bids: [], asks: [{ price: '0.5', size: '1000.25' }] },
  // Early captures: buys / sells.
  { event_type: 'book', asset_id: T1, market: M, buys: [{ price: '0.10', size: '5' }], sells: [{ price: '0.90', size: '5' }], timestamp: '1723967931000', hash: H },
  {
    event_type: 'price_change', market: M, timestamp: '1757908892351', price_changes: [
      { asset_id: T1, price: '0.5', size: '200', side: 'BUY', hash: '56621a12' + 'f'.repeat(32), best_bid: '0.5', best_ask: '1' },
      { asset_id: T2, price: '0.5', size: '200', side: 'SELL', hash: '1895759e' + 'e'.repeat(32), best_bid: '0', best_ask: '0.5' },
      { asset_id: T1, price: '0.51', size: '0', side: 'BUY', hash: '56621a13' + 'f'.repeat(32), best_bid: '0.5', best_ask: '1' },
    ],
  },
  // A list entry without claims or hash.
  { event_type: 'price_change', market: M, timestamp: '1757908892353', price_changes: [{ asset_id: T1, price: '0.001', size: '12.5', side: 'SELL' }] },
  { event_type: 'price_change', asset_id: T1, market: M, timestamp: '1729084877448', hash: '3cd4d61e' + '0'.repeat(32), changes: [{ price: '0.4', side: 'SELL', size: '3300' }, { price: '0.39', side: 'BUY', size: '0' }] },
  { event_type: 'price_change', asset_id: T1, market: M, price: '0.514', side: 'SELL', size: '210.5', hash: 'bf32' + '1'.repeat(36), timestamp: '1723967931411' },
  { event_type: 'tick_size_change', asset_id: T1, market: M, old_tick_size: '0.01', new_tick_size: '0.001', timestamp: '1750428146000' },
  { event_type: 'last_trade_price', asset_id: T1, market: M, price: '0.456', size: '219.217767', fee_rate_bps: '0', side: 'BUY', timestamp: '1750428146322', transaction_hash: '0x' + '9'.repeat(64) },
  { event_type: 'best_bid_ask', market: M, asset_id: T1, best_bid: '0.73', best_ask: '0.77', spread: '0.04', timestamp: '1766789469958' },
  { event_type: 'new_market', id: '1031769', question: 'Will it "rain"?\nSürely', market: M, slug: 's-1', assets_ids: [T1, T2], outcomes: ['Yes', 'No'], timestamp: '1766790415550' },
  { event_type: 'market_resolved', id: '1031769', market: M, assets_ids: [T1, T2], winning_asset_id: T1, winning_outcome: 'Yes', timestamp: '1766790415550' },
  // Numbers as JSON numbers, and a timestamp as a number.
  { event_type: 'book', asset_id: T1, market: M, bids: [{ price: 0.48, size: 30 }], asks: [], timestamp: 1757908892360, hash: H },
];

export const EXCHANGE_B_FRAMES: unknown[] = [
  { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 5 } },
  { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: 'KXBTC-25MAR15-B100000', market_id: 'a1b2-uuid', yes_dollars_fp: [['0.4100', '20.00'], ['0.4200', '13.00']], no_dollars_fp: [['0.5400', '200.00'], ['0.5600', '3.00']] } },
  { type: 'orderbook_delta', sid: 5, seq: 2, msg: { market_ticker: 'KXBTC-25MAR15-B100000', market_id: 'a1b2-uuid', price_dollars: '0.4200', delta_fp: '50.00', side: 'yes', ts_ms: 1739548200000 } },
  { type: 'orderbook_snapshot', sid: 5, seq: 3, msg: { market_ticker: 'KXOLD-1', yes: [[45, 100], [46, 250]], no: [[53, 120]], yes_dollars: [['0.45', 100], ['0.46', 250]], no_dollars: [['0.53', 120]] } },
  { type: 'orderbook_delta', sid: 5, seq: 4, msg: { market_ticker: 'KXOLD-1', price: 46, price_dollars: '0.46', delta: -50, delta_fp: '-50.00', side: 'yes', ts: '2026-02-14T15:30:00Z' } },
  { type: 'orderbook_delta', sid: 5, seq: 5, msg: { market_ticker: 'KXOLD-1', price: 46, delta: -5, side: 'no', ts: '2026-02-14T14:15:11.73425Z', ts_ms: 1771078511734 } },
  { type: 'ok', id: 2, sid: 5, seq: 6, msg: { market_tickers: ['KXOLD-1'] } },
  // An empty book, market_id "".
  { type: 'orderbook_snapshot', sid: 5, seq: 7, msg: { market_ticker: 'KXEMPTY-1', market_id: '' } },
  // A null price payload: the book is unknown.
  { type: 'orderbook_delta', sid: 5, seq: 8, msg: { market_ticker: 'KXOLD-1', price_dollars: null, price: null, delta_fp: '1.00', side: 'yes' } },
  { type: 'orderbook_snapshot', sid: 5, seq: 9, msg: { market_ticker: 'KXNULL-1', yes_dollars_fp: null, no_dollars_fp: [['0.0010', '0.50']] } },
  // A seq gap (10 is missing): gap records, then the delta.
  { type: 'orderbook_delta', sid: 5, seq: 11, msg: { market_ticker: 'KXBTC-25MAR15-B100000', price_dollars: '0.4100', delta_fp: '-20.00', side: 'yes', ts_ms: 1739548200500 } },
  { type: 'ticker', sid: 7, seq: 1, msg: { market_ticker: 'KXBTC-25MAR15-B100000', yes_bid_dollars: '0.4200', yes_ask_dollars: '0.4400', volume_fp: '10.00', ts: 1739548200, ts_ms: 1739548200600 } },
  { type: 'trade', sid: 8, seq: 1, msg: { market_ticker: 'KXBTC-25MAR15-B100000', yes_price_dollars: '0.43', count_fp: '3.00', taker_side: 'yes', ts: 1739548201 } },
  // A ticker added to a running subscription: its snapshot at the running seq.
  { type: 'orderbook_snapshot', sid: 5, seq: 12, msg: { market_ticker: 'KXLATE-1', market_id: 'c3', yes_dollars_fp: [['0.0990', '1.5']], no_dollars_fp: [] } },
  // A stream that started mid-session: a delta on a new sid at seq 80134.
  { type: 'orderbook_delta', sid: 9, seq: 80134, msg: { market_ticker: 'KXMID-1', price_dollars: '0.5000', delta_fp: '2.00', side: 'no', ts_ms: 1739548202000 } },
];

const RECEIVED = Date.UTC(2026, 2, 14, 12, 0, 0);

export function exchangeAMessages(frames: readonly unknown[] = EXCHANGE_A_FRAMES, received = RECEIVED): ExchangeAMessage[] {
  const seq = new Sequencer(3);
  const out: ExchangeAMessage[] = [];
  frames.forEach((frame, i) => {
    const r = normaliseExchangeA(frame, new Date(received + i));
    if (r.kind === 'invalid') throw new Error(`exchange A frame ${i} is invalid: ${r.reason}`);
    if (r.kind === 'records') out.push(...seq.stamp(new Date(received + i), r.records, 'exchange-a'));
  });
  return out;
}

export function exchangeBMessages(frames: readonly unknown[] = EXCHANGE_B_FRAMES, received = RECEIVED): ExchangeBMessage[] {
  const seq = new Sequencer(3);
  const n = new ExchangeBNormaliser();
  const out: ExchangeBMessage[] = [];
  frames.forEach((frame, i) => {
    const r = n.normalise(frame, new Date(received + i));
    if (r.kind === 'invalid') throw new Error(`exchange B frame ${i} is invalid: ${r.reason}`);
    if (r.kind === 'records') out.push(...seq.stamp(new Date(received + i), r.records, 'exchange-b'));
  });
  return out;
}

/** Decimal texts as venues spell them, and some they might: trailing zeros, big, tiny, odd. */
export const decimalText = fc.oneof(
  fc.tuple(fc.nat({ max: 10_000_000 }), fc.integer({ min: 0, max: 8 })).map(([m, s]) => (s === 0 ? String(m) : `${Math.floor(m / 10 ** s)}.${String(m % 10 ** s).padStart(s, '0')}`)),
  fc.constantFrom('0', '0.0', '1', '0.50', '1000000.000001', '0.001', '99999999999999999999', '.5', '1e-3', '00.5', '0.5000000000000000000001'),
);

const level = fc.record({ price: decimalText, size: decimalText });
const change = fc.record(
  { price: decimalText, size: decimalText, side: fc.constantFrom('BUY' as const, 'SELL' as const, 'HOLD' as 'BUY'), hash: fc.stringMatching(/^[0-9a-f]{40}$/), best_bid: decimalText, best_ask: decimalText },
  { requiredKeys: ['price', 'size', 'side'] },
).map(({ price, side, size, ...claims }) => ({ price, side, size, ...claims }));
const venueString = fc.oneof(fc.stringMatching(/^[0-9a-zA-Z_x-]{1,80}$/), fc.string({ maxLength: 8 }));
const extraValue = fc.oneof(decimalText, fc.constant(null), fc.integer(), fc.string({ maxLength: 6 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }));

/** Exchange A messages of every record kind, with arbitrary spellings, extras and ids. */
export const exchangeAMessage: fc.Arbitrary<ExchangeAMessage> = fc
  .record({
    kind: fc.constantFrom('book', 'price_change', 'last_trade_price', 'new_kind'),
    asset: venueString,
    hash: venueString,
    ts: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
    bids: fc.array(level, { maxLength: 4 }),
    asks: fc.array(level, { maxLength: 4 }),
    changes: fc.array(change, { maxLength: 4 }),
    extra: fc.option(fc.dictionary(fc.oneof(fc.constantFrom('tick_size', 'last_trade_price', 'fee_rate_bps'), fc.string({ maxLength: 5 })), extraValue, { maxKeys: 3 }), { nil: undefined }),
    seq: fc.bigInt({ min: 0n, max: 2n ** 63n }),
  })
  .map((r) => {
    const event: ExchangeAMessage['event'] = { market: M, asset_id: r.asset, timestamp: String(r.ts), hash: r.hash, event_type: r.kind };
    if (r.kind === 'book') Object.assign(event, { bids: r.bids, asks: r.asks });
    if (r.kind === 'price_change') event.changes = r.changes;
    if (r.extra && Object.keys(r.extra).length > 0) {
      for (const k of ['market', 'asset_id', 'timestamp', 'hash', 'event_type', 'bids', 'asks', 'changes']) delete r.extra[k];
      if (Object.keys(r.extra).length > 0) event.extra = r.extra;
    }
    return { venue: 'exchange-a' as const, received_at: new Date(r.ts + 5).toISOString(), worker_id: 1, ingest_seq: r.seq.toString(), dedup_id: `d${r.seq}`, event };
  });

const pair = fc.tuple(decimalText, decimalText).map(([p, s]) => [p, s] as [string, string]);

/** Exchange B records of every type, with arbitrary spellings, nulls and ids. */
export const exchangeBMessage: fc.Arbitrary<ExchangeBMessage> = fc
  .record({
    type: fc.constantFrom('snapshot' as const, 'delta' as const, 'gap' as const, 'ticker' as const, 'trade' as const),
    ticker: fc.stringMatching(/^[A-Z0-9-]{1,30}$/),
    ms: fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
    sid: fc.option(fc.nat({ max: 1_000_000 }), { nil: null }),
    seq: fc.option(fc.nat({ max: 2_000_000_000 }), { nil: null }),
    yes: fc.option(fc.array(pair, { maxLength: 4 }), { nil: null }),
    no: fc.option(fc.array(pair, { maxLength: 4 }), { nil: null }),
    side: fc.constantFrom('yes' as const, 'no' as const),
    price: fc.option(decimalText, { nil: null }),
    delta: fc.option(fc.tuple(fc.boolean(), decimalText).map(([neg, d]) => (neg ? `-${d}` : d)), { nil: null }),
    venue: fc.option(fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }), { nil: null }),
    market_id: fc.option(venueString, { nil: null }),
    expected: fc.option(fc.nat(), { nil: undefined }),
    data: fc.dictionary(fc.string({ maxLength: 6 }), extraValue, { maxKeys: 4 }),
    ingest: fc.bigInt({ min: 0n, max: 2n ** 63n }),
  })
  .map((r) => {
    const base = { type: r.type, ticker: r.ticker, timestamp: new Date(r.ms).toISOString(), epoch_ms: r.ms, sid: r.sid, seq: r.seq };
    const venue_ts = r.venue === null ? null : new Date(r.venue).toISOString();
    const record: ExchangeBMessage['record'] =
      r.type === 'snapshot' ? { ...base, yes: r.yes, no: r.no, venue_ts, market_id: r.market_id }
      : r.type === 'delta' ? { ...base, side: r.side, price: r.price, delta: r.delta, venue_ts, market_id: r.market_id }
      : r.type === 'gap' ? (r.expected === undefined ? base : { ...base, expected_seq: r.expected })
      : { ...base, venue_ts, data: r.data };
    return { venue: 'exchange-b' as const, received_at: new Date(r.ms).toISOString(), worker_id: 2, ingest_seq: r.ingest.toString(), dedup_id: `b${r.ingest}`, record };
  });

export function isA(m: RawMessage): m is ExchangeAMessage {
  return m.venue === 'exchange-a';
}
