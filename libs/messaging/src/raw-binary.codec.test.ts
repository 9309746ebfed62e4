import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage } from '@booktape/domain';
import { ExchangeBNormaliser, Sequencer, normaliseExchangeA } from '@booktape/venues';
import { BINARY_VERSION, binaryRecordCount, binaryRecordLayouts, concatRawBinary, decodeRawBinary, encodeRawBinary } from './raw-binary.codec.ts';
import { concatRawMessages, decodeRawMessages, encodeRawMessages, encodeRawValue, rawRecordCount, tooLargeDeadLetter } from './message-codec.ts';

/** What the JSON value carried: the reference a binary value must reproduce, key order included. */
const viaJson = (ms: readonly RawMessage[]): RawMessage[] => JSON.parse(JSON.stringify(ms)) as RawMessage[];

function roundTrip(ms: readonly RawMessage[]): RawMessage[] {
  const d = decodeRawBinary(encodeRawBinary(ms));
  if (!d.ok) throw new Error(d.reason);
  return d.messages;
}

// ---------------------------------------------------------------------------------------
// Every shape of the venues' frames (docs/rules/venue-frames.md), through the real normalisers.

const M1 = `0x${'bd31'.repeat(16)}`;
const M2 = `0x${'5f65'.repeat(16)}`;
const T1 = '65818619657568813474341868652308942079804919287380422192892211131408793125422';
const T2 = '71321045679252212594626385532706912750332728571942532289631379312455583992563';
const H = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

const FRAMES_A: unknown[] = [
  [{ event_type: 'book', asset_id: T1, market: M1, bids: [{ price: '0.48', size: '30' }, { price: '0.49', size: '20' }], asks: [{ price: '0.53', size: '60' }, { price: '0.52', size: '25' }], timestamp: '1757908892351', hash: H(1), tick_size: '0.01', last_trade_price: '0.500' }],
  [],
  { event_type: 'book', market: M1, asset_id: T1, timestamp: '1757908892352', hash: H(2), bids: [], asks: [{ price: '0.99', size: '1.5' }] },
  // Early captures: buys / sells, numbers instead of strings, no hash.
  { event_type: 'book', asset_id: T2, market: M2, buys: [{ price: 0.4, size: 12.5 }], sells: [{ price: '0.6', size: '3' }], timestamp: 1729084877448 },
  { event_type: 'price_change', market: M2, timestamp: '1757908892351', price_changes: [
    { asset_id: T2, price: '0.5', size: '200', side: 'BUY', hash: '56621a12ab', best_bid: '0.5', best_ask: '1' },
    { asset_id: T1, price: '0.5', size: '200', side: 'SELL', hash: '1895759eff', best_bid: '0', best_ask: '0.5' },
    { asset_id: T2, price: '0.49', size: '0', side: 'BUY', hash: '56621a12ac' },
  ] },
  { event_type: 'price_change', asset_id: T2, market: M2, timestamp: '1729084877448', hash: '3cd4d61e', changes: [{ price: '0.4', side: 'SELL', size: '3300' }] },
  { event_type: 'price_change', asset_id: T1, market: M1, price: '0.514', side: 'SELL', size: '210.5', hash: 'bf32', timestamp: '1723967931411' },
  { event_type: 'tick_size_change', asset_id: T1, market: M1, old_tick_size: '0.01', new_tick_size: '0.001', timestamp: '1757908892353' },
  { event_type: 'last_trade_price', asset_id: T1, market: M1, price: '0.456', size: '219.217767', fee_rate_bps: '0', side: 'BUY', timestamp: '1750428146322', transaction_hash: H(3) },
  { event_type: 'best_bid_ask', market: M1, asset_id: T1, best_bid: '0.73', best_ask: '0.77', spread: '0.04', timestamp: '1766789469958' },
  { event_type: 'new_market', id: '1031769', question: 'Will it — «really» 🎲?', market: M2, slug: 's', assets_ids: [T1, T2], outcomes: ['Yes', 'No'], timestamp: '1766790415550' },
  { event_type: 'market_resolved', id: '1031769', market: M2, assets_ids: [T1, T2], winning_asset_id: T1, winning_outcome: 'Yes', timestamp: '1766790415550' },
  // A book after a trade: no tick_size, another key order.
  { hash: H(4), timestamp: '1757908892360', market: M1, asks: [{ size: '5', price: '0.6' }], bids: [{ price: '0.4', size: '7' }], asset_id: T1, event_type: 'book' },
];

const FRAMES_B: unknown[] = [
  { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 5 } },
  { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: 'KXBTC-25MAR15-B100000', market_id: '9b2c1d3e-0000-4000-8000-000000000001', yes_dollars_fp: [['0.4100', '20.00'], ['0.4200', '13.00']], no_dollars_fp: [['0.5400', '200.00'], ['0.5600', '3.00']] } },
  { type: 'orderbook_delta', sid: 5, seq: 2, msg: { market_ticker: 'KXBTC-25MAR15-B100000', market_id: '9b2c1d3e-0000-4000-8000-000000000001', price_dollars: '0.4200', delta_fp: '50.00', side: 'yes', ts_ms: 1739548200000 } },
  { type: 'orderbook_snapshot', sid: 5, seq: 3, msg: { market_ticker: 'KXOLD-1', yes: [[45, 100], [46, 250]], no: [[53, 120]], yes_dollars: [['0.45', 100], ['0.46', 250]], no_dollars: [['0.53', 120]] } },
  { type: 'orderbook_delta', sid: 5, seq: 4, msg: { market_ticker: 'KXOLD-1', price: 46, price_dollars: '0.46', delta: -50, delta_fp: '-50.00', side: 'no', ts: '2026-02-14T15:30:00.73425Z' } },
  { type: 'ok', id: 2, sid: 5, seq: 5, msg: { market_tickers: ['KXOLD-1'] } },
  { type: 'orderbook_snapshot', sid: 5, seq: 6, msg: { market_ticker: 'KXEMPTY-1', market_id: '' } },
  // A seq gap: gap records for every ticker of the subscription, then the delta.
  { type: 'orderbook_delta', sid: 5, seq: 9, msg: { market_ticker: 'KXOLD-1', price: 47, delta: 10, side: 'yes' } },
  { type: 'ticker', sid: 5, seq: 10, msg: { market_ticker: 'KXOLD-1', yes_bid_dollars: '0.45', yes_ask_dollars: '0.47', volume_fp: '10.00', ts: 1739548200, ts_ms: 1739548200123 } },
  { type: 'trade', sid: 5, seq: 11, msg: { market_ticker: 'KXOLD-1', yes_price_dollars: '0.46', count_fp: '2.00', taker_side: 'yes', ts: 1739548201 } },
  // A delta on a sid never subscribed: the middle of a session, its book unknown.
  { type: 'orderbook_delta', sid: 9, seq: 40, msg: { market_ticker: 'KXNEW-1', price_dollars: null, delta_fp: '1.00', side: 'yes' } },
  { type: 'error', id: 3, msg: { code: 8, msg: 'unknown' } },
];

/** The records capture makes of those frames, grouped per frame and market as it sends them. */
function venueValues(): RawMessage[][] {
  const seq = new Sequencer(7);
  const out: RawMessage[][] = [];
  const byMarket = (ms: RawMessage[]) => {
    const groups = new Map<string, RawMessage[]>();
    for (const m of ms) {
      const k = m.venue === 'exchange-a' ? m.event.market : m.record.ticker;
      groups.set(k, [...(groups.get(k) ?? []), m]);
    }
    out.push(...groups.values());
  };
  let t = Date.UTC(2026, 2, 14, 12, 0, 0, 0);
  for (const f of FRAMES_A) {
    const at = new Date((t += 1));
    const r = normaliseExchangeA(f, at);
    if (r.kind === 'records') byMarket(seq.stamp(at, r.records, 'exchange-a'));
    else if (r.kind === 'invalid') throw new Error(`frame A refused: ${r.reason}`);
  }
  const b = new ExchangeBNormaliser();
  for (const f of FRAMES_B) {
    const at = new Date((t += 1));
    const r = b.normalise(f, at);
    if (r.kind === 'records') byMarket(seq.stamp(at, r.records, 'exchange-b'));
    else if (r.kind === 'invalid') throw new Error(`frame B refused: ${r.reason}`);
  }
  return out;
}

describe('binary raw values: every venue shape', () => {
  const values = venueValues();

  it('covers the shapes: books, the three price_change forms, other events, snapshots, deltas, gaps, channels', () => {
    const kinds = new Set(values.flat().map((m) => (m.venue === 'exchange-a' ? `a:${m.event.event_type}:${m.event.changes?.[0]?.hash !== undefined}` : `b:${m.record.type}`)));
    for (const k of ['a:book:false', 'a:price_change:true', 'a:price_change:false', 'a:last_trade_price:false', 'a:new_market:false', 'b:snapshot', 'b:delta', 'b:gap', 'b:ticker', 'b:trade']) expect(kinds).toContain(k);
  });

  it('decodes every record to what capture produced, key order included, each in a compact layout', () => {
    for (const ms of values) {
      const value = encodeRawBinary(ms);
      const back = roundTrip(ms);
      expect(back).toStrictEqual(ms);
      expect(JSON.stringify(back)).toBe(JSON.stringify(ms));
      // None of the venues' own shapes needs the JSON fallback.
      expect(binaryRecordLayouts(value).filter((l) => l === 'json')).toEqual([]);
      expect(value.length).toBeLessThan(Buffer.byteLength(encodeRawMessages(ms)));
    }
  });

  it('decodes through the sink decoder, and merged values as one', () => {
    for (const ms of values) {
      const d = decodeRawMessages(ms[0]!.venue, encodeRawValue(ms));
      expect(d).toStrictEqual({ ok: true, messages: ms });
    }
    const a = values.filter((ms) => ms[0]!.venue === 'exchange-a');
    const merged = concatRawMessages(a.map(encodeRawValue));
    expect(rawRecordCount(merged)).toBe(a.flat().length);
    expect(decodeRawMessages('exchange-a', merged as Buffer)).toStrictEqual({ ok: true, messages: a.flat() });
  });
});

// ---------------------------------------------------------------------------------------
// Arbitrary records: the shapes capture makes, and any other JSON the transport may carry.

const dec = fc.oneof(fc.constantFrom('0', '0.5', '0.50', '1', '0.001', '20.00', '-50.00', '1e-7', '219.217767'), fc.stringMatching(/^-?\d{1,6}(\.\d{1,6})?$/));
const hexStr = fc.oneof(fc.stringMatching(/^(0x)?([0-9a-f]{2}){0,40}$/), fc.stringMatching(/^[0-9a-fA-Fx]{0,12}$/));
// Text with unicode, control characters and lone surrogates: JSON keeps them all.
const anyText = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('\ud800', 'a\udc00b', '\u0000', ''));
const ingestSeq = fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String), fc.constantFrom('0', '18446744073709551615', '9007199254740993', '0012', '', 'x'));
const iso = fc.integer({ min: 0, max: Date.UTC(2039, 0, 1) }).map((t) => new Date(t).toISOString());
const safeInt = fc.oneof(fc.integer(), fc.constantFrom(0, -0, 2 ** 52 - 1, -(2 ** 52) + 1, 2 ** 52, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1.5, -1));
const jsonObj = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5, noNullPrototype: true });
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

const level = fc.record({ price: dec, size: dec }, { noNullPrototype: true });
const change = fc.record({ price: dec, side: fc.constantFrom('BUY', 'SELL'), size: dec, hash: hexStr, best_bid: dec, best_ask: dec }, { requiredKeys: ['price', 'side', 'size'], noNullPrototype: true });
const eventA = fc.record(
  {
    market: fc.oneof(hexStr, anyText),
    asset_id: fc.oneof(fc.stringMatching(/^\d{0,78}$/), anyText),
    timestamp: fc.oneof(fc.integer({ min: 1e11, max: 1e13 }).map(String), anyText),
    hash: fc.oneof(hexStr, anyText),
    event_type: fc.oneof(fc.constantFrom('book', 'price_change', 'last_trade_price'), anyText),
    bids: fc.array(level, { maxLength: 6 }),
    asks: fc.array(level, { maxLength: 6 }),
    changes: fc.array(change, { maxLength: 6 }),
    extra: jsonObj,
  },
  { requiredKeys: ['market', 'asset_id', 'timestamp', 'hash', 'event_type'], noNullPrototype: true },
);
const pairs = fc.option(fc.array(fc.tuple(dec, dec), { maxLength: 6 }), { nil: null });
const recordB = fc.record(
  {
    type: fc.oneof(fc.constantFrom('snapshot', 'delta', 'gap', 'ticker', 'trade'), anyText),
    ticker: fc.oneof(fc.stringMatching(/^[A-Z0-9-]{1,30}$/), anyText),
    timestamp: fc.oneof(iso, anyText),
    epoch_ms: fc.oneof(fc.integer({ min: 0, max: Date.UTC(2149, 0, 1) }), safeInt),
    sid: fc.option(safeInt, { nil: null }),
    seq: fc.option(safeInt, { nil: null }),
    yes: pairs,
    no: pairs,
    side: fc.constantFrom('yes', 'no'),
    price: fc.option(dec, { nil: null }),
    delta: fc.option(dec, { nil: null }),
    venue_ts: fc.option(fc.oneof(iso, anyText), { nil: null }),
    market_id: fc.option(fc.oneof(fc.uuid(), fc.constant(''), anyText), { nil: null }),
    expected_seq: safeInt,
    data: jsonObj,
  },
  { requiredKeys: ['type', 'ticker', 'timestamp', 'epoch_ms', 'sid', 'seq'], noNullPrototype: true },
);
const lineage = { received_at: fc.oneof(iso, anyText), worker_id: fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), safeInt), ingest_seq: ingestSeq, dedup_id: fc.oneof(hexStr, anyText) };
const messageA = fc.record({ venue: fc.constant('exchange-a' as const), ...lineage, event: eventA }, { noNullPrototype: true }) as fc.Arbitrary<ExchangeAMessage>;
const messageB = fc.record({ venue: fc.constant('exchange-b' as const), ...lineage, record: recordB }, { noNullPrototype: true }) as fc.Arbitrary<ExchangeBMessage>;

/** A record with its keys shuffled, a stray key, or an undefined value: JSON still carries it. */
function oddly(m: RawMessage, how: number): RawMessage {
  const o = m as unknown as Record<string, unknown>;
  const inner = (m.venue === 'exchange-a' ? m.event : m.record) as unknown as Record<string, unknown>;
  const innerKey = m.venue === 'exchange-a' ? 'event' : 'record';
  switch (how % 5) {
    case 0:
      return Object.fromEntries(Object.entries(o).reverse()) as unknown as RawMessage;
    case 1:
      return { ...o, [innerKey]: { ...inner, surprise: [1, 'two', null] } } as unknown as RawMessage;
    case 2:
      return { ...o, [innerKey]: { ...inner, hash: undefined, bids: undefined, data: undefined } } as unknown as RawMessage;
    case 3:
      return { ...o, [innerKey]: Object.fromEntries(Object.entries(inner).reverse()) } as unknown as RawMessage;
    default:
      return { ...o, worker_id: 'one' } as unknown as RawMessage;
  }
}

const anyMessage = fc.oneof(messageA, messageB, fc.tuple(fc.oneof(messageA, messageB), fc.nat()).map(([m, how]) => oddly(m, how)));

describe('binary raw values: arbitrary records', () => {
  it('decode(encode(x)) is exactly what the JSON value carried, key order included', () => {
    fc.assert(
      fc.property(fc.array(anyMessage, { maxLength: 8 }), (ms) => {
        const back = roundTrip(ms);
        expect(back).toStrictEqual(viaJson(ms));
        expect(JSON.stringify(back)).toBe(JSON.stringify(ms));
      }),
      { numRuns: 800 },
    );
  });

  it('records of the shapes capture makes use the compact layouts and decode to themselves', () => {
    const canonical = (m: RawMessage) => {
      const ok = (m.venue === 'exchange-a' || (m.record.type !== undefined && [m.record.sid, m.record.seq].every((v) => v === null || (Number.isSafeInteger(v) && Math.abs(v) < 2 ** 52)) && (m.record.expected_seq === undefined || (Number.isSafeInteger(m.record.expected_seq) && Math.abs(m.record.expected_seq) < 2 ** 52)) && Number.isSafeInteger(m.record.epoch_ms) && m.record.epoch_ms >= 0)) && /^(0|[1-9]\d{0,19})$/.test(m.ingest_seq) && BigInt(m.ingest_seq) < 2n ** 64n && Number.isSafeInteger(m.worker_id) && m.worker_id >= 0;
      return ok && !JSON.stringify(m).includes('\\ud') && !Object.is((m as ExchangeBMessage).record?.sid, -0) && !Object.is((m as ExchangeBMessage).record?.seq, -0) && !Object.is((m as ExchangeBMessage).record?.expected_seq, -0);
    };
    fc.assert(
      fc.property(fc.array(fc.oneof(messageA, messageB), { minLength: 1, maxLength: 6 }), (ms) => {
        const value = encodeRawBinary(ms);
        expect(roundTrip(ms)).toStrictEqual(viaJson(ms));
        const layouts = binaryRecordLayouts(value);
        ms.forEach((m, i) => {
          if (canonical(m)) expect(layouts[i]).toBe(m.venue === 'exchange-a' ? 'a' : 'b');
        });
      }),
      { numRuns: 400 },
    );
  });

  it('values larger than a slab, and many in a row: each one handed out stays as written', () => {
    const [a] = venueValues()[0]! as ExchangeAMessage[];
    const big: ExchangeAMessage = { ...a!, event: { ...a!.event, bids: Array.from({ length: 30_000 }, (_, i) => ({ price: `0.${i}`, size: `${i}.25` })), extra: { note: 'é'.repeat(200_000) } } };
    const small = venueValues().flat();
    const values: Buffer[] = [];
    const copies: Buffer[] = []; // taken as each value is handed out, before the next is written
    const keep = (v: Buffer) => (values.push(v), copies.push(Buffer.from(v)));
    keep(encodeRawBinary(small));
    keep(encodeRawBinary([big]));
    for (let i = 0; i < 3_000; i++) keep(encodeRawBinary([small[i % small.length]!]));
    keep(encodeRawBinary([big, big]));
    expect(values[1]!.length).toBeGreaterThan(256 * 1024);
    values.forEach((v, i) => expect(v.equals(copies[i]!)).toBe(true));
    expect(roundTrip([big])).toStrictEqual([big]);
    expect(decodeRawBinary(values[0]!)).toStrictEqual({ ok: true, messages: small });
    expect(decodeRawBinary(values.at(-1)!)).toStrictEqual({ ok: true, messages: [big, big] });
  });

  it('merged values decode to the records of each in order', () => {
    fc.assert(
      fc.property(fc.array(fc.array(anyMessage, { maxLength: 4 }), { minLength: 1, maxLength: 5 }), (lists) => {
        const merged = concatRawBinary(lists.map((l) => encodeRawBinary(l)));
        expect(binaryRecordCount(merged)).toBe(lists.flat().length);
        const d = decodeRawBinary(merged);
        expect(d).toStrictEqual({ ok: true, messages: viaJson(lists.flat()) });
      }),
      { numRuns: 200 },
    );
  });

  it('old JSON values (one array, merged arrays) still decode unchanged, and mix with binary ones', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(messageA), { minLength: 1, maxLength: 4 }), fc.array(fc.oneof(messageA), { minLength: 1, maxLength: 4 }), (x, y) => {
        const valid = (ms: RawMessage[]) => decodeRawMessages('exchange-a', Buffer.from(encodeRawMessages(ms)));
        const jx = valid(x);
        // The sink's checks (times, ranges) decide, for JSON and binary alike.
        expect(decodeRawMessages('exchange-a', encodeRawBinary(x))).toStrictEqual(jx.ok ? { ok: true, messages: viaJson(x) } : jx);
        if (jx.ok) expect(jx.messages).toStrictEqual(viaJson(x));
        const mixed = concatRawMessages([encodeRawMessages(x), encodeRawBinary(y)]);
        expect(decodeRawBinary(mixed as Buffer)).toStrictEqual({ ok: true, messages: viaJson([...x, ...y]) });
      }),
      { numRuns: 200 },
    );
  });
});

describe('binary raw values: refused, never half-read', () => {
  const sample = venueValues();
  const value = concatRawBinary(sample.filter((ms) => ms[0]!.venue === 'exchange-b').map((ms) => encodeRawBinary(ms)));

  it('refuses every truncation with a reason', () => {
    for (let n = 0; n < value.length; n++) {
      const d = decodeRawMessages('exchange-b', value.subarray(0, n));
      expect(d.ok, `cut at ${n}`).toBe(false);
      if (!d.ok) expect(d.reason).toMatch(/binary value|not JSON|truncated/);
    }
  });

  it('refuses an unknown version, naming it', () => {
    const v2 = Buffer.from(value);
    v2[3] = BINARY_VERSION + 1;
    expect(decodeRawMessages('exchange-b', v2)).toEqual({ ok: false, reason: `binary value of version ${BINARY_VERSION + 1}, this reader knows version ${BINARY_VERSION}` });
  });

  it('never throws on corrupt bytes: refused with a reason, or whole records that pass the checks', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.nat(), (flips, cut) => {
        const v = Buffer.from(value);
        for (const [at, byte] of flips) v[4 + (at % (v.length - 4))] = byte;
        for (const candidate of [v, v.subarray(0, 8 + (cut % (v.length - 8)))]) {
          const d = decodeRawMessages('exchange-b', candidate);
          if (d.ok) {
            expect(d.messages.length).toBe(binaryRecordCount(candidate));
            for (const m of d.messages) expect(m.venue).toBe('exchange-b');
          } else expect(d.reason.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws on arbitrary bytes behind a valid header', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 0, max: 2 ** 32 - 1 }), (body, count) => {
        const head = Buffer.from([0x00, 0x42, 0x54, BINARY_VERSION, 0, 0, 0, 0]);
        head.writeUInt32LE(count, 4);
        const d = decodeRawMessages('exchange-a', Buffer.concat([head, body]));
        if (d.ok) expect(d.messages.length).toBe(count);
        else expect(d.reason.length).toBeGreaterThan(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('a dead letter of a binary value keeps it in base64 and says so', () => {
    const dl = JSON.parse(tooLargeDeadLetter('exchange-b', value, new Date('2026-05-01T00:00:00Z'))) as Record<string, string>;
    expect(dl.frame_encoding).toBe('base64');
    expect(Buffer.from(dl.frame!, 'base64').equals(value)).toBe(true);
    expect(dl.reason).toContain(`a message of ${value.length} bytes (${binaryRecordCount(value)} record(s))`);
  });
});

describe('binary raw values: text fields are UTF-8 or refused', () => {
  const strict = new TextDecoder('utf-8', { fatal: true });
  /** The reference: the text of `bytes` when they are UTF-8, else null. */
  const utf8 = (bytes: Uint8Array): string | null => {
    try {
      return strict.decode(bytes);
    } catch {
      return null;
    }
  };
  const T = Date.UTC(2026, 3, 2, 12);
  const record = (market: string, price: string, note: string | null): ExchangeAMessage => ({
    venue: 'exchange-a',
    received_at: new Date(T).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(T) * 2n ** 23n).toString(),
    dedup_id: 'd1',
    event: { market, asset_id: 'tok', timestamp: String(T), hash: 'h', event_type: 'price_change', changes: [{ price, side: 'BUY', size: '1' }] },
    // An unknown key: the record travels as its JSON text (tag 00), `note` inside it.
    ...(note === null ? {} : { note }),
  } as ExchangeAMessage);
  // Arbitrary bytes, and the pieces invalid UTF-8 is made of: sequences cut short (one of
  // which decodes to exactly one U+FFFD of the same byte length), surrogates, overlong forms,
  // beyond U+10FFFF; and valid multi-byte characters, U+FFFD itself among them.
  const piece = fc.oneof(
    fc.integer({ min: 0, max: 255 }).map((b) => [b]),
    fc.integer({ min: 0x20, max: 0x7e }).map((b) => [b]),
    fc.constantFrom([0xf0, 0x9f, 0x98], [0xe2, 0x82], [0xc3], [0x80], [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xef, 0xbf, 0xbd], [0xc3, 0xa9]),
  );
  const bytes = fc.array(piece, { minLength: 1, maxLength: 12 }).map((ps) => Uint8Array.from(ps.flat()));

  /** The value of a record whose field `which` holds `bytes` instead of its placeholder text. */
  function corrupted(which: 'market' | 'price' | 'note', b: Uint8Array): Buffer {
    const hole = { market: 'Q', price: 'P', note: 'N' }[which].repeat(b.length);
    const value = Buffer.from(encodeRawBinary([record(which === 'market' ? hole : 'm', which === 'price' ? hole : '0.5', which === 'note' ? hole : null)]));
    const at = value.indexOf(Buffer.from(hole));
    expect(value.indexOf(Buffer.from(hole), at + 1)).toBe(-1);
    value.set(b, at);
    return value;
  }

  it('a string field decodes to exactly its bytes as UTF-8, or the value is refused when they are not UTF-8', () => {
    fc.assert(
      fc.property(fc.constantFrom('market' as const, 'price' as const), bytes, (which, b) => {
        const d = decodeRawBinary(corrupted(which, b));
        const text = utf8(b);
        if (text === null) {
          expect(d).toMatchObject({ ok: false });
          expect(!d.ok && d.reason).toMatch(/not UTF-8/);
        } else {
          expect(d.ok).toBe(true);
          const e = (d.ok ? d.messages[0]! : null) as ExchangeAMessage;
          expect(which === 'market' ? e.event.market : e.event.changes![0]!.price).toBe(text);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('the JSON text of a record (tag 00) is refused when it is not UTF-8', () => {
    fc.assert(
      fc.property(bytes, (b) => {
        const d = decodeRawBinary(corrupted('note', b));
        if (utf8(b) === null) expect(!d.ok && d.reason).toMatch(/not UTF-8/);
      }),
      { numRuns: 1000 },
    );
  });

  it('a 4-byte sequence cut after 3 bytes is refused (it decodes to one U+FFFD of the same 3 bytes)', () => {
    const d = decodeRawBinary(corrupted('market', Uint8Array.from([0xf0, 0x9f, 0x98])));
    expect(d).toEqual({ ok: false, reason: expect.stringMatching(/^binary value refused: market: not UTF-8 at byte \d+$/) });
    // A real U+FFFD is text like any other.
    const real = decodeRawBinary(corrupted('market', Uint8Array.from([0xef, 0xbf, 0xbd])));
    expect(real.ok && (real.messages[0] as ExchangeAMessage).event.market).toBe('\ufffd');
  });

  it('over arbitrary corruptions of a value of both venues, no U+FFFD comes out that the bytes did not hold', () => {
    const values = [...venueValues().map((ms) => encodeRawBinary(ms))];
    fc.assert(
      fc.property(fc.nat(values.length - 1), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), (which, flips) => {
        const v = Buffer.from(values[which]!);
        if (v.length <= HEADER_BYTES) return;
        for (const [at, byte] of flips) v[HEADER_BYTES + (at % (v.length - HEADER_BYTES))] = byte;
        const d = decodeRawBinary(v);
        if (!d.ok) return;
        const held = v.includes(Buffer.from([0xef, 0xbf, 0xbd])) || v.includes(Buffer.from('\\ufffd')) || v.includes(Buffer.from('\\uFFFD'));
        if (!held) expect(JSON.stringify(d.messages)).not.toContain('\ufffd');
      }),
      { numRuns: 3000 },
    );
  });
});

const HEADER_BYTES = 8;

describe('raw values: the checks of records that travelled as JSON text inside a binary value', () => {
  it('check in full exactly the records that travelled as JSON text, wherever they sit in the value', () => {
    const T = Date.UTC(2026, 3, 2, 12);
    const rec = (i: number, seq: string): ExchangeAMessage => ({
      venue: 'exchange-a',
      received_at: new Date(T).toISOString(),
      worker_id: 1,
      ingest_seq: seq,
      dedup_id: `d${i}`,
      event: { market: 'm', asset_id: 'tok', timestamp: String(T), hash: 'h', event_type: 'price_change' },
    });
    // Per record: compact, JSON text with a good ingest_seq (leading zero: not the compact
    // layout's canonical text), or JSON text with a bad one (not a number).
    fc.assert(
      fc.property(fc.array(fc.constantFrom('compact', 'json', 'bad'), { minLength: 1, maxLength: 30 }), fc.nat(3), (kinds, split) => {
        const ms = kinds.map((k, i) => rec(i, k === 'compact' ? '123' : k === 'json' ? '0123' : 'x1'));
        const cut = Math.min(split, ms.length);
        const value = concatRawBinary([encodeRawBinary(ms.slice(0, cut)), encodeRawBinary(ms.slice(cut))]);
        expect(binaryRecordLayouts(value)).toEqual(kinds.map((k) => (k === 'compact' ? 'a' : 'json')));
        const firstBad = kinds.indexOf('bad');
        const d = decodeRawMessages('exchange-a', value);
        if (firstBad < 0) expect(d).toEqual({ ok: true, messages: viaJson(ms) });
        else expect(d).toEqual({ ok: false, reason: `record ${firstBad}: bad ingest_seq (a UInt64 as decimal text)` });
      }),
      { numRuns: 500 },
    );
  });
});

describe('concatRawMessages', () => {
  const T = Date.UTC(2026, 3, 2, 12);
  const rec = (i: number): ExchangeAMessage => ({
    venue: 'exchange-a',
    received_at: new Date(T).toISOString(),
    worker_id: 1,
    ingest_seq: String(1000 + i),
    dedup_id: `d${i}`,
    event: { market: 'm', asset_id: 'tok', timestamp: String(T), hash: 'h', event_type: 'price_change' },
  });

  it('merges JSON values, as text or as bytes, into one JSON array (what a process writing JSON sends); empty ones add nothing', () => {
    const merged = concatRawMessages([encodeRawMessages([rec(1), rec(2)]), Buffer.from(encodeRawMessages([rec(3)])), '[]', JSON.stringify(rec(4))]);
    expect(typeof merged).toBe('string');
    expect(JSON.parse(merged as string)).toEqual([rec(1), rec(2), rec(3), rec(4)]);
    expect(concatRawMessages(['[]', '[]'])).toBe('[]');
  });

  it('merges binary values behind one header without re-encoding them; a JSON value among them is re-encoded', () => {
    const a = encodeRawValue([rec(1)]);
    const b = encodeRawValue([rec(2), rec(3)]);
    const merged = concatRawMessages([a, b]) as Buffer;
    expect(merged.subarray(8).equals(Buffer.concat([a.subarray(8), b.subarray(8)]))).toBe(true);
    for (const json of [encodeRawMessages([rec(4)]), Buffer.from(encodeRawMessages([rec(4)]))]) {
      const mixed = concatRawMessages([a, json, b]);
      expect(decodeRawMessages('exchange-a', mixed as Buffer)).toEqual({ ok: true, messages: [rec(1), rec(4), rec(2), rec(3)] });
    }
  });

  it('throws on a binary value of a version it cannot merge (a bug upstream), naming it', () => {
    const v2 = Buffer.from(encodeRawValue([rec(1)]));
    v2[3] = BINARY_VERSION + 1;
    expect(() => concatRawMessages([encodeRawValue([rec(2)]), v2])).toThrow(/not a version-1 binary value/);
  });
});
