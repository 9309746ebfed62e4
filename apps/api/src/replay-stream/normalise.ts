import { ExchangeABook, ExchangeBBook } from '@booktape/book';
import { receivedMsOfSeq } from '@booktape/venues';
import type { ExchangeAEvent, ExchangeBRecord, Venue } from '@booktape/domain';

/**
 * The merged stream's one message shape (docs/api.md, "Merged replay stream"): stored
 * records of both venues turned into book changes, full books, trades and gap markers of
 * one outcome's book each, in the shape of the project's book engine (libs/book): bids and
 * asks of the book; for exchange B the YES book, its NO bids shown as asks at 1 − price
 * (ExchangeBBook). Every book change carries the level's size after it, read from the engine
 * that applied it, so both venues' changes mean the same: "this level now holds this size".
 *
 * Pure: no I/O. One `StreamBooks` per stream keeps one engine book per series.
 */

/** [price, size] as canonical decimal text, best first. */
export type Level = [string, string];

interface Common {
  /** The series: `exchange-a:<asset_id>` or `exchange-b:<ticker>`. */
  market: string;
  venue: Venue;
  /** The merge key's time, Unix ms: exchange A the venue's timestamp, exchange B the capture's receive time (docs/rules/data.md). */
  ts: number;
  /** The venue's own time where it sent one (A: its timestamp; B: `ts`/`ts_ms` of a delta or trade), Unix ms; else null. */
  venue_ts: number | null;
  /** When capture received the record, Unix ms (from its ingest_seq); null for messages the stream makes (snapshots, opening books, capture gaps). */
  received_at: number | null;
  /** The stored ingest_seq (UInt64 as text); null for messages the stream makes. */
  ingest_seq: string | null;
}

export interface BookMessage extends Common {
  type: 'book';
  /** The book at the window's start, rebuilt from history (not a stored record). */
  opening?: true;
  known: boolean;
  bids: Level[];
  asks: Level[];
}

export interface ChangeMessage extends Common {
  type: 'book_change';
  /** Each changed level as it is after the record: size '0' removed it; null (exchange B on an unknown book) unknown. */
  changes: Array<{ side: 'bid' | 'ask'; price: string | null; size: string | null }>;
  /** Whether the book is known after the change (a change to an unknown book leaves it unknown). */
  book_known: boolean;
}

export interface TradeMessage extends Common {
  type: 'trade';
  price: string | null;
  size: string | null;
  /** The taker's side of the YES outcome (exchange A: `side` as sent; exchange B: taker_side yes → buy, no → sell). */
  side: 'buy' | 'sell' | null;
}

export interface SnapshotMessage extends Common {
  type: 'snapshot';
  depth: number;
  known: boolean;
  bids: Level[];
  asks: Level[];
}

export interface GapMessage extends Common {
  type: 'gap';
  /** sequence_gap: the venue skipped a sequence number (B); disconnect: capture lost its connection; outage: an operator-declared outage. */
  kind: 'sequence_gap' | 'disconnect' | 'outage';
  /** The gap's span, Unix ms; `until` null while still open or, for a sequence gap, until the book's next full `book`. */
  from: number;
  until: number | null;
  detail: string;
}

export type StreamMessage = BookMessage | ChangeMessage | TradeMessage | SnapshotMessage | GapMessage;

/** One series of the stream: a venue's book (exchange A: an outcome token of a condition). */
export interface Series {
  /** As named in the request, normalised: `exchange-a:<asset>`, `exchange-b:<TICKER>`. */
  name: string;
  venue: Venue;
  /** A: the asset id; B: the ticker. */
  id: string;
  /** A: the condition id; B: the ticker. */
  market: string;
}

/** The receive time capture encoded in an ingest_seq (received_ms·2^23 + …, libs/venues sequencer); null for a seq that is not a number. */
export function receivedOfSeq(seq: string): number | null {
  try {
    return receivedMsOfSeq(BigInt(seq));
  } catch {
    return null;
  }
}

const pairs = (flat: readonly string[]): Level[] => {
  const out: Level[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
};

const text = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : null);
/** An ISO time as Unix ms (null when it is not one). */
const parseIsoMs = (v: unknown): number | null => {
  if (typeof v !== 'string') return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
};

/** An exchange B trade's YES price in dollars: `yes_price_dollars`, else `yes_price` in cents. */
function tradePriceB(d: Record<string, unknown>): string | null {
  const dollars = text(d.yes_price_dollars);
  if (dollars !== null) return dollars;
  const cents = d.yes_price;
  if (typeof cents === 'number' && Number.isInteger(cents)) return (cents / 100).toFixed(2);
  if (typeof cents === 'string' && /^\d+$/.test(cents)) return (Number(cents) / 100).toFixed(2);
  return null;
}

function tradeTsB(d: Record<string, unknown>): number | null {
  if (typeof d.ts_ms === 'number') return d.ts_ms;
  if (typeof d.ts === 'number') return d.ts < 1e11 ? d.ts * 1000 : d.ts;
  return parseIsoMs(d.ts);
}

type Book = ExchangeABook | ExchangeBBook;

/** Each venue's book engine, keyed by venue. */
const NEW_BOOK: { readonly [V in Venue]: () => Book } = { 'exchange-a': () => new ExchangeABook(), 'exchange-b': () => new ExchangeBBook() };

/** The books of a stream's series, and the stored records of each turned into messages. */
export class StreamBooks {
  private readonly books = new Map<string, Book>();

  constructor(private readonly series: readonly Series[]) {
    for (const s of series) this.books.set(s.name, NEW_BOOK[s.venue]());
  }

  /** Seeds a series' book with the book at the window's start (levels best first, as bookAt gives them); the opening `book` message. */
  open(s: Series, ts: number, known: boolean, first: Level[], second: Level[]): BookMessage {
    const book = this.books.get(s.name)!;
    if (known) {
      if (book instanceof ExchangeABook) {
        book.apply({ market: s.market, asset_id: s.id, timestamp: String(ts), hash: '', event_type: 'book', bids: first.map(([price, size]) => ({ price, size })), asks: second.map(([price, size]) => ({ price, size })) });
      } else {
        // bookAt gives exchange B's YES and NO bids, the engine's own state.
        book.apply({ type: 'snapshot', ticker: s.id, timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: null, seq: null, yes: first, no: second });
      }
    }
    const [bids, asks] = this.levels(book, Infinity);
    return { type: 'book', market: s.name, venue: s.venue, ts, venue_ts: null, received_at: null, ingest_seq: null, opening: true, known: book.isKnown(), bids, asks };
  }

  private levels(book: Book, depth: number): [Level[], Level[]] {
    if (!book.isKnown()) return [[], []];
    const [b, a] = book instanceof ExchangeABook ? book.bestLevels(depth) : book.bidsAsks(depth);
    return [pairs(b), pairs(a)];
  }

  /** The top `depth` levels of a series' book now. */
  snapshot(s: Series, ts: number, depth: number): SnapshotMessage {
    const book = this.books.get(s.name)!;
    const [bids, asks] = this.levels(book, depth);
    return { type: 'snapshot', market: s.name, venue: s.venue, ts, venue_ts: null, received_at: null, ingest_seq: null, depth, known: book.isKnown(), bids, asks };
  }

  /**
   * A stored record of series `s` (its payload parsed): applied to the series' book, and
   * the message it is, or null for records the stream does not carry (tick size changes,
   * B `ticker` messages, …).
   */
  record(s: Series, ts: number, seq: string, payload: Record<string, unknown>): StreamMessage | null {
    const book = this.books.get(s.name)!;
    const common = { market: s.name, venue: s.venue, ts, received_at: receivedOfSeq(seq), ingest_seq: seq };
    if (book instanceof ExchangeABook) {
      const ev = payload as unknown as ExchangeAEvent & Record<string, unknown>;
      const venue_ts = Number.isFinite(Number(ev.timestamp)) ? Number(ev.timestamp) : null;
      if (ev.event_type === 'book') {
        book.apply(ev);
        const [bids, asks] = this.levels(book, Infinity);
        return { type: 'book', ...common, venue_ts, known: book.isKnown(), bids, asks };
      }
      if (ev.event_type === 'price_change') {
        book.apply(ev);
        const changes = (Array.isArray(ev.changes) ? ev.changes : []).map((c) => {
          const side = c.side === 'SELL' ? ('ask' as const) : ('bid' as const);
          const after = book.levelAfter(c.side, c.price);
          // An unknown book: the venue's size is absolute, so it still says what the level holds.
          if (after === null) return { side, price: String(c.price), size: text(c.size) };
          return after.size === null ? { ...after, size: text(c.size) } : after;
        });
        return { type: 'book_change', ...common, venue_ts, changes, book_known: book.isKnown() };
      }
      if (ev.event_type === 'last_trade_price') {
        const side = typeof ev.side === 'string' ? ev.side.toUpperCase() : '';
        return { type: 'trade', ...common, venue_ts, price: text(ev.price), size: text(ev.size), side: side === 'BUY' ? 'buy' : side === 'SELL' ? 'sell' : null };
      }
      return null;
    }
    const rec = payload as unknown as ExchangeBRecord;
    const venue_ts = parseIsoMs(rec.venue_ts);
    switch (rec.type) {
      case 'snapshot': {
        book.apply(rec);
        const [bids, asks] = this.levels(book, Infinity);
        return { type: 'book', ...common, venue_ts, known: book.isKnown(), bids, asks };
      }
      case 'delta': {
        book.apply(rec);
        const after = book.levelAfter(rec.side, rec.price);
        // A delta is relative: on an unknown book (or an unreadable price) the level's size is not known.
        const change = after ?? { side: rec.side === 'no' ? ('ask' as const) : ('bid' as const), price: rec.price == null ? null : String(rec.price), size: null };
        return { type: 'book_change', ...common, venue_ts, changes: [change], book_known: book.isKnown() };
      }
      case 'gap':
        book.apply(rec);
        return {
          type: 'gap', ...common, venue_ts: null, kind: 'sequence_gap', from: ts, until: null,
          detail: `capture saw seq ${rec.seq ?? '?'} where ${rec.expected_seq ?? '?'} was expected on sid ${rec.sid ?? '?'}: the book is unknown until its next book message`,
        };
      case 'trade': {
        const d = (rec.data ?? {}) as Record<string, unknown>;
        const taker = typeof d.taker_side === 'string' ? d.taker_side.toLowerCase() : '';
        return { type: 'trade', ...common, venue_ts: tradeTsB(d), price: tradePriceB(d), size: text(d.count_fp) ?? text(d.count), side: taker === 'yes' ? 'buy' : taker === 'no' ? 'sell' : null };
      }
      default:
        return null;
    }
  }

  get all(): readonly Series[] {
    return this.series;
  }
}
