import { createHash } from 'node:crypto';
import {
  BookChecker,
  ColumnsAggregator,
  DAY_MS,
  ENGINE_VERSION,
  HOUR_MS,
  LADDER,
  appendBuckets,
  bucketsOfColumns,
  columnsByHour,
  decodeBuckets,
  encodeBuckets,
  encodeColumns,
  ladderColumns,
  type BookRecord,
  type BucketColumns,
  type ChangeEntries,
  type CheckAlert,
  type ChecksState,
} from '@booktape/book';
import type { Logger } from '@booktape/config';
import { type BookCheckpoint, type BookEventsFacts, type BookRowSink, type SummariesRepository, type SummaryChunk, type SummaryDay, type SummaryKey } from '@booktape/storage';
import { eventTs, isBookRecord } from './book-at.ts';
import { bookFromState, dayStartMs } from './fold.ts';

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
  /**
   * A closed day's rows are applied as they are decoded, most exchange A rows straight from
   * their columns (`Roller.rollClosed`); false folds arrays of records as an open day does
   * (the same output: a test compares the two).
   */
  applyFromColumns?: boolean | undefined;
  /**
   * Every run's read (a closed day's fold, an open day's records, a read of several assets)
   * takes exchange A's rows without their entries' hashes, and fetches the few that the
   * details of claims that do not hold name afterwards (`claimHashesOf`); true reads every
   * hash with its row (the same output: tests compare the two).
   */
  readClaimHashes?: boolean | undefined;
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
 * A day that has ended (plus a grace period) is closed by its next run: everything is
 * applied, `covered_until` is the day's end, and any later data rebuilds it whole. So a past
 * day whose data is still arriving (a replay, an archive import through the sink, a late
 * tail after midnight) is rolled as an open day instead, run after run, incrementally: a
 * run with a sink's hint (`earliestMs`: records were just stored, more may follow) leaves it
 * open (`RunEnding`). An unhinted run closes it: the sweep's mark of a past day that stopped
 * receiving data, `booktape replay --wait` at its end, a back-fill. A later day rolled on
 * from an earlier one (its start changed) stays as it was stored.
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
 *
 * The late-data count (FINAL, of the whole day before `covered_until`) grows with the day,
 * so an incremental run asks for it only when late data is possible: given a hint, the
 * lowest event time of every record stored since the stored day's run claimed its work
 * (the rollup queue's claim, libs/messaging rollup-queue.ts), a hint at or after
 * `covered_until` proves that nothing before it was stored since, and the count is skipped.
 * Without a hint (null: the sweep, a back-fill, an import, a later day rolled on from an
 * earlier one, a retry) the run counts.
 */
export class Roller {
  private lastVersion = 0;
  /** Incremental runs that counted the stored events before `covered_until`, and that skipped it on their hint. */
  readonly lateChecks = { counted: 0, skipped: 0 };
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
  async rollFrom(key: SummaryKey, date: string, force = false, earliestMs: number | null = null): Promise<DayResult[]> {
    const results: DayResult[] = [];
    let r = await this.roll(key, date, force, false, earliestMs, endingOf(earliestMs));
    results.push(r);
    while (r.endStateChanged && r.nextDataDate !== null) {
      r = await this.rollOn(key, r.nextDataDate);
      results.push(r);
    }
    return results;
  }

  /** One day alone, unhinted: a past day is closed. */
  async rollDay(key: SummaryKey, date: string, force = false): Promise<DayResult> {
    return this.roll(key, date, force, false);
  }

  /** A later data day whose start state changed: rebuilt, a past one left open or closed as it was stored. */
  private rollOn(key: SummaryKey, date: string): Promise<DayResult> {
    return this.roll(key, date, false, false, null, 'as-stored');
  }

  /**
   * `rollFrom` of several assets of one venue at one date (not forced), with one raw read
   * (and one facts query sent with it) and one insert per table for all of them: on an
   * engine busy with inserts a run pays for its waits, not its rows. Each asset's output is
   * what `rollFrom` alone would store. An asset that needs more than that read (a closed
   * day's count, imported records to supersede, late data, the later days whose start
   * changed) goes on alone from there. Returns, per key at its index, its results or what
   * it failed with: an asset's failure leaves the others' results standing (a failed
   * shared read or write fails every asset it held). `earliestMs`, per key at its index:
   * its late-data hint (see the class comment; absent or null: unknown).
   */
  async rollMany(keys: readonly SummaryKey[], date: string, earliestMs: ReadonlyArray<number | null> = []): Promise<Array<{ results: DayResult[] } | { error: unknown }>> {
    const venues = new Set(keys.map((k) => k.venue));
    const assets = new Set(keys.map((k) => k.asset));
    if (keys.length <= 1 || venues.size > 1 || assets.size !== keys.length) {
      const out: Array<{ results: DayResult[] } | { error: unknown }> = [];
      for (const [i, k] of keys.entries()) out.push(await this.rollFrom(k, date, false, earliestMs[i] ?? null).then((results) => ({ results }), (error: unknown) => ({ error })));
      return out;
    }
    const first: Array<Promise<DayResult>> = new Array(keys.length);
    // The stored rows of the assets this roller has no record of, in one read.
    const memos = await Promise.all(keys.map((k) => this.memoFor(k, date)));
    const unknown = keys.filter((_, i) => memos[i] === null);
    let stored: Awaited<ReturnType<SummariesRepository['dayAndBeforeMany']>> | null = [];
    try {
      if (unknown.length > 0) stored = await this.repo.dayAndBeforeMany(keys[0]!.venue, date, unknown);
    } catch {
      stored = null;
    }
    const windows = new Map<SummaryKey, { rows: SummaryDay[]; before: SummaryDay | null }>();
    // A failed read leaves each asset to read its own (an asset's failure is its own).
    if (stored !== null) unknown.forEach((k, j) => windows.set(k, { rows: stored[j]!.row === null ? [] : [stored[j]!.row!], before: stored[j]!.before }));
    const planned = await Promise.allSettled(keys.map((k, i) => this.plan(k, date, false, false, earliestMs[i] ?? null, endingOf(earliestMs[i] ?? null), { memo: memos[i]!, window: windows.get(k) })));
    const batch: Array<{ i: number; plan: DayPlan }> = [];
    planned.forEach((p, i) => {
      if (p.status === 'rejected') first[i] = Promise.reject(p.reason);
      else if ('done' in p.value) first[i] = Promise.resolve(p.value.done);
      else batch.push({ i, plan: p.value });
    });
    if (batch.length > 0) {
      const shared = this.rollPlanned(batch.map((b) => b.plan));
      // The shared read or fold failed: each asset rolls alone, so that one asset's failure
      // (a record its fold cannot take, say) stays its own instead of holding back every
      // asset it is batched with, run after run.
      const alone = shared.then(
        () => false,
        (e: unknown) => {
          this.log.warn({ venue: keys[0]!.venue, date, assets: batch.length, err: e }, 'a shared rollup read failed: its assets roll alone');
          return true;
        },
      );
      batch.forEach((b, j) => (first[b.i] = alone.then((fallback) => (fallback ? this.roll(keys[b.i]!, date, false, false, null, b.plan.ending) : shared.then((r) => r[j]!())))));
    }
    return Promise.all(
      keys.map(async (k, i) => {
        try {
          const results = [await first[i]!];
          let r = results[0]!;
          while (r.endStateChanged && r.nextDataDate !== null) {
            r = await this.rollOn(k, r.nextDataDate);
            results.push(r);
          }
          return { results };
        } catch (error) {
          return { error };
        }
      }),
    );
  }

  /**
   * Planned runs of several assets (one venue, one date, distinct assets) read together and
   * written together. Returns, per plan, a thunk giving its result: a run the shared read
   * cannot serve (imports to supersede, late data) rolls alone inside it.
   */
  private async rollPlanned(plans: DayPlan[]): Promise<Array<() => Promise<DayResult>>> {
    const { venue } = plans[0]!.key;
    const { date } = plans[0]!;
    const read = await this.repo.bookEventsReadMany(
      venue,
      date,
      plans.map((p) => ({ market: p.key.market, asset: p.key.asset, fromMs: p.from, toMs: p.dayEnd, countBeforeMs: p.countBefore ? p.prev!.coveredUntil : null })),
      { hashes: this.opts.readClaimHashes === true },
    );
    const out: Array<() => Promise<DayResult>> = new Array(plans.length);
    const runs: Array<DayRun | null> = plans.map((p, j) => {
      const alone = this.aloneAfterRead(p, read.facts[j]!);
      if (alone !== null) {
        // Rolled after the shared write (one asset's runs never overlap).
        out[j] = () => alone();
        return null;
      }
      return new DayRun(p, this.opts.checkpointEvery ?? CHECKPOINT_EVENTS, read.facts[j]!.nextDataDate);
    });
    try {
      for await (const { item, records, ms } of read.events) runs[item]?.push(records, ms);
    } finally {
      await read.close();
    }
    // Each run's claim hashes, then its output (a boundary hour's chunks may be read); a
    // failure is its asset's alone. A run whose rows changed before its hashes were fetched
    // rolls alone, reading its hashes, after the shared write.
    const outputs = await Promise.allSettled(
      runs.map(async (r, j) => {
        if (r === null) return null;
        r.finish(this.log);
        if (await this.claimHashesOf(r)) return this.output(r);
        runs[j] = null;
        out[j] = () => this.rollRecords(this.fresh(plans[j]!), true);
        return null;
      }),
    );
    const writes: Array<{ j: number; o: RunOutput }> = [];
    outputs.forEach((o, j) => {
      if (runs[j] === null) return;
      if (o.status === 'rejected') out[j] = () => Promise.reject(o.reason);
      else if (o.value !== null && 'result' in o.value && !('day' in o.value)) out[j] = async () => o.value!.result;
      else if (o.value !== null) writes.push({ j, o: o.value as RunOutput });
    });
    const written = this.writeMany(writes.map((w) => w.o)).then(
      () => null,
      (e: unknown) => e,
    );
    const err = await written;
    if (err !== null) this.log.warn({ venue, date, assets: writes.length, err }, 'a shared rollup write failed: its assets roll alone');
    // A failed shared write: each asset rolls alone (its own failure, if any, is then its own).
    for (const { j, o } of writes) out[j] = err === null ? async () => o.result : () => this.roll(plans[j]!.key, date, plans[j]!.force, plans[j]!.importsSettled, null, plans[j]!.ending);
    // The runs that need more than the shared read go on alone now, after its write.
    const settled = await Promise.allSettled(out.map((f) => f()));
    return settled.map((r) => (r.status === 'fulfilled' ? async () => r.value : () => Promise.reject(r.reason)));
  }

  /**
   * Own capture first: imported copies of events captured since go before the day is read
   * (`supersedeImported`), and a day that lost any is rebuilt. Whether the day holds imported
   * records at all comes with the run's read (almost never: then no round trip is spent on
   * it); when it does, they are superseded and the run starts again, `importsSettled`.
   */
  private async roll(key: SummaryKey, date: string, force: boolean, importsSettled: boolean, earliestMs: number | null = null, ending: RunEnding = 'close'): Promise<DayResult> {
    const planned = await this.plan(key, date, force, importsSettled, earliestMs, ending);
    if ('done' in planned) return planned.done;
    const p = planned;
    if (p.closed && this.opts.applyFromColumns !== false) return this.rollClosed(p);
    return this.rollRecords(p);
  }

  /**
   * `roll` after its plan, from arrays of records: an open day (its last millisecond is held
   * back until the next run) or, without `applyFromColumns`, a closed one. Read without the
   * entries' hashes unless `hashes`: those the details of claims that do not hold name are
   * fetched after the fold, and a store changed in between is read again with them.
   */
  private async rollRecords(p: DayPlan, hashes = this.opts.readClaimHashes === true): Promise<DayResult> {
    const read = await this.repo.bookEventsRead(p.key, p.date, p.from, p.dayEnd, p.countBefore ? p.prev!.coveredUntil : null, { hashes });
    const alone = this.aloneAfterRead(p, read.facts);
    if (alone !== null) {
      await read.close();
      return alone();
    }
    const run = new DayRun(p, this.opts.checkpointEvery ?? CHECKPOINT_EVENTS, read.facts.nextDataDate);
    try {
      for await (const batch of read.events) run.push(batch, batch.ms);
    } finally {
      await read.close();
    }
    run.finish(this.log);
    if (!(await this.claimHashesOf(run))) return this.rollRecords(this.fresh(p), true);
    const o = await this.output(run);
    if (!('day' in o)) return o.result;
    await this.writeMany([o]);
    return o.result;
  }

  /**
   * `roll` of a closed day after its plan: nothing is held back (every event read is
   * applied), so each row is applied as it is decoded (`bookEventsFold`, DayRun's sink)
   * instead of gathered into arrays of records first. Stores what `roll` would.
   */
  private async rollClosed(p: DayPlan, hashes = this.opts.readClaimHashes === true): Promise<DayResult> {
    const read = await this.repo.bookEventsFold(p.key, p.date, p.from, p.dayEnd, p.countBefore ? p.prev!.coveredUntil : null, { hashes });
    const alone = this.aloneAfterRead(p, read.facts);
    if (alone !== null) {
      await read.close();
      return alone();
    }
    const run = new DayRun(p, this.opts.checkpointEvery ?? CHECKPOINT_EVENTS, read.facts.nextDataDate);
    await read.fold(run);
    // The last millisecond's claims settled, then the hashes the details of the claims that
    // did not hold name (rare) fetched.
    run.finish(this.log);
    if (!(await this.claimHashesOf(run))) return this.rollClosed(this.fresh(p), true);
    const o = await this.output(run);
    if (!('day' in o)) return o.result;
    await this.writeMany([o]);
    return o.result;
  }

  /**
   * Fetches the hashes the details of a folded run's claims that did not hold name (read
   * without them; rare) and completes the details. False when the rows changed since the
   * read: the run is then void, and its day is read again with its hashes (`fresh`).
   */
  private async claimHashesOf(run: DayRun): Promise<boolean> {
    const refs = run.checker.unresolvedHashes();
    if (refs.length === 0) return true;
    const p = run.plan;
    const got = await this.repo.claimHashes(p.key, p.date, p.from, p.dayEnd, refs);
    if (got === null) {
      this.log.debug({ ...p.key, date: p.date }, 'claim hashes changed since the read: reading the day with its hashes');
      return false;
    }
    run.checker.resolveHashes(got);
    return true;
  }

  /** The plan again with a checker of its own (a run's checker is its own: the one it resumed is spent). */
  private fresh(p: DayPlan): DayPlan {
    return { ...p, resumed: p.resumed === null ? null : resumeChecker(p.key.venue, p.prev!) };
  }

  /**
   * What a run must do instead of folding the read, given its facts: supersede imported
   * records (then roll again, rebuilt when any were replaced), or rebuild a day that got late
   * data. Null when the read serves the run.
   */
  private aloneAfterRead(p: DayPlan, facts: BookEventsFacts): (() => Promise<DayResult>) | null {
    const { key, date } = p;
    if (facts.holdsImports && !p.importsSettled) return async () => this.roll(key, date, p.force || (await this.repo.supersedeImported(key, date)) > 0, true, null, p.ending);
    if (p.countBefore && facts.countedBefore !== p.prev!.events) {
      this.log.debug({ ...key, date, stored: facts.countedBefore, applied: p.prev!.events }, 'late data: rebuilding the day');
      return () => this.roll(key, date, true, p.importsSettled, null, p.ending);
    }
    return null;
  }

  /**
   * A run up to its read: the stored day and the day before (from this roller's record of
   * its last write, or read), whether the run is a full rebuild, and where it reads from. A
   * closed day is settled here (its late-data count) when nothing changed. `earliestMs`: the
   * late-data hint (null: unknown), which decides whether the run's read counts; `ending`:
   * whether a past day is closed by this run (see the class comment).
   */
  private async plan(
    key: SummaryKey,
    date: string,
    force: boolean,
    importsSettled: boolean,
    earliestMs: number | null,
    ending: RunEnding,
    known?: { memo: Memo | null; window: { rows: SummaryDay[]; before: SummaryDay | null } | undefined },
  ): Promise<DayPlan | { done: DayResult }> {
    // The rollup's clock decides only whether a day has ended (plus a grace period).
    const now = Date.now();
    const dayStart = dayStartMs(date);
    if (!Number.isFinite(dayStart)) throw new RangeError(`not a date: ${date}`);
    const dayEnd = dayStart + DAY_MS;
    const ended = now >= dayEnd + this.opts.closeGraceMs;
    const memo = known !== undefined ? known.memo : await this.memoFor(key, date);
    const { rows, before } = memo !== null ? { rows: [memo.day], before: memo.before } : (known?.window ?? (await this.repo.window(key, date, date)));
    const prev = rows[0] ?? null;
    const closed = ended && (ending === 'close' || (ending === 'as-stored' && prev?.complete === true));
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
      if (!importsSettled && (await this.repo.supersedeImported(key, date)) > 0) return { done: await this.roll(key, date, true, true, null, ending) };
      importsSettled = true;
      this.lateChecks.counted++;
      const n = await this.repo.countBookEvents(key, date, prev.coveredUntil);
      if (n === prev.events) return { done: { date, outcome: 'unchanged', applied: 0, endStateChanged: false, alerts: [], nextDataDate: null } };
      this.log.debug({ ...key, date, stored: n, applied: prev.events }, 'late data: rebuilding the day');
      full = true;
    }
    // Late data before covered_until can only have been stored since the stored run's claim,
    // and then it is in this run's hint (see the class comment): a hint at or after
    // covered_until proves there is none, anything else is counted.
    const countBefore = !full && !(earliestMs !== null && Number.isFinite(earliestMs) && earliestMs >= prev!.coveredUntil);
    if (!full) this.lateChecks[countBefore ? 'counted' : 'skipped']++;
    return { key, date, force, importsSettled, now, dayStart, dayEnd, closed, ending, memo, prev, before, startState, carried, startHash, full, countBefore, resumed, from: full ? dayStart : prev!.coveredUntil };
  }

  /** A folded run's output: a result alone (nothing new), or the rows to write with it. */
  private async output(run: DayRun): Promise<RunOutput | { result: DayResult }> {
    const p = run.plan;
    const { key, date, prev, full, memo } = p;
    const { coveredUntil, book, buckets, checker, checkpoints, applied } = run.finish(this.log);
    const { nextDataDate } = run;
    const alerts = checker.drainAlerts();
    if (!full && applied === 0 && coveredUntil === prev!.coveredUntil && p.closed === prev!.complete) {
      return { result: { date, outcome: 'no-new-events', applied: 0, endStateChanged: false, alerts, nextDataDate } };
    }

    const version = this.nextVersion(prev?.version ?? 0);
    const ladder = ladderColumns(buckets.finish());
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
      complete: p.closed,
      events: (full ? 0 : prev!.events) + applied,
      startStateHash: p.startHash,
      state,
      lastObs: last === null ? '' : JSON.stringify(last),
      checks: JSON.stringify(checks),
      computedAt: p.now,
    };
    const cps = checkpoints.map((c) => ({ ...c, date, baseVersion: day.baseVersion, version, engineVersion: ENGINE_VERSION }));
    // The next day starts from this day's book and, while unknown, its open spell's kind.
    const open = checks.open;
    const prevOpen = carriedChecks(prev)?.open ?? null;
    const endChanged = prev === null || prev.state !== state || prevOpen?.kind !== open?.kind || prevOpen?.detail !== open?.detail;
    const result: DayResult = { date, outcome: full ? 'full' : 'incremental', applied, endStateChanged: endChanged, alerts, nextDataDate };
    return { key, day, chunks, checkpoints: cps, before: p.before, boundary, result };
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
   * Writes runs' outputs (of distinct assets), in one insert per table. With `versions`,
   * each asset's counter is bumped before and after: other writers' records of the asset are
   * void from the first bump on, and this roller's record is valid only when nobody else
   * bumped in between (the second bump is the first's plus one). A failed write leaves no record.
   */
  private async writeMany(outs: readonly RunOutput[]): Promise<void> {
    if (outs.length === 0) return;
    for (const o of outs) this.memo.delete(memoKey(o.key));
    const versions = this.opts.versions;
    const pre = versions ? await Promise.all(outs.map((o) => versions.bump(o.key))) : null;
    await this.repo.writeMany(outs.map((o) => ({ key: o.key, day: o.day, chunks: o.chunks, checkpoints: o.checkpoints })));
    if (!versions || pre === null) return;
    const post = await Promise.all(outs.map((o) => versions.bump(o.key)));
    outs.forEach((o, i) => {
      if (post[i] !== pre[i]! + 1) return;
      const hour = Math.floor(o.day.coveredUntil / HOUR_MS) * HOUR_MS;
      this.memo.set(memoKey(o.key), { version: post[i]!, day: o.day, before: o.before, boundary: o.boundary && { hour, chunks: o.boundary } });
      if (this.memo.size > MEMO_ASSETS) this.memo.delete(this.memo.keys().next().value!);
    });
  }

  /**
   * Every chunk of a full build, and the ones of the hour holding `covered_until` (the
   * boundary an incremental run continues): a full build retires every older chunk.
   */
  private chunksOf(ladder: Map<number, BucketColumns>, date: string, version: number, nextBoundary: number): { chunks: SummaryChunk[]; boundary: Map<number, SummaryChunk> } {
    const out: SummaryChunk[] = [];
    const boundary = new Map<number, SummaryChunk>();
    for (const level of LADDER) {
      const columns = ladder.get(level)!;
      for (const { hour, from, to } of columnsByHour(columns)) {
        const chunk = { date, resolution: level, hour, version, engineVersion: ENGINE_VERSION, bucketCount: to - from, buckets: encodeColumns(columns, from, to) };
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
    ladder: Map<number, BucketColumns>,
    date: string,
    version: number,
    nextBoundary: number,
  ): Promise<{ chunks: SummaryChunk[]; boundary: Map<number, SummaryChunk> | null }> {
    const boundary = Math.floor(prev.coveredUntil / HOUR_MS) * HOUR_MS;
    const out: SummaryChunk[] = [];
    const base = ladder.get(1)!;
    const touchesBoundary = base.n > 0 && base.ts[0]! < boundary + HOUR_MS;
    let storedHour: Map<number, SummaryChunk> | null = null;
    if (memo?.boundary?.hour === boundary) storedHour = memo.boundary.chunks;
    else if (touchesBoundary) storedHour = await this.repo.hourChunks(key, date, prev.baseVersion, boundary);
    // The next run's boundary hour: this one's (its stored chunks, some rewritten) or a later one (only new chunks).
    const next = nextBoundary === boundary ? (storedHour === null ? null : new Map(storedHour)) : new Map<number, SummaryChunk>();
    for (const level of LADDER) {
      const columns = ladder.get(level)!;
      const stored = storedHour?.get(level);
      for (const { hour, from, to } of columnsByHour(columns)) {
        // The stored head of the boundary hour continued by the new buckets (as objects: one hour at most).
        const merged = hour === boundary && stored !== undefined ? appendBuckets(decodeBuckets(stored.buckets), bucketsOfColumns(columns, from, to)) : null;
        const chunk = {
          date,
          resolution: level,
          hour,
          version,
          engineVersion: ENGINE_VERSION,
          bucketCount: merged === null ? to - from : merged.length,
          buckets: merged === null ? encodeColumns(columns, from, to) : encodeBuckets(merged),
        };
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

/**
 * How a run of a day that has ended leaves it: `close` (unhinted: the sweep, a replay's end,
 * a back-fill), `open` (a sink's hint: its data may still be arriving, so the next run goes
 * on incrementally instead of rebuilding a closed day), `as-stored` (a later day rolled on
 * because its start changed: closed only if it was stored closed). A day not yet ended is
 * open whatever the ending.
 */
export type RunEnding = 'close' | 'open' | 'as-stored';

/** A run's ending from its hint: a sink's hint keeps a past day open. */
function endingOf(earliestMs: number | null): RunEnding {
  return earliestMs !== null && Number.isFinite(earliestMs) ? 'open' : 'close';
}

/** A run up to its read (`Roller.plan`). */
interface DayPlan {
  key: SummaryKey;
  date: string;
  force: boolean;
  importsSettled: boolean;
  /** The run's clock: whether the day has ended, and the row's computed_at. */
  now: number;
  dayStart: number;
  dayEnd: number;
  /** The run closes the day (it has ended, and `ending` allows it): nothing held back, covered to its end. */
  closed: boolean;
  ending: RunEnding;
  memo: Memo | null;
  prev: SummaryDay | null;
  before: SummaryDay | null;
  startState: string;
  carried: ChecksState | null;
  startHash: string;
  full: boolean;
  /** The run's read counts the stored events before `prev.coveredUntil` (the late-data check); false for a full rebuild or when the hint rules late data out. */
  countBefore: boolean;
  resumed: BookChecker | null;
  /** The read starts here: the day's start (full) or the stored covered_until. */
  from: number;
}

/** A run's rows to write, and what it returns once they are written. */
interface RunOutput {
  key: SummaryKey;
  day: SummaryDay;
  chunks: SummaryChunk[];
  checkpoints: BookCheckpoint[];
  before: SummaryDay | null;
  boundary: Map<number, SummaryChunk> | null;
  result: DayResult;
}

/**
 * One asset-day's fold of its read records: the book from the plan's start state, the
 * checks, the observed buckets and the checkpoints. Events at the latest millisecond seen
 * are held back while the day is open; a millisecond is applied whole (the checks settle
 * claims at its end).
 */
class DayRun implements BookRowSink {
  readonly book: ReturnType<typeof bookFromState>;
  readonly checker: BookChecker;
  /** The observed 1 s buckets (the ladder's base). */
  readonly buckets = new ColumnsAggregator(1);
  readonly checkpoints: Array<Pick<BookCheckpoint, 'events' | 'at' | 'state'>> = [];
  private readonly startEvents: number;
  applied = 0;
  private readonly held: BookRecord[] = [];
  private heldTs = -1;
  // The held millisecond, and the last one applied, holds a book record.
  private heldBook = false;
  private lastBook = false;

  constructor(
    readonly plan: DayPlan,
    private readonly every: number,
    readonly nextDataDate: string | null,
  ) {
    const { key, full, prev, resumed, startState, dayStart, carried } = plan;
    this.book = bookFromState(key.venue, full ? startState : prev!.state);
    this.checker = full || resumed === null ? BookChecker.startDay(key.venue, dayStart, this.book, carried) : resumed;
    this.startEvents = full ? 0 : prev!.events;
  }

  // A checkpoint follows a millisecond that held a book record (its time is then the
  // answer's as_of_ms) while the book is known (an unknown book's answer needs no state).
  private checkpoint(at: number, withBook: boolean): void {
    const events = this.startEvents + this.applied;
    if (withBook && this.book.isKnown() && this.checkpoints.at(-1)?.events !== events) this.checkpoints.push({ events, at, state: JSON.stringify(this.book.toState()) });
  }

  private applyHeld(): void {
    const held = this.held;
    if (held.length === 0) return;
    this.checker.applyMillisecond(this.book, held, this.buckets, this.heldTs);
    const crossed = Math.floor((this.startEvents + this.applied + held.length) / this.every) > Math.floor((this.startEvents + this.applied) / this.every);
    this.applied += held.length;
    // Emptied, not replaced: a dense day holds a million milliseconds.
    held.length = 0;
    if (crossed) this.checkpoint(this.heldTs, this.heldBook);
    this.lastBook = this.heldBook;
    this.heldBook = false;
  }

  /** Records in serving order; `ms`, where the decoder gave it, each one's time (NaN: ask the record), not made again from text. */
  push(batch: readonly BookRecord[], ms?: Float64Array): void {
    for (let i = 0; i < batch.length; i++) {
      const rec = batch[i]!;
      let ts = ms === undefined ? Number.NaN : ms[i]!;
      if (ts !== ts) ts = eventTs(rec);
      if (ts !== this.heldTs) {
        this.applyHeld();
        this.heldTs = ts;
      }
      this.held.push(rec);
      if (isBookRecord(rec)) this.heldBook = true;
    }
  }

  // Applied as they come (a closed day's fold, BookRowSink): the records of the millisecond
  // `heldTs` applied so far, ended (checks settled, checkpoint) when the next one starts.
  private direct = 0;

  private directAt(ts: number): void {
    if (ts === this.heldTs) return;
    this.endDirect();
    this.heldTs = ts;
  }

  /** applyHeld for records applied as they came. */
  private endDirect(): void {
    const n = this.direct;
    if (n === 0) return;
    this.checker.endMillisecond(this.book);
    const crossed = Math.floor((this.startEvents + this.applied + n) / this.every) > Math.floor((this.startEvents + this.applied) / this.every);
    this.applied += n;
    this.direct = 0;
    if (crossed) this.checkpoint(this.heldTs, this.heldBook);
    this.lastBook = this.heldBook;
    this.heldBook = false;
  }

  /** BookRowSink: one record, applied now (a closed day: nothing is held back). */
  record(rec: BookRecord, ms: number): void {
    const ts = ms !== ms ? eventTs(rec) : ms;
    this.directAt(ts);
    this.checker.applyRecord(this.book, rec, this.buckets, ts);
    this.direct++;
    if (isBookRecord(rec)) this.heldBook = true;
  }

  /** BookRowSink: an exchange A price_change read from its columns, applied now. */
  changes(ms: number, entries: ChangeEntries): void {
    this.directAt(ms);
    this.checker.applyEntries(this.book, entries, this.buckets, ms);
    this.direct++;
    this.heldBook = true;
  }

  private finished: ReturnType<DayRun['finish']> | null = null;

  /**
   * Ends the fold (once; asked again, the same): every millisecond to apply applied and its
   * claims settled, and where the stored day is now covered until.
   */
  finish(log: Logger): { coveredUntil: number; book: DayRun['book']; buckets: ColumnsAggregator; checker: BookChecker; checkpoints: DayRun['checkpoints']; applied: number } {
    if (this.finished !== null) return this.finished;
    const { closed, dayEnd, from, key, date } = this.plan;
    let coveredUntil: number;
    if (closed || this.held.length === 0) {
      const lastTs = this.heldTs;
      this.endDirect();
      this.applyHeld();
      coveredUntil = closed ? dayEnd : from;
      // The book a closed day ends with: what later days' answers start from.
      if (closed && this.applied > 0) this.checkpoint(lastTs, this.lastBook);
    } else {
      coveredUntil = this.heldTs;
    }
    if (this.book.anomalies > 0) log.warn({ ...key, date, anomalies: this.book.anomalies, last: this.book.lastAnomaly }, 'records the book could not apply');
    return (this.finished = { coveredUntil, book: this.book, buckets: this.buckets, checker: this.checker, checkpoints: this.checkpoints, applied: this.applied });
  }
}
