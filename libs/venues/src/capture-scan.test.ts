import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseCaptureLine } from './capture-file.ts';
import { ScannedFrame, scanCaptureLine } from './capture-scan.ts';
import { normaliseExchangeA } from './exchange-a.normaliser.ts';
import { ExchangeBNormaliser } from './exchange-b.normaliser.ts';

/**
 * The fast path (scanCaptureLine, then the normalisers on a ScannedFrame) against the
 * general one (parseCaptureLine, then the normalisers on parsed JSON), line by line: the
 * same line or error, the same frame text (what a dead letter writes), the same records
 * (values, types and key order), reasons and controls. Lines are the shapes of
 * venue-frames.md and variations of them (values of every kind, escapes, other number
 * spellings, missing, extra and reordered keys, white space), written out by JSON.stringify
 * and then also mutated as text.
 */

/** A value with its key order, types and undefined members made visible to toEqual. */
const exact = (v: unknown): unknown => {
  if (v === undefined) return '<undefined>';
  if (Array.isArray(v)) return v.map(exact);
  if (typeof v === 'object' && v !== null) return ['<object>', Object.getPrototypeOf(v) === Object.prototype, ...Object.entries(v).map(([k, x]) => [k, exact(x)])];
  return [typeof v, v];
};

type Normalise = (frame: unknown, at: Date) => unknown;

/** What one path makes of a line: the reader's entry, and the normaliser's result for a frame. */
function run(text: string, fast: boolean, normalise: Record<string, Normalise>): unknown {
  const scanned = fast ? scanCaptureLine(text) : null;
  const entry = scanned !== null ? { line: scanned } : parseCaptureLine(text);
  if ('error' in entry) return { error: entry.error };
  const { venue, received_at, frame, boundary, gap } = entry.line;
  if (frame === undefined) return exact({ venue, received_at, boundary, gap });
  const at = new Date(received_at);
  const result = normalise[venue]!(frame, at);
  return exact({ venue, received_at, frameText: JSON.stringify(frame), result });
}

/** How many lines compare() saw, how many the scanner matched, and of those how many gave records. */
const seen = { lines: 0, scanned: 0, records: 0 };

/** Both paths over lines in order (exchange B's normaliser keeps sequence state across them). */
function compare(lines: string[]): void {
  const b = { fast: new ExchangeBNormaliser(), slow: new ExchangeBNormaliser() };
  const paths = (which: 'fast' | 'slow'): Record<string, Normalise> => ({
    'exchange-a': normaliseExchangeA,
    'exchange-b': (f, at) => b[which].normalise(f, at),
  });
  for (const line of lines) {
    const fast = run(line, true, paths('fast'));
    expect(fast, line).toEqual(run(line, false, paths('slow')));
    seen.lines += 1;
    if (scanCaptureLine(line) !== null) {
      seen.scanned += 1;
      if (JSON.stringify(fast).includes('"records"')) seen.records += 1;
    }
  }
}

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
const oddText = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('', ' ', '"', '\\', '\n', 'é', '\u2028', 'x"y', '0x'));
/** Decimal texts, plain and not: what venueDecimal keeps, rewrites or refuses. */
const decimalText = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom('0.5', '0.50', '0.48', '.48', '200', '0', '1', '20.00', '154', '0.4200', '13.00') },
  { weight: 2, arbitrary: fc.constantFrom('-0.1', '-0', '-0.00', '+5', '1e-3', '1E2', '00.5', '5.', 'abc', '', ' 1', '0x10', 'NaN', '1'.repeat(90)) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map(String) },
);
const sideA = fc.oneof({ weight: 20, arbitrary: fc.constantFrom('BUY', 'SELL') }, { weight: 1, arbitrary: fc.constantFrom('buy', 'Sell', 'HOLD', '') });
const market = fc.oneof(
  { weight: 20, arbitrary: hex(64).map((h) => `0x${h}`) },
  { weight: 1, arbitrary: fc.oneof(hex(64), hex(64).map((h) => `0x${h.toUpperCase()}`), hex(10).map((h) => `0x${h}`), fc.constantFrom('', 'zz', ' 0xab')) },
);
const timestampA = fc.oneof(
  { weight: 20, arbitrary: fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('01772352000058', '1772352000', '', '17723520000580000', '9999999999999', 'x') },
);
const asset = fc.oneof({ weight: 20, arbitrary: fc.constantFrom('7132', '5211', '788257284588987344538948700630030711') }, { weight: 1, arbitrary: oddText });
const hash = fc.oneof({ weight: 20, arbitrary: hex(40) }, { weight: 1, arbitrary: fc.constantFrom('', '0xab', 'AB12') }, { weight: 1, arbitrary: oddText });
/** Any JSON value, for a field given the wrong kind of value. */
const other = fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.constant([]), fc.constant({}), fc.double({ noNaN: true, noDefaultInfinity: true }));
/** A field's value: mostly its own kind, sometimes another kind of JSON value. */
const field = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 30, arbitrary: a as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: other });

/** An object's entries, sometimes with a key dropped, a key added, or the keys reordered. */
function vary(entries: Array<[string, unknown]>): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .record({
      drop: fc.oneof({ weight: 20, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat(entries.length - 1) }),
      extra: fc.oneof({ weight: 20, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(fc.constantFrom('tick_size', 'x', 'hash', 'price'), fc.oneof(fc.string({ maxLength: 4 }), other)) }),
      order: fc.oneof({ weight: 20, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.shuffledSubarray(entries.map((_, i) => i), { minLength: entries.length, maxLength: entries.length }) }),
    })
    .map(({ drop, extra, order }) => {
      let list = entries.filter((_, i) => i !== drop);
      if (order) list = order.filter((i) => i !== drop).map((i) => entries[i]!);
      const o: Record<string, unknown> = {};
      for (const [k, v] of list) o[k] = v;
      if (extra) o[extra[0]] = extra[1];
      return o;
    });
}

const listEntry = fc
  .tuple(field(asset), field(decimalText), field(decimalText), field(sideA), field(hash), field(decimalText), field(decimalText))
  .chain(([a, p, s, sd, h, bb, ba]) => vary([['asset_id', a], ['price', p], ['size', s], ['side', sd], ['hash', h], ['best_bid', bb], ['best_ask', ba]]));
const priceChangeList = fc
  .tuple(field(market), field(timestampA), fc.array(listEntry, { minLength: 0, maxLength: 4 }))
  .chain(([m, t, entries]) => vary([['event_type', 'price_change'], ['market', m], ['timestamp', t], ['price_changes', entries]]));
const oldChange = fc.tuple(field(decimalText), field(decimalText), field(sideA), fc.boolean()).chain(([p, s, sd, sideFirst]) =>
  vary(sideFirst ? [['price', p], ['side', sd], ['size', s]] : [['price', p], ['size', s], ['side', sd]]),
);
const priceChangeOld = fc
  .tuple(field(asset), field(market), field(timestampA), field(hash), fc.array(oldChange, { minLength: 0, maxLength: 3 }))
  .chain(([a, m, t, h, changes]) => vary([['event_type', 'price_change'], ['asset_id', a], ['market', m], ['timestamp', t], ['hash', h], ['changes', changes]]));
const flatChange = fc.tuple(asset, market, timestampA, decimalText, sideA, decimalText, hash).map(([a, m, t, p, sd, s, h]) => ({ event_type: 'price_change', asset_id: a, market: m, price: p, side: sd, size: s, hash: h, timestamp: t }));
const book = fc.tuple(asset, market, timestampA, hash).map(([a, m, t, h]) => [{ event_type: 'book', asset_id: a, market: m, bids: [{ price: '0.48', size: '30' }], asks: [{ price: '0.52', size: '25' }], timestamp: t, hash: h, tick_size: '0.01' }]);
const otherA = fc.constantFrom(
  { event_type: 'last_trade_price', asset_id: '1', market: `0x${'a'.repeat(64)}`, price: '0.456', size: '219.2', fee_rate_bps: '0', side: 'BUY', timestamp: '1750428146322', transaction_hash: '0xab' },
  'PONG',
  [],
);

const ticker = fc.oneof({ weight: 20, arbitrary: fc.constantFrom('KXBENCH-26MAR01-T1000', 'KXBTC-25MAR15-B100000') }, { weight: 1, arbitrary: fc.constantFrom('kxbtc-25mar15', '', ' KX ', 'KX"1', 'a b') });
const sideB = fc.oneof({ weight: 20, arbitrary: fc.constantFrom('yes', 'no') }, { weight: 1, arbitrary: fc.constantFrom('YES', 'No', 'maybe', '') });
const seqNumber = fc.oneof({ weight: 20, arbitrary: fc.integer({ min: 0, max: 40 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 2 ** 53, 1e15, 123456789012345) });
const tsMs = fc.oneof({ weight: 20, arbitrary: fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 1_739_548_200, -5, 999_999_999_999_999) });
const tsIso = fc.constantFrom('2026-02-14T15:30:00Z', '2026-02-14T14:15:11.73425Z', '1739548200', '2026-13-40T00:00:00Z', 'soon', '');
const deltaDollars = fc
  .tuple(field(seqNumber), field(seqNumber), field(ticker), field(fc.oneof(fc.uuid(), fc.constant(''))), field(decimalText), field(decimalText), field(sideB), field(tsMs))
  .chain(([sid, seq, t, id, p, d, sd, ts]) =>
    fc.tuple(vary([['type', 'orderbook_delta'], ['sid', sid], ['seq', seq], ['msg', null]]), vary([['market_ticker', t], ['market_id', id], ['price_dollars', p], ['delta_fp', d], ['side', sd], ['ts_ms', ts]]))
      .map(([head, msg]) => ('msg' in head ? { ...head, msg } : head)),
  );
const deltaCents = fc
  .tuple(seqNumber, seqNumber, ticker, fc.integer({ min: -100, max: 100 }), decimalText, fc.integer({ min: -500, max: 500 }), decimalText, sideB, tsIso)
  .chain(([sid, seq, t, c, p, d, dfp, sd, ts]) =>
    vary([['market_ticker', t], ['price', c], ['price_dollars', p], ['delta', d], ['delta_fp', dfp], ['side', sd], ['ts', ts]]).map((msg) => ({ type: 'orderbook_delta', sid, seq, msg })),
  );
const otherB = fc.constantFrom(
  { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 5 } },
  { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: 'KXBTC-25MAR15-B100000', market_id: '', yes_dollars_fp: [['0.4100', '20.00']], no_dollars_fp: [['0.5400', '200.00']] } },
  { type: 'ok', id: 2, sid: 5, seq: 108, msg: { market_tickers: ['KX'] } },
  { type: 'orderbook_delta', sid: 5, seq: 3, msg: { market_ticker: 'KXBTC-25MAR15-B100000', price: 46, price_dollars: '0.46', delta: -50, delta_fp: '-50.00', side: 'yes', ts: '2026-02-14T15:30:00Z', ts_ms: 1739548200000 } },
);

const receivedAt = fc.oneof(
  { weight: 20, arbitrary: fc.integer({ min: Date.parse('2026-03-01T00:00:00Z'), max: Date.parse('2026-03-02T00:00:00Z') }).map((ms) => new Date(ms).toISOString()) },
  { weight: 1, arbitrary: fc.constantFrom('2026-03-01T08:00:00Z', '2026-03-01', 'yesterday', '', '9999-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z') },
);

const frameA = fc.oneof({ weight: 6, arbitrary: priceChangeList }, { weight: 3, arbitrary: priceChangeOld }, { weight: 1, arbitrary: fc.oneof(flatChange, book, otherA) });
const frameB = fc.oneof({ weight: 6, arbitrary: deltaDollars }, { weight: 3, arbitrary: deltaCents }, { weight: 1, arbitrary: otherB });
const line = fc.oneof(
  fc.tuple(receivedAt, frameA).map(([at, frame]) => JSON.stringify({ venue: 'exchange-a', received_at: at, frame })),
  fc.tuple(receivedAt, frameB).map(([at, frame]) => JSON.stringify({ venue: 'exchange-b', received_at: at, frame })),
);

/** Text mutations the writer's JSON.stringify never makes: other spellings, white space, escapes, broken JSON. */
const MUTATIONS: Array<[RegExp, string]> = [
  [/"sid":(\d+)/, '"sid":$1.0'],
  [/"seq":(\d+)/, '"seq":0$1'],
  [/"seq":(\d+)/, '"seq":$1e0'],
  [/"ts_ms":(\d+)/, '"ts_ms":-0'],
  [/"price":(-?\d+)/, '"price":$1.50'],
  [/"delta":(-?\d+)/, '"delta":1E+2'],
  [/"delta":(-?\d+)/, '"delta":--1'],
  [/:"/, ': "'],
  [/,"/, ' ,"'],
  [/"price":"/, '"price":"\\u0030'],
  [/"side":"/, '"side":"\\u0042'],
  [/"market":"0x/, '"market":"0\\u0078'],
  [/"hash":"/, '"hash":"\\"'],
  [/\}$/, '}\r'],
  [/\}$/, '} '],
  [/\}$/, ''],
  [/\]\}\}$/, ']}}}'],
  [/\]\}\}$/, ',]}}'],
  [/\},\{/, '},,{'],
  [/"venue"/, '"venue" '],
  [/^/, '\ufeff'],
  [/"frame":\{/, '"frame":{"frame":1,'],
  [/,"frame":/, ',"received_at":"2026-03-01T08:00:00.000Z","frame":'],
  [/\}\}$/, '},"frame":null}'],
];
const mutated = fc.tuple(line, fc.nat(MUTATIONS.length - 1)).map(([text, i]) => text.replace(MUTATIONS[i]![0], MUTATIONS[i]![1]));

describe('capture lines: the fast path gives what the general path gives', () => {
  it('the hot shapes as capture writes them take the fast path', () => {
    const lines = [
      '{"venue":"exchange-a","received_at":"2026-03-01T08:00:02.441Z","frame":{"event_type":"price_change","market":"0xb99c57c0f5ff4eb0c2adf262c427c71fc2052d3d43d01d0f796267f4d191fc59","timestamp":"1772352002441","price_changes":[{"asset_id":"384410238770073405141793299053888336","price":"0.38","size":"0","side":"BUY","hash":"c4f3c06cdaaa27fd9ade86dd88e81b76ae18bffe","best_bid":"0.48","best_ask":"0.52"},{"asset_id":"286988451652839184969704416587947694","price":"0.35","size":"154","side":"BUY","hash":"bdc3c3ec128b9756a3956942a754b7404e48d386","best_bid":"0.48","best_ask":"0.52"}]}}',
      '{"venue":"exchange-a","received_at":"2026-03-01T08:00:00.058Z","frame":{"event_type":"price_change","asset_id":"788257284588987344538948700630030711","market":"0xb81e0f6b6c201d5a1b49973a8f38a5cfc889c3fd1218f99e2db725bdf8c5e445","timestamp":"1772352000058","hash":"175c15cc17af2af640121e429189fa2e6ee1fd4b","changes":[{"price":"0.48","size":"0","side":"BUY"}]}}',
      '{"venue":"exchange-b","received_at":"2026-03-01T08:00:02.441Z","frame":{"type":"orderbook_delta","sid":7,"seq":2013,"msg":{"market_ticker":"KXBENCH-26MAR01-T1006","market_id":"deab346e-32bf-6edd-9d72-848210ad1057","price_dollars":"0.4500","delta_fp":"20.00","side":"yes","ts_ms":1772352002441}}}',
      '{"venue":"exchange-b","received_at":"2026-03-01T08:00:02.441Z","frame":{"type":"orderbook_delta","sid":7,"seq":2014,"msg":{"market_ticker":"KXBENCH-26MAR01-T1006","price":46,"price_dollars":"0.46","delta":-50,"delta_fp":"-50.00","side":"yes","ts":"2026-03-01T08:00:02Z"}}}',
    ];
    for (const l of lines) expect(scanCaptureLine(l)?.frame, l).toBeInstanceOf(ScannedFrame);
    compare(lines);
  });

  it('a value the fast path refuses gives the general path’s dead-letter reason and frame text', () => {
    const badTs = '{"venue":"exchange-b","received_at":"2026-03-01T08:00:02.441Z","frame":{"type":"orderbook_delta","sid":7,"seq":1,"msg":{"market_ticker":"KX-1","price":46,"price_dollars":"0.46","delta":-50,"delta_fp":"-50.00","side":"yes","ts":"soon"}}}';
    const frame = scanCaptureLine(badTs)?.frame;
    expect(frame).toBeInstanceOf(ScannedFrame);
    const r = new ExchangeBNormaliser().normalise(frame, new Date('2026-03-01T08:00:02.441Z'));
    expect(r).toEqual({ kind: 'invalid', reason: 'orderbook_delta: ts is neither ISO 8601 nor a Unix time: "soon"' });
    expect(JSON.stringify(frame)).toBe(JSON.stringify(JSON.parse(badTs).frame));
    // A value outside the patterns is not matched at all: the general path reads the line.
    const negative = '{"venue":"exchange-b","received_at":"2026-03-01T08:00:02.441Z","frame":{"type":"orderbook_delta","sid":7,"seq":1,"msg":{"market_ticker":"KX-1","market_id":"m","price_dollars":"-0.4500","delta_fp":"20.00","side":"yes","ts_ms":1772352002441}}}';
    expect(scanCaptureLine(negative)).toBeNull();
    compare([badTs, negative]);
  });

  it('lines of every shape and variations of them', () => {
    Object.assign(seen, { lines: 0, scanned: 0, records: 0 });
    fc.assert(fc.property(fc.array(line, { minLength: 1, maxLength: 12 }), compare), { numRuns: 3000 });
    // Not vacuous: many lines took the fast path to records, and many were refused by it.
    expect(seen.records / seen.lines).toBeGreaterThan(0.12);
    expect(seen.scanned / seen.lines).toBeLessThan(0.9);
  });

  it('lines mutated as text', () => {
    fc.assert(fc.property(fc.array(fc.oneof(line, mutated), { minLength: 1, maxLength: 12 }), compare), { numRuns: 3000 });
  });
});
