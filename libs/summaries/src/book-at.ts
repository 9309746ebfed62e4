import { newBook, type BookRecord, type ExchangeABookState, type ExchangeBBookState } from '@booktape/book';
import type { BookEventsRepository, SummaryKey } from '@booktape/storage';

/** A price level of a book answer: canonical decimal text. */
export interface Level {
  price: string;
  size: string;
}

export interface BookAt {
  /** The book is known at the instant (docs/rules/summaries.md, rule 4); levels are empty otherwise. */
  known: boolean;
  /** Event time of the last book record applied, or null when none was (no snapshot yet). */
  asOfMs: number | null;
  /** Exchange A: bids highest first, asks lowest first. Exchange B: yes and no bids, highest first. */
  sides: [Level[], Level[]];
}

const pairs = (flat: readonly string[], depth: number): Level[] => {
  const out: Level[] = [];
  for (let i = 0; i + 1 < flat.length && out.length < depth; i += 2) out.push({ price: flat[i]!, size: flat[i + 1]! });
  return out;
};

const eventMs = (r: BookRecord): number => ('epoch_ms' in r ? r.epoch_ms : Number(r.timestamp));

/**
 * The full book of one series after every record at or before an instant, by the same engine
 * and rules as the summaries, carried across days: rebuilt from the last snapshot at or
 * before the instant (a snapshot replaces the book, so nothing earlier matters).
 */
export async function bookAt(events: BookEventsRepository, key: SummaryKey, atMs: number, depth: number): Promise<BookAt> {
  const records = await events.sinceLastSnapshot(key.venue, key.market, key.asset, atMs);
  if (records === null || records.length === 0) return { known: false, asOfMs: null, sides: [[], []] };
  const book = newBook(key.venue);
  for (const r of records) book.apply(r);
  const asOfMs = eventMs(records[records.length - 1]!);
  if (!book.isKnown()) return { known: false, asOfMs, sides: [[], []] };
  const state = book.toState() as ExchangeABookState | ExchangeBBookState;
  const sides: [Level[], Level[]] = state.venue === 'exchange-a' ? [pairs(state.bids, depth), pairs(state.asks, depth)] : [pairs(state.yes, depth), pairs(state.no, depth)];
  return { known: true, asOfMs, sides };
}
