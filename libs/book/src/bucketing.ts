import { CSV_BUCKET_BYTES, JSON_BUCKET_BYTES, SUMMARY_CSV_COLUMNS, SummaryBytesWriter } from './bucket-bytes.ts';
import { compareCanonical } from './fixed-point.ts';
import type { Observation, Top } from './observation.ts';

/**
 * Summary buckets from observations (docs/rules/summaries.md, rules 5–10). Pure.
 *
 * Three steps that compose, so that serving can start from raw observations or from stored
 * pre-aggregated buckets alike:
 * - `aggregateObservations`: observations → observed buckets only (quote_count > 0), sparse;
 * - `mergeBuckets`: observed fine buckets → observed coarser buckets, exactly equal to
 *   aggregating the raw observations at the coarser resolution;
 * - `fillSeries`: observed buckets + the state carried from before → the answer's series,
 *   forward-filled, for a bucket plan (`planBuckets`: the range, the 100,000 cap).
 * `summarise` chains them for raw observations.
 *
 * A caller: `planBuckets(window or utcDayWindow(date), R)` (a TooManyBucketsError is the 400);
 * run the book over the records before `plan.dataEndMs` (the last bucket may reach past the
 * window's end, or past midnight for a date when R does not divide a day), starting from
 * the previous day's state; `summarise(observations, plan, carried)` with `carried` = that
 * state's `lastObservation()`; `toSummaryBucket` for the answer.
 *
 * Values stay canonical decimal strings throughout (`ExactBucket`), compared exactly as
 * decimals (compareCanonical, which relies on the canonical form); `toSummaryBucket` turns
 * them into the 2.3 numbers at the very end with `Number(text)`, which is the double nearest
 * the decimal and prints as it (no arithmetic is ever done on those numbers).
 */

export const MIN_RESOLUTION_SECONDS = 1;
export const MAX_RESOLUTION_SECONDS = 3600;
/** At most this many buckets in one answer (rule 9): a whole day at 1 s fits. */
export const MAX_BUCKETS = 100_000;

/** A request whose range holds more than MAX_BUCKETS buckets: the API answers 400. */
export class TooManyBucketsError extends RangeError {
  override readonly name = 'TooManyBucketsError';
  readonly limit = MAX_BUCKETS;
  constructor(readonly requested: number) {
    super(`the request covers ${requested} buckets; at most ${MAX_BUCKETS} are allowed (use a larger resolution or a shorter range)`);
  }
}

export interface Ohlc {
  readonly open: string;
  readonly high: string;
  readonly low: string;
  readonly close: string;
}

/** A 2.3 summary bucket with exact decimal strings (field order as the answer shows it). */
export interface ExactBucket extends Top {
  /** Bucket start, Unix milliseconds. */
  readonly timestamp: number;
  readonly quote_count: number;
  readonly is_forward_filled: boolean;
  readonly best_bid_ohlc: Ohlc | null;
  readonly best_ask_ohlc: Ohlc | null;
  readonly mid_price_ohlc: Ohlc | null;
  readonly spread_ohlc: Ohlc | null;
}

export interface NumericOhlc {
  open: number;
  high: number;
  low: number;
  close: number;
}

/** A 2.3 summary bucket as the API answers it. */
export interface SummaryBucket {
  timestamp: number;
  quote_count: number;
  is_forward_filled: boolean;
  best_bid: number | null;
  best_bid_size: number | null;
  best_ask: number | null;
  best_ask_size: number | null;
  mid_price: number | null;
  spread: number | null;
  best_bid_ohlc: NumericOhlc | null;
  best_ask_ohlc: NumericOhlc | null;
  mid_price_ohlc: NumericOhlc | null;
  spread_ohlc: NumericOhlc | null;
}

/** Which buckets an answer covers: those whose start lies in [startMs, endMs] (rule 5). */
export interface BucketPlan {
  readonly resolutionMs: number;
  /** First and last bucket start in the range (firstStart > lastStart when count is 0). */
  readonly firstStart: number;
  readonly lastStart: number;
  readonly count: number;
  /**
   * Observations needed: every one before `dataEndMs` (exclusive). Those before firstStart
   * only set the carried state; the last bucket reaches past `endMs` up to here.
   */
  readonly dataEndMs: number;
}

function checkResolution(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < MIN_RESOLUTION_SECONDS || seconds > MAX_RESOLUTION_SECONDS) {
    throw new RangeError(`resolution must be an integer from ${MIN_RESOLUTION_SECONDS} to ${MAX_RESOLUTION_SECONDS} seconds, got ${seconds}`);
  }
  return seconds * 1000;
}

/** The buckets of a window (inclusive bounds, ms); throws TooManyBucketsError past the cap. */
export function planBuckets(window: { startMs: number; endMs: number }, resolutionSeconds: number): BucketPlan {
  const r = checkResolution(resolutionSeconds);
  const { startMs, endMs } = window;
  if (!Number.isSafeInteger(startMs) || !Number.isSafeInteger(endMs)) {
    throw new RangeError(`window bounds must be integer milliseconds, got ${startMs} and ${endMs}`);
  }
  const firstStart = Math.ceil(startMs / r) * r;
  const lastStart = Math.floor(endMs / r) * r;
  const count = lastStart >= firstStart ? (lastStart - firstStart) / r + 1 : 0;
  if (count > MAX_BUCKETS) throw new TooManyBucketsError(count);
  return { resolutionMs: r, firstStart, lastStart, count, dataEndMs: lastStart + r };
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
export const DAY_MS = 86_400_000;

/** The window of a UTC date `YYYY-MM-DD`: buckets whose start lies in that day. */
export function utcDayWindow(date: string): { startMs: number; endMs: number } {
  const m = DATE.exec(date);
  const startMs = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || new Date(startMs).toISOString().slice(0, 10) !== date) throw new RangeError(`not a UTC date YYYY-MM-DD: ${date}`);
  return { startMs, endMs: startMs + DAY_MS - 1 };
}

/** OHLC over the non-null values offered, in exact decimal order (compareCanonical). */
class OhlcAccumulator {
  open: string | null = null;
  high = '';
  low = '';
  close = '';

  reset(): void {
    this.open = null;
  }

  /** Offers an observed value (or a merged bucket's open/high/low/close). */
  add(open: string, high: string, low: string, close: string): void {
    if (this.open === null) {
      this.open = open;
      this.high = high;
      this.low = low;
      this.close = close;
      return;
    }
    this.close = close;
    if (high !== this.high && compareCanonical(high, this.high) > 0) this.high = high;
    if (low !== this.low && compareCanonical(low, this.low) < 0) this.low = low;
  }

  result(): Ohlc | null {
    return this.open === null ? null : { open: this.open, high: this.high, low: this.low, close: this.close };
  }
}

/** Accumulates one bucket from observations or from finer buckets. */
class BucketAccumulator {
  start = 0;
  count = 0;
  close: Top | null = null;
  readonly bid = new OhlcAccumulator();
  readonly ask = new OhlcAccumulator();
  readonly mid = new OhlcAccumulator();
  readonly spread = new OhlcAccumulator();

  begin(start: number): void {
    this.start = start;
    this.count = 0;
    this.close = null;
    this.bid.reset();
    this.ask.reset();
    this.mid.reset();
    this.spread.reset();
  }

  observe(o: Observation): void {
    this.count++;
    this.close = o;
    const { best_bid: b, best_ask: a, mid_price: m, spread: s } = o;
    if (b !== null) this.bid.add(b, b, b, b);
    if (a !== null) this.ask.add(a, a, a, a);
    if (m !== null) this.mid.add(m, m, m, m);
    if (s !== null) this.spread.add(s, s, s, s);
  }

  merge(b: ExactBucket): void {
    this.count += b.quote_count;
    this.close = b;
    addOhlc(this.bid, b.best_bid_ohlc);
    addOhlc(this.ask, b.best_ask_ohlc);
    addOhlc(this.mid, b.mid_price_ohlc);
    addOhlc(this.spread, b.spread_ohlc);
  }

  result(): ExactBucket {
    const c = this.close!;
    return {
      timestamp: this.start,
      quote_count: this.count,
      is_forward_filled: false,
      best_bid: c.best_bid,
      best_bid_size: c.best_bid_size,
      best_ask: c.best_ask,
      best_ask_size: c.best_ask_size,
      mid_price: c.mid_price,
      spread: c.spread,
      best_bid_ohlc: this.bid.result(),
      best_ask_ohlc: this.ask.result(),
      mid_price_ohlc: this.mid.result(),
      spread_ohlc: this.spread.result(),
    };
  }
}

function addOhlc(acc: OhlcAccumulator, o: Ohlc | null): void {
  if (o !== null) acc.add(o.open, o.high, o.low, o.close);
}

function bucketStart(ts: number, r: number): number {
  return Math.floor(ts / r) * r;
}

/**
 * Streaming form of `aggregateObservations`: push observations in serving order, then take the
 * observed buckets with `finish()`.
 */
export class BucketAggregator {
  private readonly r: number;
  private readonly acc = new BucketAccumulator();
  private lastTs = -Infinity;
  private out: ExactBucket[] = [];

  constructor(resolutionSeconds: number) {
    this.r = checkResolution(resolutionSeconds);
  }

  push(o: Observation): void {
    const ts = o.ts;
    if (!(ts >= this.lastTs)) throw new RangeError(`observations out of order: ${ts} after ${this.lastTs}`);
    this.lastTs = ts;
    const acc = this.acc;
    if (acc.count === 0 || ts >= acc.start + this.r) {
      if (acc.count > 0) this.out.push(acc.result());
      acc.begin(bucketStart(ts, this.r));
    }
    acc.observe(o);
  }

  /** Every observed bucket, the open one included; the aggregator is then empty. */
  finish(): ExactBucket[] {
    if (this.acc.count > 0) this.out.push(this.acc.result());
    this.acc.begin(0);
    const out = this.out;
    this.out = [];
    return out;
  }
}

/**
 * Observed buckets (quote_count > 0) of observations in serving order, start =
 * floor(ts / R) * R, up to `endMs` (exclusive; observations from there on are not read).
 * Observations must not go back in time.
 */
export function aggregateObservations(
  observations: Iterable<Observation>,
  resolutionSeconds: number,
  endMs = Infinity,
): ExactBucket[] {
  const agg = new BucketAggregator(resolutionSeconds);
  for (const o of observations) {
    if (o.ts >= endMs) break;
    agg.push(o);
  }
  return agg.finish();
}

/**
 * Coarser observed buckets from observed fine buckets (in time order) at a resolution that
 * is a multiple of the fine one: quote counts add up, closes are the last fine bucket's,
 * open = first open, high = max, low = min, close = last close over the fine OHLCs. Equal to
 * `aggregateObservations` of the raw observations at the coarser resolution. Forward-filled
 * fine buckets (quote_count 0) are skipped: they observed nothing.
 */
export function mergeBuckets(
  buckets: Iterable<ExactBucket>,
  fineResolutionSeconds: number,
  resolutionSeconds: number,
): ExactBucket[] {
  const fine = checkResolution(fineResolutionSeconds);
  const r = checkResolution(resolutionSeconds);
  if (r % fine !== 0) throw new RangeError(`resolution ${resolutionSeconds} s is not a multiple of ${fineResolutionSeconds} s`);
  const out: ExactBucket[] = [];
  const acc = new BucketAccumulator();
  let last = -Infinity;
  for (const b of buckets) {
    if (b.quote_count === 0) continue;
    if (b.timestamp % fine !== 0 || !(b.timestamp > last)) {
      throw new RangeError(`bucket ${b.timestamp} is not a ${fineResolutionSeconds} s bucket in time order`);
    }
    last = b.timestamp;
    if (acc.count === 0 || b.timestamp >= acc.start + r) {
      if (acc.count > 0) out.push(acc.result());
      acc.begin(bucketStart(b.timestamp, r));
    }
    acc.merge(b);
  }
  if (acc.count > 0) out.push(acc.result());
  return out;
}

/**
 * Observed buckets of one resolution from two consecutive stretches of observations: every
 * observation behind `later` comes after every one behind `earlier` (serving order). Where
 * the last earlier bucket and the first later bucket share a start (a bucket split by a
 * rollup checkpoint), they become one bucket, exactly as if aggregated in one pass.
 */
export function appendBuckets(earlier: readonly ExactBucket[], later: readonly ExactBucket[]): ExactBucket[] {
  if (earlier.length === 0) return [...later];
  if (later.length === 0) return [...earlier];
  const last = earlier[earlier.length - 1]!;
  const first = later[0]!;
  if (first.timestamp < last.timestamp) throw new RangeError(`bucket ${first.timestamp} does not follow ${last.timestamp}`);
  if (first.timestamp > last.timestamp) return [...earlier, ...later];
  const acc = new BucketAccumulator();
  acc.begin(last.timestamp);
  acc.merge(last);
  acc.merge(first);
  return [...earlier.slice(0, -1), acc.result(), ...later.slice(1)];
}

function flat(v: string | null): Ohlc | null {
  return v === null ? null : { open: v, high: v, low: v, close: v };
}

/** The OHLCs of a forward-filled bucket after `c`: made once per carried state and shared by its filled buckets (buckets are never changed once made). */
type FlatOhlcs = Pick<ExactBucket, 'best_bid_ohlc' | 'best_ask_ohlc' | 'mid_price_ohlc' | 'spread_ohlc'>;

function flatOhlcs(c: Top): FlatOhlcs {
  return { best_bid_ohlc: flat(c.best_bid), best_ask_ohlc: flat(c.best_ask), mid_price_ohlc: flat(c.mid_price), spread_ohlc: flat(c.spread) };
}

function filled(timestamp: number, c: Top, o: FlatOhlcs): ExactBucket {
  return {
    timestamp,
    quote_count: 0,
    is_forward_filled: true,
    best_bid: c.best_bid,
    best_bid_size: c.best_bid_size,
    best_ask: c.best_ask,
    best_ask_size: c.best_ask_size,
    mid_price: c.mid_price,
    spread: c.spread,
    best_bid_ohlc: o.best_bid_ohlc,
    best_ask_ohlc: o.best_ask_ohlc,
    mid_price_ohlc: o.mid_price_ohlc,
    spread_ohlc: o.spread_ohlc,
  };
}

/**
 * The answer's series for a plan (rules 6, 7): each bucket start of the plan gets its
 * observed bucket or, once there was an observation, a forward-filled one carrying the
 * closes after the last earlier observation. `observed` are observed buckets at the plan's
 * resolution in time order; those before the plan (e.g. earlier in the loaded day) only set
 * the carried state, those after it are ignored. `carried` is the top after the last
 * observation before all of `observed` (an earlier day's), or null when there was none;
 * the series starts at the first bucket that holds an observation or follows one.
 */
export function fillSeries(observed: readonly ExactBucket[], plan: BucketPlan, carried: Top | null = null): ExactBucket[] {
  const out: ExactBucket[] = [];
  for (const part of fillSeriesSlices(observed, plan, carried, Infinity)) for (const b of part) out.push(b);
  return out;
}

/**
 * fillSeries in parts of at most `size` buckets, each made when asked for: a whole day at
 * R=1 is 86,400 buckets, and a caller that lets the event loop turn between parts
 * (`fillSeriesYielding`) never holds it for the whole series.
 */
export function* fillSeriesSlices(observed: readonly ExactBucket[], plan: BucketPlan, carried: Top | null, size: number): Generator<ExactBucket[]> {
  const r = plan.resolutionMs;
  let out: ExactBucket[] = [];
  let cur: Top | null = carried;
  let ohlcs: FlatOhlcs | null = null;
  let last: ExactBucket | null = null;
  let j = 0;
  const n = observed.length;
  let prev = -Infinity;
  const fill = (s: number, c: Top): ExactBucket => filled(s, c, (ohlcs ??= flatOhlcs(c)));
  for (let s = plan.firstStart; s <= plan.lastStart; s += r) {
    while (j < n && observed[j]!.timestamp <= s) {
      const b = observed[j]!;
      if (b.timestamp % r !== 0 || !(b.timestamp > prev)) {
        throw new RangeError(`bucket ${b.timestamp} is not a ${r / 1000} s bucket in time order`);
      }
      prev = b.timestamp;
      j++;
      if (b.quote_count === 0) {
        if (b.timestamp === s && cur !== null) out.push((last = fill(s, cur)));
        continue;
      }
      cur = b;
      ohlcs = null;
      if (b.timestamp === s) out.push((last = b));
    }
    if (last === null || last.timestamp !== s) {
      if (cur !== null) out.push((last = fill(s, cur)));
    }
    if (out.length >= size) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}

/** Rules 5–10 from raw observations in serving order: the plan's series. */
export function summarise(
  observations: Iterable<Observation>,
  plan: BucketPlan,
  carried: Top | null = null,
): ExactBucket[] {
  return fillSeries(aggregateObservations(observations, plan.resolutionMs / 1000, plan.dataEndMs), plan, carried);
}

function num(v: string | null): number | null {
  return v === null ? null : Number(v);
}

function numOhlc(o: Ohlc | null): NumericOhlc | null {
  return o === null ? null : { open: Number(o.open), high: Number(o.high), low: Number(o.low), close: Number(o.close) };
}

/** The 2.3 bucket of an exact bucket: decimal text to number only here. */
export function toSummaryBucket(b: ExactBucket): SummaryBucket {
  return {
    timestamp: b.timestamp,
    quote_count: b.quote_count,
    is_forward_filled: b.is_forward_filled,
    best_bid: num(b.best_bid),
    best_bid_size: num(b.best_bid_size),
    best_ask: num(b.best_ask),
    best_ask_size: num(b.best_ask_size),
    mid_price: num(b.mid_price),
    spread: num(b.spread),
    best_bid_ohlc: numOhlc(b.best_bid_ohlc),
    best_ask_ohlc: numOhlc(b.best_ask_ohlc),
    mid_price_ohlc: numOhlc(b.mid_price_ohlc),
    spread_ohlc: numOhlc(b.spread_ohlc),
  };
}


/**
 * `head` + the JSON text of `buckets.map(toSummaryBucket)` + `tail`, as UTF-8 bytes, written
 * straight from the exact decimals: a canonical decimal is a valid JSON number, and it
 * parses to the same double as `Number(text)`, so a client reads exactly the values
 * `toSummaryBucket` gives (and a decimal-aware client reads the exact decimal). One Buffer;
 * an answer sent in parts is written with SummaryBytesWriter (bucket-bytes.ts).
 */
export function summaryBucketsJsonBytes(buckets: readonly ExactBucket[], head = '', tail = ''): Buffer {
  return new SummaryBytesWriter('json', head.length + tail.length + 2 + buckets.length * JSON_BUCKET_BYTES).begin(head).buckets(buckets).end(tail).whole();
}

/** The buckets as NDJSON: each bucket's JSON object (as in summaryBucketsJsonBytes) on its own line. */
export function summaryBucketsNdjsonBytes(buckets: readonly ExactBucket[]): Buffer {
  return new SummaryBytesWriter('ndjson', buckets.length * JSON_BUCKET_BYTES).begin().buckets(buckets).end().whole();
}

/**
 * The buckets as CSV (SUMMARY_CSV_COLUMNS), header first unless `header` is false; every
 * value is a decimal, an integer or true/false, so nothing needs quoting. `lead`: columns
 * written first on every row (an export's asset id), their values CSV-safe as given.
 */
export function summaryBucketsCsvBytes(buckets: readonly ExactBucket[], header = true, lead: { names: readonly string[]; values: readonly string[] } | null = null): Buffer {
  return new SummaryBytesWriter('csv', SUMMARY_CSV_COLUMNS.length * 16 + buckets.length * CSV_BUCKET_BYTES).begin('', { header, lead }).buckets(buckets).whole();
}
