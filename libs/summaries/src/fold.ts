import { BucketAggregator, newBook, restoreBook, type AnyBook, type BookRecord, type BookVenue, type ExactBucket, type Observation } from '@booktape/book';

/** Start of a UTC date `YYYY-MM-DD`, ms (NaN when it is not one). */
export function dayStartMs(date: string): number {
  return Date.parse(`${date}T00:00:00Z`);
}

/** The book a stored day state stands for: '' (no earlier day stored) is an empty book. */
export function bookFromState(venue: BookVenue, state: string): AnyBook {
  return state === '' ? newBook(venue) : restoreBook(venue, JSON.parse(state));
}

/**
 * The summary fold: book events applied in serving order to a book, each observation
 * counted into buckets of one resolution. The roller stores what it folds; the reader
 * folds the same way over what is not rolled up yet (the live tail) or, for an asset
 * without rollups, over everything, so both answer alike.
 *
 * Observations before `fromMs` are not counted: the last of them is `carried`, the state
 * a series starts from.
 */
export class BookFold {
  private readonly agg: BucketAggregator;
  carried: Observation | null = null;

  constructor(
    readonly book: AnyBook,
    resolutionSeconds: number,
    private readonly fromMs = -Infinity,
  ) {
    this.agg = new BucketAggregator(resolutionSeconds);
  }

  apply(r: BookRecord): void {
    const o = this.book.apply(r);
    if (o !== null) this.observe(o);
  }

  /** For a caller that applies the records itself (the roller's checks apply a millisecond at a time). */
  readonly observe = (o: Observation): void => {
    if (o.ts < this.fromMs) this.carried = o;
    else this.agg.push(o);
  };

  /** The observed buckets; the fold is then empty. */
  finish(): ExactBucket[] {
    return this.agg.finish();
  }
}
