import type { ExchangeAEvent, ExchangeBRecord } from '@booktape/domain';
import {
  addDecimal,
  canonicalDecimal,
  compareDecimal,
  decimalFromParts,
  decimalParts,
  subtractDecimal,
} from '@booktape/decimal';
import type { ExactBucket, Ohlc } from './bucketing.ts';
import type { Observation } from './observation.ts';

/**
 * A deliberately simple implementation of docs/rules/summaries.md, rules 1–10, for tests only: books are
 * maps of price text → size text, the top is found by sorting on every query, arithmetic is
 * decimal.ts (BigInt), buckets are grouped in a map and walked one by one. Slow and obvious.
 *
 * It shares no code with the engine; it does share the engine's documented decisions for
 * input the rules do not cover: a price that is not a decimal in [0, 1] with at most six
 * fraction digits, a size that is not a non-negative decimal `digits[.digits]` or `.digits`, a delta
 * that is not `[-]digits[.digits]` or `[-].digits`, or an unknown side makes the book unknown until the next
 * snapshot; a snapshot's repeated price takes its last entry. Venue text in any form
 * ("0.50", "20.00") is read as its value; observations are canonical.
 */

function validPrice(p: unknown): p is string {
  if (typeof p !== 'string' || !/^(\d+(\.\d+)?|\.\d+)$/.test(p)) return false;
  const c = canonicalDecimal(p);
  if (!c.ok) return false;
  return compareDecimal(c.value, '0') >= 0 && compareDecimal(c.value, '1') <= 0 && decimalParts(c.value).scale <= 6;
}

function validSize(s: unknown): s is string {
  return typeof s === 'string' && /^(\d+(\.\d+)?|\.\d+)$/.test(s);
}

function validDelta(s: unknown): s is string {
  return typeof s === 'string' && /^-?(\d+(\.\d+)?|\.\d+)$/.test(s);
}

function canonical(s: string): string {
  const c = canonicalDecimal(s);
  if (!c.ok) throw new Error(`unreachable: ${s}`);
  return c.value;
}

class RefBook {
  known = false;
  bids = new Map<string, string>(); // A bids / B yes
  asks = new Map<string, string>(); // A asks / B no

  forget(): void {
    this.known = false;
    this.bids = new Map();
    this.asks = new Map();
  }

  /** Sets a level; false (and the book unknown) when the level is invalid. */
  set(side: Map<string, string>, price: unknown, size: unknown): boolean {
    if (!validPrice(price) || !validSize(size)) {
      this.forget();
      return false;
    }
    const key = canonicalDecimal(price);
    if (!key.ok) throw new Error('unreachable');
    const value = canonical(size);
    if (value === '0') side.delete(key.value);
    else side.set(key.value, value);
    return true;
  }
}

function sortedPrices(m: Map<string, string>): string[] {
  return [...m.keys()].sort(compareDecimal);
}

function mid(bid: string, ask: string): string {
  const b = decimalParts(bid);
  const a = decimalParts(ask);
  const scale = Math.max(a.scale, b.scale);
  const sum = b.units * 10n ** BigInt(scale - b.scale) + a.units * 10n ** BigInt(scale - a.scale);
  return decimalFromParts(sum * 5n, scale + 1); // (sum / 2) = sum · 5 / 10
}

function topOf(ts: number, known: boolean, bid: [string, string] | null, ask: [string, string] | null): Observation {
  if (!known) bid = ask = null;
  return {
    ts,
    best_bid: bid ? bid[0] : null,
    best_bid_size: bid ? bid[1] : null,
    best_ask: ask ? ask[0] : null,
    best_ask_size: ask ? ask[1] : null,
    mid_price: bid && ask ? mid(bid[0], ask[0]) : null,
    spread: bid && ask ? subtractDecimal(ask[0], bid[0]) : null,
  };
}

function best(m: Map<string, string>, which: 'max' | 'min'): [string, string] | null {
  const prices = sortedPrices(m);
  const p = which === 'max' ? prices[prices.length - 1] : prices[0];
  return p === undefined ? null : [p, m.get(p)!];
}

/** Applies one exchange A record to the reference book; false for a record that is no book event. */
function applyRefA(book: RefBook, ev: ExchangeAEvent): boolean {
  if (ev.event_type === 'book') {
    book.forget();
    book.known = true;
    const ok = (ev.bids ?? []).every((l) => book.set(book.bids, l.price, l.size));
    if (ok) (ev.asks ?? []).every((l) => book.set(book.asks, l.price, l.size));
  } else if (ev.event_type === 'price_change') {
    if (book.known) {
      for (const ch of ev.changes ?? []) {
        if (ch.side !== 'BUY' && ch.side !== 'SELL') {
          book.forget();
          break;
        }
        if (!book.set(ch.side === 'BUY' ? book.bids : book.asks, ch.price, ch.size)) break;
      }
    }
  } else return false;
  return true;
}

/** Exchange A observations, rules 1–4, straight from the records. */
export function referenceObservationsA(events: readonly ExchangeAEvent[]): Observation[] {
  const book = new RefBook();
  const out: Observation[] = [];
  for (const ev of events) {
    if (applyRefA(book, ev)) out.push(topOf(Number(ev.timestamp), book.known, best(book.bids, 'max'), best(book.asks, 'min')));
  }
  return out;
}

/** A whole reference book: whether it is known, and its levels as [price, size] in the order given. */
export interface ReferenceBook {
  known: boolean;
  bids: [string, string][];
  asks: [string, string][];
}

function levelsOf(m: Map<string, string>, order: 'asc' | 'desc'): [string, string][] {
  const prices = sortedPrices(m);
  if (order === 'desc') prices.reverse();
  return prices.map((p) => [p, m.get(p)!]);
}

/** Exchange A: the book after every record (rules 1–4); bids highest first, asks lowest first. */
export function referenceBookA(events: readonly ExchangeAEvent[]): ReferenceBook {
  const book = new RefBook();
  for (const ev of events) applyRefA(book, ev);
  return { known: book.known, bids: book.known ? levelsOf(book.bids, 'desc') : [], asks: book.known ? levelsOf(book.asks, 'asc') : [] };
}

/** Exchange A: the whole book after each book event (rules 1–4), one pass: for comparing two streams at every event. */
export function* referenceBookStepsA(events: readonly ExchangeAEvent[]): Generator<ReferenceBook> {
  const book = new RefBook();
  for (const ev of events) {
    if (applyRefA(book, ev)) yield { known: book.known, bids: book.known ? levelsOf(book.bids, 'desc') : [], asks: book.known ? levelsOf(book.asks, 'asc') : [] };
  }
}

/** Applies one exchange B record to the reference book; false for a record that is no book event (gaps only forget). */
function applyRefB(book: RefBook, rec: ExchangeBRecord): boolean {
  if (rec.type === 'gap') {
    book.forget();
    return false;
  }
  if (rec.type === 'snapshot') {
    if (rec.yes === null || rec.no === null) book.forget();
    else {
      book.forget();
      book.known = true;
      const ok = (rec.yes ?? []).every(([p, s]) => book.set(book.bids, p, s));
      if (ok) (rec.no ?? []).every(([p, s]) => book.set(book.asks, p, s));
    }
  } else if (rec.type === 'delta') {
    if (book.known) {
      if (rec.price == null || rec.delta == null) book.forget();
      else if ((rec.side !== 'yes' && rec.side !== 'no') || !validPrice(rec.price) || !validDelta(rec.delta)) {
        book.forget();
      } else {
        const side = rec.side === 'yes' ? book.bids : book.asks;
        const price = canonicalDecimal(rec.price);
        if (!price.ok) throw new Error('unreachable');
        const size = addDecimal(side.get(price.value) ?? '0', canonical(rec.delta));
        if (compareDecimal(size, '0') <= 0) side.delete(price.value);
        else side.set(price.value, size);
      }
    }
  } else return false;
  return true;
}

/** Exchange B observations, rules 1–4: best_ask = 1 − best NO bid, with its size. */
export function referenceObservationsB(records: readonly ExchangeBRecord[]): Observation[] {
  const book = new RefBook();
  const out: Observation[] = [];
  for (const rec of records) {
    if (!applyRefB(book, rec)) continue;
    const no = best(book.asks, 'max');
    out.push(topOf(rec.epoch_ms, book.known, best(book.bids, 'max'), no ? [subtractDecimal('1', no[0]), no[1]] : null));
  }
  return out;
}

/** Exchange B, record by record (rules 1–4): for comparing two streams at every record without rebuilding from the start. */
export class ReferenceBookStepperB {
  private readonly book = new RefBook();

  apply(rec: ExchangeBRecord): void {
    applyRefB(this.book, rec);
  }

  /** The book now, as referenceBookB gives it. */
  current(): ReferenceBook {
    const b = this.book;
    return { known: b.known, bids: b.known ? levelsOf(b.bids, 'desc') : [], asks: b.known ? levelsOf(b.asks, 'desc') : [] };
  }
}

/** Exchange B: the book after every record (rules 1–4); `bids` = YES bids, `asks` = NO bids, both highest first. */
export function referenceBookB(records: readonly ExchangeBRecord[]): ReferenceBook {
  const book = new RefBook();
  for (const rec of records) applyRefB(book, rec);
  return { known: book.known, bids: book.known ? levelsOf(book.bids, 'desc') : [], asks: book.known ? levelsOf(book.asks, 'desc') : [] };
}

function ohlc(values: (string | null)[]): Ohlc | null {
  const v = values.filter((x): x is string => x !== null);
  if (v.length === 0) return null;
  const sorted = [...v].sort(compareDecimal);
  return { open: v[0]!, high: sorted[sorted.length - 1]!, low: sorted[0]!, close: v[v.length - 1]! };
}

/**
 * Rules 5–7 over every observation there ever was (from the first record on): the buckets
 * whose start lies in [startMs, endMs].
 */
export function referenceBuckets(
  observations: readonly Observation[],
  resolutionSeconds: number,
  startMs: number,
  endMs: number,
): ExactBucket[] {
  const r = resolutionSeconds * 1000;
  const groups = new Map<number, Observation[]>();
  for (const o of observations) {
    const start = Math.floor(o.ts / r) * r;
    const g = groups.get(start);
    if (g) g.push(o);
    else groups.set(start, [o]);
  }
  const out: ExactBucket[] = [];
  let before = 0; // observations with ts < the current bucket's start
  for (let s = Math.ceil(startMs / r) * r; s <= endMs; s += r) {
    while (before < observations.length && observations[before]!.ts < s) before++;
    const inside = groups.get(s) ?? [];
    if (inside.length > 0) {
      const c = inside[inside.length - 1]!;
      out.push({
        timestamp: s,
        quote_count: inside.length,
        is_forward_filled: false,
        best_bid: c.best_bid,
        best_bid_size: c.best_bid_size,
        best_ask: c.best_ask,
        best_ask_size: c.best_ask_size,
        mid_price: c.mid_price,
        spread: c.spread,
        best_bid_ohlc: ohlc(inside.map((o) => o.best_bid)),
        best_ask_ohlc: ohlc(inside.map((o) => o.best_ask)),
        mid_price_ohlc: ohlc(inside.map((o) => o.mid_price)),
        spread_ohlc: ohlc(inside.map((o) => o.spread)),
      });
    } else if (before > 0) {
      const c = observations[before - 1]!;
      const f = (v: string | null): Ohlc | null => (v === null ? null : { open: v, high: v, low: v, close: v });
      out.push({
        timestamp: s,
        quote_count: 0,
        is_forward_filled: true,
        best_bid: c.best_bid,
        best_bid_size: c.best_bid_size,
        best_ask: c.best_ask,
        best_ask_size: c.best_ask_size,
        mid_price: c.mid_price,
        spread: c.spread,
        best_bid_ohlc: f(c.best_bid),
        best_ask_ohlc: f(c.best_ask),
        mid_price_ohlc: f(c.mid_price),
        spread_ohlc: f(c.spread),
      });
    }
  }
  return out;
}
