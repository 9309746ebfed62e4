import type { Redis } from 'ioredis';
import { ENGINE_VERSION, type BookRecord, type ExchangeABookState, type ExchangeBBookState } from '@booktape/book';
import { assetRollupState } from '@booktape/messaging';
import type { BookCheckpoint, BookEventsRepository, BookHistory, DayBuild, SummariesRepository, SummaryKey } from '@booktape/storage';
import { bookFromState } from './fold.ts';

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
/** A record the book answers count (as_of_ms): exchange A book and price_change events, exchange B snapshots, deltas and gaps. */
export const isBookRecord = (r: BookRecord): boolean =>
  'epoch_ms' in r ? r.type === 'snapshot' || r.type === 'delta' || r.type === 'gap' : r.event_type === 'book' || r.event_type === 'price_change';

/**
 * What a book answer is rebuilt from: a rollup checkpoint's book (`start`) and the records
 * after it, or, without a usable checkpoint, the records from the book's last snapshot on.
 * `version` names the data the answer depends on (records are only ever added, so a late
 * one changes it): an ETag's input.
 */
export interface BookSource extends BookHistory {
  start: { state: string; asOfMs: number } | null;
  version: string;
}

/**
 * The full book of one series at each of `instants` (ascending, within the source's span):
 * the book after every record at or before the instant, by the summaries' engine and rules,
 * carried across days, rebuilt from the source's start (a checkpoint, or the book's last
 * snapshot at or before the first instant: a snapshot replaces the book, so nothing earlier
 * matters). The records are read as they are stepped through, once, and closed when the
 * series ends or is abandoned.
 */
export async function* booksAt(venue: SummaryKey['venue'], source: BookHistory & Pick<BookSource, 'start'>, instants: readonly number[], depth: number): AsyncGenerator<BookAt> {
  const it = source.records;
  try {
    const book = bookFromState(venue, source.start?.state ?? '');
    // A checkpoint is taken only of a known book, after a millisecond that held a book record.
    let seen = source.start !== null || source.anchorMs !== null;
    let asOfMs: number | null = source.start?.asOfMs ?? null;
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
    await source.close();
  }
}

export interface BookReaderDeps {
  summaries: SummariesRepository;
  events: BookEventsRepository;
  /** The rollup queue's Redis: which dates are still being rolled up. */
  redis: Redis;
  /** Key prefix of the rollup queue (ROLLUP_QUEUE_PREFIX). */
  queuePrefix: string;
  /** Called when the rollup state cannot be read (the answer is then rebuilt from raw events). */
  onStateError?: (err: unknown) => void;
}

/**
 * Book answers (issue 12) from the rollup's checkpoints where they are exact, else from the
 * raw events since the book's last snapshot. A checkpoint is used by the summary reader's
 * freshness rules (docs/rules/summaries.md, rule 10):
 * - its day and every earlier one are rolled up and not pending in the queue: used as is;
 * - its day is open (not covered to its end) or pending: used when the stored rows of the
 *   day up to it still number what the rollup applied (no late row landed before it);
 * - an earlier day is pending: not used (the state carried into its day may change).
 */
export class BookReader {
  /** An asset's day builds, reused while its summaries version (bumped by the worker around every write) stands still. */
  private readonly builds = new Map<string, { version: string; at: number; days: DayBuild[] }>();

  constructor(private readonly deps: BookReaderDeps) {}

  /** The source of the book from `atMs` to `untilMs` (inclusive); `counted`: count its records. */
  async source(key: SummaryKey, atMs: number, untilMs = atMs, counted = false): Promise<BookSource> {
    const { events } = this.deps;
    const cp = await this.checkpoint(key, atMs);
    if (cp !== null) {
      const h = await events.after(key.venue, key.market, key.asset, cp.at, untilMs, counted);
      return { ...h, start: { state: cp.state, asOfMs: cp.at }, version: `cp:${cp.date}:${cp.baseVersion}:${cp.events}:${h.count}` };
    }
    const h = await events.sinceLastSnapshot(key.venue, key.market, key.asset, atMs, untilMs, counted);
    return { ...h, start: null, version: `${h.anchorMs}:${h.count}` };
  }

  /** The latest checkpoint at or before `atMs` that is exact, or null. */
  private async checkpoint(key: SummaryKey, atMs: number): Promise<BookCheckpoint | null> {
    const { summaries, redis, queuePrefix } = this.deps;
    let state: { pending: Set<string>; version: string | null };
    try {
      state = await assetRollupState(redis, queuePrefix, key);
    } catch (err) {
      // Without the queue's state nothing tells whether the rollup is behind.
      this.deps.onStateError?.(err);
      return null;
    }
    const days = await this.dayBuilds(key, state.version);
    const cp = await summaries.lastCheckpoint(key, atMs, ENGINE_VERSION, days);
    if (cp === null) return null;
    const pending = [...state.pending].filter((d) => d <= cp.date);
    if (pending.some((d) => d < cp.date)) return null;
    const day = days.find((d) => d.date === cp.date);
    if (day?.complete !== true || pending.length > 0) {
      if ((await summaries.countBookEvents(key, cp.date, cp.at + 1)) !== cp.events) return null;
    }
    return cp;
  }

  /**
   * The asset's day builds, from memory while its summaries version stands still, for at
   * most BUILDS_TTL_MS (a worker that died between its write and its bump cannot keep a
   * stale entry for long); read every time for an asset without a version.
   */
  private async dayBuilds(key: SummaryKey, version: string | null): Promise<DayBuild[]> {
    const id = `${key.venue}|${key.market}|${key.asset}`;
    const hit = this.builds.get(id);
    if (version !== null && hit !== undefined && hit.version === version && Date.now() - hit.at < BUILDS_TTL_MS) return hit.days;
    const days = await this.deps.summaries.dayBuilds(key);
    if (version !== null) {
      this.builds.delete(id);
      this.builds.set(id, { version, at: Date.now(), days });
      if (this.builds.size > BUILDS_CACHED) this.builds.delete(this.builds.keys().next().value!);
    }
    return days;
  }
}

const BUILDS_TTL_MS = 30_000;
const BUILDS_CACHED = 10_000;

/** The full book of one series at one instant. */
export async function bookAt(books: BookReader, key: SummaryKey, atMs: number, depth: number): Promise<BookAt> {
  const source = await books.source(key, atMs);
  for await (const b of booksAt(key.venue, source, [atMs], depth)) return b;
  throw new Error('unreachable: one instant gives one book');
}
