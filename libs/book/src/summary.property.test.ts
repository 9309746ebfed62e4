import type { ExchangeAEvent, ExchangeBRecord } from '@booktape/domain';
import { canonicalDecimal } from '@booktape/decimal';
import fc from 'fast-check';
import { turnTaking } from '@booktape/testkit/properties';
import { describe, expect, it } from 'vitest';
import { ExchangeABook, ExchangeBBook } from './book-engine.ts';
import {
  DAY_MS,
  aggregateObservations,
  fillSeries,
  fillSeriesSlices,
  mergeBuckets,
  planBuckets,
  summarise,
  toSummaryBucket,
  utcDayWindow,
  type ExactBucket,
  type SummaryBucket,
} from './bucketing.ts';
import type { Observation } from './observation.ts';
import { referenceBuckets, referenceObservationsA, referenceObservationsB } from './reference.test-support.ts';
import { exchangeAStreamArb, exchangeBStreamArb, resolutionArb, tsOf, windowFor } from './streams.test-support.ts';

// The reference is slow on purpose; a loaded machine must not turn that into a failure.
const SLOW = 120_000;

type Venue = 'A' | 'B';
type Rec = ExchangeAEvent | ExchangeBRecord;

interface Book {
  apply(r: Rec): Observation | null;
  lastObservation(): Observation | null;
  toState(): unknown;
}

function newBook(venue: Venue): Book {
  return (venue === 'A' ? new ExchangeABook() : new ExchangeBBook()) as Book;
}

function restore(venue: Venue, state: unknown): Book {
  return (venue === 'A' ? ExchangeABook.fromState(state) : ExchangeBBook.fromState(state)) as Book;
}

function run(book: Book, records: readonly Rec[]): Observation[] {
  const out: Observation[] = [];
  for (const r of records) {
    const o = book.apply(r);
    if (o !== null) out.push(o);
  }
  return out;
}

function reference(venue: Venue, records: readonly Rec[]): Observation[] {
  return venue === 'A'
    ? referenceObservationsA(records as ExchangeAEvent[])
    : referenceObservationsB(records as ExchangeBRecord[]);
}

// Uniform in [0, 1): fc.double leans on the bounds, which would make most windows empty.
const unitArb = fc.integer({ min: 0, max: 999_999 }).map((x) => x / 1_000_000);

const streamArb = (venue: Venue): fc.Arbitrary<Rec[]> => (venue === 'A' ? exchangeAStreamArb : exchangeBStreamArb);

/**
 * Numbers of a 2.3 bucket that are not Number() of the exact decimal or do not print as that
 * decimal (binary noise), as readable mismatches; empty when all are exact.
 */
function inexactNumbers(numeric: SummaryBucket, exact: ExactBucket): string[] {
  const bad: string[] = [];
  const check = (field: string, n: number | null, e: string | null): void => {
    if (e === null) {
      if (n !== null) bad.push(`${field}: ${n} for null`);
      return;
    }
    const printed = n === null ? null : canonicalDecimal(String(n));
    if (n !== Number(e) || !printed?.ok || printed.value !== e) bad.push(`${field}: ${n} for ${e}`);
  };
  for (const f of ['best_bid', 'best_bid_size', 'best_ask', 'best_ask_size', 'mid_price', 'spread'] as const) {
    check(f, numeric[f], exact[f]);
  }
  for (const f of ['best_bid_ohlc', 'best_ask_ohlc', 'mid_price_ohlc', 'spread_ohlc'] as const) {
    const n = numeric[f];
    const e = exact[f];
    if ((n === null) !== (e === null)) bad.push(`${f}: ${JSON.stringify(n)} for ${JSON.stringify(e)}`);
    if (n && e) for (const k of ['open', 'high', 'low', 'close'] as const) check(`${f}.${k}`, n[k], e[k]);
  }
  return bad;
}

describe.each(['A', 'B'] as const)('exchange %s: engine + bucketing equal the reference', (venue) => {
  it('gives the reference observations, record by record', async () => {
    await fc.assert(
      turnTaking(streamArb(venue), (records) => {
        expect(run(newBook(venue), records)).toEqual(reference(venue, records));
      }),
      { numRuns: 400 },
    );
  }, SLOW);

  it('observes and stores canonical decimals whatever venue text the records carry', async () => {
    const canonical = (v: unknown): boolean => {
      if (v === null) return true;
      const c = canonicalDecimal(v);
      return c.ok && c.value === v;
    };
    let padded = 0;
    await fc.assert(
      turnTaking(streamArb(venue), (records) => {
        if (/"(size|price|delta)":"[0-9.-]*\.[0-9]*0"|"[0-9.]+\.[0-9]*0"\]/.test(JSON.stringify(records))) padded++;
        const book = newBook(venue);
        for (const o of run(book, records)) {
          for (const f of ['best_bid', 'best_bid_size', 'best_ask', 'best_ask_size', 'mid_price', 'spread'] as const) expect(canonical(o[f])).toBe(true);
        }
        const state = book.toState() as Record<string, unknown>;
        const levels = [...((state['bids'] ?? state['yes']) as string[]), ...((state['asks'] ?? state['no']) as string[])];
        expect(levels.filter((t) => !canonical(t))).toEqual([]);
      }),
      { numRuns: 200 },
    );
    expect(padded).toBeGreaterThan(20); // the streams do carry venue text
  }, SLOW);

  it('restored from serialised state at any record, continues exactly as a straight run', async () => {
    await fc.assert(
      turnTaking(streamArb(venue), fc.nat(), (records, k0) => {
        const k = records.length === 0 ? 0 : k0 % (records.length + 1);
        const straight = run(newBook(venue), records);
        const first = newBook(venue);
        const before = run(first, records.slice(0, k));
        const state = JSON.parse(JSON.stringify(first.toState())) as unknown;
        const second = restore(venue, state);
        expect(second.lastObservation()).toEqual(first.lastObservation());
        expect(second.toState()).toEqual(first.toState());
        expect([...before, ...run(second, records.slice(k))]).toEqual(straight);
      }),
      { numRuns: 300 },
    );
  }, SLOW);

  it('summarises any window at any resolution like the reference, with state carried in from earlier days', async () => {
    await fc.assert(
      turnTaking(
        streamArb(venue),
        resolutionArb,
        unitArb,
        unitArb,
        unitArb,
        fc.nat(),
        (records, R, u, v, w, k0) => {
          if (records.length === 0) return;
          const window = windowFor(records.map(tsOf), R, u, v, w);
          const plan = planBuckets(window, R);
          const expected = referenceBuckets(reference(venue, records), R, window.startMs, window.endMs);

          // The day's process: restore the book from a state saved at any record before the
          // plan's first bucket, run the rest, bucket with the carried last observation.
          const firstInside = records.findIndex((r) => tsOf(r) >= plan.firstStart);
          const limit = firstInside < 0 ? records.length : firstInside;
          const k = k0 % (limit + 1);
          const first = newBook(venue);
          run(first, records.slice(0, k));
          const second = restore(venue, JSON.parse(JSON.stringify(first.toState())));
          const carried = second.lastObservation();
          const got = summarise(run(second, records.slice(k)), plan, carried);

          expect(got).toEqual(expected);
          expect(got.length).toBeLessThanOrEqual(plan.count);
          const numeric = got.map(toSummaryBucket);
          expect(numeric.flatMap((b, i) => inexactNumbers(b, got[i]!))).toEqual([]);
          expect(JSON.parse(JSON.stringify(numeric))).toEqual(numeric);
        },
      ),
      { numRuns: 250 },
    );
  }, SLOW);

  it('summarises a UTC date (buckets starting in the day, the last one reaching past midnight)', async () => {
    await fc.assert(
      turnTaking(
        streamArb(venue),
        fc.oneof(fc.integer({ min: 5, max: 3600 }), fc.constantFrom(7, 60, 1000, 3599, 3600)),
        fc.integer({ min: -1, max: 3 }),
        (records, R, dayIndex) => {
          if (records.length === 0) return;
          const day = new Date(Math.floor(tsOf(records[0]!) / DAY_MS) * DAY_MS + dayIndex * DAY_MS).toISOString().slice(0, 10);
          const window = utcDayWindow(day);
          const plan = planBuckets(window, R);
          const obs = run(newBook(venue), records);
          expect(summarise(obs, plan)).toEqual(referenceBuckets(reference(venue, records), R, window.startMs, window.endMs));
        },
      ),
      { numRuns: 200 },
    );
  }, SLOW);

  it('merges fine buckets into exactly the buckets of the raw observations', async () => {
    await fc.assert(
      turnTaking(
        streamArb(venue),
        fc.constantFrom(1, 2, 3, 5, 10, 15, 30, 60),
        fc.integer({ min: 1, max: 60 }),
        unitArb,
        unitArb,
        unitArb,
        fc.integer({ min: 1, max: 40 }),
        (records, fine, k, u, v, w, slice) => {
          const R = fine * k;
          fc.pre(R <= 3600);
          const obs = run(newBook(venue), records);
          const fineBuckets = aggregateObservations(obs, fine);
          const merged = mergeBuckets(fineBuckets, fine, R);
          expect(merged).toEqual(aggregateObservations(obs, R));
          if (records.length === 0) return;
          const window = windowFor(records.map(tsOf), R, u, v, w);
          const plan = planBuckets(window, R);
          const expected = referenceBuckets(reference(venue, records), R, window.startMs, window.endMs);
          expect(fillSeries(merged, plan)).toEqual(expected);
          // Made a slice at a time (the API lets the event loop turn between slices): the same series, no slice over its size.
          const parts = [...fillSeriesSlices(merged, plan, null, slice)];
          expect(parts.every((p) => p.length > 0 && p.length <= slice)).toBe(true);
          expect(parts.flat()).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  }, SLOW);

  it('merges forward-filled fine series too (filled buckets observed nothing)', async () => {
    await fc.assert(
      turnTaking(streamArb(venue), fc.constantFrom(1, 5, 60), fc.integer({ min: 1, max: 10 }), (records, fine, k) => {
        if (records.length === 0) return;
        const obs = run(newBook(venue), records);
        const span = { startMs: tsOf(records[0]!) - 3_600_000, endMs: tsOf(records[records.length - 1]!) + 3_600_000 };
        fc.pre((span.endMs - span.startMs) / (fine * 1000) < 50_000);
        const fineSeries = summarise(obs, planBuckets(span, fine));
        expect(mergeBuckets(fineSeries, fine, fine * k)).toEqual(aggregateObservations(obs, fine * k));
      }),
      { numRuns: 60 },
    );
  }, SLOW);
});

describe('a whole day at 1 s', () => {
  it('answers 86,400 buckets equal to the reference', async () => {
    await fc.assert(
      turnTaking(exchangeAStreamArb, (records) => {
        if (records.length === 0) return;
        const day = new Date(tsOf(records[0]!)).toISOString().slice(0, 10);
        const window = utcDayWindow(day);
        const plan = planBuckets(window, 1);
        expect(plan.count).toBe(86_400);
        const got = summarise(run(new ExchangeABook(), records), plan);
        expect(got).toEqual(referenceBuckets(referenceObservationsA(records), 1, window.startMs, window.endMs));
      }),
      { numRuns: 8 },
    );
  }, SLOW);
});
