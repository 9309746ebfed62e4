import { describe, expect, it } from 'vitest';
import { contentHash } from './content-hash.ts';
import { normaliseExchangeA } from './exchange-a.normaliser.ts';
import { invalid, records } from './normalise.test-support.ts';

const AT = new Date('2026-02-14T15:30:00.123Z');
const MARKET = '0xBD31dc8a20211944f6b70f31557f1001557b59905b7738480ca09bd4532f84af';
const MARKET_LC = MARKET.toLowerCase();

const bookEvent = {
  event_type: 'book',
  asset_id: '65818619657568813474341868652308942079804919287380422192892211131408793125422',
  market: MARKET,
  bids: [
    { price: '0.48', size: '30' },
    { price: '0.49', size: '20.00' },
  ],
  asks: [
    { price: '0.53', size: '60' },
    { price: '0.5200', size: '25' },
  ],
  timestamp: '1757908892351',
  hash: '0xabc123',
  tick_size: '0.01',
  last_trade_price: '0.500',
};

const priceChangeNew = {
  event_type: 'price_change',
  market: '0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1',
  timestamp: '1757908892351',
  price_changes: [
    { asset_id: '7132', price: '0.5', size: '200', side: 'BUY', hash: '56621a12', best_bid: '0.5', best_ask: '1' },
    { asset_id: '5211', price: '0.5', size: '200', side: 'SELL', hash: '1895759e', best_bid: '0', best_ask: '0.5' },
  ],
};

describe('normaliseExchangeA: book', () => {
  it('turns a first-frame array of books into one record per book, levels in venue order and text', () => {
    const second = { ...bookEvent, asset_id: '123', hash: '0xdef' };
    const out = records(normaliseExchangeA(JSON.stringify([bookEvent, second]), AT));
    expect(out).toHaveLength(2);
    expect(out[0]).toEqual({
      market: MARKET_LC,
      asset_id: bookEvent.asset_id,
      timestamp: '1757908892351',
      hash: '0xabc123',
      event_type: 'book',
      bids: [
        { price: '0.48', size: '30' },
        { price: '0.49', size: '20.00' },
      ],
      asks: [
        { price: '0.53', size: '60' },
        { price: '0.5200', size: '25' },
      ],
      extra: { tick_size: '0.01', last_trade_price: '0.500' },
    });
    expect(out[1]?.asset_id).toBe('123');
  });

  it('keeps decimal strings as sent, and writes JSON numbers as their shortest text', () => {
    const ev = { ...bookEvent, bids: [{ price: 0.5, size: 309 }, { price: '0.50', size: '309.00' }, { price: 0.1, size: 1e-7 }], asks: [] };
    const [r] = records(normaliseExchangeA(ev, AT));
    expect(r?.bids).toEqual([
      { price: '0.5', size: '309' },
      { price: '0.50', size: '309.00' },
      { price: '0.1', size: '0.0000001' },
    ]);
  });

  it('still validates every value it keeps as text', () => {
    // Exotic but valid text is stored in the canonical form every reader parses; a
    // leading-dot price (".5", as Polymarket's documentation writes them) is kept.
    const [r] = records(normaliseExchangeA({ ...bookEvent, bids: [{ price: '.5', size: '1e2' }, { price: '0.4', size: '-0.00' }], asks: [] }, AT));
    expect(r?.bids).toEqual([
      { price: '.5', size: '100' },
      { price: '0.4', size: '0' },
    ]);
    expect(invalid(normaliseExchangeA({ ...bookEvent, bids: [{ price: '0.5', size: '-1.50' }] }, AT))).toBe('event (book): bids[0].size is negative: -1.5');
    expect(invalid(normaliseExchangeA({ ...bookEvent, bids: [{ price: '0,5', size: '1' }] }, AT))).toBe('event (book): bids[0].price: not a decimal: "0,5"');
  });

  it('gives the same records for the text frame and the parsed JSON a capture file holds', () => {
    const text = normaliseExchangeA(JSON.stringify([bookEvent]), AT);
    const parsed = normaliseExchangeA([bookEvent], AT);
    expect(parsed).toEqual(text);
  });

  it('accepts a frame as bytes', () => {
    expect(normaliseExchangeA(Buffer.from(JSON.stringify(bookEvent)), AT)).toEqual(normaliseExchangeA(bookEvent, AT));
  });

  it('answers an empty array with no records', () => {
    expect(normaliseExchangeA('[]', AT)).toEqual({ kind: 'records', records: [] });
    expect(normaliseExchangeA([], AT)).toEqual({ kind: 'records', records: [] });
  });

  it('reads an array that recurs later, mixing books and other events', () => {
    const frame = [bookEvent, priceChangeNew, { event_type: 'tick_size_change', asset_id: 'x', market: MARKET, old_tick_size: '0.01', new_tick_size: '0.001', timestamp: '1757908892352' }];
    const out = records(normaliseExchangeA(frame, AT));
    expect(out.map((r) => [r.event_type, r.asset_id])).toEqual([
      ['book', bookEvent.asset_id],
      ['price_change', '7132'],
      ['price_change', '5211'],
      ['tick_size_change', 'x'],
    ]);
  });

  it('reads a book with empty sides', () => {
    const out = records(normaliseExchangeA({ ...bookEvent, bids: [], asks: [] }, AT));
    expect(out[0]?.bids).toEqual([]);
    expect(out[0]?.asks).toEqual([]);
  });

  it('reads the early buys/sells side names as bids/asks', () => {
    const { bids, asks, ...rest } = bookEvent;
    const out = records(normaliseExchangeA({ ...rest, buys: bids, sells: asks }, AT));
    expect(out[0]?.bids).toEqual(records(normaliseExchangeA(bookEvent, AT))[0]?.bids);
    expect(out[0]?.asks).toHaveLength(2);
    expect(out[0]?.extra).toEqual({ tick_size: '0.01', last_trade_price: '0.500' });
  });

  it('hashes the content of a book that carries no hash', () => {
    const { hash: _h, ...noHash } = bookEvent;
    const out = records(normaliseExchangeA(noHash, AT));
    expect(out[0]?.hash).toBe(contentHash(noHash));
    expect(out[0]?.hash).toMatch(/^[0-9a-f]{40}$/);
  });

  it('accepts a numeric timestamp and stores it as a digit string', () => {
    const out = records(normaliseExchangeA({ ...bookEvent, timestamp: 1757908892351 }, AT));
    expect(out[0]?.timestamp).toBe('1757908892351');
  });

  it.each([
    [{ ...bookEvent, bids: [{ price: null, size: '1' }] }, 'bids[0].price is null'],
    [{ ...bookEvent, asks: [{ price: '0.5' }] }, 'asks[0].size is missing'],
    [{ ...bookEvent, asks: [{ price: 'abc', size: '1' }] }, 'asks[0].price: not a decimal: "abc"'],
    [{ ...bookEvent, bids: [{ price: '0.5', size: '-1' }] }, 'bids[0].size is negative: -1'],
    [{ ...bookEvent, bids: 'none' }, 'bids is a string, not an array'],
    [{ ...bookEvent, asks: undefined }, 'asks is missing'],
    [{ ...bookEvent, asset_id: undefined }, 'asset_id missing'],
  ])('refuses a malformed book: %#', (event, reason) => {
    expect(invalid(normaliseExchangeA(event, AT))).toBe(`event (book): ${reason}`);
  });
});

describe('normaliseExchangeA: price_change', () => {
  it('splits the new shape into one record per asset, each change with its own hash and best bid/ask claim', () => {
    const out = records(normaliseExchangeA(priceChangeNew, AT));
    expect(out).toEqual([
      {
        market: priceChangeNew.market,
        asset_id: '7132',
        timestamp: '1757908892351',
        hash: '56621a12',
        event_type: 'price_change',
        changes: [{ price: '0.5', side: 'BUY', size: '200', hash: '56621a12', best_bid: '0.5', best_ask: '1' }],
      },
      {
        market: priceChangeNew.market,
        asset_id: '5211',
        timestamp: '1757908892351',
        hash: '1895759e',
        event_type: 'price_change',
        changes: [{ price: '0.5', side: 'SELL', size: '200', hash: '1895759e', best_bid: '0', best_ask: '0.5' }],
      },
    ]);
  });

  it('groups two entries of one asset into one record: first hash on the record, every claim on its change', () => {
    const frame = {
      ...priceChangeNew,
      price_changes: [
        { asset_id: '7132', price: '0.50', size: '200', side: 'BUY', hash: 'h1', best_bid: '0.5', best_ask: '0.6' },
        { asset_id: '5211', price: '0.4', size: '10', side: 'SELL', hash: 'h2', best_bid: '0.3', best_ask: '0.4' },
        { asset_id: '7132', price: '0.49', size: '0', side: 'BUY', hash: 'h3', best_bid: '0.5', best_ask: '0.55' },
      ],
    };
    const out = records(normaliseExchangeA(frame, AT));
    expect(out.map((r) => r.asset_id)).toEqual(['7132', '5211']);
    expect(out[0]).toEqual({
      market: priceChangeNew.market,
      asset_id: '7132',
      timestamp: '1757908892351',
      hash: 'h1',
      event_type: 'price_change',
      changes: [
        { price: '0.50', side: 'BUY', size: '200', hash: 'h1', best_bid: '0.5', best_ask: '0.6' },
        { price: '0.49', side: 'BUY', size: '0', hash: 'h3', best_bid: '0.5', best_ask: '0.55' },
      ],
    });
    expect(out[1]).toMatchObject({ hash: 'h2', changes: [{ hash: 'h2', best_bid: '0.3', best_ask: '0.4' }] });
    expect(out[1]).not.toHaveProperty('extra');
  });

  it('keeps the list event\'s other top-level fields in extra, and claims only where sent', () => {
    const frame = {
      ...priceChangeNew,
      extra_field: 'x',
      price_changes: [{ asset_id: '7132', price: 0.5, size: '10', side: 'buy', best_bid: 0.45, best_ask: null }],
    };
    const [r] = records(normaliseExchangeA(frame, AT));
    expect(r?.changes).toEqual([{ price: '0.5', side: 'BUY', size: '10', best_bid: '0.45' }]);
    expect(r?.extra).toEqual({ extra_field: 'x' });
  });

  it('gives each asset its own content hash when entries carry none', () => {
    const frame = {
      ...priceChangeNew,
      price_changes: priceChangeNew.price_changes.map(({ hash: _h, ...e }) => e),
    };
    const out = records(normaliseExchangeA(frame, AT));
    expect(out[0]?.hash).toMatch(/^[0-9a-f]{40}$/);
    expect(out[0]?.hash).not.toBe(out[1]?.hash);
  });

  it('reads the shape from before 2025-09-15', () => {
    const old = {
      event_type: 'price_change',
      asset_id: '7132',
      market: '0x5f65',
      timestamp: '1729084877448',
      hash: '3cd4d61e',
      changes: [{ price: '0.4', side: 'SELL', size: '3300' }],
    };
    expect(records(normaliseExchangeA(JSON.stringify(old), AT))).toEqual([
      {
        market: '0x5f65',
        asset_id: '7132',
        timestamp: '1729084877448',
        hash: '3cd4d61e',
        event_type: 'price_change',
        changes: [{ price: '0.4', side: 'SELL', size: '3300' }],
      },
    ]);
  });

  it('reads the flat one-level shape of 2024 (no list) as a one-change record', () => {
    // As recorded from the venue in 2024 (docs/rules/venue-frames.md, "Seen in real recordings").
    const flat = {
      event_type: 'price_change',
      asset_id: '48331043336612883890938759509493159234755048973500640148014422747788308965732',
      market: '0xdd22472e552920b8438158ea7238bfadfa4f736aa4cee91a6b86c39ead110917',
      price: '0.514',
      side: 'SELL',
      size: '210.5',
      hash: 'bf32f6ba7f8a2d4ea9a0b5ff20b3b0c5c6bd6b8a',
      timestamp: '1723967931411',
    };
    expect(records(normaliseExchangeA(JSON.stringify(flat), AT))).toEqual([
      {
        market: flat.market,
        asset_id: flat.asset_id,
        timestamp: '1723967931411',
        hash: flat.hash,
        event_type: 'price_change',
        changes: [{ price: '0.514', side: 'SELL', size: '210.5' }],
      },
    ]);
    // A best_bid / best_ask on it is the change's claim; unknown fields go to extra.
    const [r] = records(normaliseExchangeA({ ...flat, best_bid: '0.51', best_ask: '0.514', fee: '0' }, AT));
    expect(r?.changes).toEqual([{ price: '0.514', side: 'SELL', size: '210.5', best_bid: '0.51', best_ask: '0.514' }]);
    expect(r?.extra).toEqual({ fee: '0' });
    expect(invalid(normaliseExchangeA({ ...flat, size: 'lots' }, AT))).toBe('event (price_change): size: not a decimal: "lots"');
    expect(invalid(normaliseExchangeA({ ...flat, side: undefined }, AT))).toBe('event (price_change): side is missing');
  });

  it.each([
    [{ ...priceChangeNew, price_changes: [{ ...priceChangeNew.price_changes[0], price: null }] }, 'price_changes[0].price is null'],
    [{ ...priceChangeNew, price_changes: [{ ...priceChangeNew.price_changes[0], best_bid: 'high' }] }, 'price_changes[0].best_bid: not a decimal: "high"'],
    [{ ...priceChangeNew, price_changes: [{ ...priceChangeNew.price_changes[0], hash: 7 }] }, 'price_changes[0].hash is a number, not a string'],
    [{ ...priceChangeNew, price_changes: [{ ...priceChangeNew.price_changes[0], side: 'HOLD' }] }, 'price_changes[0].side is not BUY or SELL: "HOLD"'],
    [{ ...priceChangeNew, price_changes: [{ ...priceChangeNew.price_changes[0], asset_id: undefined }] }, 'price_changes[0].asset_id missing'],
    [{ ...priceChangeNew, price_changes: 'x' }, 'price_changes is not an array'],
    [{ event_type: 'price_change', asset_id: '1', market: '0x1', timestamp: '1729084877448' }, 'neither price_changes nor changes present'],
    [{ event_type: 'price_change', asset_id: '1', market: '0x1', timestamp: '1729084877448', changes: [{ price: null, side: 'BUY', size: '1' }] }, 'changes[0].price is null'],
  ])('refuses a malformed price_change: %#', (event, reason) => {
    expect(invalid(normaliseExchangeA(event, AT))).toBe(`event (price_change): ${reason}`);
  });
});

describe('normaliseExchangeA: other events, stored as they come', () => {
  it('stores tick_size_change with its fields in extra', () => {
    const ev = { event_type: 'tick_size_change', asset_id: '11', market: MARKET, old_tick_size: '0.01', new_tick_size: '0.001', timestamp: '1757908892351' };
    const [r] = records(normaliseExchangeA(ev, AT));
    expect(r).toEqual({
      market: MARKET_LC,
      asset_id: '11',
      timestamp: '1757908892351',
      hash: contentHash(ev),
      event_type: 'tick_size_change',
      extra: { old_tick_size: '0.01', new_tick_size: '0.001' },
    });
  });

  it('stores last_trade_price with its transaction hash as hash', () => {
    const ev = { event_type: 'last_trade_price', asset_id: '11', market: MARKET, price: '0.456', size: '219.217767', fee_rate_bps: '0', side: 'BUY', timestamp: '1750428146322', transaction_hash: '0xfeed' };
    const [r] = records(normaliseExchangeA(ev, AT));
    expect(r).toMatchObject({ hash: '0xfeed', asset_id: '11', event_type: 'last_trade_price' });
    expect(r?.extra).toEqual({ price: '0.456', size: '219.217767', fee_rate_bps: '0', side: 'BUY', transaction_hash: '0xfeed' });
  });

  it('stores best_bid_ask', () => {
    const ev = { event_type: 'best_bid_ask', market: MARKET, asset_id: '11', best_bid: '0.73', best_ask: '0.77', spread: '0.04', timestamp: '1766789469958' };
    const [r] = records(normaliseExchangeA(ev, AT));
    expect(r).toMatchObject({ event_type: 'best_bid_ask', asset_id: '11', extra: { best_bid: '0.73', best_ask: '0.77', spread: '0.04' } });
  });

  it('stores new_market and market_resolved with asset_id empty', () => {
    const nm = { event_type: 'new_market', id: '1031769', question: 'Q?', market: '0x311d', slug: 's', assets_ids: ['1', '2'], outcomes: ['Yes', 'No'], timestamp: '1766790415550' };
    const mr = { event_type: 'market_resolved', id: '1031769', market: '0x311d', assets_ids: ['1', '2'], winning_asset_id: '1', winning_outcome: 'Yes', timestamp: '1766790415550' };
    const out = records(normaliseExchangeA([nm, mr], AT));
    expect(out[0]).toEqual({
      market: '0x311d',
      asset_id: '',
      timestamp: '1766790415550',
      hash: contentHash(nm),
      event_type: 'new_market',
      extra: { id: '1031769', question: 'Q?', slug: 's', assets_ids: ['1', '2'], outcomes: ['Yes', 'No'] },
    });
    expect(out[1]).toMatchObject({ asset_id: '', event_type: 'market_resolved', extra: { winning_asset_id: '1', winning_outcome: 'Yes' } });
  });

  it('stores an event type it does not know, as long as it names a market', () => {
    const [r] = records(normaliseExchangeA({ event_type: 'brand_new', market: MARKET, timestamp: '1766790415550', hash: 'h', foo: 1 }, AT));
    expect(r).toEqual({ market: MARKET_LC, asset_id: '', timestamp: '1766790415550', hash: 'h', event_type: 'brand_new', extra: { foo: 1 } });
  });
});

describe('normaliseExchangeA: control and invalid frames', () => {
  it.each(['PONG', 'PING', ' PONG\n'])('answers the text %j as control', (text) => {
    expect(normaliseExchangeA(text, AT)).toEqual({ kind: 'control', name: text.trim().toLowerCase() });
  });

  it.each([
    ['garbage', 'not JSON: "garbage"'],
    ['{"event_type":', 'not JSON'],
    ['', 'empty frame'],
    ['42', 'JSON number is neither an event nor an array of events'],
    ['"PONG"', 'JSON string is neither'],
    ['null', 'JSON null is neither'],
    ['true', 'JSON boolean is neither'],
  ])('refuses the text %j', (text, reason) => {
    expect(invalid(normaliseExchangeA(text, AT))).toContain(reason);
  });

  it.each([
    [42, 'JSON number'],
    [null, 'JSON null'],
    [[1], 'event[0] is a JSON number, not an object'],
    [{ market: MARKET, timestamp: '1757908892351' }, 'event: event_type missing'],
  ])('refuses the parsed value %j', (value, reason) => {
    expect(invalid(normaliseExchangeA(value, AT))).toContain(reason);
  });

  it.each([
    [{ ...bookEvent, market: undefined }, 'event (book): market missing'],
    [{ ...bookEvent, market: '' }, 'event (book): market missing'],
    [{ ...bookEvent, market: 'not-hex' }, 'event (book): market is not a condition id: "not-hex"'],
    [{ ...bookEvent, market: 12 }, 'event (book): market is a number, not a string'],
    [{ ...bookEvent, timestamp: undefined }, 'event (book): timestamp missing'],
    [{ ...bookEvent, timestamp: 'soon' }, 'event (book): timestamp is not a number of milliseconds: "soon"'],
    [{ ...bookEvent, timestamp: '1757908892.5' }, 'event (book): timestamp is not a number of milliseconds'],
    [{ ...bookEvent, timestamp: 1757908892.5 }, 'event (book): timestamp is not integer milliseconds: 1757908892.5'],
    [{ ...bookEvent, timestamp: '1757908892' }, 'event (book): timestamp 1757908892 is not milliseconds since the epoch'],
    [{ ...bookEvent, timestamp: '1757908892351000' }, 'is not milliseconds since the epoch'],
    // After the store's last date (ClickHouse Date ends 2149-06-06): refused, never stored under a wrong date.
    [{ ...bookEvent, timestamp: String(Date.UTC(2149, 5, 7)) }, `timestamp ${Date.UTC(2149, 5, 7)} is after 2149-06-06, the last date the store holds`],
    [{ event_type: 'new_market', id: '1', timestamp: '1766790415550' }, 'event (new_market): market missing'],
  ])('refuses an event without a good market or timestamp: %#', (event, reason) => {
    expect(invalid(normaliseExchangeA(event, AT))).toContain(reason);
  });

  it('accepts the store\'s last instant', () => {
    expect(records(normaliseExchangeA({ ...bookEvent, timestamp: String(Date.UTC(2149, 5, 6, 23, 59, 59, 999)) }, AT))).toHaveLength(1);
  });

  it('refuses a whole array when one of its events is bad, naming which', () => {
    const frame = [bookEvent, { ...bookEvent, asset_id: '2', market: undefined }];
    expect(invalid(normaliseExchangeA(frame, AT))).toBe('event[1] (book): market missing');
  });
});
