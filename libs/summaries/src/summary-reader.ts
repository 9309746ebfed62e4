import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import {
  DAY_MS,
  HOUR_MS,
  appendBuckets,
  BucketColumnsDecoder,
  bucketsOfColumns,
  ColumnsFill,
  ColumnsMerge,
  columnsIndexAt,
  decodeBuckets,
  seriesBuckets,
  fillSeriesSlices,
  ladderFor,
  mergeBuckets,
  newBook,
  type BucketColumns,
  type BucketPlan,
  type BookRecord,
  type ColumnSeries,
  type ColumnsRange,
  type ExactBucket,
  type Top,
} from '@booktape/book';
import { utcDate } from '@booktape/domain';
import { assetRollupState, type RollupState } from '@booktape/messaging';
import type { BookEventsRepository, SummariesRepository, SummaryDay, SummaryKey } from '@booktape/storage';
import { BookFold, bookFromState, dayStartMs } from './fold.ts';
import { clampToNow, type SummaryPlan } from './summary-plan.ts';
import { VersionedCache } from './versioned-cache.ts';

export type { RollupState };

type Plan = BucketPlan;

/**
 * A planned answer: its buckets as objects (an answer with a live part, or one computed from
 * raw events) or as a series kept in the stored columns (everything else); and its stamp
 * (SummaryReader.stamp) when settled.
 */
export type SummaryAnswer = { kind: 'buckets'; buckets: ExactBucket[]; stamp: string | null } | { kind: 'series'; series: ColumnSeries; stamp: string | null };

/** An answer's buckets as objects (made from its columns where it is a series). */
export function answerBuckets(a: SummaryAnswer): ExactBucket[] {
  return a.kind === 'buckets' ? a.buckets : seriesBuckets(a.series);
}

const RACED = Symbol('raced');
const EMPTY_COLUMNS: BucketColumns = new BucketColumnsDecoder().columns();
/** How long day rows read while a writer may have been at work are reused (VersionedCache). */
const WINDOW_TTL_MS = 30_000;
/** How long day rows read at rest are reused while the version stands still: a bound for a double failure only (VersionedCache). */
const WINDOW_REST_TTL_MS = 15 * 60_000;

/** Buckets filled between turns of the event loop: a whole day at R=1 in one go held it for tens of ms (issue 27). */
const FILL_SLICE = 4096;
/**
 * Stored buckets merged, and series buckets filled, between turns of the event loop on the
 * columns path: a whole day at 1 s merged to R=7 is 86,400 buckets (some 10 ms in one go);
 * a slice of this many is a millisecond or two.
 */
export const COLUMN_SLICE = 16_384;

/** fillSeries (rules 6, 7) with the event loop turning between slices of FILL_SLICE buckets. */
export async function fillSeriesYielding(observed: readonly ExactBucket[], plan: Plan, carried: Top | null): Promise<ExactBucket[]> {
  const out: ExactBucket[] = [];
  let first = true;
  for (const part of fillSeriesSlices(observed, plan, carried, FILL_SLICE)) {
    if (!first) await yieldToLoop();
    first = false;
    for (const b of part) out.push(b);
  }
  return out;
}

/** SummaryReader.stamp's rule on the state one read saw; null when the answer is not settled. */
function settledStamp(version: string, pending: ReadonlySet<string>, rows: readonly SummaryDay[], before: SummaryDay | null): string | null {
  if (pending.size > 0 || (rows.length === 0 && before === null)) return null;
  if (rows.some((r) => !r.complete) || (before !== null && !before.complete)) return null;
  const day = (r: SummaryDay) => `${r.date}:${r.version}`;
  return `${version}|${before === null ? '' : day(before)}|${rows.map(day).join(',')}`;
}

function parseObservation(text: string): Top | null {
  return text === '' ? null : (JSON.parse(text) as Top);
}

/**
 * A stored day at one ladder level: its chunks (hours) decoded to one set of columns with
 * one dictionary, and, once an answer with a live part asked for them, the same buckets as
 * objects.
 */
interface DayColumns {
  columns: BucketColumns;
  objects?: ExactBucket[];
}

function bucketCount(day: DayColumns): number {
  return day.columns.n;
}

/** The day's buckets as objects, made once per day held. */
function dayObjects(day: DayColumns): ExactBucket[] {
  return (day.objects ??= bucketsOfColumns(day.columns));
}

/**
 * The answer's series from stored buckets at `level` (ranges in time order): merged to
 * `resolution` (unless a single range is at it already) and filled, in slices of
 * COLUMN_SLICE with the event loop turning between them. No object per bucket.
 */
export async function seriesFromColumns(ranges: readonly ColumnsRange[], level: number, resolution: number, plan: Plan, carried: Top | null): Promise<ColumnSeries> {
  let fill: ColumnsFill;
  if (level === resolution && ranges.length === 1) {
    const { columns, from, to } = ranges[0]!;
    fill = new ColumnsFill(columns, plan, carried, from, to);
  } else {
    let n = 0;
    for (const { from, to } of ranges) n += Math.max(0, to - from);
    const merge = new ColumnsMerge(level, resolution, n);
    let first = true;
    for (const { columns, from, to } of ranges) {
      for (let at = from; at < to; at += COLUMN_SLICE) {
        if (!first) await yieldToLoop();
        first = false;
        merge.add(columns, at, Math.min(to, at + COLUMN_SLICE));
      }
    }
    fill = new ColumnsFill(merge.finish(), plan, carried);
    if (!first) await yieldToLoop();
  }
  while (!fill.step(COLUMN_SLICE)) await yieldToLoop();
  return fill.series();
}

/**
 * Decoded stored buckets of complete days per (asset, date, level), valid while the day's
 * row keeps its version (every rewrite of a day writes a new row version). Bounded by the
 * number of buckets held, least recently used first out. Backtests read the same history
 * again and again; this spares them the chunk read and decode.
 */
class DayBucketsCache {
  private readonly map = new Map<string, { version: number; day: DayColumns; count: number }>();
  private held = 0;

  constructor(private readonly maxBuckets: number) {}

  private id(key: SummaryKey, date: string, level: number): string {
    return `${key.venue}|${key.market}|${key.asset}|${date}|${level}`;
  }

  get(key: SummaryKey, day: SummaryDay, level: number): DayColumns | undefined {
    const id = this.id(key, day.date, level);
    const e = this.map.get(id);
    if (e === undefined) return undefined;
    if (e.version !== day.version) {
      this.map.delete(id);
      this.held -= e.count;
      return undefined;
    }
    this.map.delete(id);
    this.map.set(id, e);
    return e.day;
  }

  set(key: SummaryKey, day: SummaryDay, level: number, columns: DayColumns): void {
    const count = bucketCount(columns);
    if (count > this.maxBuckets / 4) return;
    const id = this.id(key, day.date, level);
    const old = this.map.get(id);
    if (old !== undefined) this.held -= old.count;
    this.map.delete(id);
    this.map.set(id, { version: day.version, day: columns, count });
    this.held += count;
    for (const [k, e] of this.map) {
      if (this.held <= this.maxBuckets) break;
      this.map.delete(k);
      this.held -= e.count;
    }
  }
}

/** Where the stored buckets stop being current, and the book state there. */
interface LiveStart {
  fromMs: number;
  /** Book state JSON at fromMs; '' = an empty book. */
  state: string;
}

export interface SummaryReaderDeps {
  summaries: SummariesRepository;
  events: BookEventsRepository;
  /** The rollup queue's Redis: which dates are still being rolled up, and the summaries version. */
  redis: Redis;
  /** Key prefix of the rollup queue (ROLLUP_QUEUE_PREFIX). */
  queuePrefix: string;
  /** Decoded buckets of complete days kept for reuse; default 2,000,000. */
  cacheBuckets?: number;
}

/**
 * Summary answers from the rollup worker's stored buckets (docs/rules/summaries.md, rule 10), kept fresh
 * by a live computation of what is not rolled up yet:
 *
 * - stored: observed buckets at the ladder level L = ladderFor(R), merged to R;
 * - live: from the point where the stored data stops being current (the open day's
 *   covered_until, or the start of a day the queue still has dirty), the raw events are
 *   applied to the stored book state there and aggregated the same way; the piece that
 *   straddles that point is joined with `appendBuckets`;
 * - the series is then forward-filled from the state carried in (the last stored
 *   observation before the window: an earlier hour's close or an earlier day's last).
 *
 * An asset nothing was ever rolled up for (or whose earlier days are being re-rolled) is
 * answered entirely from the raw events (`fromRaw`), which is exact but slower.
 */
export class SummaryReader {
  private readonly summaries: SummariesRepository;
  private readonly events: BookEventsRepository;
  private readonly redis: Redis;
  private readonly queuePrefix: string;

  private readonly cache: DayBucketsCache;
  private readonly windows = new VersionedCache<Awaited<ReturnType<SummariesRepository['window']>>>(WINDOW_TTL_MS, 10_000, WINDOW_REST_TTL_MS);

  constructor(deps: SummaryReaderDeps) {
    this.summaries = deps.summaries;
    this.events = deps.events;
    this.redis = deps.redis;
    this.queuePrefix = deps.queuePrefix;
    this.cache = new DayBucketsCache(deps.cacheBuckets ?? 2_000_000);
  }

  /** The buckets of a planned request, up to the current bucket. */
  async summary(key: SummaryKey, p: SummaryPlan): Promise<ExactBucket[]> {
    return (await this.summaryStamped(key, p)).buckets;
  }

  /**
   * The buckets of a planned request, and the answer's stamp when it is settled (see
   * `stamp`): an answer kept under its stamp is the answer while `stamp` still gives it.
   */
  async summaryStamped(key: SummaryKey, p: SummaryPlan, now = Date.now(), state?: Promise<RollupState>): Promise<{ buckets: ExactBucket[]; stamp: string | null }> {
    const a = await this.summaryAnswer(key, p, now, state);
    return { buckets: answerBuckets(a), stamp: a.stamp };
  }

  /** `summaryStamped`, with the buckets left in the stored columns where the answer is read from them (no object per bucket). */
  async summaryAnswer(key: SummaryKey, p: SummaryPlan, now = Date.now(), state?: Promise<RollupState>): Promise<SummaryAnswer> {
    return this.bucketsStamped(key, clampToNow(p, now), p.resolution, p.window.endMs <= now, state);
  }

  /**
   * The asset's rollup state (pending dates, summaries version): what `stamp` and
   * `summaryStamped` read first. A caller may start this read early, alongside its own Redis
   * calls, and give the promise to both (they then read no state of their own).
   */
  rollupState(key: SummaryKey): Promise<RollupState> {
    return assetRollupState(this.redis, this.queuePrefix, key);
  }

  /**
   * What a settled answer to `p` depends on, as a string; null when the answer is not
   * settled. Settled: the window is over, nothing of the asset is waiting to be rolled up,
   * and every stored day the answer reads (the window's, and the one before it that carries
   * the state in) is complete, so the answer is the stored buckets alone, no live part. It
   * then changes only when a rollup writes the asset again, which moves the asset's
   * summaries version and a day row's version: both are in the stamp. One Redis read, and the
   * day rows (cached while the version stands still).
   */
  async stamp(key: SummaryKey, p: SummaryPlan, now = Date.now(), state?: Promise<RollupState>): Promise<string | null> {
    if (p.window.endMs > now || p.plan.count === 0) return null;
    const { pending, version, atRest } = await (state ?? this.rollupState(key));
    if (version === null || pending.size > 0) return null;
    const { rows, before } = await this.window(key, utcDate(p.plan.firstStart), utcDate(p.plan.dataEndMs - 1), version, atRest);
    return settledStamp(version, pending, rows, before);
  }

  async buckets(key: SummaryKey, plan: Plan, resolution: number): Promise<ExactBucket[]> {
    return answerBuckets(await this.bucketsStamped(key, plan, resolution, false));
  }

  private async bucketsStamped(key: SummaryKey, plan: Plan, resolution: number, over: boolean, state?: Promise<RollupState>): Promise<SummaryAnswer> {
    if (plan.count === 0) return { kind: 'buckets', buckets: [], stamp: null };
    // A rollup that writes between our reads of a day row and its chunks would make the
    // stored part overlap the live part: such a read is retried, and after a few
    // collisions (a very busy asset) answered from raw events.
    for (let attempt = 0; attempt < 3; attempt++) {
      // A retry reads the state again: the first one saw a rollup writing.
      const r = await this.attempt(key, plan, resolution, attempt === 0, over, attempt === 0 ? state : undefined);
      if (r !== RACED) return r;
    }
    return { kind: 'buckets', buckets: await this.fromRaw(key, plan, resolution), stamp: null };
  }

  private async attempt(
    key: SummaryKey,
    plan: Plan,
    resolution: number,
    cached: boolean,
    over: boolean,
    state: Promise<RollupState> | undefined,
  ): Promise<SummaryAnswer | typeof RACED> {
    const firstDate = utcDate(plan.firstStart);
    const lastDate = utcDate(plan.dataEndMs - 1);
    const { pending, version, atRest } = await (state ?? this.rollupState(key));
    const { rows, before, firstOpen } = await this.window(key, firstDate, lastDate, cached ? version : null, atRest);
    // Stamped only when read as `stamp` reads (the cached day rows of this version).
    const stamp = over && cached && version !== null ? settledStamp(version, pending, rows, before) : null;
    const pendingSorted = [...pending].sort();
    // Nothing rolled up yet, or an earlier day is being re-rolled: its state may change.
    if ((rows.length === 0 && before === null) || (pendingSorted[0] !== undefined && pendingSorted[0] < firstDate)) {
      return { kind: 'buckets', buckets: await this.fromRaw(key, plan, resolution), stamp: null };
    }
    // An open day before the window: later days started from its state before its tail.
    const live = await this.liveStart(key, rows, firstOpen !== null && firstOpen.date < firstDate ? firstOpen : before, pending, lastDate);
    const level = ladderFor(resolution);
    const firstHour = Math.floor(plan.firstStart / HOUR_MS) * HOUR_MS;
    const storedEnd = Math.min(live?.fromMs ?? Infinity, plan.dataEndMs);

    let carried: Top | null;
    let stored: ExactBucket[] = [];
    if (live !== undefined && live.fromMs <= firstHour) {
      // Everything from before the window on is live: the carried state is the live start's.
      carried = live.state === '' ? null : ((JSON.parse(live.state) as { last: Top | null }).last ?? null);
    } else {
      carried = await this.carriedBefore(key, firstDate, firstHour, rows, before, level);
      const days = rows.filter((r) => dayStartMs(r.date) < storedEnd);
      // Whole complete days come from the cache when their row has not changed since.
      const held = new Map<string, DayColumns>();
      for (const r of days) {
        const hit = r.complete ? this.cache.get(key, r, level) : undefined;
        if (hit !== undefined) held.set(r.date, hit);
      }
      const missing = days.filter((r) => !held.has(r.date));
      const bases = new Map(missing.map((r) => [r.date, r.baseVersion]));
      const chunks = await this.summaries.chunks(key, bases, level, firstHour, storedEnd);
      const versions = new Map(rows.map((r) => [r.date, r.version]));
      if (chunks.some((c) => c.version > versions.get(c.date)!)) return RACED;
      // Each day's chunks into one set of columns (one dictionary), room made for their buckets.
      const decoders = new Map<string, BucketColumnsDecoder>();
      const sizes = new Map<string, number>();
      for (const c of chunks) sizes.set(c.date, (sizes.get(c.date) ?? 0) + c.bucketCount);
      for (const [i, c] of chunks.entries()) {
        // A day is 24 stored chunks at R=1: the event loop turns between them (other requests run).
        if (i > 0) await yieldToLoop();
        let d = decoders.get(c.date);
        if (d === undefined) decoders.set(c.date, (d = new BucketColumnsDecoder(sizes.get(c.date))));
        d.add(c.buckets);
      }
      const fetched = new Map<string, DayColumns>();
      for (const [date, d] of decoders) fetched.set(date, { columns: d.columns() });
      for (const r of missing) {
        // A complete day read whole (the window covers it from its first hour) is cached.
        if (r.complete && firstHour <= dayStartMs(r.date) && storedEnd >= dayStartMs(r.date) + DAY_MS) this.cache.set(key, r, level, fetched.get(r.date) ?? { columns: EMPTY_COLUMNS });
      }
      if (!(live !== undefined && live.fromMs < plan.dataEndMs)) {
        // Merged to R (where R is not the level) and filled straight from the columns, and
        // written from them: no object per stored bucket.
        const ranges: ColumnsRange[] = [];
        for (const r of days) {
          const columns = (held.get(r.date) ?? fetched.get(r.date))?.columns;
          if (columns === undefined) continue;
          const from = columnsIndexAt(columns, firstHour);
          const to = columnsIndexAt(columns, plan.dataEndMs);
          if (to > from) ranges.push({ columns, from, to });
        }
        // A live part means the answer was not settled, whatever the rows said.
        return { kind: 'series', series: await seriesFromColumns(ranges, level, resolution, plan, carried), stamp: live === undefined ? stamp : null };
      }
      for (const r of days) {
        const day = held.get(r.date) ?? fetched.get(r.date);
        for (const b of day === undefined ? [] : dayObjects(day)) {
          if (b.timestamp >= firstHour && b.timestamp < plan.dataEndMs) stored.push(b);
        }
      }
    }

    if (live !== undefined && live.fromMs < plan.dataEndMs) {
      const fold = new BookFold(bookFromState(key.venue, live.state), level);
      const records: BookRecord[] = await this.events.events(key.venue, key.market, key.asset, live.fromMs, plan.dataEndMs, false);
      for (const r of records) fold.apply(r);
      stored = appendBuckets(stored, fold.finish());
    }
    const merged = level === resolution ? stored : mergeBuckets(stored, level, resolution);
    // A live part means the answer was not settled, whatever the rows said.
    return { kind: 'buckets', buckets: await fillSeriesYielding(merged, plan, carried), stamp: live === undefined ? stamp : null };
  }

  /**
   * The stored day rows an answer needs, reused while the asset's summaries version stands
   * still (`VersionedCache`: read at rest, until the version moves; else at most WINDOW_TTL_MS).
   */
  private window(key: SummaryKey, from: string, to: string, version: string | null, atRest = false) {
    return this.windows.get(`${key.venue}|${key.market}|${key.asset}|${from}|${to}`, version, () => this.summaries.window(key, from, to), atRest);
  }

  /**
   * The first point from which the stored buckets are not current, if any: a day the queue
   * has dirty or claimed, or an open day (not covered to its end). Where the stored state at
   * covered_until is still exact (no late rows since), the live part continues from it;
   * otherwise it recomputes that day from the previous day's state.
   */
  private async liveStart(key: SummaryKey, rows: SummaryDay[], before: SummaryDay | null, pending: Set<string>, lastDate: string): Promise<LiveStart | undefined> {
    // The day before the window (or the first open day before it) counts too: while open,
    // its uncovered tail is live data, and every later day's stored state may miss it.
    const all = before === null ? rows : [before, ...rows];
    const byDate = new Map(all.map((r) => [r.date, r]));
    const dates = [...new Set([...all.map((r) => r.date), ...[...pending].filter((d) => d <= lastDate)])].sort();
    let prev: SummaryDay | null = null;
    for (const date of dates) {
      const row = byDate.get(date);
      if (row === undefined) {
        // Data stored for a date not rolled up yet.
        if (pending.has(date)) return { fromMs: dayStartMs(date), state: prev?.state ?? '' };
        continue;
      }
      if (!row.complete || pending.has(date)) {
        const exact = (await this.summaries.countBookEvents(key, date, row.coveredUntil)) === row.events;
        if (exact) return { fromMs: row.coveredUntil, state: row.state };
        const earlier = prev ?? (row === before ? await this.summaries.dayBefore(key, date) : null);
        return { fromMs: dayStartMs(date), state: earlier?.state ?? '' };
      }
      prev = row;
    }
    return undefined;
  }

  /**
   * The top after the last stored observation before `hour` (on firstDate or any earlier day).
   * Where firstDate's buckets at `level` are held (DayBucketsCache, under the row's version),
   * it is the closes of the last of them before `hour`: stored buckets are observed ones at
   * every level of one build, so that bucket holds the same last observation as the hour
   * bucket read otherwise, and the same closes. No engine read then.
   */
  private async carriedBefore(key: SummaryKey, firstDate: string, hour: number, rows: SummaryDay[], before: SummaryDay | null, level: number): Promise<Top | null> {
    const first = rows.find((r) => r.date === firstDate);
    if (first !== undefined && hour > dayStartMs(firstDate)) {
      const held = first.complete ? this.cache.get(key, first, level) : undefined;
      if (held !== undefined) {
        const at = columnsIndexAt(held.columns, hour);
        if (at > 0) return bucketsOfColumns(held.columns, at - 1, at)[0]!;
        return before === null ? null : parseObservation(before.lastObs);
      }
      const chunks = await this.summaries.chunks(key, new Map([[firstDate, first.baseVersion]]), 3600, dayStartMs(firstDate), hour);
      const lastChunk = chunks[chunks.length - 1];
      if (lastChunk !== undefined) {
        const buckets = decodeBuckets(lastChunk.buckets);
        const b = buckets[buckets.length - 1];
        if (b !== undefined) return b;
      }
    }
    return before === null ? null : parseObservation(before.lastObs);
  }

  /** The whole answer from raw events, the book rebuilt from the last snapshot before the window. */
  async fromRaw(key: SummaryKey, plan: Plan, resolution: number): Promise<ExactBucket[]> {
    const records: BookRecord[] = await this.events.events(key.venue, key.market, key.asset, plan.firstStart, plan.dataEndMs);
    const fold = new BookFold(newBook(key.venue), resolution, plan.firstStart);
    for (const r of records) fold.apply(r);
    return fillSeriesYielding(fold.finish(), plan, fold.carried);
  }
}

