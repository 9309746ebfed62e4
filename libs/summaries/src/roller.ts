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
import type { SummariesRepository, SummaryChunk, SummaryDay, SummaryKey } from '@booktape/storage';
import { BookFold, bookFromState, dayStartMs } from './fold.ts';

export interface RollerOptions {
  /** A day counts as closed (covered to its end) this long after its last millisecond. */
  closeGraceMs: number;
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
}

function sha1(s: string): string {
  return createHash('sha1').update(s).digest('hex');
}

function eventTs(r: BookRecord): number {
  return 'epoch_ms' in r ? r.epoch_ms : Number((r as { timestamp: string }).timestamp);
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
 */
export class Roller {
  private lastVersion = 0;

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
    while (r.endStateChanged) {
      const [next] = await this.repo.dataDatesAfter(key, r.date, 1);
      if (next === undefined) break;
      r = await this.rollDay(key, next, false);
      results.push(r);
    }
    return results;
  }

  async rollDay(key: SummaryKey, date: string, force = false): Promise<DayResult> {
    // The rollup's clock decides only whether a day has ended (plus a grace period).
    const now = Date.now();
    const dayStart = dayStartMs(date);
    if (!Number.isFinite(dayStart)) throw new RangeError(`not a date: ${date}`);
    const dayEnd = dayStart + DAY_MS;
    const closed = now >= dayEnd + this.opts.closeGraceMs;
    const { rows, before } = await this.repo.window(key, date, date);
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
    if (!full && prev !== null) {
      // Late data: the store holds more events before covered_until than the run applied.
      const n = await this.repo.countBookEvents(key, date, prev.coveredUntil);
      if (n !== prev.events) {
        this.log.debug({ ...key, date, stored: n, applied: prev.events }, 'late data: rebuilding the day');
        full = true;
      } else if (prev.complete) {
        return { date, outcome: 'unchanged', applied: 0, endStateChanged: false, alerts: [] };
      }
    }

    const book = bookFromState(key.venue, full ? startState : prev!.state);
    const checker = full || resumed === null ? BookChecker.startDay(key.venue, dayStart, book, carried) : resumed;
    const from = full ? dayStart : prev!.coveredUntil;

    // Events at the latest millisecond seen are held back while the day is open. A
    // millisecond is applied whole (the checks settle claims at its end).
    const fold = new BookFold(book, 1);
    let applied = 0;
    let held: BookRecord[] = [];
    let heldTs = -1;
    const applyHeld = () => {
      if (held.length === 0) return;
      checker.applyMillisecond(book, held, fold.observe);
      applied += held.length;
      held = [];
    };
    for await (const text of this.repo.bookEvents(key, date, from, dayEnd)) {
      const rec = JSON.parse(text) as BookRecord;
      const ts = eventTs(rec);
      if (ts !== heldTs) {
        applyHeld();
        heldTs = ts;
      }
      held.push(rec);
    }
    let coveredUntil: number;
    if (closed || held.length === 0) {
      applyHeld();
      coveredUntil = closed ? dayEnd : from;
    } else {
      coveredUntil = heldTs;
    }
    if (book.anomalies > 0) this.log.warn({ ...key, date, anomalies: book.anomalies, last: book.lastAnomaly }, 'records the book could not apply');

    const alerts = checker.drainAlerts();
    if (!full && applied === 0 && coveredUntil === prev!.coveredUntil && closed === prev!.complete) {
      return { date, outcome: 'no-new-events', applied: 0, endStateChanged: false, alerts };
    }

    const version = this.nextVersion(prev?.version ?? 0);
    const ladder = ladderFromBase(fold.finish());
    const chunks = full ? this.chunksOf(ladder, date, version) : await this.appendChunks(key, prev!, ladder, date, version);
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
    await this.repo.write(key, day, chunks);
    // The next day starts from this day's book and, while unknown, its open spell's kind.
    const open = checks.open;
    const prevOpen = carriedChecks(prev)?.open ?? null;
    const endChanged = prev === null || prev.state !== state || prevOpen?.kind !== open?.kind || prevOpen?.detail !== open?.detail;
    return { date, outcome: full ? 'full' : 'incremental', applied, endStateChanged: endChanged, alerts };
  }

  private chunksOf(ladder: Map<number, ExactBucket[]>, date: string, version: number): SummaryChunk[] {
    const out: SummaryChunk[] = [];
    for (const level of LADDER) {
      for (const [hour, buckets] of byHour(ladder.get(level)!)) {
        out.push({ date, resolution: level, hour, version, engineVersion: ENGINE_VERSION, bucketCount: buckets.length, buckets: encodeBuckets(buckets) });
      }
    }
    return out;
  }

  /**
   * New buckets appended to the stored ones: only the hour holding the previous
   * covered_until can hold stored buckets that the new ones continue (all stored buckets
   * lie before it); that hour's chunks are read, merged and rewritten, later hours are new.
   */
  private async appendChunks(key: SummaryKey, prev: SummaryDay, ladder: Map<number, ExactBucket[]>, date: string, version: number): Promise<SummaryChunk[]> {
    const boundary = Math.floor(prev.coveredUntil / HOUR_MS) * HOUR_MS;
    const out: SummaryChunk[] = [];
    const touchesBoundary = ladder.get(1)!.some((b) => b.timestamp < boundary + HOUR_MS);
    const storedHour = touchesBoundary ? await this.repo.hourChunks(key, date, prev.baseVersion, boundary) : new Map<number, SummaryChunk>();
    for (const level of LADDER) {
      const fresh = byHour(ladder.get(level)!);
      const head = fresh.get(boundary);
      const stored = storedHour.get(level);
      if (head !== undefined && stored !== undefined) fresh.set(boundary, appendBuckets(decodeBuckets(stored.buckets), head));
      for (const [hour, buckets] of fresh) {
        out.push({ date, resolution: level, hour, version, engineVersion: ENGINE_VERSION, bucketCount: buckets.length, buckets: encodeBuckets(buckets) });
      }
    }
    return out;
  }
}
