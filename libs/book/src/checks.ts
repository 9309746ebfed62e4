import type { ExchangeAEvent, ExchangeBRecord, PriceChange } from '@booktape/domain';
import type { ChangeEntries, ChangeHook, ClaimHashRef, EntryClaimHook } from './book-engine.ts';
import { canonicalSize, compareCanonical, msFromText } from './fixed-point.ts';
import type { ObservationSink } from './compact-buckets.ts';
import type { Observation } from './observation.ts';
import type { AnyBook, BookRecord, BookVenue } from './rollup.ts';

/**
 * Per asset-day cross-checks of a rebuilt book (issue 9 point 4, docs/rules/data.md), computed by the
 * rollup from the same ordered records as the summaries, one millisecond at a time:
 *
 * - Claims (exchange A): a `price_change` entry's `best_bid` / `best_ask` (or, on records
 *   stored before entries carried them, the record's `extra.best_bid` / `best_ask`, meaning
 *   "after the record's last change") is checked when the book is known right after the
 *   entry (record). It holds when it equals, as a decimal, the rebuilt top right after the
 *   entry or at the end of the asset's millisecond (a trade burst reports its end state on
 *   every frame). An empty side compares as 0 (bid) / 1 (ask); a book unknown at the end of
 *   the millisecond matches nothing there.
 * - Crossed: at the end of each millisecond that had a book event, a known book with both
 *   sides and best bid ≥ best ask. A burst that crosses and uncrosses inside one millisecond
 *   is a real venue state, not a crossed book.
 * - Unknown time: a spell opens when a book event leaves the book unknown (or a B `gap`
 *   record, kind `sequence_gap`) and closes at the book event that makes it known again. A
 *   gap during an `unknown_book` spell closes it and opens a `sequence_gap` one; further
 *   gaps extend the open `sequence_gap` spell. An asset with no events before is not
 *   unknown before its first one.
 *
 * The caller must hand each millisecond of an asset to applyMillisecond whole: claims are
 * settled, and the book tested for crossing, at the end of the call.
 */

export const MAX_SPELLS = 100;
/** Alerts kept between drains: a persistently crossed book must not grow memory. */
const MAX_ALERTS = 1000;

export type CheckSpellKind = 'unknown_book' | 'sequence_gap';

export interface CheckSpell {
  kind: CheckSpellKind;
  start_ms: number;
  end_ms: number;
  detail: string;
}

export interface BookChecks {
  /** Observations (book events) applied this day. */
  book_events: number;
  /** Exchange A claims checked (book known). */
  venue_best_checked: number;
  venue_best_mismatches: number;
  first_mismatch_ms: number | null;
  /** Human detail: claimed vs rebuilt, entry hash. */
  first_mismatch: string | null;
  /** Ends of milliseconds with a known, crossed book. */
  crossed_observations: number;
  first_crossed_ms: number | null;
  /** Time the book was unknown within the day (up to untilMs). */
  unknown_book_ms: number;
  /** Exchange B gap records seen this day. */
  sequence_gaps: number;
  /** Unknown spells within the day, at most MAX_SPELLS kept. */
  spells: CheckSpell[];
  spells_dropped: number;
}

export interface OpenSpell {
  kind: CheckSpellKind;
  start_ms: number;
  detail: string;
}

/** JSON-safe state of a checker between runs. */
export interface ChecksState {
  v: 1;
  checks: BookChecks;
  open: OpenSpell | null;
}

export interface CheckAlert {
  kind: 'mismatch' | 'crossed';
  ts: number;
  detail: string;
}

function emptyChecks(): BookChecks {
  return {
    book_events: 0,
    venue_best_checked: 0,
    venue_best_mismatches: 0,
    first_mismatch_ms: null,
    first_mismatch: null,
    crossed_observations: 0,
    first_crossed_ms: null,
    unknown_book_ms: 0,
    sequence_gaps: 0,
    spells: [],
    spells_dropped: 0,
  };
}

/** A claim not confirmed by the top right after its entry: settled at the end of the ms. */
interface PendingClaim {
  ts: number;
  bid: string | undefined; // the venue's text
  ask: string | undefined;
  afterBid: string; // compare values: canonical, empty side as 0 / 1
  afterAsk: string;
  /** The hash the claim names, or where to fetch it (ChangeEntries.claimHash). */
  hash: string | ClaimHashRef;
}

/**
 * A mismatch whose hash is still to be fetched (`BookChecker.resolveHashes`): its detail's
 * text up to the hash, and where the detail goes (the day's first mismatch, an alert).
 */
interface DeferredDetail {
  head: string;
  ref: ClaimHashRef;
  first: boolean;
  alert: CheckAlert | null;
}

/** Detail texts quote venue input: bounded, so a pathological record cannot bloat stored state. */
const MAX_DETAIL = 300;
const clip = (s: string): string => (s.length > MAX_DETAIL ? `${s.slice(0, MAX_DETAIL - 1)}…` : s);

const show = (s: string | undefined): string => (s === undefined ? '-' : JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s));

/** Whether a claimed price (venue text, absent = not claimed) equals a rebuilt compare value. */
function holds(claim: string | undefined, rebuilt: string): boolean {
  return claim === undefined || claim === rebuilt || canonicalSize(claim) === rebuilt;
}

const claimText = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Hands observations on to `to`, keeping the time, best bid and best ask of the last one (`seen` counts them). */
class LastTop implements ObservationSink {
  to: ObservationSink = NO_SINK;
  seen = 0;
  ts = Number.NaN;
  bid: string | null = null;
  ask: string | null = null;

  observe(ts: number, bid: string | null, bidSize: string | null, ask: string | null, askSize: string | null, mid: string | null, spread: string | null): void {
    this.seen++;
    this.ts = ts;
    this.bid = bid;
    this.ask = ask;
    this.to.observe(ts, bid, bidSize, ask, askSize, mid, spread);
  }
}

const NO_SINK: ObservationSink = { observe: () => undefined };

/** A sink that makes each observation the object `AnyBook.apply` would return, for `push`. */
function objectSink(push: (o: Observation) => void): ObservationSink {
  return {
    observe: (ts, best_bid, best_bid_size, best_ask, best_ask_size, mid_price, spread) => push({ ts, best_bid, best_bid_size, best_ask, best_ask_size, mid_price, spread }),
  };
}

export class BookChecker {
  private pending: PendingClaim[] = [];
  private alerts: CheckAlert[] = [];
  private deferred: DeferredDetail[] = [];
  // The record whose entries the hook is watching (its time read only for a claim that waits).
  private curTime = '';
  private curHash = '';
  private entryClaims = false;
  // The time of the record being applied where known as a number (NaN: read `curTime`).
  private curMs = Number.NaN;
  private curEntries: ChangeEntries | null = null;
  // The last observation (passed through it on its way to the caller's sink) and how many
  // there were when the millisecond being applied started (applyRecord, applyEntries).
  private readonly last = new LastTop();
  private seenBeforeMs = 0;
  private readonly onChange: ChangeHook;
  private readonly onEntryClaim: EntryClaimHook;
  private readonly kind: VenueChecks;

  private constructor(
    venue: BookVenue,
    private checks: BookChecks,
    private open: OpenSpell | null,
  ) {
    this.kind = VENUE_CHECKS[venue];
    this.onChange = (entry, bestBid, bestAsk) => this.entryClaim(entry, bestBid, bestAsk);
    this.onEntryClaim = (i, bestBid, bestAsk) => this.entryClaimAt(i, bestBid, bestAsk);
  }

  /**
   * A fresh day. `book` is the start-of-day book (restored from the previous data day, or
   * new). When it is unknown because of earlier data (it has a last observation, or
   * `carried` had an open spell), an unknown spell is open from dayStartMs, of the kind and
   * detail `carried.open` had (else `unknown_book`).
   */
  static startDay(venue: BookVenue, dayStartMs: number, book: AnyBook, carried: ChecksState | null): BookChecker {
    let prev: OpenSpell | null = null;
    try {
      prev = carried === null || carried === undefined ? null : parseOpen((carried as { open?: unknown }).open ?? null);
    } catch {
      prev = null; // a malformed carried spell only loses its kind and detail
    }
    let open: OpenSpell | null = null;
    if (!book.isKnown() && (book.lastObservation() !== null || prev !== null)) {
      open = {
        kind: prev?.kind ?? 'unknown_book',
        start_ms: dayStartMs,
        detail: prev?.detail ?? 'unknown since an earlier day',
      };
    }
    return new BookChecker(venue, emptyChecks(), open);
  }

  /** Continues an incremental run from a stored `toState()`; RangeError when malformed. */
  static resume(venue: BookVenue, state: unknown): BookChecker {
    if (typeof state !== 'object' || state === null) throw new RangeError('checks state is not an object');
    const s = state as Record<string, unknown>;
    if (s['v'] !== 1) throw new RangeError(`checks state version ${String(s['v'])} is not 1`);
    return new BookChecker(venue, parseChecks(s['checks']), parseOpen(s['open']));
  }

  /**
   * Applies the records of ONE millisecond of one asset, in serving order, to `book`,
   * handing each observation to `push` (as an object, or its fields to a sink), and runs
   * every check. `ms`, when given, is that millisecond as the book reads each record's time
   * (rollup.ts `AnyBook.apply`): the records' texts are not read again.
   */
  applyMillisecond(book: AnyBook, records: BookRecord[], push: ((o: Observation) => void) | ObservationSink, ms?: number): void {
    const sink = typeof push === 'function' ? objectSink(push) : push;
    for (let k = 0; k < records.length; k++) this.applyRecord(book, records[k]!, sink, ms);
    this.endMillisecond(book);
  }

  /**
   * `applyMillisecond` one record at a time, for a caller that does not gather a millisecond's
   * records first: every record of the millisecond, then `endMillisecond` before the next one.
   */
  applyRecord(book: AnyBook, r: BookRecord, sink: ObservationSink, ms?: number): void {
    const checks = this.checks;
    const g = this.kind.sequenceGap(r);
    if (g !== null) {
      checks.sequence_gaps++;
      book.apply(g);
      if (this.open === null || this.open.kind !== 'sequence_gap') {
        if (this.open !== null) this.closeSpell(g.epoch_ms);
        this.open = {
          kind: 'sequence_gap',
          start_ms: g.epoch_ms,
          detail: `gap: sid ${String(g.sid)} seq ${String(g.seq)} expected ${String(g.expected_seq)}`,
        };
      }
      return;
    }
    const wasKnown = book.isKnown();
    const anomalies = book.anomalies;
    const last = this.last;
    last.to = sink;
    const ev = this.kind.claimsTops(r);
    if (ev !== null) {
      this.curTime = ev.timestamp;
      this.curMs = Number.NaN;
      this.curHash = ev.hash;
      this.entryClaims = false;
      if (!book.applyTo(ev, last, this.onChange, ms)) return;
      if (!this.entryClaims && book.isKnown()) this.recordClaim(ev, last);
    } else if (!book.applyTo(r, last, undefined, ms)) return;
    this.observed(book, wasKnown, anomalies, r);
  }

  /**
   * `applyRecord` of an exchange A `price_change` at `ms` whose changes are `entries` (read
   * from stored columns: ChangeEntries), with no record behind it.
   */
  applyEntries(book: AnyBook, entries: ChangeEntries, sink: ObservationSink, ms: number): void {
    if (book.applyEntries === undefined) throw new TypeError('applyEntries: not an exchange A book');
    const wasKnown = book.isKnown();
    const anomalies = book.anomalies;
    this.curMs = ms;
    this.curEntries = entries;
    this.entryClaims = false;
    this.last.to = sink;
    book.applyEntries(entries, this.onEntryClaim, ms, this.last);
    this.curEntries = null;
    // A record read from columns has no `extra`: no record-level claim to check.
    this.observed(book, wasKnown, anomalies, null);
  }

  /** After the records of one millisecond (applyRecord, applyEntries): settles its claims and tests its top. */
  endMillisecond(book: AnyBook): void {
    const last = this.last;
    const any = last.seen !== this.seenBeforeMs;
    this.seenBeforeMs = last.seen;
    this.endOfMillisecond(book, any ? last : null);
  }

  /** After an observation (`last`): counted, and the unknown spell opened or closed at its time. */
  private observed(book: AnyBook, wasKnown: boolean, anomalies: number, r: BookRecord | null): void {
    this.checks.book_events++;
    const ts = this.last.ts;
    if (book.isKnown()) {
      if (this.open !== null) this.closeSpell(ts);
    } else if (this.open === null) {
      this.open = { kind: 'unknown_book', start_ms: ts, detail: this.unknownReason(book, r, wasKnown, anomalies) };
    }
  }

  /**
   * The hashes the kept details still need (claims read without their hashes, ClaimHashRef),
   * in the order `resolveHashes` takes them; empty when every detail is whole.
   */
  unresolvedHashes(): ClaimHashRef[] {
    return this.deferred.map((d) => d.ref);
  }

  /**
   * Completes the details that wait for their hash: `hashes[k]` is the hash of
   * `unresolvedHashes()[k]`. Each detail is then the one it would have been with the hash
   * read with its row (the same text, clipped the same).
   */
  resolveHashes(hashes: readonly string[]): void {
    const d = this.deferred;
    if (hashes.length !== d.length) throw new RangeError(`resolveHashes: ${hashes.length} hashes for ${d.length} details`);
    for (let k = 0; k < d.length; k++) {
      const detail = clip(d[k]!.head + hashes[k]!);
      if (d[k]!.first) this.checks.first_mismatch = detail;
      const a = d[k]!.alert;
      if (a !== null) a.detail = detail;
    }
    this.deferred = [];
  }

  /** Nothing is handed out while a detail still waits for its hash. */
  private whole(): void {
    if (this.deferred.length > 0) throw new Error(`checks: ${this.deferred.length} mismatch details wait for their hashes (resolveHashes)`);
  }

  /** The checks as of untilMs: an open spell counts up to untilMs and is listed ending there. Pure. */
  checksAt(untilMs: number): BookChecks {
    this.whole();
    const c = this.snapshot();
    if (this.open !== null) {
      const end = Math.max(untilMs, this.open.start_ms);
      c.unknown_book_ms += end - this.open.start_ms;
      if (c.spells.length < MAX_SPELLS) c.spells.push({ ...this.open, end_ms: end });
      else c.spells_dropped++;
    }
    return c;
  }

  toState(): ChecksState {
    this.whole();
    return { v: 1, checks: this.snapshot(), open: this.open === null ? null : { ...this.open } };
  }

  /** Mismatches and crossed books found since the last call, for logs and metrics. */
  drainAlerts(): CheckAlert[] {
    this.whole();
    const out = this.alerts;
    this.alerts = [];
    return out;
  }

  private snapshot(): BookChecks {
    return { ...this.checks, spells: this.checks.spells.map((s) => ({ ...s })) };
  }

  private entryClaim(entry: PriceChange, bestBid: string | null, bestAsk: string | null): void {
    const bid = claimText(entry.best_bid);
    const ask = claimText(entry.best_ask);
    if (bid === undefined && ask === undefined) return;
    this.entryClaims = true;
    // A record read without its entries' hashes carries, in an entry with a claim, where to fetch it (ClaimHashRef).
    if (!this.claimHolds(bid, ask, bestBid ?? '0', bestAsk ?? '1')) this.pend(bid, ask, bestBid ?? '0', bestAsk ?? '1', (entry.hash as string | ClaimHashRef | undefined) ?? this.curHash);
  }

  /** entryClaim of entry `i` of `curEntries`: its hash read only for a claim that waits. */
  private entryClaimAt(i: number, bestBid: string | null, bestAsk: string | null): void {
    const e = this.curEntries!;
    const bid = e.bestBid(i);
    const ask = e.bestAsk(i);
    if (bid === undefined && ask === undefined) return;
    this.entryClaims = true;
    if (!this.claimHolds(bid, ask, bestBid ?? '0', bestAsk ?? '1')) this.pend(bid, ask, bestBid ?? '0', bestAsk ?? '1', e.claimHash(i));
  }

  /** The pre-entry-claims fallback: the record's own best_bid / best_ask, after all its changes. */
  private recordClaim(ev: ExchangeAEvent, o: LastTop): void {
    const extra = ev.extra;
    if (extra === undefined) return;
    const bid = claimText(extra['best_bid']);
    const ask = claimText(extra['best_ask']);
    if (bid === undefined && ask === undefined) return;
    this.claim(bid, ask, o.bid ?? '0', o.ask ?? '1', ev.hash);
  }

  private claim(bid: string | undefined, ask: string | undefined, afterBid: string, afterAsk: string, hash: string): void {
    if (!this.claimHolds(bid, ask, afterBid, afterAsk)) this.pend(bid, ask, afterBid, afterAsk, hash);
  }

  /** Counts a claim checked; whether it holds right after its entry (else it waits: `pend`). */
  private claimHolds(bid: string | undefined, ask: string | undefined, afterBid: string, afterAsk: string): boolean {
    this.checks.venue_best_checked++;
    return holds(bid, afterBid) && holds(ask, afterAsk);
  }

  private pend(bid: string | undefined, ask: string | undefined, afterBid: string, afterAsk: string, hash: string | ClaimHashRef): void {
    this.pending.push({ ts: this.curMs === this.curMs ? this.curMs : msFromText(this.curTime), bid, ask, afterBid, afterAsk, hash });
  }

  private endOfMillisecond(book: AnyBook, last: LastTop | null): void {
    const checks = this.checks;
    const known = book.isKnown();
    if (this.pending.length > 0) {
      const endBid = known && last !== null ? (last.bid ?? '0') : null;
      const endAsk = known && last !== null ? (last.ask ?? '1') : null;
      for (const p of this.pending) {
        if (endBid !== null && endAsk !== null && holds(p.bid, endBid) && holds(p.ask, endAsk)) continue;
        const end = endBid === null ? 'unknown' : `bid ${endBid} ask ${endAsk}`;
        const head =
          `claimed bid ${show(p.bid)} ask ${show(p.ask)}; rebuilt bid ${p.afterBid} ask ${p.afterAsk} after the entry, ` +
          `${end} at the end of the millisecond; hash `;
        const hash = p.hash;
        // A hash still to be fetched: the detail is made whole (and clipped) once it is known.
        const detail = typeof hash === 'string' ? clip(head + hash) : head;
        checks.venue_best_mismatches++;
        let first = false;
        if (checks.first_mismatch_ms === null) {
          checks.first_mismatch_ms = p.ts;
          checks.first_mismatch = detail;
          first = true;
        }
        const alert = this.alert({ kind: 'mismatch', ts: p.ts, detail });
        if (typeof hash !== 'string' && (first || alert !== null)) this.deferred.push({ head, ref: hash, first, alert });
      }
      this.pending.length = 0;
    }
    if (last !== null && known && last.bid !== null && last.ask !== null && this.crossed(last.bid, last.ask)) {
      checks.crossed_observations++;
      if (checks.first_crossed_ms === null) checks.first_crossed_ms = last.ts;
      this.alert({ kind: 'crossed', ts: last.ts, detail: `best bid ${last.bid} >= best ask ${last.ask}` });
    }
  }

  // The top tested last and its answer: the top stays put over most milliseconds.
  private testedBid = '';
  private testedAsk = '';
  private testedCrossed = false;

  /** best bid ≥ best ask, as decimals. */
  private crossed(bid: string, ask: string): boolean {
    if (bid !== this.testedBid || ask !== this.testedAsk) {
      this.testedBid = bid;
      this.testedAsk = ask;
      this.testedCrossed = compareCanonical(bid, ask) >= 0;
    }
    return this.testedCrossed;
  }

  /** Keeps `a` (returned) unless MAX_ALERTS are kept already (null). */
  private alert(a: CheckAlert): CheckAlert | null {
    if (this.alerts.length >= MAX_ALERTS) return null;
    this.alerts.push(a);
    return a;
  }

  private closeSpell(ts: number): void {
    const open = this.open!;
    const end = Math.max(ts, open.start_ms);
    this.checks.unknown_book_ms += end - open.start_ms;
    if (this.checks.spells.length < MAX_SPELLS) this.checks.spells.push({ ...open, end_ms: end });
    else this.checks.spells_dropped++;
    this.open = null;
  }

  /** Why a book event left the book unknown (the spell's detail; the category before any ':'). */
  /** `r` null: an exchange A price_change read from columns (its venue says no more). */
  private unknownReason(book: AnyBook, r: BookRecord | null, wasKnown: boolean, anomalies: number): string {
    if (book.anomalies > anomalies) return clip(`anomaly: ${book.lastAnomaly ?? 'a record the engine could not apply'}`);
    return (r === null ? null : this.kind.unknownReason(r, wasKnown)) ?? 'no snapshot yet';
  }
}

/** What the day's checks read differently per venue, keyed by venue. */
interface VenueChecks {
  /** The record as a venue sequence gap (exchange B's `gap` records), else null. */
  sequenceGap(r: BookRecord): ExchangeBRecord | null;
  /** The record as one whose changes claim the venue's best bid and ask (exchange A's price_change), else null. */
  claimsTops(r: BookRecord): ExchangeAEvent | null;
  /** Why the record left the book unknown, where the venue's records say more than `no snapshot yet`; else null. */
  unknownReason(r: BookRecord, wasKnown: boolean): string | null;
}

const VENUE_CHECKS: { readonly [V in BookVenue]: VenueChecks } = {
  'exchange-a': {
    sequenceGap: () => null,
    claimsTops: (r) => ((r as ExchangeAEvent).event_type === 'price_change' ? (r as ExchangeAEvent) : null),
    unknownReason: () => null,
  },
  'exchange-b': {
    sequenceGap: (r) => ((r as ExchangeBRecord).type === 'gap' ? (r as ExchangeBRecord) : null),
    claimsTops: () => null,
    unknownReason: (r, wasKnown) => {
      const b = r as ExchangeBRecord;
      if (b.type === 'snapshot' && (b.yes === null || b.no === null)) return 'null snapshot side';
      if (b.type === 'delta' && wasKnown) return 'null price payload';
      return null;
    },
  },
};

// ---- state validation: stored state is outside input ----

const KINDS: readonly string[] = ['unknown_book', 'sequence_gap'];

function count(o: Record<string, unknown>, f: string): number {
  const v = o[f];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new RangeError(`checks state: ${f} is not a count`);
  return v;
}

function msOrNull(o: Record<string, unknown>, f: string): number | null {
  const v = o[f];
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new RangeError(`checks state: ${f} is not a time or null`);
  return v;
}

function spellFields(v: unknown, what: string): { kind: CheckSpellKind; start_ms: number; detail: string; o: Record<string, unknown> } {
  if (typeof v !== 'object' || v === null) throw new RangeError(`checks state: ${what} is not an object`);
  const o = v as Record<string, unknown>;
  if (typeof o['kind'] !== 'string' || !KINDS.includes(o['kind'])) throw new RangeError(`checks state: ${what}.kind is not a spell kind`);
  if (typeof o['start_ms'] !== 'number' || !Number.isSafeInteger(o['start_ms'])) throw new RangeError(`checks state: ${what}.start_ms is not a time`);
  if (typeof o['detail'] !== 'string') throw new RangeError(`checks state: ${what}.detail is not a string`);
  return { kind: o['kind'] as CheckSpellKind, start_ms: o['start_ms'], detail: o['detail'], o };
}

function parseOpen(v: unknown): OpenSpell | null {
  if (v === null) return null;
  const { kind, start_ms, detail } = spellFields(v, 'open');
  return { kind, start_ms, detail };
}

function parseChecks(v: unknown): BookChecks {
  if (typeof v !== 'object' || v === null) throw new RangeError('checks state: checks is not an object');
  const o = v as Record<string, unknown>;
  const spells = o['spells'];
  if (!Array.isArray(spells) || spells.length > MAX_SPELLS) throw new RangeError('checks state: spells is not a list of at most 100');
  const firstMismatch = o['first_mismatch'];
  if (firstMismatch !== null && typeof firstMismatch !== 'string') throw new RangeError('checks state: first_mismatch is not a string or null');
  return {
    book_events: count(o, 'book_events'),
    venue_best_checked: count(o, 'venue_best_checked'),
    venue_best_mismatches: count(o, 'venue_best_mismatches'),
    first_mismatch_ms: msOrNull(o, 'first_mismatch_ms'),
    first_mismatch: firstMismatch,
    crossed_observations: count(o, 'crossed_observations'),
    first_crossed_ms: msOrNull(o, 'first_crossed_ms'),
    unknown_book_ms: count(o, 'unknown_book_ms'),
    sequence_gaps: count(o, 'sequence_gaps'),
    spells: spells.map((s: unknown, i) => {
      const f = spellFields(s, `spells[${i}]`);
      const end = f.o['end_ms'];
      if (typeof end !== 'number' || !Number.isSafeInteger(end) || end < f.start_ms) throw new RangeError(`checks state: spells[${i}].end_ms is not a time after start_ms`);
      return { kind: f.kind, start_ms: f.start_ms, end_ms: end, detail: f.detail };
    }),
    spells_dropped: count(o, 'spells_dropped'),
  };
}
