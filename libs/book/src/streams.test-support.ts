import type { ExchangeAEvent, ExchangeBRecord, PriceChange, PriceLevel } from '@booktape/domain';
import { decimalFromParts, subtractDecimal } from '@booktape/decimal';
import fc from 'fast-check';

/**
 * Random record streams for property tests: both venues, in serving order, with snapshots,
 * changes, removals, same-millisecond events, duplicates, B gaps and null payloads, B non-book
 * records, rare invalid records, quiet periods and several UTC days. Prices, sizes and deltas
 * are sometimes in the venue's non-canonical text ("0.50", "20.00", "-50.00"), as raw
 * records keep it. Prices come from a small per-stream
 * grid so that changes hit existing levels; the grid's tick is 0.01, 0.001 or 0.0001, so a
 * stream may also refine the tick mid-way.
 */

export const T0 = Date.UTC(2026, 1, 10, 0, 0, 0); // 2026-02-10

const dec = (units: number, scale: number): string => decimalFromParts(BigInt(units), scale);

/**
 * Milliseconds to the next record: same ms, busy, quiet, across hours and days. A negative
 * value -m moves to the next multiple of m (a bucket boundary of the common resolutions).
 */
const dtArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.constantFrom(-1_000, -2_000, -7_000, -60_000, -61_000, -300_000, -3_600_000) },
  { weight: 10, arbitrary: fc.integer({ min: 1, max: 3_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: 3_000, max: 900_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 900_000, max: 40 * 3_600_000 }) },
);

/** A decimal's text with `zeros` trailing fraction zeros added, as venues send "20.00" (or ".4800"). */
function padded(text: string, zeros: number): string {
  if (zeros <= 0) return text;
  // Sometimes without the leading zero, as Polymarket's documentation writes prices (".48").
  if (zeros === 3 && text.startsWith('0.')) return `${text.slice(1)}00`;
  return text.includes('.') ? text + '0'.repeat(zeros) : `${text}.${'0'.repeat(zeros)}`;
}

/** Mostly canonical, one in four with 1–3 trailing zeros. */
const venueText = (arb: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(arb, fc.integer({ min: -8, max: 3 })).map(([t, z]) => padded(t, z));

const sizeArb = venueText(
  fc.oneof(
    { weight: 2, arbitrary: fc.constant('0') },
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 5_000 }).map(String) },
    {
      weight: 4,
      arbitrary: fc.tuple(fc.integer({ min: 1, max: 900_000_000 }), fc.integer({ min: 1, max: 6 })).map(([u, s]) => dec(u, s)),
    },
  ),
);

const deltaArb = venueText(
  fc.tuple(fc.integer({ min: -3_000, max: 3_000 }), fc.integer({ min: 0, max: 2 })).map(([u, s]) => dec(u, s)),
);

/**
 * A price grid: tick 10^-d, up to 21 prices around a centre, clipped to [0, 1], ascending.
 * Bids pick from the lower half and asks from the upper half (sharing the middle price), and
 * one pick in 25 from anywhere, so books are mostly uncrossed but sometimes crossed.
 */
export interface Grid {
  prices: string[];
}

// One pick in nine has its price in venue text with trailing zeros ("0.50").
const pricePad = (p: Pick): number => (p % 9 === 4 ? 1 + (p % 2) : 0);

function gridBid(grid: Grid, p: Pick): string {
  const n = grid.prices.length;
  return grid.prices[p % 25 === 0 ? p % n : p % Math.ceil(n * 0.5)]!;
}

function gridAsk(grid: Grid, p: Pick): string {
  const n = grid.prices.length;
  return grid.prices[p % 25 === 0 ? p % n : n - 1 - (p % Math.ceil(n * 0.5))]!;
}

const bidPrice = (grid: Grid, p: Pick): string => padded(gridBid(grid, p), pricePad(p));
const askPrice = (grid: Grid, p: Pick): string => padded(gridAsk(grid, p), pricePad(p));
/** Exchange B NO bid whose ask (1 − price) is askPrice's. */
const noPrice = (grid: Grid, p: Pick): string => padded(subtractDecimal('1', gridAsk(grid, p)), pricePad(p));

const gridArb: fc.Arbitrary<Grid> = fc
  .tuple(fc.constantFrom(2, 2, 3, 4), fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 5 }))
  .map(([d, c, stepTicks]) => {
    const one = 10 ** d;
    const centre = Math.round(c * one);
    const set = new Set<number>();
    for (let k = -10; k <= 10; k++) set.add(Math.min(one, Math.max(0, centre + k * stepTicks)));
    return { prices: [...set].sort((a, b) => a - b).map((u) => dec(u, d)) };
  });

function advance(ts: number, dt: number): number {
  return dt >= 0 ? ts + dt : (Math.floor(ts / -dt) + 1) * -dt;
}

const INVALID_PRICES = ['1.5', '0.0000001', '-0.1', '2', 'abc'];
const INVALID_SIZES = ['-3', '1.', '.', '', '1e3', '+1', ' 1'];

type Pick = number; // an index into the grid, taken modulo its length
const pickArb = fc.nat({ max: 1_000 });

type AOp =
  | { dt: number; kind: 'book'; bids: [Pick, string][]; asks: [Pick, string][] }
  | { dt: number; kind: 'change'; changes: [Pick, 'BUY' | 'SELL', string][] }
  | { dt: number; kind: 'other' }
  | { dt: number; kind: 'dup' }
  | { dt: number; kind: 'bad'; which: number };

const levelsArb = fc.array(fc.tuple(pickArb, sizeArb), { maxLength: 8 });

const aOpArb: fc.Arbitrary<AOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('book' as const), bids: levelsArb, asks: levelsArb }) },
  {
    weight: 40,
    arbitrary: fc.record({
      dt: dtArb,
      kind: fc.constant('change' as const),
      changes: fc.array(fc.tuple(pickArb, fc.constantFrom('BUY' as const, 'SELL' as const), sizeArb), { maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('other' as const) }) },
  { weight: 2, arbitrary: fc.record({ dt: fc.constant(0), kind: fc.constant('dup' as const) }) },
  { weight: 1, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('bad' as const), which: fc.nat({ max: 99 }) }) },
);

/** An exchange A stream for one asset, in serving order. */
export const exchangeAStreamArb: fc.Arbitrary<ExchangeAEvent[]> = fc
  .tuple(gridArb, fc.integer({ min: 0, max: 86_399_999 }), fc.array(aOpArb, { maxLength: 150, size: 'max' }))
  .map(([grid, offset, ops]) => {
    const out: ExchangeAEvent[] = [];
    let ts = T0 + offset;
    let n = 0;
    for (const op of ops) {
      ts = advance(ts, op.dt);
      const base = { market: '0xabc', asset_id: '123', timestamp: String(ts), hash: `h${n++}` };
      switch (op.kind) {
        case 'book': {
          const lv = (l: [Pick, string][], ask: boolean): PriceLevel[] =>
            l.map(([p, size]) => ({ price: ask ? askPrice(grid, p) : bidPrice(grid, p), size }));
          out.push({ ...base, event_type: 'book', bids: lv(op.bids, false), asks: lv(op.asks, true) });
          break;
        }
        case 'change': {
          const changes: PriceChange[] = op.changes.map(([p, side, size]) => ({
            price: side === 'BUY' ? bidPrice(grid, p) : askPrice(grid, p),
            side,
            size,
          }));
          out.push({ ...base, event_type: 'price_change', changes });
          break;
        }
        case 'other':
          out.push({ ...base, event_type: 'last_trade_price', extra: { price: '0.5', size: '10' } });
          break;
        case 'dup': {
          const prev = out[out.length - 1];
          if (prev) out.push({ ...prev, timestamp: String(Math.max(ts, Number(prev.timestamp))) });
          break;
        }
        case 'bad': {
          const w = op.which;
          const changes: PriceChange[] =
            w % 3 === 0
              ? [{ price: INVALID_PRICES[w % INVALID_PRICES.length]!, side: 'BUY', size: '1' }]
              : w % 3 === 1
                ? [{ price: askPrice(grid, w), side: 'SELL', size: INVALID_SIZES[w % INVALID_SIZES.length]! }]
                : [{ price: bidPrice(grid, w), side: 'HOLD' as 'BUY', size: '1' }];
          if (w < 50) out.push({ ...base, event_type: 'price_change', changes });
          else out.push({ ...base, event_type: 'book', bids: [{ price: changes[0]!.price, size: changes[0]!.size }], asks: [] });
          break;
        }
      }
    }
    return out;
  });

type BOp =
  | { dt: number; kind: 'snapshot'; yes: [Pick, string][] | null; no: [Pick, string][] | null }
  | { dt: number; kind: 'delta'; side: 'yes' | 'no'; price: Pick | null; delta: string | null }
  | { dt: number; kind: 'gap' }
  | { dt: number; kind: 'other'; which: 'ticker' | 'trade' }
  | { dt: number; kind: 'dup' }
  | { dt: number; kind: 'bad'; which: number };

const sideLevelsArb = fc.option(levelsArb, { freq: 20, nil: null });

const bOpArb: fc.Arbitrary<BOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('snapshot' as const), yes: sideLevelsArb, no: sideLevelsArb }) },
  {
    weight: 40,
    arbitrary: fc.record({
      dt: dtArb,
      kind: fc.constant('delta' as const),
      side: fc.constantFrom('yes' as const, 'no' as const),
      price: fc.option(pickArb, { freq: 30, nil: null }),
      delta: fc.option(deltaArb, { freq: 40, nil: null }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('gap' as const) }) },
  { weight: 1, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('other' as const), which: fc.constantFrom('ticker' as const, 'trade' as const) }) },
  { weight: 2, arbitrary: fc.record({ dt: fc.constant(0), kind: fc.constant('dup' as const) }) },
  { weight: 1, arbitrary: fc.record({ dt: dtArb, kind: fc.constant('bad' as const), which: fc.nat({ max: 99 }) }) },
);

/** An exchange B stream for one ticker, in serving order. */
export const exchangeBStreamArb: fc.Arbitrary<ExchangeBRecord[]> = fc
  .tuple(gridArb, fc.integer({ min: 0, max: 86_399_999 }), fc.array(bOpArb, { maxLength: 150, size: 'max' }))
  .map(([grid, offset, ops]) => {
    const yesPrice = (p: Pick): string => bidPrice(grid, p);
    const no = (p: Pick): string => noPrice(grid, p);
    const out: ExchangeBRecord[] = [];
    let ts = T0 + offset;
    let seq = 0;
    for (const op of ops) {
      ts = advance(ts, op.dt);
      const base = { ticker: 'KXTEST-26FEB10', timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 1, seq: ++seq };
      const lv = (l: [Pick, string][] | null, price: (p: Pick) => string): [string, string][] | null =>
        l === null ? null : l.map(([p, s]) => [price(p), s]);
      switch (op.kind) {
        case 'snapshot':
          out.push({ ...base, type: 'snapshot', yes: lv(op.yes, yesPrice), no: lv(op.no, no) });
          break;
        case 'delta': {
          const price = op.price === null ? null : op.side === 'yes' ? yesPrice(op.price) : no(op.price);
          out.push({ ...base, type: 'delta', side: op.side, price, delta: op.delta });
          break;
        }
        case 'gap':
          out.push({ ...base, type: 'gap', expected_seq: seq - 1 });
          break;
        case 'other':
          out.push({ ...base, type: op.which, data: { yes_bid_dollars: '0.4200', count: 3 } });
          break;
        case 'dup': {
          const prev = out[out.length - 1];
          if (prev) out.push({ ...prev, epoch_ms: Math.max(ts, prev.epoch_ms) });
          break;
        }
        case 'bad': {
          const w = op.which;
          if (w % 3 === 0) out.push({ ...base, type: 'delta', side: 'yes', price: INVALID_PRICES[w % INVALID_PRICES.length]!, delta: '5' });
          else if (w % 3 === 1) out.push({ ...base, type: 'delta', side: 'no', price: no(w), delta: w % 2 === 0 ? '+1.5' : '--1' });
          else out.push({ ...base, type: 'snapshot', yes: [[yesPrice(w), INVALID_SIZES[w % INVALID_SIZES.length]!]], no: [] });
          break;
        }
      }
    }
    return out;
  });

/** Event time of a record of either venue. */
export function tsOf(r: ExchangeAEvent | ExchangeBRecord): number {
  return 'epoch_ms' in r ? r.epoch_ms : Number(r.timestamp);
}

/** A resolution 1..3600, biased to the interesting ones. */
export const resolutionArb = fc.oneof(
  fc.constantFrom(1, 2, 7, 60, 61, 300, 3600),
  fc.integer({ min: 1, max: 3600 }),
);

/**
 * A window for a stream, small enough for the reference (at most ~3,000 buckets): mostly
 * one that starts shortly before a record and holds it, sometimes anywhere around the
 * stream's span. `u`, `v`, `w` in [0, 1] place it.
 */
export function windowFor(
  times: readonly number[],
  resolutionSeconds: number,
  u: number,
  v: number,
  w: number,
): { startMs: number; endMs: number } {
  const r = resolutionSeconds * 1000;
  const len = Math.floor(v * r * 3_000);
  if (w < 0.75) {
    const at = times[Math.floor(u * times.length)]!;
    const startMs = at - Math.floor(w * 1.3 * len);
    return { startMs, endMs: startMs + len };
  }
  const lo = times[0]! - 2 * 3_600_000;
  const hi = times[times.length - 1]! + 2 * 3_600_000;
  const startMs = Math.floor(lo + u * (hi - lo));
  return { startMs, endMs: startMs + len };
}
