import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExchangeAEvent } from '@booktape/domain';
import { normaliseExchangeA } from '@booktape/venues';
import { ExchangeAFrameEncoder } from './exchange-a.frames.test-support.ts';

/**
 * The replay's frames, given to the capture's own normaliser, must give the records that
 * were stored, field for field: a second capture of the replay stores what the first one did.
 */

const M = `0x${'bd31'.repeat(16)}`;
const T1 = '65818619657568813474341868652308942079804919287380422192892211131408793125422';
const T2 = '52114319501245915516055106046884209969926127482827954674443846427813813222426';
const H = '0x' + 'a1b2c3d4e5'.repeat(4);

const FRAMES: unknown[] = [
  [{ event_type: 'book', asset_id: T1, market: M, bids: [{ price: '0.48', size: '30' }, { price: '0.49', size: '20' }], asks: [{ price: '0.53', size: '60' }, { price: '0.52', size: '25' }], timestamp: '1757908892351', hash: H, tick_size: '0.01', last_trade_price: '0.500' }],
  { market: M, asset_id: T2, timestamp: '1757908892352', hash: H, event_type: 'book', bids: [], asks: [{ price: '0.5', size: '1000.25' }] },
  { event_type: 'book', asset_id: T1, market: M, buys: [{ price: '0.10', size: '5' }], sells: [{ price: '0.90', size: '5' }], timestamp: '1723967931000', hash: H },
  {
    event_type: 'price_change', market: M, timestamp: '1757908892351', price_changes: [
      { asset_id: T1, price: '0.5', size: '200', side: 'BUY', hash: '56621a12' + 'f'.repeat(32), best_bid: '0.5', best_ask: '1' },
      { asset_id: T2, price: '0.5', size: '200', side: 'SELL', hash: '1895759e' + 'e'.repeat(32), best_bid: '0', best_ask: '0.5' },
      { asset_id: T1, price: '0.51', size: '0', side: 'BUY', hash: '56621a13' + 'f'.repeat(32), best_bid: '0.5', best_ask: '1' },
    ],
  },
  // Two frames of one millisecond, each a YES/NO pair: two frames again, not one.
  { event_type: 'price_change', market: M, timestamp: '1757908892400', price_changes: [{ asset_id: T1, price: '0.5', size: '1', side: 'BUY', hash: 'aa', best_bid: '0.5', best_ask: '0.6' }, { asset_id: T2, price: '0.5', size: '1', side: 'SELL', hash: 'bb' }] },
  { event_type: 'price_change', market: M, timestamp: '1757908892400', price_changes: [{ asset_id: T1, price: '0.5', size: '2', side: 'BUY', hash: 'aa', best_bid: '0.5', best_ask: '0.6' }, { asset_id: T2, price: '0.5', size: '2', side: 'SELL', hash: 'bb' }] },
  { event_type: 'price_change', market: M, timestamp: '1757908892353', price_changes: [{ asset_id: T1, price: '0.001', size: '12.5', side: 'SELL' }] },
  { event_type: 'price_change', asset_id: T1, market: M, timestamp: '1729084877448', hash: '3cd4d61e' + '0'.repeat(32), changes: [{ price: '0.4', side: 'SELL', size: '3300' }, { price: '0.39', side: 'BUY', size: '0' }] },
  { event_type: 'price_change', asset_id: T1, market: M, price: '0.514', side: 'SELL', size: '210.5', hash: 'bf32' + '1'.repeat(36), timestamp: '1723967931411' },
  { event_type: 'price_change', asset_id: T1, market: M, price: '0.514', side: 'SELL', size: '210.5', best_bid: '0.5', hash: 'bf33' + '1'.repeat(36), timestamp: '1723967931412' },
  { event_type: 'tick_size_change', asset_id: T1, market: M, old_tick_size: '0.01', new_tick_size: '0.001', timestamp: '1750428146000' },
  { event_type: 'last_trade_price', asset_id: T1, market: M, price: '0.456', size: '219.217767', fee_rate_bps: '0', side: 'BUY', timestamp: '1750428146322', transaction_hash: '0x' + '9'.repeat(64) },
  { event_type: 'best_bid_ask', market: M, asset_id: T1, best_bid: '0.73', best_ask: '0.77', spread: '0.04', timestamp: '1766789469958' },
  { event_type: 'new_market', id: '1031769', question: 'Will it "rain"?\nSürely', market: M, slug: 's-1', assets_ids: [T1, T2], outcomes: ['Yes', 'No'], timestamp: '1766790415550' },
  { event_type: 'market_resolved', id: '1031769', market: M, assets_ids: [T1, T2], winning_asset_id: T1, winning_outcome: 'Yes', timestamp: '1766790415550' },
  { event_type: 'book', asset_id: T1, market: M, bids: [{ price: 0.48, size: 30 }], asks: [], timestamp: 1757908892360, hash: H },
];

const AT = new Date('2026-03-01T00:00:00Z');

function normalise(frame: unknown): ExchangeAEvent[] {
  const r = normaliseExchangeA(typeof frame === 'string' ? frame : JSON.stringify(frame), AT);
  if (r.kind !== 'records') throw new Error(`not records: ${JSON.stringify(r)}`);
  return r.records;
}

/** The stored record (exchangeAPayload): the event with its extras beside the named fields. */
const stored = (e: ExchangeAEvent) => JSON.parse(JSON.stringify(e.extra ? { ...e.extra, ...(({ extra: _x, ...rest }) => rest)(e) } : e)) as Record<string, unknown>;

/** Stored records of frames as the capture numbers them (frame i, record j), through the encoder, back through the normaliser. */
function roundTrip(frames: unknown[]): { before: ExchangeAEvent[]; after: ExchangeAEvent[]; sent: string[] } {
  const enc = new ExchangeAFrameEncoder();
  const before: ExchangeAEvent[] = [];
  const sent: string[] = [];
  frames.forEach((f, i) => {
    normalise(f).forEach((e, j) => {
      before.push(e);
      sent.push(...enc.push(stored(e), String((1_757_908_892_000n * 2n ** 23n) + BigInt(i) * 2n ** 11n + BigInt(j))).map((f) => f.text));
    });
  });
  sent.push(...enc.end().map((f) => f.text));
  return { before, after: sent.flatMap(normalise), sent };
}

describe('exchange A replay frames', () => {
  it('give back every stored record of every venue shape', () => {
    const { before, after, sent } = roundTrip(FRAMES);
    expect(after).toEqual(before);
    // The list frame of three entries (two assets) is one frame again; the two pairs of one millisecond stay two.
    const lists = sent.filter((s) => s.includes('"price_changes"'));
    expect(lists.map((s) => (JSON.parse(s) as { price_changes: unknown[] }).price_changes.length)).toEqual([3, 2, 2]);
    // The old shapes go out as stored (the flat one without a claim, and the list entry without a hash, in the `changes` shape).
    expect(sent.filter((s) => s.includes('"changes"')).length).toBe(3);
    expect(sent.some((s) => s.includes('"price":"0.514"') && !s.includes('changes'))).toBe(true);
  });

  it('give back the records of any list-shaped frames (property)', () => {
    const decimal = fc.tuple(fc.integer({ min: 0, max: 999 }), fc.constantFrom('', '0', '00', '5')).map(([n, d]) => (d === '' ? `0.${String(n).padStart(3, '0')}` : `${n}.${d}`));
    const entry = fc.record({
      asset_id: fc.constantFrom(T1, T2, '123'),
      price: decimal,
      size: decimal,
      side: fc.constantFrom('BUY', 'SELL'),
      hash: fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 2, maxLength: 8 }),
      best_bid: fc.option(decimal, { nil: undefined }),
      best_ask: fc.option(decimal, { nil: undefined }),
    }, { requiredKeys: ['asset_id', 'price', 'size', 'side', 'hash'] });
    const frame = fc.record({
      event_type: fc.constant('price_change'),
      market: fc.constant(M),
      timestamp: fc.integer({ min: 1_757_908_892_000, max: 1_757_908_892_005 }).map(String),
      price_changes: fc.array(entry, { minLength: 1, maxLength: 6 }),
    });
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 8 }), (frames) => {
        const { before, after, sent } = roundTrip(frames);
        expect(after).toEqual(before);
        expect(sent.length).toBe(frames.length);
      }),
    );
  });
});
