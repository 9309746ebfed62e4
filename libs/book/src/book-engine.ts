import type { ExchangeAEvent, ExchangeBRecord, PriceLevel, PriceChange } from '@booktape/domain';
import {
  POW10,
  addSizes,
  canonicalDelta,
  canonicalSize,
  isDeltaText,
  isNonPositive,
  msFromText,
  readPrice,
  readScratch,
  unitsText,
} from './fixed-point.ts';
import type { ObservationSink } from './compact-buckets.ts';
import type { Observation } from './observation.ts';
import { PriceLadder } from './price-ladder.ts';

/**
 * Exact order books that turn one asset's stored records, in serving order, into top-of-book
 * observations (docs/rules/summaries.md, rules 1–4). Pure: no I/O, no clock.
 *
 * Representation: prices are integer units of 10^-scale on a dense ladder (price-ladder.ts);
 * the scale starts at 2 (0.01) and grows to the finest price seen, up to 10^-6, by
 * re-indexing the ladders once. Sizes are canonical decimal strings, normalised from the
 * venue's text as records keep it ("309.00" → "309"; already-canonical text passes after one
 * scan): exchange A only sets them, exchange B adds deltas exactly (fixed-point.ts). Mid = (bid + ask) / 2 is
 * exact at one more decimal when bid + ask is odd; spread = ask − bid. Both sides share the
 * "best = highest index" rule: bids by price, asks by 1 − price (A asks mirrored, B's NO bids
 * as they are), so the ask is always 1 − the complement ladder's best index.
 *
 * Unknown book: before the first snapshot, and (B) after a gap record, a null price or delta
 * payload, or a null snapshot side, until the next snapshot. A book event on an unknown book
 * is still an observation, with null values.
 *
 * Anomalies: a record the engine cannot apply exactly (a price outside [0, 1] or finer than
 * 10^-6, a size that is not a non-negative decimal `digits[.digits]`, an unknown side) does not
 * throw — one bad record must not cost a day of summaries — but makes the book unknown until
 * the next snapshot, counted in `anomalies` with `lastAnomaly` for the caller to log.
 */

const INITIAL_SCALE = 2;

/**
 * Price texts read before: a book meets the same few hundred prices all day, and the row
 * decoders hand over one string per value (book-rows.ts), so a lookup is cheaper than
 * reading the text again (with ioredis loaded, `charCodeAt` is about 4x slower in the whole
 * process, docs/BENCHMARKS.md). Sizes vary far more and are read each time. Bounded:
 * cleared when full.
 */
const READ_MEMO_MAX = 1 << 14;
/** Price text → units · 8 + decimals (decimals ≤ MAX_PRICE_DECIMALS < 8), or -1. */
const PRICES = new Map<string, number>();

/** Longer texts (trailing zeros, or not prices at all) are read, not remembered. */
const MEMO_TEXT_MAX = 16;

/** readPrice, remembered. */
function levelPrice(s: string): number {
  if (s.length > MEMO_TEXT_MAX) return readPrice(s);
  let v = PRICES.get(s);
  if (v === undefined) {
    const units = readPrice(s);
    v = units < 0 ? -1 : units * 8 + readScratch.decimals;
    if (PRICES.size >= READ_MEMO_MAX) PRICES.clear();
    PRICES.set(s, v);
  }
  if (v < 0) return -1;
  readScratch.decimals = v & 7;
  return (v - (v & 7)) / 8;
}

abstract class LadderBook {
  private scale = INITIAL_SCALE;
  /** Index of the price 1 (read it after index(), which may re-index). */
  protected one = POW10[INITIAL_SCALE]!;
  protected bids = new PriceLadder(this.one + 1);
  /** Ask side indexed by 1 − price. */
  protected comps = new PriceLadder(this.one + 1);
  protected known = false;
  // The last observation is kept as its time: its top is the book's current top, except
  // after a B gap (the book changed without an observation) or a restore, when `frozen`
  // holds it. (Storing every observation in the long-lived book would add a GC write
  // barrier to every event.)
  private observed = false;
  private lastTs = Number.NaN;
  private frozen: Observation | null = null;
  /** Records that could not be applied exactly (each made the book unknown). */
  anomalies = 0;
  lastAnomaly: string | null = null;

  /** The last observation so far (from any earlier day once restored), or null if none. */
  lastObservation(): Observation | null {
    if (this.frozen !== null) return this.frozen;
    return this.observed ? this.top(this.lastTs) : null;
  }

  /** Keeps the last observation as it was, before the book changes without an observation. */
  protected freezeLast(): void {
    if (this.frozen === null && this.observed) this.frozen = this.top(this.lastTs);
  }

  /** Whether the book is currently known (a snapshot since the last unknown-making event). */
  isKnown(): boolean {
    return this.known;
  }

  /** Best bid price now, canonical; null when the side is empty or the book unknown. */
  bestBid(): string | null {
    if (!this.known) return null;
    const b = this.bids.best;
    if (b !== this.textBid || this.comps.best !== this.textComp) this.topTexts(b, this.comps.best);
    return this.bidText;
  }

  /** Best ask price now, canonical; null when the side is empty or the book unknown. */
  bestAsk(): string | null {
    if (!this.known) return null;
    const c = this.comps.best;
    if (this.bids.best !== this.textBid || c !== this.textComp) this.topTexts(this.bids.best, c);
    return this.askText;
  }

  protected forget(): void {
    this.known = false;
    if (this.bids.count > 0) this.bids.clear();
    if (this.comps.count > 0) this.comps.clear();
  }

  protected startSnapshot(): void {
    this.forget();
    this.known = true;
  }

  protected anomaly(reason: string): void {
    this.anomalies++;
    this.lastAnomaly = reason;
    this.forget();
  }

  /**
   * Ladder index of a price read by readPrice (units of 10^-decimals), re-indexing the
   * ladders first when the price is finer than the current scale.
   */
  protected index(units: number, decimals: number): number {
    if (decimals > this.scale) this.rescale(decimals);
    return units * POW10[this.scale - decimals]!;
  }

  /**
   * A level's price read by readPrice, its decimals left in readScratch; -1, counted as an
   * anomaly, when it is not a price the engine holds.
   */
  protected priceUnits(price: unknown): number {
    const units = typeof price === 'string' ? levelPrice(price) : -1;
    if (units < 0) this.anomaly(`price ${JSON.stringify(price)} is not in [0, 1] at 10^-6`);
    return units;
  }

  /**
   * Sets one level from the venue's text (size "0" removes it): `comps` picks the ask-side
   * ladder, `mirror` indexes it by 1 − price. False, the book unknown, when the level cannot
   * be read exactly.
   */
  protected setLevel(price: unknown, text: unknown, comps: boolean, mirror: boolean, canonical = false): boolean {
    const units = this.priceUnits(price);
    if (units < 0) return false;
    const decimals = readScratch.decimals;
    // `canonical`: the caller knows the text is canonical (ChangeEntries.sizeIsCanonical).
    const size = canonical ? (text as string) : canonicalSize(text);
    if (size === null) {
      this.anomaly(`size ${JSON.stringify(text)} is not a non-negative decimal`);
      return false;
    }
    const i = this.index(units, decimals);
    // After index(): it may have re-indexed into new ladders.
    const ladder = comps ? this.comps : this.bids;
    const at = mirror ? this.one - i : i;
    if (size === '0') ladder.delete(at);
    else ladder.set(at, size);
    return true;
  }

  private rescale(scale: number): void {
    const factor = POW10[scale - this.scale]!;
    const one = POW10[scale]!;
    const bids = new PriceLadder(one + 1);
    const comps = new PriceLadder(one + 1);
    for (let i = this.bids.best; i >= 0; i = this.bids.below(i)) bids.set(i * factor, this.bids.sizes[i]!);
    for (let i = this.comps.best; i >= 0; i = this.comps.below(i)) comps.set(i * factor, this.comps.sizes[i]!);
    this.bids = bids;
    this.comps = comps;
    this.scale = scale;
    this.one = one;
    this.textBid = -2; // indices changed meaning
  }

  // Text of the top's prices for the best indices it was built for: most events leave the
  // best levels where they were, so their text, mid and spread are reused.
  private textBid = -2;
  private textComp = -2;
  private bidText: string | null = null;
  private askText: string | null = null;
  private midText: string | null = null;
  private spreadText: string | null = null;

  private topTexts(b: number, c: number): void {
    const scale = this.scale;
    const ask = this.one - c;
    this.bidText = b >= 0 ? unitsText(b, scale) : null;
    this.askText = c >= 0 ? unitsText(ask, scale) : null;
    if (b >= 0 && c >= 0) {
      const sum = b + ask;
      this.midText = (sum & 1) === 0 ? unitsText(sum / 2, scale) : unitsText(sum * 5, scale + 1);
      this.spreadText = unitsText(ask - b, scale);
    } else {
      this.midText = null;
      this.spreadText = null;
    }
    this.textBid = b;
    this.textComp = c;
  }

  protected observe(ts: number): Observation {
    this.mark(ts);
    return this.top(ts);
  }

  /** `observe` without its object: the top now is handed to `sink` as its fields. */
  protected observeTo(ts: number, sink: ObservationSink): void {
    this.mark(ts);
    if (!this.known) {
      sink.observe(ts, null, null, null, null, null, null);
      return;
    }
    const b = this.bids.best;
    const c = this.comps.best;
    if (b !== this.textBid || c !== this.textComp) this.topTexts(b, c);
    sink.observe(ts, this.bidText, b >= 0 ? this.bids.sizes[b]! : null, this.askText, c >= 0 ? this.comps.sizes[c]! : null, this.midText, this.spreadText);
  }

  /** An observation at `ts`: the last one is the top then (lastObservation). */
  private mark(ts: number): void {
    this.observed = true;
    this.lastTs = ts;
    if (this.frozen !== null) this.frozen = null;
  }

  private top(ts: number): Observation {
    if (!this.known) {
      return { ts, best_bid: null, best_bid_size: null, best_ask: null, best_ask_size: null, mid_price: null, spread: null };
    }
    const b = this.bids.best;
    const c = this.comps.best;
    if (b !== this.textBid || c !== this.textComp) this.topTexts(b, c);
    return {
      ts,
      best_bid: this.bidText,
      best_bid_size: b >= 0 ? this.bids.sizes[b]! : null,
      best_ask: this.askText,
      best_ask_size: c >= 0 ? this.comps.sizes[c]! : null,
      mid_price: this.midText,
      spread: this.spreadText,
    };
  }

  /**
   * The level a record names, read after the record was applied (nothing changes): its
   * price on the side the book shows it (`mirror`: the ask at 1 − price, as the engine
   * indexes exchange B's NO bids) as canonical text, and its size now, '0' when the level
   * is empty, null when the book is unknown. Null when the price is not one the engine
   * holds. `comps` / `mirror` as setLevel takes them.
   */
  protected levelOf(price: unknown, comps: boolean, mirror: boolean, shownMirrored: boolean): { price: string; size: string | null } | null {
    if (typeof price !== 'string') return null;
    const units = readPrice(price);
    if (units < 0) return null;
    const decimals = readScratch.decimals;
    const shown = unitsText(shownMirrored ? POW10[decimals]! - units : units, decimals);
    if (!this.known) return { price: shown, size: null };
    // A price finer than the book's scale names no level it holds.
    if (decimals > this.scale) return { price: shown, size: '0' };
    const i = units * POW10[this.scale - decimals]!;
    const ladder = comps ? this.comps : this.bids;
    return { price: shown, size: ladder.sizes[mirror ? this.one - i : i] ?? '0' };
  }

  /** Levels best first, flat: [price, size, price, size, …]. */
  /** A side's levels, best first, as flat [price, size, …] text; at most `max` levels. */
  protected levels(ladder: PriceLadder, complement: boolean, max = Infinity): string[] {
    const out: string[] = [];
    for (let i = ladder.best, n = 0; i >= 0 && n < max; i = ladder.below(i), n++) {
      out.push(unitsText(complement ? this.one - i : i, this.scale), ladder.sizes[i]!);
    }
    return out;
  }

  /** Loads serialised levels: `comps` picks the ask-side ladder, `mirror` indexes it by 1 − price. */
  protected restore(
    state: { known: unknown; last: unknown },
    sides: { flat: unknown; comps: boolean; mirror: boolean }[],
  ): void {
    if (typeof state.known !== 'boolean') throw new RangeError('book state: known is not a boolean');
    for (const { flat, comps, mirror } of sides) {
      if (!Array.isArray(flat) || flat.length % 2 !== 0) throw new RangeError('book state: levels are not [price, size] pairs');
      if (!state.known && flat.length > 0) throw new RangeError('book state: levels of an unknown book');
      for (let k = 0; k < flat.length; k += 2) {
        const price: unknown = flat[k];
        const size: unknown = flat[k + 1];
        const units = typeof price === 'string' ? readPrice(price) : -1;
        const decimals = readScratch.decimals;
        const canonical = canonicalSize(size);
        if (units < 0 || canonical === null || canonical === '0') {
          throw new RangeError(`book state: bad level ${JSON.stringify([price, size])}`);
        }
        const i = this.index(units, decimals);
        (comps ? this.comps : this.bids).set(mirror ? this.one - i : i, canonical);
      }
    }
    this.known = state.known;
    if (state.last !== null) {
      this.frozen = parseObservation(state.last);
      this.observed = true;
      this.lastTs = this.frozen.ts;
    }
  }
}

const OBSERVATION_FIELDS = ['best_bid', 'best_bid_size', 'best_ask', 'best_ask_size', 'mid_price', 'spread'] as const;

function parseObservation(v: unknown): Observation {
  if (typeof v !== 'object' || v === null) throw new RangeError('book state: last is not an observation');
  const o = v as Record<string, unknown>;
  if (typeof o['ts'] !== 'number' || !Number.isSafeInteger(o['ts'])) throw new RangeError('book state: last.ts is not an integer');
  for (const f of OBSERVATION_FIELDS) {
    const x = o[f];
    if (x !== null && !isDeltaText(x)) throw new RangeError(`book state: last.${f} is not a decimal or null`);
  }
  return {
    ts: o['ts'],
    best_bid: o['best_bid'] as string | null,
    best_bid_size: o['best_bid_size'] as string | null,
    best_ask: o['best_ask'] as string | null,
    best_ask_size: o['best_ask_size'] as string | null,
    mid_price: o['mid_price'] as string | null,
    spread: o['spread'] as string | null,
  };
}

function stateObject(v: unknown, venue: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null) throw new RangeError('book state is not an object');
  const s = v as Record<string, unknown>;
  if (s['v'] !== 1) throw new RangeError(`book state version ${String(s['v'])} is not 1`);
  if (s['venue'] !== venue) throw new RangeError(`book state is for ${String(s['venue'])}, not ${venue}`);
  return s;
}

/** Serialised exchange A book: levels best first as flat [price, size, …] pairs. */
export interface ExchangeABookState {
  v: 1;
  venue: 'exchange-a';
  known: boolean;
  bids: string[];
  asks: string[];
  last: Observation | null;
}

/** Serialised exchange B book: YES and NO bids best first as flat [price, size, …] pairs. */
export interface ExchangeBBookState {
  v: 1;
  venue: 'exchange-b';
  known: boolean;
  yes: string[];
  no: string[];
  last: Observation | null;
}

/**
 * Called after each `price_change` entry that carries a claim (a best_bid or best_ask text)
 * is applied to a known book, with the top it left: canonical best bid and ask, null for an
 * empty side. The venue's per-entry claims are checked against exactly this state
 * (checks.ts). Entries without one (every entry before 2025-09-15) skip the top's
 * computation: a back-fill of history pays nothing for checks it cannot make.
 */
export type ChangeHook = (entry: PriceChange, bestBid: string | null, bestAsk: string | null) => void;

/**
 * A `price_change`'s entries read straight from stored columns, without a record object per
 * row (the rollup of a closed day, storage book-rows.ts): each entry's texts are the ones its
 * record's entry would hold (`PriceChange`), made only when asked.
 */
export interface ChangeEntries {
  readonly count: number;
  price(i: number): string;
  size(i: number): string;
  side(i: number): string;
  /** The entry carries a claim (a best_bid or best_ask text). */
  claims(i: number): boolean;
  bestBid(i: number): string | undefined;
  bestAsk(i: number): string | undefined;
  /**
   * The entry's hash, or the record's where the entry has none (what a claim names); or, from
   * a reader that did not read the hashes, where to fetch it (`ClaimHashRef`), asked only for
   * a claim that waits.
   */
  claimHash(i: number): string | ClaimHashRef;
  /**
   * Optional: true only where `size(i)` is known to be canonical already (what canonicalSize
   * would return unchanged), so the book takes it as it is instead of reading it again.
   */
  sizeIsCanonical?(i: number): boolean;
}

/**
 * A claim's hash its reader did not read with the row (the hash strings are the widest of
 * the columns, and only a claim that does not hold names its hash): what the reader needs
 * to fetch it afterwards. Opaque here; the checks keep it until `BookChecker.resolveHashes`.
 */
export interface ClaimHashRef {
  readonly deferredHash: true;
}

/** `ChangeHook` for `ChangeEntries`: entry `i` with a claim was applied, leaving this top. */
export type EntryClaimHook = (i: number, bestBid: string | null, bestAsk: string | null) => void;

/** Exchange A (Polymarket): one asset's book from its 2.1 records. */
export class ExchangeABook extends LadderBook {
  /**
   * Applies one record; the observation for a book event, null for any other event type.
   * `onChange`, when given, sees the top after every applied `price_change` entry with a claim.
   * `ms`, when given, is the record's time as read from its `timestamp` already (msFromText):
   * the caller groups records by it, and the text is not read again.
   */
  apply(ev: ExchangeAEvent, onChange?: ChangeHook, ms?: number): Observation | null {
    if (!this.applyEvent(ev, onChange)) return null;
    return this.observe(ms ?? msFromText(ev.timestamp));
  }

  /** `apply`, its observation handed to `sink` as fields (AnyBook.applyTo); false where `apply` gives null. */
  applyTo(ev: ExchangeAEvent, sink: ObservationSink, onChange?: ChangeHook, ms?: number): boolean {
    if (!this.applyEvent(ev, onChange)) return false;
    this.observeTo(ms ?? msFromText(ev.timestamp), sink);
    return true;
  }

  /** Applies a book event (true: it is observed); any other event type is left alone (false). */
  private applyEvent(ev: ExchangeAEvent, onChange: ChangeHook | undefined): boolean {
    const type = ev.event_type;
    if (type === 'price_change') {
      if (this.known && ev.changes !== undefined) {
        if (onChange === undefined) this.change(ev.changes);
        else this.changeWatched(ev.changes, onChange);
      }
    } else if (type === 'book') this.snapshot(ev.bids, ev.asks);
    else return false;
    return true;
  }

  /**
   * `apply` of a `price_change` record at `ms` whose changes are `entries`: the same book, the
   * same observation (handed to `sink` as its fields), and `onClaim` called where `onChange` would be.
   */
  applyEntries(entries: ChangeEntries, onClaim: EntryClaimHook | undefined, ms: number, sink: ObservationSink): void {
    if (this.known) {
      for (let k = 0; k < entries.count; k++) {
        const side = entries.side(k);
        if (side !== 'BUY' && side !== 'SELL') {
          this.anomaly(`price_change side ${JSON.stringify(side)}`);
          break;
        }
        const ask = side === 'SELL';
        if (!this.setLevel(entries.price(k), entries.size(k), ask, ask, entries.sizeIsCanonical?.(k) === true)) break;
        if (onClaim !== undefined && entries.claims(k)) onClaim(k, this.bestBid(), this.bestAsk());
      }
    }
    this.observeTo(ms, sink);
  }

  private snapshot(bids: PriceLevel[] | undefined, asks: PriceLevel[] | undefined): void {
    this.startSnapshot();
    if (bids !== undefined && !this.setLevels(bids, false)) return;
    if (asks !== undefined) this.setLevels(asks, true);
  }

  // Later entries for the same price win: a snapshot is applied as a sequence of sets.
  private setLevels(levels: PriceLevel[], ask: boolean): boolean {
    for (let k = 0; k < levels.length; k++) {
      const lv = levels[k]!;
      if (!this.setLevel(lv.price, lv.size, ask, ask)) return false;
    }
    return true;
  }

  private change(changes: PriceChange[]): void {
    for (let k = 0; k < changes.length; k++) {
      if (!this.applyChange(changes[k]!)) return;
    }
  }

  // change() with the hook after each entry: a separate loop keeps the plain one lean.
  private changeWatched(changes: PriceChange[], onChange: ChangeHook): void {
    for (let k = 0; k < changes.length; k++) {
      const ch = changes[k]!;
      if (!this.applyChange(ch)) return;
      if (typeof ch.best_bid === 'string' || typeof ch.best_ask === 'string') onChange(ch, this.bestBid(), this.bestAsk());
    }
  }

  /** One change entry; false when it made the book unknown, which ends the event. */
  private applyChange(ch: PriceChange): boolean {
    const side = ch.side;
    if (side !== 'BUY' && side !== 'SELL') {
      this.anomaly(`price_change side ${JSON.stringify(side)}`);
      return false;
    }
    const ask = side === 'SELL';
    return this.setLevel(ch.price, ch.size, ask, ask);
  }

  /** A change entry's level after the event was applied: a BUY names a bid, a SELL an ask (levelOf). */
  levelAfter(side: unknown, price: unknown): { side: 'bid' | 'ask'; price: string; size: string | null } | null {
    if (side !== 'BUY' && side !== 'SELL') return null;
    const l = this.levelOf(price, side === 'SELL', side === 'SELL', false);
    return l && { side: side === 'BUY' ? 'bid' : 'ask', ...l };
  }

  /** The best `depth` bids and asks, as `toState` writes them: an answer at a depth without serialising the whole book. */
  bestLevels(depth: number): [string[], string[]] {
    return [this.levels(this.bids, false, depth), this.levels(this.comps, true, depth)];
  }

  toState(): ExchangeABookState {
    return {
      v: 1,
      venue: 'exchange-a',
      known: this.known,
      bids: this.levels(this.bids, false),
      asks: this.levels(this.comps, true),
      last: this.lastObservation(),
    };
  }

  /** A book from `toState()` output (after a JSON round trip); throws RangeError if malformed. */
  static fromState(state: unknown): ExchangeABook {
    const s = stateObject(state, 'exchange-a');
    const book = new ExchangeABook();
    book.restore({ known: s['known'], last: s['last'] }, [
      { flat: s['bids'], comps: false, mirror: false },
      { flat: s['asks'], comps: true, mirror: true },
    ]);
    return book;
  }
}

/** Exchange B (Kalshi): one ticker's book from its 2.2 records. */
export class ExchangeBBook extends LadderBook {
  /**
   * Applies one record; the observation for a snapshot or delta, null for a gap or a non-book
   * record (`ticker`, `trade`), which leave the book as it is.
   */
  apply(rec: ExchangeBRecord): Observation | null {
    return this.applyRecord(rec) ? this.observe(rec.epoch_ms) : null;
  }

  /** `apply`, its observation handed to `sink` as fields (AnyBook.applyTo); false where `apply` gives null. */
  applyTo(rec: ExchangeBRecord, sink: ObservationSink): boolean {
    if (!this.applyRecord(rec)) return false;
    this.observeTo(rec.epoch_ms, sink);
    return true;
  }

  /** Applies a record; true for a book event (observed). */
  private applyRecord(rec: ExchangeBRecord): boolean {
    switch (rec.type) {
      case 'snapshot':
        this.snapshot(rec.yes, rec.no);
        return true;
      case 'delta':
        if (this.known) this.delta(rec);
        return true;
      case 'gap':
        // A seq gap: the book is unknown until the next snapshot; not a book event.
        this.freezeLast();
        this.forget();
        return false;
      default:
        return false;
    }
  }

  private snapshot(yes: [string, string][] | null | undefined, no: [string, string][] | null | undefined): void {
    // A side the venue omits is empty; a null side (null price payload) leaves the book unknown.
    if (yes === null || no === null) {
      this.forget();
      return;
    }
    this.startSnapshot();
    if (yes !== undefined && !this.setLevels(yes, false)) return;
    if (no !== undefined) this.setLevels(no, true);
  }

  private setLevels(levels: [string, string][], no: boolean): boolean {
    for (let k = 0; k < levels.length; k++) {
      const lv = levels[k]!;
      if (!this.setLevel(lv[0], lv[1], no, false)) return false;
    }
    return true;
  }

  private delta(rec: ExchangeBRecord): void {
    const { price, delta, side } = rec;
    // A null price payload: the book is unknown until the next snapshot (docs/rules/summaries.md, rule 4).
    if (price === null || price === undefined || delta === null || delta === undefined) {
      this.forget();
      return;
    }
    if (side !== 'yes' && side !== 'no') {
      this.anomaly(`delta side ${JSON.stringify(side)}`);
      return;
    }
    const units = this.priceUnits(price);
    if (units < 0) return;
    const decimals = readScratch.decimals;
    const change = canonicalDelta(delta);
    if (change === null) {
      this.anomaly(`delta ${JSON.stringify(delta)} is not a decimal`);
      return;
    }
    const i = this.index(units, decimals);
    const ladder = side === 'no' ? this.comps : this.bids;
    const size = addSizes(ladder.sizes[i] ?? '0', change);
    if (isNonPositive(size)) ladder.delete(i);
    else ladder.set(i, size);
  }

  /**
   * A delta's level after it was applied, on the YES book the engine keeps: a YES bid is a
   * bid at its price, a NO bid at p an ask at 1 − p (levelOf).
   */
  levelAfter(side: unknown, price: unknown): { side: 'bid' | 'ask'; price: string; size: string | null } | null {
    if (side !== 'yes' && side !== 'no') return null;
    const l = this.levelOf(price, side === 'no', false, side === 'no');
    return l && { side: side === 'yes' ? 'bid' : 'ask', ...l };
  }

  /** The best `depth` bids and asks of the YES book: YES bids, and NO bids as asks at 1 − price, lowest first. */
  bidsAsks(depth: number): [string[], string[]] {
    return [this.levels(this.bids, false, depth), this.levels(this.comps, true, depth)];
  }

  /** The best `depth` YES and NO bids, as `toState` writes them. */
  bestLevels(depth: number): [string[], string[]] {
    return [this.levels(this.bids, false, depth), this.levels(this.comps, false, depth)];
  }

  toState(): ExchangeBBookState {
    return {
      v: 1,
      venue: 'exchange-b',
      known: this.known,
      yes: this.levels(this.bids, false),
      no: this.levels(this.comps, false),
      last: this.lastObservation(),
    };
  }

  /** A book from `toState()` output (after a JSON round trip); throws RangeError if malformed. */
  static fromState(state: unknown): ExchangeBBook {
    const s = stateObject(state, 'exchange-b');
    const book = new ExchangeBBook();
    book.restore({ known: s['known'], last: s['last'] }, [
      { flat: s['yes'], comps: false, mirror: false },
      { flat: s['no'], comps: true, mirror: false },
    ]);
    return book;
  }
}
