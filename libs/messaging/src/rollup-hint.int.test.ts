import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { requireEnv, uniqueId } from '@booktape/testkit';
import { RollupQueue, mergeEarliest, partitionsOf, type ClaimedDate } from './rollup-queue.ts';
import { assetKey, rollupKeys } from './rollup-keys.ts';

/**
 * The late-data hint beside each dirty date, against the real Redis: a claim hands each date
 * the lowest event time of every mark since the date became dirty, and "unknown" whenever
 * any of those marks had none (the sweep, an import, a mark written before hints existed)
 * or the date came back from a claim (a failed run, a lease taken over). A hint that is
 * too high would let a rollup skip the count that finds late data.
 */

const queues: RollupQueue[] = [];
afterAll(async () => {
  for (const q of queues) {
    await q.queue.obliterate({ force: true }).catch(() => undefined);
    let cursor = '0';
    do {
      const [next, keys] = await q.redis.scan(cursor, 'MATCH', `${q.prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await q.redis.del(...keys);
    } while (cursor !== '0');
    await q.close();
  }
});

const asset = { venue: 'exchange-a' as const, market: '0xfeed', asset: '42' };
const DATES = ['2026-03-01', '2026-03-02', '2026-03-03'];

type Op =
  | { kind: 'notify'; date: number; ms: number | undefined }
  | { kind: 'old-mark'; date: number }
  | { kind: 'claim'; end: 'done' | 'failed' | 'lease-lost' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('notify' as const), date: fc.nat({ max: 2 }), ms: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: undefined }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('old-mark' as const), date: fc.nat({ max: 2 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom<'claim'>('claim'), end: fc.constantFrom<'done' | 'failed' | 'lease-lost'>('done', 'done', 'failed', 'lease-lost') }) },
);

describe('late-data hints of dirty dates', () => {
  it('a claim hands each date the lowest event time marked since it became dirty, or unknown when any mark or a returned claim had none', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        const prefix = uniqueId(`bt-hint-${n++}`);
        const q = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix, debounceMs: 600_000 });
        queues.push(q);
        const keys = rollupKeys(prefix);
        const k = assetKey(asset);
        // The reference: per dirty date, its hint (null: unknown).
        const model = new Map<string, number | null>();
        // The claim under way and how it is to end: when the next claim comes (notifications meanwhile find its dates claimed).
        let held: { id: string; dates: string[]; end: 'done' | 'failed' | 'lease-lost' } | null = null;
        const endHeld = async () => {
          if (held === null) return;
          if (held.end === 'done') await q.release(asset, held.dates, false, held.id);
          else if (held.end === 'failed') await q.release(asset, held.dates, true, held.id);
          // Its process stalled past the lease: the next claim takes its dates over.
          else await q.redis.zadd(keys.leases, 0, k);
          if (held.end !== 'done') for (const d of held.dates) model.set(d, null);
          held = null;
        };
        for (const op of [...ops, { kind: 'claim', end: 'done' } as const]) {
          if (op.kind === 'notify') {
            const date = DATES[op.date]!;
            await q.notify([{ ...asset, date, earliestMs: op.ms }]);
            const had = model.get(date);
            model.set(date, had === undefined ? (op.ms ?? null) : had === null || op.ms === undefined ? null : Math.min(had, op.ms));
          } else if (op.kind === 'old-mark') {
            // What a sink from before hints writes: the date alone.
            const date = DATES[op.date]!;
            await q.redis.multi().zadd(keys.dirty(k), 'NX', Date.now(), date).zadd(keys.pending, 'NX', Date.now(), k).exec();
            if (!model.has(date)) model.set(date, null);
          } else {
            await endHeld();
            const id = `c${n}-${Math.random()}`;
            const got = await q.lockAndClaimMany(asset, id, `lock-${id}`, 60_000, 0);
            await q.redis.del(keys.lock(k));
            expect(got).not.toBeNull();
            const want = [...model].map(([date, earliestMs]) => ({ date, earliestMs })).sort((x, y) => x.date.localeCompare(y.date));
            expect([...got![0]!.claimed].sort((x, y) => x.date.localeCompare(y.date))).toEqual(want);
            model.clear();
            held = { id, dates: got![0]!.claimed.map((c) => c.date), end: op.end };
          }
        }
        await endHeld();
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('the sink reports, per partition, the lowest event time of its records (an independent min per partition)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 2 }), fc.integer({ min: Date.UTC(2026, 2, 1), max: Date.UTC(2026, 2, 4) - 1 })), { minLength: 1, maxLength: 40 }), (recs) => {
        const messages = recs.map(([tok, ts], i) => ({
          venue: 'exchange-a' as const,
          received_at: new Date(ts).toISOString(),
          worker_id: 1,
          ingest_seq: String(i + 1),
          dedup_id: `h${i}`,
          event: { event_type: 'book' as const, market: '0xfeed', asset_id: `t${tok}`, timestamp: String(ts), hash: `h${i}`, bids: [], asks: [] },
        }));
        const want = new Map<string, number>();
        for (const [tok, ts] of recs) {
          const key = `t${tok} ${new Date(ts).toISOString().slice(0, 10)}`;
          want.set(key, Math.min(want.get(key) ?? Infinity, ts));
        }
        const got = new Map([...partitionsOf(messages as never).values()].map((p) => [`${p.asset} ${p.date}`, p.earliestMs]));
        expect(got).toEqual(want);
      }),
    );
  });

  it('merging two hints keeps the lower, and unknown wins', () => {
    fc.assert(
      fc.property(fc.option(fc.integer(), { nil: undefined }), fc.option(fc.integer(), { nil: undefined }), (a, b) => {
        expect(mergeEarliest(a, b)).toBe(a === undefined || b === undefined ? undefined : Math.min(a, b));
      }),
    );
  });
});
