import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LADDER, decodeBuckets, type ExactBucket } from '@booktape/book';
import { silentLogger } from '@booktape/config';
import { utcDate, type ExchangeAEvent, type ExchangeBRecord, type RawMessage } from '@booktape/domain';
import { RollupQueue } from '@booktape/messaging';
import { SummariesRepository, type SummaryKey } from '@booktape/storage';
import { Roller, type AssetVersions } from '@booktape/summaries';
import { requireEnv, uniqueId } from '@booktape/testkit';
import { exchangeAStreamArb, exchangeBStreamArb, tsOf } from '@booktape/book/testing';
import { conditionId, startTestApi, type TestApi } from '@booktape/api/testing';

type Venue = 'exchange-a' | 'exchange-b';
type Rec = ExchangeAEvent | ExchangeBRecord;

const OPEN = 1e13; // no day ever closes
const CLOSED = 0;

let t: TestApi;
let repo: SummariesRepository;
let queue: RollupQueue;
let versions: AssetVersions;
let run = 0;

beforeAll(async () => {
  const prefix = uniqueId('bt-rollup-many-test');
  t = await startTestApi({ rollupQueuePrefix: prefix, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  repo = new SummariesRepository(t.ch);
  queue = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix });
  versions = { current: (k) => queue.version(k), bump: (k) => queue.bumpVersion(k) };
}, 60_000);
afterAll(async () => {
  await queue?.close();
  await t?.close();
});

/** The records as stored messages of one asset (ingest_seq = stream position). */
function messages(key: SummaryKey, records: Rec[]): RawMessage[] {
  return records.map((r, i) => {
    const seq = String(i + 1);
    if (key.venue === 'exchange-a') {
      const event = { ...(r as ExchangeAEvent), market: key.market, asset_id: key.asset };
      return { venue: key.venue, received_at: new Date(tsOf(r)).toISOString(), worker_id: 1, ingest_seq: seq, dedup_id: event.hash, event };
    }
    const record = { ...(r as ExchangeBRecord), ticker: key.market };
    return { venue: key.venue, received_at: record.timestamp, worker_id: 1, ingest_seq: seq, dedup_id: `${record.sid}:${record.seq}`, record };
  });
}

/** Every valid stored bucket of the asset per date and level, the day rows and the checkpoints (without versions, keys and clocks). */
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
    const checkpoints = [];
    for (const p of await repo.checkpointPositions(key, d, day.baseVersion, day.engineVersion)) checkpoints.push({ ...p, state: await repo.checkpointState(key, d, day.baseVersion, p.events) });
    out[d] = {
      levels,
      checkpoints,
      state: day.state,
      events: day.events,
      coveredUntil: day.coveredUntil,
      complete: day.complete,
      lastObs: day.lastObs,
      checks: day.checks,
      startStateHash: day.startStateHash,
    };
  }
  return out;
}

/** Three assets of a venue: two of one market and one of another (exchange A), or three tickers; `tag` tells the copies apart. */
function assetsOf(venue: Venue, tag: string): SummaryKey[] {
  if (venue === 'exchange-b') return [1, 2, 3].map((i) => ({ venue, market: `KXMANY-${tag}-${run}-${i}`, asset: `KXMANY-${tag}-${run}-${i}` }));
  const m1 = conditionId(tag === 'batch' ? 20_000 + 2 * run : 40_000 + 2 * run);
  const m2 = conditionId(tag === 'batch' ? 20_001 + 2 * run : 40_001 + 2 * run);
  // The same token ids in both copies: a read of several books keeps each row with its own market.
  return [
    { venue, market: m1, asset: '201' },
    { venue, market: m1, asset: '202' },
    { venue, market: m2, asset: '203' },
  ];
}

describe.each(['exchange-a', 'exchange-b'] as const)('%s: several assets rolled in one run', (venue) => {
  it('store exactly what rolling each asset alone stores, arriving in pieces (late pieces, replays, open or closed days)', async () => {
    await fc.assert(
      fc.asyncProperty(
        venue === 'exchange-a' ? exchangeAStreamArb : exchangeBStreamArb,
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.nat(),
        fc.boolean(),
        fc.boolean(),
        async (records, cuts, open, shuffle, remembering, hinted) => {
          if (records.length === 0) return;
          run++;
          const batch = assetsOf(venue, 'batch');
          const alone = assetsOf(venue, 'alone');
          // Each asset its own part of the stream (different books), the third sometimes nothing at all.
          const positions = batch.map((_, i) => records.flatMap((_, j) => (i === 0 || j % (i + 1) !== 0 ? [j] : [])));
          if (shuffle % 5 === 0) positions[2] = [];
          const parts = positions.map((ps) => ps.map((j) => records[j]!));
          const points = [...new Set(cuts.map((c) => c % records.length))].sort((a, b) => a - b);
          const pieces: Array<[number, number]> = [];
          let from = 0;
          for (const p of [...points, records.length]) {
            if (p > from) pieces.push([from, p]);
            from = Math.max(from, p);
          }
          if (pieces.length > 1 && shuffle % 3 === 0) {
            const k = shuffle % (pieces.length - 1);
            [pieces[k], pieces[k + 1]] = [pieces[k + 1]!, pieces[k]!];
          }
          if (shuffle % 4 === 1) pieces.push(pieces[shuffle % pieces.length]!);
          const grace = open ? OPEN : CLOSED;
          const many = new Roller(repo, silentLogger(), { closeGraceMs: grace, versions: remembering ? versions : undefined, checkpointEvery: 3 });
          const single = new Roller(repo, silentLogger(), { closeGraceMs: grace, versions: remembering ? versions : undefined, checkpointEvery: 3 });
          const all = batch.map((k, i) => messages(k, parts[i]!));
          const allAlone = alone.map((k, i) => messages(k, parts[i]!));
          const dates = new Set<string>();
          for (const [lo, hi] of pieces) {
            const pieceDates = new Set<string>();
            // Hinted: each batched asset's date with the lowest event time of its records in the piece (the
            // sink's notification), unknown when it has none; the assets rolled alone always count.
            const hints = new Map<string, number>();
            for (let i = 0; i < batch.length; i++) {
              // The piece of each asset: its records whose position in the whole stream lies in [lo, hi).
              const idx = positions[i]!.flatMap((pos, k) => (pos >= lo && pos < hi ? [k] : []));
              if (idx.length === 0) continue;
              await t.filler.insert(venue, idx.map((k) => all[i]![k]!));
              await t.filler.insert(venue, idx.map((k) => allAlone[i]![k]!));
              for (const k of idx) {
                const ts = tsOf(parts[i]![k]!);
                pieceDates.add(utcDate(ts));
                const h = `${i} ${utcDate(ts)}`;
                hints.set(h, Math.min(hints.get(h) ?? Infinity, ts));
              }
            }
            for (const d of [...pieceDates].sort()) {
              dates.add(d);
              const out = await many.rollMany(
                batch,
                d,
                batch.map((_, i) => (hinted ? (hints.get(`${i} ${d}`) ?? null) : null)),
              );
              for (const o of out) if ('error' in o) throw o.error;
              // The same hints: a hinted run leaves a past day open, an unhinted one closes it.
              for (const [i, k] of alone.entries()) await single.rollFrom(k, d, false, hinted ? (hints.get(`${i} ${d}`) ?? null) : null);
            }
          }
          const sorted = [...dates].sort();
          for (let i = 0; i < batch.length; i++) expect(await storedOutput(batch[i]!, sorted), `asset ${i}`).toEqual(await storedOutput(alone[i]!, sorted));
          // The data stops: unhinted runs (the sweep's, a replay's end) close what hinted runs left open.
          for (const d of sorted) {
            for (const o of await many.rollMany(batch, d)) if ('error' in o) throw o.error;
            for (const k of alone) await single.rollFrom(k, d);
          }
          for (let i = 0; i < batch.length; i++) expect(await storedOutput(batch[i]!, sorted), `asset ${i}, closed`).toEqual(await storedOutput(alone[i]!, sorted));
        },
      ),
      { numRuns: 8, endOnFailure: true, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}) },
    );
  }, 600_000);
});

/** The real repository, failing the stored-day read of one asset. */
class FailingRepository extends SummariesRepository {
  constructor(
    ch: TestApi['ch'],
    private readonly failing: string,
  ) {
    super(ch);
  }
  shared = 0;
  override window(...a: Parameters<SummariesRepository['window']>) {
    if (a[0].asset === this.failing) return Promise.reject(new Error('engine hiccup'));
    return super.window(...a);
  }
  // The read of every asset's rows fails too: each asset then reads its own.
  override dayAndBeforeMany(): never {
    this.shared++;
    throw new Error('engine hiccup');
  }
}

describe('several assets in one run, one failing', () => {
  it('the failing asset reports its error and the others are rolled and stored', async () => {
    run++;
    const day = Date.UTC(2026, 4, 3);
    const keys = [1, 2, 3].map((i): SummaryKey => ({ venue: 'exchange-b', market: `KXFAIL-${run}-${i}`, asset: `KXFAIL-${run}-${i}` }));
    for (const k of keys) {
      const base = { ticker: k.market, sid: 4 };
      const recs: ExchangeBRecord[] = [
        { ...base, seq: 1, type: 'snapshot', timestamp: new Date(day + 1000).toISOString(), epoch_ms: day + 1000, yes: [['0.40', '10']], no: [['0.55', '4']] },
        { ...base, seq: 2, type: 'delta', timestamp: new Date(day + 2000).toISOString(), epoch_ms: day + 2000, side: 'yes', price: '0.42', delta: '3' },
      ];
      await t.filler.insert('exchange-b', messages(k, recs));
    }
    const failing = new FailingRepository(t.ch, keys[1]!.asset);
    const roller = new Roller(failing, silentLogger(), { closeGraceMs: 0 });
    const out = await roller.rollMany(keys, '2026-05-03');
    expect(failing.shared).toBe(1);
    expect('error' in out[1]! && (out[1].error as Error).message).toBe('engine hiccup');
    for (const i of [0, 2]) {
      expect(out[i]).toMatchObject({ results: [{ date: '2026-05-03', outcome: 'full', applied: 2 }] });
      expect((await repo.day(keys[i]!, '2026-05-03'))?.events).toBe(2);
    }
    expect(await repo.day(keys[1]!, '2026-05-03')).toBeNull();
  }, 60_000);
});

/** The real repository, whose reads or writes of several assets at once fail. */
class SharedFails extends SummariesRepository {
  constructor(
    ch: TestApi['ch'],
    private readonly what: 'read' | 'write',
  ) {
    super(ch);
  }
  shared = 0;
  override writeMany(writes: Parameters<SummariesRepository['writeMany']>[0]) {
    if (this.what === 'write' && writes.length > 1) {
      this.shared++;
      return Promise.reject(new Error('engine hiccup'));
    }
    return super.writeMany(writes);
  }
  override bookEventsReadMany(...a: Parameters<SummariesRepository['bookEventsReadMany']>) {
    if (this.what === 'read') {
      this.shared++;
      return Promise.reject(new Error('engine hiccup'));
    }
    return super.bookEventsReadMany(...a);
  }
}

describe.each(['read', 'write'] as const)('several assets in one run whose shared %s fails', (what) => {
  it('rolls each asset alone instead, and stores every one', async () => {
    run++;
    const day = Date.UTC(2026, 4, 4);
    const keys = [1, 2, 3].map((i): SummaryKey => ({ venue: 'exchange-b', market: `KXSHARED-${run}-${i}`, asset: `KXSHARED-${run}-${i}` }));
    for (const k of keys) {
      const base = { ticker: k.market, sid: 5 };
      const recs: ExchangeBRecord[] = [
        { ...base, seq: 1, type: 'snapshot', timestamp: new Date(day + 1000).toISOString(), epoch_ms: day + 1000, yes: [['0.40', '10']], no: [['0.55', '4']] },
        { ...base, seq: 2, type: 'delta', timestamp: new Date(day + 2000).toISOString(), epoch_ms: day + 2000, side: 'yes', price: '0.42', delta: '3' },
      ];
      await t.filler.insert('exchange-b', messages(k, recs));
    }
    const failing = new SharedFails(t.ch, what);
    const roller = new Roller(failing, silentLogger(), { closeGraceMs: 0 });
    const out = await roller.rollMany(keys, '2026-05-04');
    expect(failing.shared).toBe(1);
    for (const [i, k] of keys.entries()) {
      expect(out[i]).toMatchObject({ results: [{ date: '2026-05-04', outcome: 'full', applied: 2 }] });
      expect((await repo.day(k, '2026-05-04'))?.events).toBe(2);
    }
  }, 60_000);
});
