import { createHash } from 'node:crypto';
import {
  BookChecker,
  DAY_MS,
  ENGINE_VERSION,
  HOUR_MS,
  LADDER,
  appendBuckets,
  byHour,
  decodeBuckets,
  encodeBuckets,
  ladderFromBase,
  type BookRecord,
  type CheckAlert,
  type ChecksState,
  type ExactBucket,
} from '@booktape/book';
import type { Logger } from '@booktape/config';
import { type BookCheckpoint, type SummariesRepository, type SummaryChunk, type SummaryDay, type SummaryKey } from '@booktape/storage';
import { eventTs, isBookRecord } from './book-at.ts';
import { BookFold, bookFromState, dayStartMs } from './fold.ts';

export interface RollerOptions {
  /** A day counts as closed (covered to its end) this long after its last millisecond. */
  closeGraceMs: number;
  /**
   * The shared write counter of every asset (the rollup queue's version key in Redis). With
   * it, the roller bumps it around each write and remembers what it wrote, so the next run of
   * the same asset-day skips re-reading its own output (see `Roller`).
   */
  versions?: AssetVersions | undefined;
  /**
   * A full-book checkpoint is stored each time a day's applied book events cross a multiple
   * of this (and at the end of a closed day): the book at any instant then replays at most
   * this many events. Default CHECKPOINT_EVENTS.
   */
  checkpointEvery?: number | undefined;
}

/**
 * Events between book checkpoints. Every one costs a `toState()` in the rollup and a row of
 * one book state; an answer replays up to this many events (docs/BENCHMARKS.md, "Book at
 * any instant").
 */
export const CHECKPOINT_EVENTS = 500;

/**
 * Every writer of an asset's summaries bumps its counter before and after each write; readers
 * whose copy is tagged with the current count know that nobody wrote since.
 */
export interface AssetVersions {
  current(key: SummaryKey): Promise<number>;
  /** Adds one and returns the new count. */
  bump(key: SummaryKey): Promise<number>;
}

/**
 * Remembered assets per roller: each holds two book states and the boundary hour's chunks at
 * every level, up to ~0.5 MB for an asset busy every second of that hour.
 */
const MEMO_ASSETS = 256;

/** What the roller last wrote of an asset, valid while the asset's counter is still `version`. */
interface Memo {
  version: number;
  day: SummaryDay;
  before: SummaryDay | null;
  /** The valid chunks of the hour holding `day.coveredUntil`, per level; null when not known. */
  boundary: { hour: number; chunks: Map<number, SummaryChunk> } | null;
}

export type DayOutcome = 'unchanged' | 'incremental' | 'full' | 'no-new-events';

export interface DayResult {
  date: string;
  outcome: DayOutcome;
  /** Book events applied in this run. */
  applied: number;
  /** The end state differs from the previous run's: later days must follow. */
  endStateChanged: boolean;
  /** Venue cross-check alerts (mismatched claims, crossed books) found in this run. */
  alerts: CheckAlert[];
  /** The first later date holding raw data of the market, as the run's read saw it. */
  nextDataDate: string | null;
}

function sha1(s: string): string {
  return createHash('sha1').update(s).digest('hex');
}

/** A stored day's checks to carry into the next day; null when absent or not JSON (the checker validates the shape). */
function carriedChecks(day: SummaryDay | null): ChecksState | null {
  if (day === null || day.checks === '') return null;
  try {
    return JSON.parse(day.checks) as ChecksState;
  } catch {
    return null;
  }
}

/** The checker an incremental run continues, or null when the stored checks cannot be resumed. */
function resumeChecker(venue: SummaryKey['venue'], day: SummaryDay): BookChecker | null {
  if (day.checks === '') return null;
  try {
    return BookChecker.resume(venue, JSON.parse(day.checks));
  } catch {
    return null;
  }
}

/**
 * Rolls one asset-day up from its raw events (docs/rules/summaries.md): the book starts from the state the
 * previous stored day ended with (empty when there is none), every book event of the day is
 * applied in serving order, and the observed buckets are stored at every ladder level with
 * the state reached.
 *
 * Runs are incremental where that is exact: while a day is open (today), a run covers the
 * events before the latest event time it saw (`covered_until`; events at that very
 * millisecond wait for the next run, since more may still arrive) and the next run continues
 * from the stored state, appending to the stored buckets. It falls back to a full rebuild of
 * the day when that would not be exact: late data (more events before `covered_until` than
 * were applied), a changed start state (an earlier day was re-rolled), another engine
 * version, or when forced. A full rebuild writes a new base version, which retires every
 * chunk of earlier builds.
 *
 * The day's venue cross-checks (libs/book checks.ts) run on the same records, one
 * millisecond at a time, and are stored with the day row (their state continues like the
 * book's; a row whose checks cannot be resumed is rebuilt). Their alerts are returned to
 * the caller, which logs and counts them.
 *
 * A run costs few engine round trips, since on an engine busy with inserts each one waits
 * far longer than its work takes: the events are read with the late-data count, the
 * market's next data date and whether the day holds imported records (one query), and,
 * given `versions`, a run whose asset nobody wrote since this roller's last write takes the
 * stored day, the day before and the boundary hour's chunks from what that write stored
 * instead of reading them back.
 */
export class Roller {
  private lastVersion = 0;
  private readonly memo = new Map<string, Memo>();

  constructor(
    private readonly repo: SummariesRepository,
    private readonly log: Logger,
    private readonly opts: RollerOptions,
  ) {}

  /** Newer than any version written before (by this process or, per `floor`, any other). */
  private nextVersion(floor: number): number {
    this.lastVersion = Math.max(this.lastVersion + 1, floor + 1, Date.now() * 1000);
    return this.lastVersion;
  }

  /**
   * Rolls up one day, then every later data day whose start state that changed, in order
   * (state carried across midnight). Returns the results of all days it touched.
   */
  async rollFrom(key: SummaryKey, date: string, force = false): Promise<DayResult[]> {
    const results: DayResult[] = [];
    let r = await this.rollDay(key, date, force);
    results.push(r);
    while (r.endStateChanged && r.nextDataDate !== null) {
      r = await this.rollDay(key, r.nextDataDate, false);
      results.push(r);
    }
    return results;
  }

  async rollDay(key: SummaryKey, date: string, force = false): Promise<DayResult> {
    return this.roll(key, date, force, false);
  }

  /**
   * Own capture first: imported copies of events captured since go before the day is read
   * (`supersedeImported`), and a day that lost any is rebuilt. Whether the day holds imported
   * records at all comes with the run's read (almost never: then no round trip is spent on
   * it); when it does, they are superseded and the run starts again, `importsSettled`.
   */
  private async roll(key: SummaryKey, date: string, force: boolean, importsSettled: boolean): Promise<DayResult> {
    // The rollup's clock decides only whether a day has ended (plus a grace period).
    const now = Date.now();
    const dayStart = dayStartMs(date);
    if (!Number.isFinite(dayStart)) throw new RangeError(`not a date: ${date}`);
    const dayEnd = dayStart + DAY_MS;
    const closed = now >= dayEnd + this.opts.closeGraceMs;
    const memo = await this.memoFor(key, date);
    const { rows, before } = memo !== null ? { rows: [memo.day], before: memo.before } : await this.repo.window(key, date, date);
    const prev = rows[0] ?? null;
    const startState = before?.state ?? '';
    // What a day starts from is the previous day's book AND, while that book is unknown, its
    // open spell (kind and detail are carried across midnight): a change of either rebuilds.
    const carried = carriedChecks(before);
    const startHash = sha1(carried?.open ? `${startState}\n${carried.open.kind}\n${carried.open.detail}` : startState);

    let full = force || prev === null || prev.engineVersion !== ENGINE_VERSION || prev.startStateHash !== startHash;
    // Checks continue from the stored ones; a row without (or with unreadable) checks is rebuilt.
    let resumed: BookChecker | null = null;
    if (!full && prev !== null) {
      resumed = resumeChecker(key.venue, prev);
      if (resumed === null) {
        this.log.debug({ ...key, date }, 'stored checks cannot be resumed: rebuilding the day');
        full = true;
      }
    }
    // Late data: the store holds more events before covered_until than the run applied.
    if (!full && prev !== null && prev.complete) {
      // A closed day has no events after covered_until to read: only the count is asked,
      // of the day without imported copies of captured events.
      if (!importsSettled && (await this.repo.supersedeImported(key, date)) > 0) return this.roll(key, date, true, true);
      importsSettled = true;
      const n = await this.repo.countBookEvents(key, date, prev.coveredUntil);
      if (n === prev.events) return { date, outcome: 'unchanged', applied: 0, endStateChanged: false, alerts: [], nextDataDate: null };
      this.log.debug({ ...key, date, stored: n, applied: prev.events }, 'late data: rebuilding the day');
      full = true;
    }

    const book = bookFromState(key.venue, full ? startState : prev!.state);
    const checker = full || resumed === null ? BookChecker.startDay(key.venue, dayStart, book, carried) : resumed;
    const from = full ? dayStart : prev!.coveredUntil;
    // Events at the latest millisecond seen are held back while the day is open. A
    // millisecond is applied whole (the checks settle claims at its end).
    const fold = new BookFold(book, 1);
    const every = this.opts.checkpointEvery ?? CHECKPOINT_EVENTS;
    const startEvents = full ? 0 : prev!.events;
    const checkpoints: Array<Pick<BookCheckpoint, 'events' | 'at' | 'state'>> = [];
    let applied = 0;
    // A checkpoint follows a millisecond that held a book record (its time is then the
    // answer's as_of_ms) while the book is known (an unknown book's answer needs no state).
    const checkpoint = (at: number, withBook: boolean) => {
      const events = startEvents + applied;
      if (withBook && book.isKnown() && checkpoints.at(-1)?.events !== events) checkpoints.push({ events, at, state: JSON.stringify(book.toState()) });
    };
    const held: BookRecord[] = [];
    let heldTs = -1;
    // The held millisecond, and the last one applied, holds a book record.
    let heldBook = false;
    let lastBook = false;
    const applyHeld = () => {
      if (held.length === 0) return;
      checker.applyMillisecond(book, held, fold.observe, heldTs);
      const crossed = Math.floor((startEvents + applied + held.length) / every) > Math.floor((startEvents + applied) / every);
      applied += held.length;
      // Emptied, not replaced: a dense day holds a million milliseconds.
      held.length = 0;
      if (crossed) checkpoint(heldTs, heldBook);
      lastBook = heldBook;
      heldBook = false;
    };

    const read = await this.repo.bookEventsRead(key, date, from, dayEnd, full ? null : prev!.coveredUntil);
    if (read.facts.holdsImports && !importsSettled) {
      await read.close();
      return this.roll(key, date, force || (await this.repo.supersedeImported(key, date)) > 0, true);
    }
    if (!full && read.facts.countedBefore !== prev!.events) {
      this.log.debug({ ...key, date, stored: read.facts.countedBefore, applied: prev!.events }, 'late data: rebuilding the day');
      await read.close();
      return this.roll(key, date, true, importsSettled);
    }
    const { nextDataDate } = read.facts;
    try {
      for await (const batch of read.events) {
        // Each record's time as the decoder read it (NaN: ask the record), not made again from text.
        const times = batch.ms;
        for (let i = 0; i < batch.length; i++) {
          const rec = batch[i]!;
          let ts = times === undefined ? Number.NaN : times[i]!;
          if (ts !== ts) ts = eventTs(rec);
          if (ts !== heldTs) {
            applyHeld();
            heldTs = ts;
          }
          held.push(rec);
          if (isBookRecord(rec)) heldBook = true;
        }
      }
    } finally {
      await read.close();
    }
    let coveredUntil: number;
    if (closed || held.length === 0) {
      const lastTs = heldTs;
      applyHeld();
      coveredUntil = closed ? dayEnd : from;
      // The book a closed day ends with: what later days' answers start from.
      if (closed && applied > 0) checkpoint(lastTs, lastBook);
    } else {
      coveredUntil = heldTs;
    }
    if (book.anomalies > 0) this.log.warn({ ...key, date, anomalies: book.anomalies, last: book.lastAnomaly }, 'records the book could not apply');

    const alerts = checker.drainAlerts();
    if (!full && applied === 0 && coveredUntil === prev!.coveredUntil && closed === prev!.complete) {
      return { date, outcome: 'no-new-events', applied: 0, endStateChanged: false, alerts, nextDataDate };
    }

    const version = this.nextVersion(prev?.version ?? 0);
    const ladder = ladderFromBase(fold.finish());
    const nextBoundary = Math.floor(coveredUntil / HOUR_MS) * HOUR_MS;
    const { chunks, boundary } = full ? this.chunksOf(ladder, date, version, nextBoundary) : await this.appendChunks(key, prev!, memo, ladder, date, version, nextBoundary);
    const state = JSON.stringify(book.toState());
    const last = book.lastObservation();
    const checks = checker.toState();
    const day: SummaryDay = {
      date,
      version,
      baseVersion: full ? version : prev!.baseVersion,
      engineVersion: ENGINE_VERSION,
      coveredUntil,
      complete: closed,
      events: (full ? 0 : prev!.events) + applied,
      startStateHash: startHash,
      state,
      lastObs: last === null ? '' : JSON.stringify(last),
      checks: JSON.stringify(checks),
      computedAt: now,
    };
    const cps = checkpoints.map((c) => ({ ...c, date, baseVersion: day.baseVersion, version, engineVersion: ENGINE_VERSION }));
    await this.write(key, day, chunks, cps, before, boundary);
    // The next day starts from this day's book and, while unknown, its open spell's kind.
    const open = checks.open;
    const prevOpen = carriedChecks(prev)?.open ?? null;
    const endChanged = prev === null || prev.state !== state || prevOpen?.kind !== open?.kind || prevOpen?.detail !== open?.detail;
    return { date, outcome: full ? 'full' : 'incremental', applied, endStateChanged: endChanged, alerts, nextDataDate };
  }

  /** This roller's record of the asset-day, if nobody wrote the asset since (null without `versions`). */
  private async memoFor(key: SummaryKey, date: string): Promise<Memo | null> {
    const k = memoKey(key);
    const m = this.memo.get(k);
    if (m === undefined || this.opts.versions === undefined) return null;
    if (m.day.date !== date || (await this.opts.versions.current(key)) !== m.version) {
      this.memo.delete(k);
      return null;
    }
    return m;
  }

  /**
   * Writes a run's output. With `versions`, the asset's counter is bumped before and after:
   * other writers' records of the asset are void from the first bump on, and this roller's
   * record is valid only when nobody else bumped in between (the second bump is the first's
   * plus one). A failed write leaves no record.
   */
  private async write(
    key: SummaryKey,
    day: SummaryDay,
    chunks: SummaryChunk[],
    checkpoints: BookCheckpoint[],
    before: SummaryDay | null,
    boundary: Map<number, SummaryChunk> | null,
  ): Promise<void> {
    const k = memoKey(key);
    this.memo.delete(k);
    const versions = this.opts.versions;
    const pre = versions ? await versions.bump(key) : null;
    await this.repo.write(key, day, chunks, checkpoints);
    if (!versions || pre === null) return;
    const post = await versions.bump(key);
    if (post !== pre + 1) return;
    const hour = Math.floor(day.coveredUntil / HOUR_MS) * HOUR_MS;
    this.memo.set(k, { version: post, day, before, boundary: boundary && { hour, chunks: boundary } });
    if (this.memo.size > MEMO_ASSETS) this.memo.delete(this.memo.keys().next().value!);
  }

  /**
   * Every chunk of a full build, and the ones of the hour holding `covered_until` (the
   * boundary an incremental run continues): a full build retires every older chunk.
   */
  private chunksOf(ladder: Map<number, ExactBucket[]>, date: string, version: number, nextBoundary: number): { chunks: SummaryChunk[]; boundary: Map<number, SummaryChunk> } {
    const out: SummaryChunk[] = [];
    const boundary = new Map<number, SummaryChunk>();
    for (const level of LADDER) {
      for (const [hour, buckets] of byHour(ladder.get(level)!)) {
        const chunk = { date, resolution: level, hour, version, engineVersion: ENGINE_VERSION, bucketCount: buckets.length, buckets: encodeBuckets(buckets) };
        out.push(chunk);
        if (hour === nextBoundary) boundary.set(level, chunk);
      }
    }
    return { chunks: out, boundary };
  }

  /**
   * New buckets appended to the stored ones: only the hour holding the previous
   * covered_until can hold stored buckets that the new ones continue (all stored buckets
   * lie before it); that hour's chunks are read (or taken from this roller's record of its
   * last write), merged and rewritten, later hours are new. Also returns the chunks of the
   * hour the next run continues (null when not known).
   */
  private async appendChunks(
    key: SummaryKey,
    prev: SummaryDay,
    memo: Memo | null,
    ladder: Map<number, ExactBucket[]>,
    date: string,
    version: number,
    nextBoundary: number,
  ): Promise<{ chunks: SummaryChunk[]; boundary: Map<number, SummaryChunk> | null }> {
    const boundary = Math.floor(prev.coveredUntil / HOUR_MS) * HOUR_MS;
    const out: SummaryChunk[] = [];
    const touchesBoundary = ladder.get(1)!.some((b) => b.timestamp < boundary + HOUR_MS);
    let storedHour: Map<number, SummaryChunk> | null = null;
    if (memo?.boundary?.hour === boundary) storedHour = memo.boundary.chunks;
    else if (touchesBoundary) storedHour = await this.repo.hourChunks(key, date, prev.baseVersion, boundary);
    // The next run's boundary hour: this one's (its stored chunks, some rewritten) or a later one (only new chunks).
    const next = nextBoundary === boundary ? (storedHour === null ? null : new Map(storedHour)) : new Map<number, SummaryChunk>();
    for (const level of LADDER) {
      const fresh = byHour(ladder.get(level)!);
      const head = fresh.get(boundary);
      const stored = storedHour?.get(level);
      if (head !== undefined && stored !== undefined) fresh.set(boundary, appendBuckets(decodeBuckets(stored.buckets), head));
      for (const [hour, buckets] of fresh) {
        const chunk = { date, resolution: level, hour, version, engineVersion: ENGINE_VERSION, bucketCount: buckets.length, buckets: encodeBuckets(buckets) };
        out.push(chunk);
        if (hour === nextBoundary) next?.set(level, chunk);
      }
    }
    return { chunks: out, boundary: next };
  }
}

function memoKey(k: SummaryKey): string {
  return `${k.venue}\n${k.market}\n${k.asset}`;
}
