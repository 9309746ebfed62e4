import type { ExchangeAEvent, ExchangeBRecord, Venue } from '@booktape/domain';
import { ExchangeABook, ExchangeBBook, type ChangeEntries, type ChangeHook, type EntryClaimHook } from './book-engine.ts';
import type { BucketColumns } from './column-layout.ts';
import { aggregateObservations, mergeBuckets, type ExactBucket } from './bucketing.ts';
import { hourRanges } from './compact-buckets.ts';
import { mergeToColumns } from './bucket-columns.ts';
import type { Observation } from './observation.ts';
import type { ObservationSink } from './compact-buckets.ts';

/**
 * What the rollup worker stores and the API reads back (docs/rules/summaries.md, rule 10): observed
 * buckets at a ladder of resolutions, each derived from the 1 s buckets by `mergeBuckets`,
 * so that any resolution R from 1 to 3600 s is answered by merging the stored level
 * `ladderFor(R)` (the largest level dividing R) instead of replaying events.
 *
 * Every level divides an hour, so no stored bucket straddles an hour (or a day): storage
 * chunks by UTC hour and a day is 24 chunks per level.
 */
export const LADDER: readonly number[] = Object.freeze([1, 5, 10, 15, 30, 60, 300, 900, 1800, 3600]);

/**
 * Bumped whenever the engine's output for the same events changes (a fixed rule, a parser
 * fix): stored rows record it, and rows of an older version are re-derived by the sweep.
 */
export const ENGINE_VERSION = 2; // 2: canonical sizes from venue text, per-day cross-checks

export const HOUR_MS = 3_600_000;

/** The largest ladder level that divides R (1 always does). */
export function ladderFor(resolutionSeconds: number): number {
  for (let k = LADDER.length - 1; k >= 0; k--) {
    if (resolutionSeconds % LADDER[k]! === 0) return LADDER[k]!;
  }
  return 1;
}

/** Observed buckets at every ladder level, from observations in serving order. */
export function ladderBuckets(observations: Iterable<Observation>): Map<number, ExactBucket[]> {
  return ladderFromBase(aggregateObservations(observations, 1));
}

/** Every ladder level from observed 1 s buckets. */
export function ladderFromBase(base: ExactBucket[]): Map<number, ExactBucket[]> {
  const out = new Map<number, ExactBucket[]>([[1, base]]);
  for (const level of LADDER) {
    if (level === 1) continue;
    // From the nearest finer level that divides this one: fewer buckets to merge.
    let from = 1;
    for (const l of LADDER) if (l < level && level % l === 0) from = l;
    out.set(level, mergeBuckets(out.get(from)!, from, level));
  }
  return out;
}

/** `ladderFromBase` on columns (compact-buckets.ts): each level merged from the finest level it divides, with its own dictionary. */
export function ladderColumns(base: BucketColumns): Map<number, BucketColumns> {
  const out = new Map<number, BucketColumns>([[1, base]]);
  for (const level of LADDER) {
    if (level === 1) continue;
    let from = 1;
    for (const l of LADDER) if (l < level && level % l === 0) from = l;
    const fine = out.get(from)!;
    out.set(level, mergeToColumns([{ columns: fine, from: 0, to: fine.n }], from, level));
  }
  return out;
}

/** `byHour` on columns: each UTC hour's start and its buckets' index range, hours ascending. */
export function columnsByHour(c: BucketColumns): Array<{ hour: number; from: number; to: number }> {
  return hourRanges(c, HOUR_MS);
}

/** Buckets grouped by the UTC hour their start lies in, hours ascending. */
export function byHour(buckets: readonly ExactBucket[]): Map<number, ExactBucket[]> {
  const out = new Map<number, ExactBucket[]>();
  for (const b of buckets) {
    const h = Math.floor(b.timestamp / HOUR_MS) * HOUR_MS;
    let list = out.get(h);
    if (list === undefined) out.set(h, (list = []));
    list.push(b);
  }
  return out;
}

export type BookVenue = Venue;
export type BookRecord = ExchangeAEvent | ExchangeBRecord;

/** One asset's book of either venue behind one interface. */
export interface AnyBook {
  /**
   * `onChange` (exchange A only; B ignores it) sees the top after each applied price_change
   * entry. `ms` (exchange A only): the record's time as msFromText reads its `timestamp`,
   * when the caller has it already.
   */
  apply(r: BookRecord, onChange?: ChangeHook, ms?: number): Observation | null;
  /** Exchange A only (ExchangeABook.applyEntries): a price_change read from columns. */
  applyEntries?(entries: ChangeEntries, onClaim: EntryClaimHook | undefined, ms: number, sink: ObservationSink): void;
  /**
   * `apply`, the observation handed to `sink` as its fields instead of made an object; false
   * where `apply` returns null (nothing is handed on).
   */
  applyTo(r: BookRecord, sink: ObservationSink, onChange?: ChangeHook, ms?: number): boolean;
  lastObservation(): Observation | null;
  /** Whether the book is known now (a snapshot since the last unknown-making event). */
  isKnown(): boolean;
  toState(): unknown;
  /** The best `depth` levels of each side, flat [price, size, …] text (A: bids, asks; B: yes, no), as `toState` writes them. */
  bestLevels(depth: number): [string[], string[]];
  anomalies: number;
  lastAnomaly: string | null;
}

/** Each venue's book engine, keyed by venue: a new book, and one from stored state. */
const ENGINES: { readonly [V in BookVenue]: { create(): AnyBook; restore(state: unknown): AnyBook } } = {
  'exchange-a': { create: () => new ExchangeABook() as AnyBook, restore: (state) => ExchangeABook.fromState(state) as AnyBook },
  'exchange-b': { create: () => new ExchangeBBook() as AnyBook, restore: (state) => ExchangeBBook.fromState(state) as AnyBook },
};

export function newBook(venue: BookVenue): AnyBook {
  return ENGINES[venue].create();
}

/** A book from its stored state; throws RangeError when the state is malformed. */
export function restoreBook(venue: BookVenue, state: unknown): AnyBook {
  return ENGINES[venue].restore(state);
}
