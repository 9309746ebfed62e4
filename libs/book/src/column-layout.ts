/**
 * The layout of summary buckets kept as columns, in a module that imports nothing: the
 * column code (bucket-columns.ts, compact-buckets.ts) and the answer writer (bucket-bytes.ts)
 * both read it, and bucket-bytes.ts is itself imported by bucketing.ts, which the column code
 * imports.
 */

/**
 * Dictionary indexes per bucket in `BucketColumns.v`: the six closes (best_bid,
 * best_bid_size, best_ask, best_ask_size, mid_price, spread), then open, high, low, close of
 * the bid, ask, mid and spread OHLCs.
 */
export const VALUES_PER_BUCKET = 22;

/**
 * Stored observed buckets as columns: what the summary reader keeps of a day and merges to a
 * coarser resolution without making an object per stored bucket. A whole day at 1 s is
 * 86,400 buckets; as objects (`decodeBuckets`) each is five allocations, and merging them to
 * R=7 compared decimal texts character by character. Here a value is an index into the
 * day's dictionary of distinct decimal texts, and a decimal is compared by its double first
 * (see `BucketColumns.num`), by its text only where the doubles do not decide.
 */
export interface BucketColumns {
  readonly n: number;
  /** Bucket starts, Unix ms. */
  readonly ts: Float64Array;
  readonly count: Float64Array;
  /**
   * VALUES_PER_BUCKET dictionary indexes per bucket (−1: null): the six closes (best_bid,
   * best_bid_size, best_ask, best_ask_size, mid_price, spread), then open, high, low, close of
   * the bid, ask, mid and spread OHLCs (an OHLC that is null: open −1).
   */
  readonly v: Int32Array;
  /** Distinct value texts (no text twice: two indexes of one dictionary are two different texts). */
  readonly dict: readonly string[];
  /**
   * Per dictionary entry, its value as a double where the text is a canonical decimal, else
   * NaN. A correctly rounded parse never reverses an order, so where two doubles differ the
   * decimals differ the same way; where they are equal (or NaN) the texts are compared.
   */
  readonly num: Float64Array;
}

/**
 * The answer's series (fillSeries, rules 6, 7) over merged columns, without an object per
 * bucket: bucket k starts at `firstStart + k * resolutionMs` and is row `rows[k]` of
 * `columns`, observed (`filled[k]` 0) or forward-filled from that row's closes (1). Row −1
 * is the state carried in (`carried`: its six closes).
 */
export interface ColumnSeries {
  readonly columns: BucketColumns;
  readonly n: number;
  readonly firstStart: number;
  readonly resolutionMs: number;
  readonly rows: Int32Array;
  readonly filled: Uint8Array;
  readonly carried: readonly (string | null)[];
}
