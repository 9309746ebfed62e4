/**
 * Helpers over the API's answers: pure functions, no I/O. Summary buckets flattened for a
 * table, the top of a book, books and snapshots as long rows, coverage in brief, CSV text.
 */
import type { BookA, BookB, BookLevel, CoverageDay, Schemas, SummaryBucket } from './types.ts';

type Ohlc = { open: number; high: number; low: number; close: number } | null;
const OHLC_FIELDS = ['best_bid', 'best_ask', 'mid_price', 'spread'] as const;
type OhlcField = (typeof OHLC_FIELDS)[number];

/** A summary bucket with each OHLC object flattened into four columns (`best_bid_open`, …); nulls stay null. */
export type SummaryRow = Omit<SummaryBucket, `${OhlcField}_ohlc`> & {
  [K in `${OhlcField}_${'open' | 'high' | 'low' | 'close'}`]: number | null;
};

/** The columns of SummaryRow, in the order of the API's summary CSV. */
export const SUMMARY_COLUMNS = [
  'timestamp', 'quote_count', 'is_forward_filled', 'best_bid', 'best_bid_size', 'best_ask', 'best_ask_size', 'mid_price', 'spread',
  ...OHLC_FIELDS.flatMap((f) => (['open', 'high', 'low', 'close'] as const).map((p) => `${f}_${p}` as const)),
] as const satisfies ReadonlyArray<keyof SummaryRow>;

/** Summary buckets as flat rows, one per bucket: what a DataFrame wants. */
export function summaryRows(buckets: readonly SummaryBucket[]): SummaryRow[] {
  return buckets.map((b) => {
    const { best_bid_ohlc, best_ask_ohlc, mid_price_ohlc, spread_ohlc, ...rest } = b;
    const row: Record<string, unknown> = { ...rest };
    const ohlc: Record<OhlcField, Ohlc> = { best_bid: best_bid_ohlc, best_ask: best_ask_ohlc, mid_price: mid_price_ohlc, spread: spread_ohlc };
    for (const f of OHLC_FIELDS) {
      const o = ohlc[f];
      row[`${f}_open`] = o?.open ?? null;
      row[`${f}_high`] = o?.high ?? null;
      row[`${f}_low`] = o?.low ?? null;
      row[`${f}_close`] = o?.close ?? null;
    }
    return row as SummaryRow;
  });
}

const decimals = (s: string) => (s.includes('.') ? s.length - s.indexOf('.') - 1 : 0);
/** Exact-enough decimal arithmetic for prices: the result rounded to the inputs' precision (0.55 − 0.45 is 0.1, not 0.10000000000000003). */
const round = (x: number, d: number) => Number(x.toFixed(Math.min(d, 20)));

export interface BookTop {
  /** Best bid (exchange B: the best YES bid). */
  bestBid: number | null;
  bestBidSize: number | null;
  /** Best ask (exchange B: 1 − the best NO bid, a NO bid being a YES offer). */
  bestAsk: number | null;
  bestAskSize: number | null;
  /** (bid + ask) / 2, null unless both sides have a level. */
  mid: number | null;
  /** ask − bid, null unless both sides have a level. */
  spread: number | null;
}

function top(bid: BookLevel | undefined, ask: { price: number; size: number; decimals: number } | undefined): BookTop {
  const bestBid = bid ? Number(bid.price) : null;
  const d = Math.max(bid ? decimals(bid.price) : 0, ask?.decimals ?? 0);
  const both = bestBid !== null && ask !== undefined;
  return {
    bestBid,
    bestBidSize: bid ? Number(bid.size) : null,
    bestAsk: ask?.price ?? null,
    bestAskSize: ask?.size ?? null,
    mid: both ? round((bestBid + ask.price) / 2, d + 1) : null,
    spread: both ? round(ask.price - bestBid, d) : null,
  };
}

/** Best bid and ask, mid and spread of a book at an instant (either venue). */
export function bookTop(book: Pick<BookA, 'bids' | 'asks'> | Pick<BookB, 'yes' | 'no'>): BookTop {
  if ('bids' in book) {
    const a = book.asks[0];
    return top(book.bids[0], a ? { price: Number(a.price), size: Number(a.size), decimals: decimals(a.price) } : undefined);
  }
  const no = book.no[0];
  return top(book.yes[0], no ? { price: round(1 - Number(no.price), decimals(no.price)), size: Number(no.size), decimals: decimals(no.price) } : undefined);
}

export interface LevelRow {
  /** `bid` / `ask` (exchange A) or `yes` / `no` (exchange B). */
  side: 'bid' | 'ask' | 'yes' | 'no';
  /** 0 = best. */
  level: number;
  price: number;
  size: number;
}

/** A book's levels as long rows, best first on each side. */
export function bookLevels(book: Pick<BookA, 'bids' | 'asks'> | Pick<BookB, 'yes' | 'no'>): LevelRow[] {
  const sides: Array<[LevelRow['side'], readonly BookLevel[]]> = 'bids' in book ? [['bid', book.bids], ['ask', book.asks]] : [['yes', book.yes], ['no', book.no]];
  return sides.flatMap(([side, levels]) => levels.map((l, level) => ({ side, level, price: Number(l.price), size: Number(l.size) })));
}

export interface SnapshotRow extends LevelRow {
  timestamp: number;
  as_of_ms: number | null;
  is_known: boolean;
}

/**
 * Book snapshots as the long rows of the API's snapshot CSV: one per level; a snapshot
 * without levels (an unknown book) is left out here, since a row needs a price.
 */
export function bookSnapshotRows(snapshots: ReadonlyArray<{ timestamp: number; as_of_ms: number | null; is_known: boolean } & (Pick<BookA, 'bids' | 'asks'> | Pick<BookB, 'yes' | 'no'>)>): SnapshotRow[] {
  return snapshots.flatMap((s) => bookLevels(s).map((l) => ({ timestamp: s.timestamp, as_of_ms: s.as_of_ms, is_known: s.is_known, ...l })));
}

export interface CoverageBrief {
  complete: string[];
  partial: string[];
  missing: string[];
  /** Every day complete and fully checked: the range can be trusted as stored. */
  trustworthy: boolean;
}

/** Which days of a coverage answer are complete, partial or missing. */
export function coverageBrief(days: readonly CoverageDay[]): CoverageBrief {
  const out: CoverageBrief = { complete: [], partial: [], missing: [], trustworthy: days.length > 0 };
  for (const d of days) {
    out[d.status].push(d.date);
    if (d.status !== 'complete' || !d.checks_complete) out.trustworthy = false;
  }
  return out;
}

export type GapRow = Schemas['CoverageGap'] & { date: string; duration_ms: number };

/** Every gap of a coverage answer, one row each with its day and length, in day order. */
export function coverageGaps(days: readonly CoverageDay[]): GapRow[] {
  return days.flatMap((d) => d.gaps.map((g) => ({ date: d.date, ...g, duration_ms: g.end_ms - g.start_ms })));
}

/** Drains an async iterator (one of the client's walks) into an array. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of items) out.push(x);
  return out;
}

/**
 * One CSV field (RFC 4180). The project's CSV writer is csvField of libs/domain/src/csv.ts;
 * this package is published with no dependencies, so it carries this copy, which
 * helpers.test.ts holds to the same output.
 */
function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * Rows as CSV text (RFC 4180, a header row first, `\n` line ends; null is an empty field,
 * an object its JSON; column names quoted like fields). Columns default to every key of
 * any row, in the order they first appear (a key only later rows have is a column too, empty
 * where a row lacks it).
 */
export function toCsv<R extends object>(rows: readonly R[], columns?: ReadonlyArray<keyof R & string>): string {
  const cols = columns ?? ([...new Set(rows.flatMap((r) => Object.keys(r)))] as Array<keyof R & string>);
  const lines = [cols.map(csvField).join(',')];
  for (const r of rows) lines.push(cols.map((c) => csvField(r[c])).join(','));
  return `${lines.join('\n')}\n`;
}
