import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LADDER, decodeBuckets, toSummaryBucket, utcDayWindow, type ExactBucket } from '@booktape/book';
import { silentLogger } from '@booktape/config';
import { utcDate, type ExchangeAEvent, type ExchangeBRecord, type RawMessage } from '@booktape/domain';
import { RollupQueue } from '@booktape/messaging';
import { SummariesRepository, type SummaryKey } from '@booktape/storage';
import { Roller, type AssetVersions } from '@booktape/summaries';
import { requireEnv, uniqueId } from '@booktape/testkit';
// The deliberately simple implementation of docs/rules/summaries.md, and the random streams of the book's properties.
import { exchangeAStreamArb, exchangeBStreamArb, referenceBuckets, referenceObservationsA, referenceObservationsB, resolutionArb, tsOf, windowFor } from '@booktape/book/testing';
import { bearer, conditionId, startTestApi, type TestApi } from '@booktape/api/testing';

type Venue = 'exchange-a' | 'exchange-b';
type Rec = ExchangeAEvent | ExchangeBRecord;

const OPEN = 1e13; // close grace: no day ever closes (today's behaviour)
const CLOSED = 0;

let t: TestApi;
let apiKey: string;
let repo: SummariesRepository;
let queue: RollupQueue;
/** The worker's versions: the rollup queue's counters in Redis, which the API's caches read too. */
let versions: AssetVersions;
let run = 0;

beforeAll(async () => {
  const prefix = uniqueId('bt-rollup-test');
  t = await startTestApi({ rollupQueuePrefix: prefix, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  apiKey = await t.newKey();
  repo = new SummariesRepository(t.ch);
  queue = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix });
  versions = { current: (k) => queue.version(k), bump: (k) => queue.bumpVersion(k) };
}, 60_000);
afterAll(async () => {
  await queue?.close();
  await t?.close();
});

/**
 * How the pieces are rolled: by one roller that reads back everything (no versions), by one
 * that remembers its writes, or by two that do, taking turns (two worker processes: each
 * must notice the other's writes).
 */
type Rollers = 'plain' | 'remembering' | 'two remembering';
function rollersFor(mode: Rollers, closeGraceMs: number): Roller[] {
  const make = (v?: AssetVersions) => new Roller(repo, silentLogger(), { closeGraceMs, versions: v });
  return mode === 'plain' ? [make()] : mode === 'remembering' ? [make(versions)] : [make(versions), make(versions)];
}

/** The stream re-keyed to a fresh market, as stored messages (ingest_seq = stream position). */
function messages(venue: Venue, records: Rec[], market: string): RawMessage[] {
  return records.map((r, i) => {
    const seq = String(i + 1);
    if (venue === 'exchange-a') {
      const event = { ...(r as ExchangeAEvent), market, asset_id: '123' };
      return { venue, received_at: new Date(tsOf(r)).toISOString(), worker_id: 1, ingest_seq: seq, dedup_id: event.hash, event };
    }
    const record = { ...(r as ExchangeBRecord), ticker: market };
    return { venue, received_at: record.timestamp, worker_id: 1, ingest_seq: seq, dedup_id: `${record.sid}:${record.seq}`, record };
  });
}

function identity(m: RawMessage): string {
  return m.venue === 'exchange-a'
    ? JSON.stringify([m.event.timestamp, m.event.asset_id, m.event.event_type, m.dedup_id])
    : JSON.stringify([m.record.epoch_ms, m.record.type, m.dedup_id]);
}

/** What the store serves of the inserted messages: first copy of each identity, in stream order. */
function served(inserted: Set<number>, all: RawMessage[]): Rec[] {
  const seen = new Set<string>();
  const out: Rec[] = [];
  for (let i = 0; i < all.length; i++) {
    if (!inserted.has(i)) continue;
    const m = all[i]!;
    const id = identity(m);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(m.venue === 'exchange-a' ? m.event : m.record);
  }
  return out;
}

function expected(venue: Venue, records: Rec[], R: number, w: { startMs: number; endMs: number }) {
  const obs = venue === 'exchange-a' ? referenceObservationsA(records as ExchangeAEvent[]) : referenceObservationsB(records as ExchangeBRecord[]);
  return referenceBuckets(obs, R, w.startMs, w.endMs).map(toSummaryBucket);
}

async function summary(venue: Venue, market: string, query: string) {
  const url = venue === 'exchange-a' ? `/api/v1/exchange-a/market/orderbook-summary?condition_id=${market}&asset_id=123&${query}` : `/api/v1/exchange-b/market/orderbook-summary?ticker=${market}&${query}`;
  const res = await t.app.inject({ method: 'GET', url, headers: bearer(apiKey) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { data: unknown[] }).data;
}

/** Every valid stored bucket of the asset, per date and level (decoded), and the day rows' outcome. */
async function storedOutput(key: SummaryKey, dates: string[]) {
  const out: Record<string, unknown> = {};
  for (const d of dates) {
    const day = await repo.day(key, d);
    if (day === null) continue;
    const levels: Record<number, ExactBucket[]> = {};
    for (const level of LADDER) {
      const chunks = await repo.chunks(key, new Map([[d, day.baseVersion]]), level, Date.parse(`${d}T00:00:00Z`), Date.parse(`${d}T00:00:00Z`) + 86_400_000);
      levels[level] = chunks.flatMap((c) => decodeBuckets(c.buckets));
    }
    // checks: the day's cross-checks continue across incremental runs exactly like the book.
    out[d] = { levels, state: day.state, events: day.events, coveredUntil: day.coveredUntil, complete: day.complete, lastObs: day.lastObs, checks: JSON.parse(day.checks) as unknown };
  }
  return out;
}

/** Equal series, or a failure that shows the first differing bucket (the whole series is too long to read). */
function expectSeries(actual: unknown[], wanted: unknown[], context: string): void {
  const n = Math.max(actual.length, wanted.length);
  for (let i = 0; i < n; i++) {
    if (JSON.stringify(actual[i]) !== JSON.stringify(wanted[i])) {
      expect.fail(`${context}: bucket ${i} of ${wanted.length} differs\n got  ${JSON.stringify(actual[i])}\n want ${JSON.stringify(wanted[i])}\n previous ${JSON.stringify(wanted[i - 1])}`);
    }
  }
}

const unitArb = fc.integer({ min: 0, max: 999_999 }).map((x) => x / 1_000_000);

describe.each(['exchange-a', 'exchange-b'] as const)('%s rollups', (venue) => {
  it(
    'arriving in pieces (late pieces, replays, open or closed days) serve the rules and end equal to a full recomputation',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          venue === 'exchange-a' ? exchangeAStreamArb : exchangeBStreamArb,
          fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
          fc.boolean(),
          fc.array(fc.tuple(resolutionArb, unitArb, unitArb, unitArb), { minLength: 2, maxLength: 4 }),
          fc.nat(),
          fc.constantFrom<Rollers>('plain', 'remembering', 'two remembering'),
          fc.boolean(),
          async (records, cuts, open, queries, shuffle, mode, hinted) => {
            if (records.length === 0) return;
            run++;
            const market = venue === 'exchange-a' ? conditionId(1000 + run) : `KXROLL-${run}`;
            const key: SummaryKey = { venue, market, asset: venue === 'exchange-a' ? '123' : market };
            const all = messages(venue, records, market);
            // Pieces: cut the stream anywhere; sometimes swap two (late data), sometimes send one twice (a replay).
            const points = [...new Set(cuts.map((c) => c % all.length))].sort((a, b) => a - b);
            const pieces: number[][] = [];
            let from = 0;
            for (const p of [...points, all.length]) {
              if (p > from) pieces.push(Array.from({ length: p - from }, (_, k) => from + k));
              from = Math.max(from, p);
            }
            if (pieces.length > 1 && shuffle % 3 === 0) {
              const k = shuffle % (pieces.length - 1);
              [pieces[k], pieces[k + 1]] = [pieces[k + 1]!, pieces[k]!];
            }
            if (shuffle % 4 === 1) pieces.push(pieces[shuffle % pieces.length]!);

            const rollers = rollersFor(mode, open ? OPEN : CLOSED);
            const inserted = new Set<number>();
            const dates = new Set<string>();
            for (const [pi, piece] of pieces.entries()) {
              await t.filler.insert(venue, piece.map((i) => all[i]!));
              for (const i of piece) inserted.add(i);
              const pieceDates = [...new Set(piece.map((i) => utcDate(tsOf(records[i]!))))].sort();
              for (const d of pieceDates) dates.add(d);
              const roller = rollers[pi % rollers.length]!;
              // Hinted: each date with the lowest event time of the piece's records of it, as the
              // sink's notification gives it (the roller skips the late-data count on it when it can).
              const hint = (d: string) => Math.min(...piece.map((i) => tsOf(records[i]!)).filter((ts) => utcDate(ts) === d));
              for (const d of pieceDates) await roller.rollFrom(key, d, false, hinted ? hint(d) : null);
              // Fresh: what was stored so far is served (stored buckets plus the live part).
              const [R, u, v, w] = queries[0]!;
              const win = windowFor(records.map(tsOf), R, u, v, w);
              expectSeries(
                await summary(venue, market, `start_timestamp=${win.startMs}&end_timestamp=${win.endMs}&resolution=${R}`),
                expected(venue, served(inserted, all), R, win),
                `${mode}, open=${open}, hinted=${hinted} after piece ${pi} of ${pieces.length}, R=${R}, window ${win.startMs}..${win.endMs}`,
              );
            }

            const final = served(inserted, all);
            for (const [R, u, v, w] of queries) {
              const win = windowFor(records.map(tsOf), R, u, v, w);
              expectSeries(await summary(venue, market, `start_timestamp=${win.startMs}&end_timestamp=${win.endMs}&resolution=${R}`), expected(venue, final, R, win), `open=${open} final, R=${R}, window ${win.startMs}..${win.endMs}`);
            }
            const [R0] = queries[1]!;
            for (const d of dates) {
              const R = Math.max(R0, 60); // a whole day within the 100,000-bucket cap and the reference's patience
              expectSeries(await summary(venue, market, `date=${d}&resolution=${R}`), expected(venue, final, R, utcDayWindow(d)), `open=${open} final, date ${d}, R=${R}`);
            }

            // Incremental == full: rebuild every day from scratch, in order, and compare. The data
            // stops first: an unhinted run of each date (the sweep's, a replay's end) closes the
            // past days that hinted runs left open (a rebuild closes them).
            const sorted = [...dates].sort();
            if (hinted) for (const d of sorted) await rollers[0]!.rollFrom(key, d, false, null);
            const incremental = await storedOutput(key, sorted);
            for (const d of sorted) await rollers[0]!.rollDay(key, d, true);
            expect(await storedOutput(key, sorted)).toEqual(incremental);
          },
        ),
        { numRuns: 15, endOnFailure: true, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}) },
      );
    },
    600_000,
  );
});

/** The real repository, counting the reads a remembering roller may skip. */
class CountingRepository extends SummariesRepository {
  windows = 0;
  hourReads = 0;
  override window(...a: Parameters<SummariesRepository['window']>) {
    this.windows++;
    return super.window(...a);
  }
  override hourChunks(...a: Parameters<SummariesRepository['hourChunks']>) {
    this.hourReads++;
    return super.hourChunks(...a);
  }
}

describe.each(['exchange-a', 'exchange-b'] as const)('%s: a roller that remembers its writes', (venue) => {
  it('reads back nothing it wrote while nobody else wrote the asset, and reads again after another writer', async () => {
    await fc.assert(
      fc.asyncProperty(venue === 'exchange-a' ? exchangeAStreamArb : exchangeBStreamArb, async (stream) => {
        // One day's records, cut in three pieces in serving order (no late data: each run continues the last).
        const date = stream.length === 0 ? '' : utcDate(tsOf(stream[0]!));
        const records = stream.filter((r) => utcDate(tsOf(r)) === date);
        if (records.length < 3) return;
        run++;
        const market = venue === 'exchange-a' ? conditionId(5000 + run) : `KXMEMO-${run}`;
        const key: SummaryKey = { venue, market, asset: venue === 'exchange-a' ? '123' : market };
        const all = messages(venue, records, market);
        const cut1 = Math.floor(records.length / 3);
        const cut2 = Math.floor((2 * records.length) / 3);
        const counting = new CountingRepository(t.ch);
        const a = new Roller(counting, silentLogger(), { closeGraceMs: OPEN, versions });
        const b = new Roller(repo, silentLogger(), { closeGraceMs: OPEN, versions });

        await t.filler.insert(venue, all.slice(0, cut1));
        await a.rollDay(key, date);
        expect(counting.windows).toBe(1);
        await t.filler.insert(venue, all.slice(cut1, cut2));
        await a.rollDay(key, date);
        // Its own write is what the store holds: neither the day rows nor the boundary hour are read
        // (whether or not the piece held book events the first run had not covered).
        expect([counting.windows, counting.hourReads]).toEqual([1, 0]);

        // Another process writes the asset (forced: it always writes): the next run must read what that one wrote.
        await t.filler.insert(venue, all.slice(cut2));
        await b.rollDay(key, date, true);
        const third = await a.rollDay(key, date);
        expect(third.outcome).toBe('no-new-events');
        expect(counting.windows).toBe(2);

        const R = 60;
        expectSeries(await summary(venue, market, `date=${date}&resolution=${R}`), expected(venue, served(new Set(all.keys()), all), R, utcDayWindow(date)), `date ${date}`);
        const incremental = await storedOutput(key, [date]);
        await a.rollDay(key, date, true);
        expect(await storedOutput(key, [date])).toEqual(incremental);
      }),
      { numRuns: 8, endOnFailure: true },
    );
  }, 300_000);
});

describe('serving stored summaries', () => {
  it('a window that starts mid-day carries the state of the hours before it and of earlier days', async () => {
    const market = 'KXCARRY-1';
    const day1 = Date.UTC(2026, 2, 1);
    const base = { ticker: market, sid: 2 };
    const recs: ExchangeBRecord[] = [
      { ...base, seq: 1, type: 'snapshot', timestamp: new Date(day1 + 3_600_000).toISOString(), epoch_ms: day1 + 3_600_000, yes: [['0.40', '10']], no: [['0.55', '4']] },
      { ...base, seq: 2, type: 'delta', timestamp: new Date(day1 + 5 * 3_600_000).toISOString(), epoch_ms: day1 + 5 * 3_600_000, side: 'yes', price: '0.42', delta: '3' },
    ];
    const msgs = messages('exchange-b', recs, market);
    await t.filler.insert('exchange-b', msgs);
    const roller = new Roller(repo, silentLogger(), { closeGraceMs: 0 });
    await roller.rollFrom({ venue: 'exchange-b', market, asset: market }, '2026-03-01');
    for (const [start, end, R] of [
      [day1 + 9 * 3_600_000, day1 + 10 * 3_600_000, 600],
      [day1 + 86_400_000 + 7_000, day1 + 86_400_000 + 3_600_000, 7],
      [day1 + 5 * 3_600_000 + 1, day1 + 6 * 3_600_000, 1],
    ] as const) {
      const data = await summary('exchange-b', market, `start_timestamp=${start}&end_timestamp=${end}&resolution=${R}`);
      expect(data).toEqual(expected('exchange-b', recs, R, { startMs: start, endMs: end }));
      expect(data.length).toBeGreaterThan(0);
      expect((data[0] as { is_forward_filled: boolean; best_bid: number }).best_bid).toBe(0.42);
    }
  });
});
