import { newBook, type BookRecord, type ExchangeABookState, type ExchangeBBookState } from '@booktape/book';
import type { BookEventsRepository, BookHistory, SummaryKey } from '@booktape/storage';

/** A price level of a book answer: canonical decimal text. */
export interface Level {
  price: string;
  size: string;
}

export interface BookAt {
  /** The instant, Unix ms. */
  atMs: number;
  /** The book is known at the instant (docs/rules/summaries.md, rule 4); levels are empty otherwise. */
  known: boolean;
  /** Event time of the last book record applied since the book's last snapshot, or null when it has had none yet. */
  asOfMs: number | null;
  /** Exchange A: bids highest first, asks lowest first. Exchange B: yes and no bids, highest first. */
  sides: [Level[], Level[]];
}

const pairs = (flat: readonly string[], depth: number): Level[] => {
  const out: Level[] = [];
  for (let i = 0; i + 1 < flat.length && out.length < depth; i += 2) out.push({ price: flat[i]!, size: flat[i + 1]! });
  return out;
};

/** Event time of a book record of either venue, Unix ms. */
export const eventTs = (r: BookRecord): number => ('epoch_ms' in r ? r.epoch_ms : Number(r.timestamp));
const isSnapshot = (r: BookRecord): boolean => ('epoch_ms' in r ? r.type === 'snapshot' : r.event_type === 'book');

/**
 * The full book of one series at each of `instants` (ascending, within the history's span):
 * the book after every record at or before the instant, by the summaries' engine and rules,
 * carried across days, rebuilt from the book's last snapshot at or before the first instant
 * (a snapshot replaces the book, so nothing earlier matters). The history is read as it is
 * stepped through, once, and closed when the series ends or is abandoned.
 */
export async function* booksAt(venue: SummaryKey['venue'], history: BookHistory, instants: readonly number[], depth: number): AsyncGenerator<BookAt> {
  const it = history.records;
  try {
    const book = newBook(venue);
    let seen = history.anchorMs !== null;
    let asOfMs: number | null = null;
    let next = await it.next();
    for (const at of instants) {
      for (; !next.done && eventTs(next.value) <= at; next = await it.next()) {
        const r = next.value;
        book.apply(r);
        if (isSnapshot(r)) seen = true;
        asOfMs = seen ? eventTs(r) : null;
      }
      if (!book.isKnown()) {
        yield { atMs: at, known: false, asOfMs, sides: [[], []] };
        continue;
      }
      const state = book.toState() as ExchangeABookState | ExchangeBBookState;
      const sides: [Level[], Level[]] = state.venue === 'exchange-a' ? [pairs(state.bids, depth), pairs(state.asks, depth)] : [pairs(state.yes, depth), pairs(state.no, depth)];
      yield { atMs: at, known: true, asOfMs, sides };
    }
  } finally {
    await history.close();
  }
}

/** The full book of one series at one instant. */
export async function bookAt(events: BookEventsRepository, key: SummaryKey, atMs: number, depth: number): Promise<BookAt> {
  const history = await events.sinceLastSnapshot(key.venue, key.market, key.asset, atMs);
  for await (const b of booksAt(key.venue, history, [atMs], depth)) return b;
  throw new Error('unreachable: one instant gives one book');
}
