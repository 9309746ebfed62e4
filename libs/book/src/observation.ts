/**
 * The top of a book after one book event (docs/rules/summaries.md, rule 3), as exact canonical decimal
 * strings. null where the side is empty or the book unknown (rule 4); `mid_price` and
 * `spread` only when both sides exist. Exchange B: `best_ask` = 1 − best NO bid, its size
 * that NO level's size.
 */
export interface Top {
  readonly best_bid: string | null;
  readonly best_bid_size: string | null;
  readonly best_ask: string | null;
  readonly best_ask_size: string | null;
  readonly mid_price: string | null;
  readonly spread: string | null;
}

/** One observation = one stored book event (one record) and the top after it. */
export interface Observation extends Top {
  /** Event time, Unix milliseconds. */
  readonly ts: number;
}

export const UNKNOWN_TOP: Top = Object.freeze({
  best_bid: null,
  best_bid_size: null,
  best_ask: null,
  best_ask_size: null,
  mid_price: null,
  spread: null,
});
