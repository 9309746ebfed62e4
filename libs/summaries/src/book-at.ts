import type { Redis } from 'ioredis';
import { ENGINE_VERSION, msFromText, type BookRecord } from '@booktape/book';
import { assetRollupState, type RollupState } from '@booktape/messaging';
import type { BookEventsRepository, BookHistory, CheckpointPosition, DayBuild, SummariesRepository, SummaryKey } from '@booktape/storage';
import { utcDate } from '@booktape/domain';
import { CheckpointStates } from './checkpoint-states.ts';
import { bookFromState } from './fold.ts';
import { VersionedCache } from './versioned-cache.ts';

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
export const eventTs = (r: BookRecord): number => ('epoch_ms' in r ? r.epoch_ms : msFromText(r.timestamp));
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
      const [first, second] = book.bestLevels(depth);
      yield { atMs: at, known: true, asOfMs, sides: [pairs(first, depth), pairs(second, depth)] };
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
  /** Called when a hot day build's states could not be read at once (each answer then reads its own, as before). */
  onPreloadError?: (err: unknown) => void;
  /** Characters of checkpoint state kept in memory (default 32,000,000); 0 keeps none: every answer reads its state. */
  stateCharsHeld?: number;
  /** Positions per page of a hot build's whole read (default 64). */
  preloadPage?: number;
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
  private readonly builds = new VersionedCache<DayBuild[]>(BUILDS_TTL_MS, BUILDS_CACHED);
  /** Checkpoint positions of closed day builds (which never change), least recently used first out. */
  private readonly positions = new Map<string, CheckpointPosition[]>();
  /** Positions (plus one per day build) held in `positions`. */
  private positionsHeld = 0;
  /** States of the checkpoints answers started from, and of hot day builds whole. */
  private readonly states: CheckpointStates;
  private readonly stateCharsHeld: number;
  /** The rollup state each asset's last answer read (its next answer starts its reads from it). */
  private readonly lastStates = new Map<string, RollupState>();
  /** Day builds whose state was read for an answer (once: 1; twice: hot, read whole), the oldest first out. */
  private readonly buildMisses = new Map<string, number>();
  /** Whole-build reads under way. */
  private readonly preloading = new Set<Promise<void>>();

  constructor(private readonly deps: BookReaderDeps) {
    this.stateCharsHeld = deps.stateCharsHeld ?? STATE_CHARS_HELD;
    this.states = new CheckpointStates(this.stateCharsHeld);
  }

  /**
   * The source of the book from `atMs` to `untilMs` (inclusive); `counted`: count its records.
   *
   * Which checkpoint is exact depends on the asset's rollup state in Redis (its summaries
   * version and pending dates). With the state an earlier answer read, the store reads start
   * at once, beside the state's read, and are kept only when the state read now is the same:
   * they are then what reading the state first would have started. Otherwise they are dropped
   * and the answer starts again from the state read now.
   */
  async source(key: SummaryKey, atMs: number, untilMs = atMs, counted = false): Promise<BookSource> {
    const id = `${key.venue}|${key.market}|${key.asset}`;
    const reading = this.rollupState(key);
    const known = this.lastStates.get(id);
    if (known === undefined) return this.sourceFrom(key, await this.remember(id, reading), atMs, untilMs, counted);
    const [now, early] = await Promise.allSettled([this.remember(id, reading), this.sourceFrom(key, known, atMs, untilMs, counted)]);
    const state = now.status === 'fulfilled' ? now.value : null;
    const same = state !== null && sameState(state, known);
    if (early.status === 'fulfilled') {
      if (same) return early.value;
      await early.value.close();
    } else if (same) {
      throw early.reason;
    }
    return this.sourceFrom(key, state, atMs, untilMs, counted);
  }

  /** The asset's rollup state, or null when it cannot be read (reported: answers are then rebuilt from raw events). */
  private async rollupState(key: SummaryKey): Promise<RollupState | null> {
    try {
      return await assetRollupState(this.deps.redis, this.deps.queuePrefix, key);
    } catch (err) {
      // Without the queue's state nothing tells whether the rollup is behind.
      this.deps.onStateError?.(err);
      return null;
    }
  }

  /** Keeps the state read for the asset's next answer (the most recently used assets). */
  private async remember(id: string, reading: Promise<RollupState | null>): Promise<RollupState | null> {
    const state = await reading;
    this.lastStates.delete(id);
    if (state === null) return null;
    this.lastStates.set(id, state);
    if (this.lastStates.size > BUILDS_CACHED) this.lastStates.delete(this.lastStates.keys().next().value!);
    return state;
  }

  /** The source given the asset's rollup state (null: unknown, no checkpoint is used). */
  private async sourceFrom(key: SummaryKey, rollup: RollupState | null, atMs: number, untilMs: number, counted: boolean): Promise<BookSource> {
    const { events } = this.deps;
    const cp = rollup === null ? null : await this.checkpoint(key, atMs, rollup);
    if (cp !== null) {
      // Up to the build's next checkpoint the span holds that interval's records (plus late
      // rows the next rollup run takes in): read whole when the interval is small.
      const bounded = cp.nextAt !== null && untilMs < cp.nextAt && cp.nextEvents - cp.events <= WHOLE_SPAN_EVENTS;
      // The state and the records after it are asked for at once and read side by side (on the
      // embedded engine both carry their values in their text, so neither waits in its
      // process-wide chain of bound queries: inline-params.ts).
      const [state, h] = await Promise.allSettled([
        this.stateOf(key, cp),
        events.after(key.venue, key.market, key.asset, cp.at, untilMs, counted, bounded),
      ]);
      if (state.status === 'rejected') {
        if (h.status === 'fulfilled') await h.value.close();
        throw state.reason;
      }
      if (h.status === 'rejected') throw h.reason;
      if (state.value !== null) return { ...h.value, start: { state: state.value, asOfMs: cp.at }, version: `cp:${cp.date}:${cp.baseVersion}:${cp.events}:${h.value.count}` };
      // Gone since its position was read: the raw path answers.
      await h.value.close();
    }
    const h = await events.sinceLastSnapshot(key.venue, key.market, key.asset, atMs, untilMs, counted);
    return { ...h, start: null, version: `${h.anchorMs}:${h.count}` };
  }

  /**
   * A checkpoint's state, kept once read (CheckpointStates); null when it is gone. The second
   * answer of a day build that finds its state not kept reads the build's states whole, in the
   * background: answers spread over a day (a client stepping through it, snapshots at random
   * instants) then read no state at all. A state is named by its build and position, whose
   * rows never change (a rebuild is a new build), so a state kept this way is the one the
   * answer would read.
   */
  private async stateOf(key: SummaryKey, cp: { date: string; baseVersion: number; events: number; positions: number }): Promise<string | null> {
    const id = stateId(key, cp.date, cp.baseVersion, cp.events);
    const hit = this.states.get(id);
    if (hit !== undefined) return hit;
    const state = await this.deps.summaries.checkpointState(key, cp.date, cp.baseVersion, cp.events);
    if (state !== null) {
      this.states.set(id, state);
      this.missed(key, cp, id.length + state.length);
    }
    return state;
  }

  /** Counts an answer's state read of a day build; the second reads the build's states whole, when they fit. */
  private missed(key: SummaryKey, cp: { date: string; baseVersion: number; positions: number }, chars: number): void {
    const build = `${key.venue}|${key.market}|${key.asset}|${cp.date}|${cp.baseVersion}`;
    const n = (this.buildMisses.get(build) ?? 0) + 1;
    this.buildMisses.delete(build);
    this.buildMisses.set(build, n);
    if (this.buildMisses.size > BUILDS_COUNTED) this.buildMisses.delete(this.buildMisses.keys().next().value!);
    // Whole only when the build's states (estimated by this one's size, with room) take a small share of what is kept.
    if (n !== 2 || cp.positions * chars * 2 > this.stateCharsHeld / PRELOAD_SHARE) return;
    const loading = this.preload(key, cp).catch((err: unknown) => this.deps.onPreloadError?.(err));
    this.preloading.add(loading);
    void loading.finally(() => this.preloading.delete(loading));
  }

  /**
   * A build's states read whole, a page of positions at a time: one read of a busy day's
   * thousands of states (megabytes to decompress and parse at once) held up the answers that
   * came in meanwhile; pages leave room between them.
   */
  private async preload(key: SummaryKey, cp: { date: string; baseVersion: number }): Promise<void> {
    const limit = this.deps.preloadPage ?? PRELOAD_PAGE;
    for (let fromEvents = 0; ; ) {
      const page = await this.deps.summaries.checkpointStatesOf(key, cp.date, cp.baseVersion, { fromEvents, limit });
      for (const s of page) {
        const sid = stateId(key, cp.date, cp.baseVersion, s.events);
        if (this.states.get(sid) === undefined) this.states.set(sid, s.state);
      }
      if (page.length < limit) return;
      fromEvents = page[page.length - 1]!.events + 1;
    }
  }

  /** Settles once the whole-build reads under way now are done (tests wait for them). */
  async preloadsSettled(): Promise<void> {
    while (this.preloading.size > 0) await Promise.all(this.preloading);
  }

  /**
   * The latest checkpoint at or before `atMs` that is exact (its date, build and position),
   * with the time of the build's next checkpoint (null: it is the build's last), or null.
   */
  private async checkpoint(key: SummaryKey, atMs: number, state: RollupState): Promise<(CheckpointPosition & { date: string; baseVersion: number; nextAt: number | null; nextEvents: number; positions: number }) | null> {
    const { summaries } = this.deps;
    const days = await this.dayBuilds(key, state.version);
    const date = utcDate(atMs);
    // The latest day at or before the instant with a checkpoint at or before it (a few days back at most).
    let found: (CheckpointPosition & { day: DayBuild; nextAt: number | null; nextEvents: number; positions: number }) | null = null;
    let looked = 0;
    for (let i = days.length - 1; i >= 0 && found === null && looked < DAYS_BACK; i--) {
      const day = days[i]!;
      if (day.date > date) continue;
      looked++;
      const list = await this.positionsOf(key, day);
      for (let j = list.length - 1; j >= 0; j--) {
        if (list[j]!.at <= atMs) {
          found = { ...list[j]!, day, nextAt: list[j + 1]?.at ?? null, nextEvents: list[j + 1]?.events ?? Infinity, positions: list.length };
          break;
        }
      }
    }
    if (found === null) return null;
    const { day } = found;
    const pending = [...state.pending].filter((d) => d <= day.date);
    if (pending.some((d) => d < day.date)) return null;
    if (!day.complete || pending.length > 0) {
      if ((await summaries.countBookEvents(key, day.date, found.at + 1)) !== found.events) return null;
    }
    return { events: found.events, at: found.at, date: day.date, baseVersion: day.baseVersion, nextAt: found.nextAt, nextEvents: found.nextEvents, positions: found.positions };
  }

  /** A day build's checkpoint positions: kept for a closed day, read each time for an open one (its runs add more). */
  private async positionsOf(key: SummaryKey, day: DayBuild): Promise<CheckpointPosition[]> {
    const id = `${key.venue}|${key.market}|${key.asset}|${day.date}|${day.baseVersion}`;
    const hit = this.positions.get(id);
    if (hit !== undefined) {
      this.positions.delete(id);
      this.positions.set(id, hit);
      return hit;
    }
    const list = await this.deps.summaries.checkpointPositions(key, day.date, day.baseVersion, ENGINE_VERSION);
    if (day.complete) {
      this.positions.set(id, list);
      this.positionsHeld += list.length + 1;
      for (const [k, v] of this.positions) {
        if (this.positionsHeld <= POSITIONS_HELD) break;
        this.positions.delete(k);
        this.positionsHeld -= v.length + 1;
      }
    }
    return list;
  }

  /** The asset's day builds (kept while its summaries version stands still; read every time for an asset without one). */
  private dayBuilds(key: SummaryKey, version: string | null): Promise<DayBuild[]> {
    return this.builds.get(`${key.venue}|${key.market}|${key.asset}`, version, () => this.deps.summaries.dayBuilds(key));
  }
}

const sameState = (a: RollupState, b: RollupState) => a.version === b.version && a.pending.size === b.pending.size && [...a.pending].every((d) => b.pending.has(d));
const stateId = (key: SummaryKey, date: string, baseVersion: number, events: number) => `${key.venue}|${key.market}|${key.asset}|${date}|${baseVersion}|${events}`;

const BUILDS_TTL_MS = 30_000;
/** Day builds whose state reads are counted (to tell a hot one). */
const BUILDS_COUNTED = 10_000;
/** A build is read whole only when its states take at most this share of the state kept. */
const PRELOAD_SHARE = 4;
/** Positions per page of a whole-build read (the table's granule is 64 rows). */
const PRELOAD_PAGE = 64;
const BUILDS_CACHED = 10_000;
/** Checkpoint positions kept, all day builds together (~50 bytes each: ~50 MB at most). */
const POSITIONS_HELD = 1_000_000;
/** Checkpoint state kept, in characters (a 40-level book's state is ~1,500: ~20,000 states). */
const STATE_CHARS_HELD = 32_000_000;
/**
 * Rolled-up days looked back for a checkpoint. Every closed day whose book was known at its
 * end has one, so only a book unknown (or without book records) that long is rebuilt from
 * its last snapshot instead.
 */
const DAYS_BACK = 8;
/**
 * Records between two checkpoints read whole rather than streamed, at most: the rollup writes a
 * checkpoint every ROLLUP_CHECKPOINT_EVENTS (500 by default), but only where the book is known,
 * so two checkpoints can lie further apart; a longer interval streams.
 */
const WHOLE_SPAN_EVENTS = 20_000;

/** The full book of one series at one instant. */
export async function bookAt(books: BookReader, key: SummaryKey, atMs: number, depth: number): Promise<BookAt> {
  const source = await books.source(key, atMs);
  for await (const b of booksAt(key.venue, source, [atMs], depth)) return b;
  throw new Error('unreachable: one instant gives one book');
}
