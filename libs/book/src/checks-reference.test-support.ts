import type { ExchangeAEvent, ExchangeBRecord, PriceChange } from '@booktape/domain';
import { canonicalDecimal, compareDecimal, decimalParts, subtractDecimal } from '@booktape/decimal';
import type { BookChecks, CheckSpell, CheckSpellKind } from './checks.ts';

/**
 * A deliberately naive computation of the per asset-day cross-checks (issue 9 point 4), for
 * tests only, written from the rules and sharing no code with the engine or checks.ts: books
 * are maps of canonical price → canonical size, the top is found by sorting, arithmetic is
 * decimal.ts (BigInt), and the whole stream is walked once from its first record, the day's
 * figures then cut out of the full history.
 *
 * Rules, as in the brief:
 * - A claim (A `price_change` entry best_bid/best_ask, or without any such entry in the
 *   record the record's extra.best_bid/best_ask after all its changes) is checked when the
 *   book is known right after it; it holds if both claimed sides equal the top right after it,
 *   or both equal the known top at the end of its millisecond (empty bid = 0, empty ask = 1).
 * - Crossed: end of a millisecond with a book event, book known, both sides, bid >= ask.
 * - Spells: opened by a book event that leaves the book unknown (when none is open) or by a B
 *   gap (a gap during an unknown_book spell ends it and starts a sequence_gap one; during a
 *   sequence_gap spell it changes nothing), closed by a book event that leaves it known.
 * - Input the engine cannot apply (bad price, size, delta or side) makes the book unknown.
 */

type Rec = ExchangeAEvent | ExchangeBRecord;

// Venue text: digits with an optional fraction, or a bare fraction (".48", as Polymarket writes it).
const PRICE = /^(\d+(\.\d+)?|\.\d+)$/;
const SIGNED = /^-?(\d+(\.\d+)?|\.\d+)$/;

function canon(s: string): string {
  const c = canonicalDecimal(s);
  if (!c.ok) throw new Error(`unreachable: ${s}`);
  return c.value;
}

function okPrice(p: unknown): p is string {
  if (typeof p !== 'string' || !PRICE.test(p)) return false;
  const c = canon(p);
  return compareDecimal(c, '1') <= 0 && decimalParts(c).scale <= 6;
}

const okSize = (s: unknown): s is string => typeof s === 'string' && PRICE.test(s);

class Book {
  known = false;
  bids = new Map<string, string>(); // A bids, B YES bids
  asks = new Map<string, string>(); // A asks, B NO bids
  bad = false; // set when the last record could not be applied

  reset(known: boolean): void {
    this.known = known;
    this.bids = new Map();
    this.asks = new Map();
  }

  fail(): false {
    this.reset(false);
    this.bad = true;
    return false;
  }

  put(side: Map<string, string>, price: unknown, size: unknown): boolean {
    if (!okPrice(price) || !okSize(size)) return this.fail();
    const s = canon(size);
    if (s === '0') side.delete(canon(price));
    else side.set(canon(price), s);
    return true;
  }

  /** [bid, ask] compare values of the top (empty bid 0, empty ask 1); B asks are 1 − NO. */
  top(venue: 'A' | 'B'): [string, string] {
    const bids = [...this.bids.keys()].sort(compareDecimal);
    const asks = [...this.asks.keys()].sort(compareDecimal);
    const bid = bids.length > 0 ? bids[bids.length - 1]! : '0';
    let ask: string;
    if (venue === 'A') ask = asks.length > 0 ? asks[0]! : '1';
    else ask = asks.length > 0 ? subtractDecimal('1', asks[asks.length - 1]!) : '1';
    return [bid, ask];
  }

  bothSides(): boolean {
    return this.bids.size > 0 && this.asks.size > 0;
  }
}

interface Claim {
  ts: number;
  bid: string | undefined;
  ask: string | undefined;
  after: [string, string];
  hash: string;
}

const claimHolds = (claim: string | undefined, value: string): boolean =>
  claim === undefined || (PRICE.test(claim) && compareDecimal(canon(claim), value) === 0);

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

interface History {
  bookEvents: number[];
  claims: { ts: number; mismatch: string | null }[];
  crossed: number[];
  gaps: number[];
  spells: { kind: CheckSpellKind; start: number; end: number | null; detail: string }[];
}

const tsOf = (r: Rec): number => ('epoch_ms' in r ? r.epoch_ms : Number(r.timestamp));

/** Every check event of the whole stream, from its first record. */
export function checkHistory(venue: 'A' | 'B', records: readonly Rec[]): History {
  const h: History = { bookEvents: [], claims: [], crossed: [], gaps: [], spells: [] };
  const book = new Book();
  let open: History['spells'][number] | null = null;
  const closeAt = (ts: number): void => {
    open!.end = ts;
    open = null;
  };
  for (let i = 0; i < records.length; ) {
    const ts = tsOf(records[i]!);
    let j = i;
    while (j < records.length && tsOf(records[j]!) === ts) j++;
    const claims: Claim[] = [];
    let sawBookEvent = false;
    for (const r of records.slice(i, j)) {
      book.bad = false;
      let reason = 'no snapshot yet';
      if (venue === 'B') {
        const b = r as ExchangeBRecord;
        if (b.type === 'gap') {
          h.gaps.push(ts);
          book.reset(false);
          if (open === null || open.kind !== 'sequence_gap') {
            if (open !== null) closeAt(ts);
            open = { kind: 'sequence_gap', start: ts, end: null, detail: `gap: sid ${b.sid} seq ${b.seq} expected ${b.expected_seq}` };
            h.spells.push(open);
          }
          continue;
        }
        if (b.type === 'snapshot') {
          if (b.yes === null || b.no === null) {
            book.reset(false);
            reason = 'null snapshot side';
          } else {
            book.reset(true);
            if ((b.yes ?? []).every(([p, s]) => book.put(book.bids, p, s))) (b.no ?? []).every(([p, s]) => book.put(book.asks, p, s));
          }
        } else if (b.type === 'delta') {
          if (book.known) {
            if (b.price === null || b.price === undefined || b.delta === null || b.delta === undefined) {
              book.reset(false);
              reason = 'null price payload';
            } else if ((b.side !== 'yes' && b.side !== 'no') || !okPrice(b.price) || typeof b.delta !== 'string' || !SIGNED.test(b.delta)) {
              book.fail();
            } else {
              const side = b.side === 'yes' ? book.bids : book.asks;
              const p = canon(b.price);
              const sum = addExact(side.get(p) ?? '0', canon(b.delta));
              if (compareDecimal(sum, '0') <= 0) side.delete(p);
              else side.set(p, sum);
            }
          }
        } else continue; // ticker, trade: not book events
      } else {
        const ev = r as ExchangeAEvent;
        if (ev.event_type === 'book') {
          book.reset(true);
          if ((ev.bids ?? []).every((l) => book.put(book.bids, l.price, l.size))) (ev.asks ?? []).every((l) => book.put(book.asks, l.price, l.size));
        } else if (ev.event_type === 'price_change') {
          const changes: PriceChange[] = ev.changes ?? [];
          const entryClaims = changes.some((c) => text(c.best_bid) !== undefined || text(c.best_ask) !== undefined);
          if (book.known) {
            for (const c of changes) {
              if (c.side !== 'BUY' && c.side !== 'SELL') {
                book.fail();
                break;
              }
              if (!book.put(c.side === 'BUY' ? book.bids : book.asks, c.price, c.size)) break;
              const bid = text(c.best_bid);
              const ask = text(c.best_ask);
              if (bid !== undefined || ask !== undefined) claims.push({ ts, bid, ask, after: book.top('A'), hash: c.hash ?? ev.hash });
            }
          }
          if (!entryClaims && book.known) {
            const bid = text(ev.extra?.['best_bid']);
            const ask = text(ev.extra?.['best_ask']);
            if (bid !== undefined || ask !== undefined) claims.push({ ts, bid, ask, after: book.top('A'), hash: ev.hash });
          }
        } else continue; // not a book event
      }
      sawBookEvent = true;
      h.bookEvents.push(ts);
      if (book.known) {
        if (open !== null) closeAt(ts);
      } else if (open === null) {
        open = { kind: 'unknown_book', start: ts, end: null, detail: book.bad ? 'anomaly' : reason };
        h.spells.push(open);
      }
    }
    const end = book.known ? book.top(venue) : null;
    for (const c of claims) {
      const atEntry = claimHolds(c.bid, c.after[0]) && claimHolds(c.ask, c.after[1]);
      const atEnd = end !== null && claimHolds(c.bid, end[0]) && claimHolds(c.ask, end[1]);
      const show = (s: string | undefined): string => (s === undefined ? '-' : JSON.stringify(s));
      const endText = end === null ? 'unknown' : `bid ${end[0]} ask ${end[1]}`;
      h.claims.push({
        ts: c.ts,
        mismatch:
          atEntry || atEnd
            ? null
            : `claimed bid ${show(c.bid)} ask ${show(c.ask)}; rebuilt bid ${c.after[0]} ask ${c.after[1]} after the entry, ` +
              `${endText} at the end of the millisecond; hash ${c.hash}`,
      });
    }
    if (sawBookEvent && book.known && book.bothSides()) {
      const [bid, ask] = book.top(venue);
      if (compareDecimal(bid, ask) >= 0) h.crossed.push(ts);
    }
    i = j;
  }
  return h;
}

function addExact(a: string, b: string): string {
  const pa = decimalParts(a);
  const pb = decimalParts(b);
  const scale = Math.max(pa.scale, pb.scale);
  const sum = pa.units * 10n ** BigInt(scale - pa.scale) + pb.units * 10n ** BigInt(scale - pb.scale);
  const neg = sum < 0n;
  const digits = (neg ? -sum : sum).toString().padStart(scale + 1, '0');
  const body = scale === 0 ? digits : `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  return canon(neg ? `-${body}` : body);
}

/**
 * The day's checks [dayStart, dayStart + 1 day) from the full history, as of untilMs; spell
 * details reduced to their category (the text before any ':'), as `category()` does for the
 * checker's output.
 */
export function referenceDayChecks(h: History, dayStartMs: number, untilMs: number, maxSpells: number): BookChecks {
  const dayEnd = dayStartMs + 86_400_000;
  const inDay = (ts: number): boolean => ts >= dayStartMs && ts < dayEnd;
  const claims = h.claims.filter((c) => inDay(c.ts));
  const mismatches = claims.filter((c) => c.mismatch !== null);
  const crossed = h.crossed.filter(inDay);
  const spells: CheckSpell[] = [];
  for (const s of h.spells) {
    const end = s.end === null ? untilMs : Math.min(s.end, untilMs);
    if (s.start >= dayEnd || s.start > untilMs || end < dayStartMs) continue;
    spells.push({ kind: s.kind, start_ms: Math.max(s.start, dayStartMs), end_ms: end, detail: s.detail });
  }
  return {
    book_events: h.bookEvents.filter(inDay).length,
    venue_best_checked: claims.length,
    venue_best_mismatches: mismatches.length,
    first_mismatch_ms: mismatches[0]?.ts ?? null,
    first_mismatch: mismatches[0]?.mismatch ?? null,
    crossed_observations: crossed.length,
    first_crossed_ms: crossed[0] ?? null,
    unknown_book_ms: spells.reduce((t, s) => t + (s.end_ms - s.start_ms), 0),
    sequence_gaps: h.gaps.filter(inDay).length,
    spells: spells.slice(0, maxSpells),
    spells_dropped: Math.max(0, spells.length - maxSpells),
  };
}

/** A spell detail's category: the text before its first ':' ("anomaly: price …" → "anomaly"). */
export function category(checks: BookChecks): BookChecks {
  return { ...checks, spells: checks.spells.map((s) => ({ ...s, detail: s.kind === 'sequence_gap' ? s.detail : s.detail.split(':')[0]! })) };
}

/**
 * Adds venue claims to an A stream, from the reference book's own state: per entry, `pick`
 * chooses none, the true top right after the entry, the true top at the end of the
 * millisecond (both in venue text, sometimes "0.50"), one side only, a wrong price, or (for
 * a whole record) the record-level extra.best_bid/best_ask after all its changes. `honest`
 * leaves out the wrong prices: every claim is then true of the venue's book. Returns new
 * records; the input is not changed.
 */
export function withClaims(records: readonly ExchangeAEvent[], picks: readonly number[], honest = false): ExchangeAEvent[] {
  let n = 0;
  const next = (): number => (picks.length === 0 ? 0 : picks[n++ % picks.length]!);
  const book = new Book();
  const out: ExchangeAEvent[] = [];
  const pad = (v: string, p: number): string => (p % 3 === 0 ? (v.includes('.') ? `${v}0` : `${v}.00`) : v);
  const wrong = (v: string, p: number): string => {
    const delta = ['0.01', '0.001', '0.1'][p % 3]!;
    const up = addExact(v, delta);
    return compareDecimal(up, '1') <= 0 ? up : subtractDecimal(v, delta);
  };
  for (let i = 0; i < records.length; ) {
    const ts = Number(records[i]!.timestamp);
    let j = i;
    while (j < records.length && Number(records[j]!.timestamp) === ts) j++;
    // First pass: the tops after each entry (and record), then the end of the millisecond.
    const afters: [string, string][][] = [];
    const recordAfter: ([string, string] | null)[] = [];
    for (const ev of records.slice(i, j)) {
      const tops: [string, string][] = [];
      if (ev.event_type === 'book') {
        book.reset(true);
        if ((ev.bids ?? []).every((l) => book.put(book.bids, l.price, l.size))) (ev.asks ?? []).every((l) => book.put(book.asks, l.price, l.size));
      } else if (ev.event_type === 'price_change' && book.known) {
        for (const c of ev.changes ?? []) {
          if (c.side !== 'BUY' && c.side !== 'SELL') {
            book.fail();
            break;
          }
          if (!book.put(c.side === 'BUY' ? book.bids : book.asks, c.price, c.size)) break;
          tops.push(book.top('A'));
        }
      }
      afters.push(tops);
      recordAfter.push(book.known ? book.top('A') : null);
    }
    const endKnown = book.known;
    const end = endKnown ? book.top('A') : (['0.5', '0.5'] as [string, string]);
    records.slice(i, j).forEach((ev, k) => {
      if (ev.event_type !== 'price_change') {
        out.push(ev);
        return;
      }
      const mode = next();
      if (mode % 7 === 6) {
        const top = recordAfter[k] ?? end;
        const p = next();
        const bid = p % 5 === 4 && !honest ? wrong(top[0], p) : pad(top[0], p);
        out.push({ ...ev, extra: { ...ev.extra, best_bid: bid, best_ask: pad(top[1], p + 1) } });
        return;
      }
      const changes = (ev.changes ?? []).map((c, e): PriceChange => {
        const p = next();
        const kind = p % 8;
        if (kind === 0) return { ...c };
        // Claims of the end of the millisecond only when it is known (the venue's book is).
        const top = kind <= 3 || !endKnown ? (afters[k]![e] ?? end) : end;
        let [bid, ask]: [string | undefined, string | undefined] = [pad(top[0], p >> 3), pad(top[1], p >> 4)];
        if (kind === 5) ask = undefined;
        if (kind === 6) bid = undefined;
        if (kind === 7 && !honest) {
          if (p & 8) bid = wrong(top[0], p >> 4);
          else ask = wrong(top[1], p >> 4);
        }
        return { ...c, hash: `${ev.hash}.${e}`, ...(bid !== undefined && { best_bid: bid }), ...(ask !== undefined && { best_ask: ask }) };
      });
      out.push({ ...ev, changes });
    });
    i = j;
  }
  return out;
}
