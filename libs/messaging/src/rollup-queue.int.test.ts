import { afterAll, describe, expect, it } from 'vitest';
import { requireEnv, uniqueId } from '@booktape/testkit';
import { RollupQueue, type PartitionRef } from './rollup-queue.ts';
import { assetKey, rollupKeys, type AssetRef } from './rollup-keys.ts';
import { readClaimLeases } from './rollup-state.ts';

/**
 * Claim leases against the real Redis: a claim whose holder stops renewing it (a process
 * that died) is taken over after its lease, by the sweep or by the asset's next claim; a
 * holder that keeps renewing is never taken over, however long it runs; a holder that lost
 * its claim cannot end the claim that took over.
 */

const LEASE_MS = 800;
const queues: RollupQueue[] = [];

function queue(prefix: string, claimLeaseMs = LEASE_MS): RollupQueue {
  // A long debounce: no worker runs here, the jobs only have to exist.
  const q = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix, debounceMs: 600_000, claimLeaseMs });
  queues.push(q);
  return q;
}

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The asset's claim as its job makes it (`lockAndClaimMany` of it alone): its dates. The
 * lock taken with it goes at once: these tests are about the claim, and the asset's next
 * claim must not find it locked.
 */
async function claim(q: RollupQueue, a: AssetRef, claimId: string): Promise<string[]> {
  const got = await q.lockAndClaimMany(a, claimId, `lock-${claimId}`, 60_000, 0);
  expect(got).not.toBeNull();
  await q.redis.del(rollupKeys(q.prefix).lock(assetKey(a)));
  return got![0]!.claimed.map((c) => c.date);
}
const asset = { venue: 'exchange-a' as const, market: '0xfeed', asset: '42' };
const parts: PartitionRef[] = [
  { ...asset, date: '2026-03-01' },
  { ...asset, date: '2026-03-02' },
];

describe('rollup claim leases', () => {
  it('a claim nobody renews is taken over by the sweep; its old holder cannot end the new claim', async () => {
    const prefix = uniqueId('bt-lease');
    const dead = queue(prefix);
    const live = queue(prefix);
    await dead.notify(parts);
    expect(await claim(dead, asset, 'dead-run')).toEqual(['2026-03-01', '2026-03-02']);
    expect(await live.unsettled(parts)).toBe(2);

    // Within the lease: held, reported live, nothing to take over.
    expect(await live.takeOverExpiredClaims()).toEqual([]);
    expect(await readClaimLeases(live.redis, prefix)).toMatchObject({ claimed: 1, staleCount: 0, stale: [] });

    await sleep(LEASE_MS + 100);
    const leases = await readClaimLeases(live.redis, prefix);
    expect(leases).toMatchObject({ claimed: 1, staleCount: 1, stale: [asset] });
    expect(leases.stale[0]!.expiredAt).toBeLessThanOrEqual(leases.now);

    // The sweep's part: the dates go back to dirty, and the asset gets a job.
    expect(await live.takeOverExpiredClaims()).toEqual([asset]);
    expect(await readClaimLeases(live.redis, prefix)).toMatchObject({ claimed: 0, staleCount: 0 });
    const jobs = await live.queue.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.filter((j) => j.data.kind === 'asset' && j.data.asset === asset.asset).length).toBeGreaterThanOrEqual(1);
    expect(await live.unsettled(parts)).toBe(2);
    expect(await claim(live, asset, 'live-run')).toEqual(['2026-03-01', '2026-03-02']);

    // The dead run "wakes up" and ends its claim: the live run's dates stay claimed.
    await dead.release(asset, ['2026-03-01', '2026-03-02'], false, 'dead-run');
    expect(await dead.renewClaim(asset, 'dead-run')).toBe(false);
    expect(await live.unsettled(parts)).toBe(2);
    await live.release(asset, ['2026-03-01', '2026-03-02'], false, 'live-run');
    expect(await live.unsettled(parts)).toBe(0);
    expect(await readClaimLeases(live.redis, prefix)).toMatchObject({ claimed: 0, staleCount: 0 });
  });

  it('a claim renewed while its (slow) run goes on is never taken over', async () => {
    const prefix = uniqueId('bt-lease');
    const slow = queue(prefix);
    const other = queue(prefix);
    await slow.notify(parts);
    expect(await claim(slow, asset, 'slow-run')).toHaveLength(2);
    // Four leases long, renewed every third of a lease, while another process sweeps and
    // claims the asset as fast as it can.
    const until = Date.now() + 4 * LEASE_MS;
    let nextRenew = Date.now() + LEASE_MS / 3;
    while (Date.now() < until) {
      if (Date.now() >= nextRenew) {
        expect(await slow.renewClaim(asset, 'slow-run')).toBe(true);
        nextRenew += LEASE_MS / 3;
      }
      expect(await other.takeOverExpiredClaims()).toEqual([]);
      expect(await claim(other, asset, 'other-run')).toEqual([]);
      await sleep(50);
    }
    expect(await readClaimLeases(other.redis, prefix)).toMatchObject({ claimed: 1, staleCount: 0 });
    await slow.release(asset, ['2026-03-01', '2026-03-02'], false, 'slow-run');
    expect(await other.unsettled(parts)).toBe(0);
  });

  it("the asset's next claim takes over an expired claim itself, without waiting for the sweep", async () => {
    const prefix = uniqueId('bt-lease');
    const dead = queue(prefix);
    const live = queue(prefix);
    await dead.notify(parts.slice(0, 1));
    expect(await claim(dead, asset, 'dead-run')).toEqual(['2026-03-01']);
    await live.notify(parts.slice(1));
    // Within the lease: only the new date.
    expect(await claim(live, asset, 'live-1')).toEqual(['2026-03-02']);
    await live.release(asset, ['2026-03-02'], false, 'live-1');
    expect(await live.unsettled(parts)).toBe(1);
    await sleep(LEASE_MS + 100);
    expect(await claim(live, asset, 'live-2')).toEqual(['2026-03-01']);
    await live.release(asset, ['2026-03-01'], false, 'live-2');
    expect(await live.unsettled(parts)).toBe(0);
  });

  it('a failed run puts back only the dates it still holds', async () => {
    const prefix = uniqueId('bt-lease');
    const q = queue(prefix);
    await q.notify(parts);
    const dates = await claim(q, asset, 'run-1');
    await q.release(asset, dates, true, 'run-1');
    expect(await q.unsettled(parts)).toBe(2);
    expect(await claim(q, asset, 'run-2')).toEqual(dates);
    await q.release(asset, dates, false, 'run-2');
    expect(await q.unsettled(parts)).toBe(0);
  });

  it("lock and claim in one step: while another holds the asset's lock nothing is claimed and the dates stay pending as they were", async () => {
    const prefix = uniqueId('bt-lease');
    const q = queue(prefix);
    await q.notify(parts);
    const k = assetKey(asset);
    const since = await q.redis.zscore(rollupKeys(prefix).pending, k);
    await q.redis.set(rollupKeys(prefix).lock(k), 'back-fill', 'PX', 5000);
    expect(await q.lockAndClaimMany(asset, 'run-1', 'job-lock', 5000, 0)).toBeNull();
    expect(await q.redis.zscore(rollupKeys(prefix).pending, k)).toBe(since);
    expect(await q.redis.get(rollupKeys(prefix).lock(k))).toBe('back-fill');
    await q.redis.del(rollupKeys(prefix).lock(k));
    expect((await q.lockAndClaimMany(asset, 'run-2', 'job-lock', 5000, 0))?.map((c) => [assetKey(c.asset), c.claimed.map((h) => h.date).sort()])).toEqual([[assetKey(asset), ['2026-03-01', '2026-03-02']]]);
    expect(await q.redis.get(rollupKeys(prefix).lock(k))).toBe('job-lock');
    expect(await q.redis.pttl(rollupKeys(prefix).lock(k))).toBeGreaterThan(0);
    await q.release(asset, ['2026-03-01', '2026-03-02'], false, 'run-2');
    expect(await q.unsettled(parts)).toBe(0);
  });

  it('lock and claim of several assets in one step: other assets of the venue waiting with dirty dates, each under its lock, none locked elsewhere', async () => {
    const prefix = uniqueId('bt-lease');
    const q = queue(prefix);
    const keys = rollupKeys(prefix);
    const a2 = { ...asset, asset: '43' };
    const a3 = { ...asset, market: '0xbeef', asset: '44' };
    const locked = { ...asset, asset: '45' };
    const empty = { ...asset, asset: '46' };
    const b = { venue: 'exchange-b' as const, market: 'KXONE', asset: 'KXONE' };
    await q.notify([...parts, { ...a2, date: '2026-03-02' }, { ...a3, date: '2026-03-01' }, { ...locked, date: '2026-03-01' }, { ...b, date: '2026-03-01' }]);
    // Pending without dirty dates (a claim took them since): locked for no one, left alone.
    await q.redis.zadd(keys.pending, 'NX', Date.now(), assetKey(empty));
    await q.redis.set(keys.lock(assetKey(locked)), 'back-fill', 'PX', 5000);

    const got = await q.lockAndClaimMany(asset, 'run-1', 'job-lock', 5000, 15);
    // The asked asset first; the others in their pending order (equal times: by name).
    expect(got?.map((c) => [assetKey(c.asset), c.claimed.map((h) => h.date).sort()])).toEqual([
      [assetKey(asset), ['2026-03-01', '2026-03-02']],
      [assetKey(a3), ['2026-03-01']],
      [assetKey(a2), ['2026-03-02']],
    ]);
    for (const a of [asset, a2, a3]) expect(await q.redis.get(keys.lock(assetKey(a)))).toBe('job-lock');
    expect(await q.redis.get(keys.lock(assetKey(locked)))).toBe('back-fill');
    expect(await q.redis.get(keys.lock(assetKey(empty)))).toBeNull();
    expect(await q.redis.get(keys.lock(assetKey(b)))).toBeNull();
    // The locked asset and the other venue's stay dirty and pending for their own jobs.
    expect(await q.unsettled([{ ...locked, date: '2026-03-01' }, { ...b, date: '2026-03-01' }])).toBe(2);
    expect(await q.redis.zscore(keys.pending, assetKey(locked))).not.toBeNull();
    expect(await q.redis.zscore(keys.pending, assetKey(b))).not.toBeNull();
    // A run that failed one asset: its dates dirty again, the others done.
    await q.release(a2, ['2026-03-02'], true, 'run-1');
    await q.release(asset, ['2026-03-01', '2026-03-02'], false, 'run-1');
    await q.release(a3, ['2026-03-01'], false, 'run-1');
    expect(await q.unsettled([...parts, { ...a3, date: '2026-03-01' }])).toBe(0);
    expect(await q.unsettled([{ ...a2, date: '2026-03-02' }])).toBe(1);
    expect(await q.redis.zscore(keys.pending, assetKey(a2))).not.toBeNull();

    // At most `more` others; and nothing at all while another holds the asked asset's lock.
    await q.redis.del(keys.lock(assetKey(asset)), keys.lock(assetKey(a2)), keys.lock(assetKey(locked)));
    await q.redis.set(keys.lock(assetKey(a3)), 'other', 'PX', 5000);
    expect(await q.lockAndClaimMany(a3, 'run-2', 'job-lock', 5000, 15)).toBeNull();
    expect((await q.lockAndClaimMany(asset, 'run-3', 'job-lock', 5000, 1))?.map((c) => c.claimed.length)).toEqual([0, 1]);
  });

  it('a claim left without a lease (made before leases existed) gets one, and is taken over when it runs out', async () => {
    const prefix = uniqueId('bt-lease');
    const q = queue(prefix);
    const k = `${prefix}:rollup:claimed:exchange-a|0xfeed|42`;
    await q.redis.hset(k, '2026-03-01', '17');
    expect(await q.unsettled(parts)).toBe(1);
    expect(await q.takeOverExpiredClaims()).toEqual([]);
    expect(await readClaimLeases(q.redis, prefix)).toMatchObject({ claimed: 1, staleCount: 0 });
    await sleep(LEASE_MS + 100);
    expect(await q.takeOverExpiredClaims()).toEqual([asset]);
    expect(await claim(q, asset, 'run')).toEqual(['2026-03-01']);
    await q.release(asset, ['2026-03-01'], false, 'run');
    expect(await q.unsettled(parts)).toBe(0);
  });
});

describe('stored-partition notifications', () => {
  const assetJobs = async (q: RollupQueue) => (await q.queue.getJobs(['waiting', 'delayed', 'prioritized'])).filter((j) => j.data.kind === 'asset');

  it('the dates are dirty once notify resolves; the jobs follow, one per asset however many notifications', async () => {
    const q = queue(uniqueId('bt-notify'));
    const others = Array.from({ length: 30 }, (_, i) => ({ venue: 'exchange-a' as const, market: `0xm${i % 7}`, asset: `t${i}`, date: '2026-03-01' }));
    // Sent at once, as batches of several partitions of the sink do.
    await Promise.all([q.notify(parts), q.notify(others), q.notify(others.slice(3, 9).map((p) => ({ ...p, date: '2026-03-02' })))]);
    expect(await q.unsettled([...parts, ...others])).toBe(parts.length + others.length);
    expect(await q.redis.zcard(rollupKeys(q.prefix).pending)).toBe(1 + others.length);
    await q.jobsAdded();
    for (let k = 0; k < 3; k++) await q.notify([...others, ...parts]);
    await q.jobsAdded();
    const jobs = await assetJobs(q);
    expect(jobs.map((j) => `${j.data.kind === 'asset' && assetKey(j.data)}`).sort()).toEqual([asset, ...others].map(assetKey).sort());
    for (const j of jobs) expect(j.opts.delay).toBe(600_000);
  });

  it('an asset left pending without a job (its notifier stopped after recording the dates) gets one from enqueueStalePending; a fresh one is left to its own job', async () => {
    const q = queue(uniqueId('bt-notify'));
    const keys = rollupKeys(q.prefix);
    const lost = { venue: 'exchange-b' as const, market: 'KXLOST', asset: 'KXLOST' };
    // What recordDirty leaves when the process stops before the job is added.
    await q.redis.multi().zadd(keys.dirty(assetKey(lost)), 'NX', Date.now() - 60_000, '2026-03-01').zadd(keys.pending, 'NX', Date.now() - 60_000, assetKey(lost)).exec();
    await q.notify(parts);
    await q.jobsAdded();
    expect((await assetJobs(q)).map((j) => j.data.kind === 'asset' && j.data.asset)).toEqual(['42']);

    expect(await q.enqueueStalePending(30_000)).toBe(1);
    const jobs = await assetJobs(q);
    expect(jobs.map((j) => j.data.kind === 'asset' && j.data.asset).sort()).toEqual(['42', 'KXLOST']);
    expect(jobs.find((j) => j.data.kind === 'asset' && j.data.asset === 'KXLOST')!.opts.delay ?? 0).toBe(0);
    // Asked again (every sweep): still one job each.
    expect(await q.enqueueStalePending(0)).toBe(2);
    expect((await assetJobs(q)).length).toBe(2);
    // Once claimed, the asset is no longer pending: nothing to give a job to.
    expect(await claim(q, lost, 'run')).toEqual(['2026-03-01']);
    expect(await claim(q, asset, 'run')).toHaveLength(2);
    expect(await q.enqueueStalePending(0)).toBe(0);
  });
});

describe("an asset's summaries version", () => {
  it('counts up by one per bump, and a lost counter starts again at a random point, not where it began', async () => {
    const q = queue(uniqueId('bt-version'));
    expect(await q.version(asset)).toBe(0);
    const first = await q.bumpVersion(asset);
    expect(await q.bumpVersion(asset)).toBe(first + 1);
    expect(await q.version(asset)).toBe(first + 1);
    // Redis lost its data (a restart without persistence): the counts already seen must not come round again.
    const starts = new Set<number>();
    for (let k = 0; k < 3; k++) {
      await q.redis.del(rollupKeys(q.prefix).version(assetKey(asset)));
      starts.add(await q.bumpVersion(asset));
    }
    expect(starts.size).toBe(3);
    expect(starts.has(first)).toBe(false);
  });
});

describe('the past-day hold', () => {
  const hinted = (date: string, a: AssetRef = asset): PartitionRef => ({ ...a, date, earliestMs: Date.parse(`${date}T12:00:00Z`) });
  const other = { venue: 'exchange-a' as const, market: '0xfeed', asset: '43' };
  const hold = (quietMs = 2000, maxMs = 60_000) => ({ closedBefore: '2026-03-05', quietMs, maxMs });
  const asClaims = (got: Awaited<ReturnType<RollupQueue['lockAndClaimMany']>>) => (Array.isArray(got) ? got.map((c) => [assetKey(c.asset), c.claimed.map((h) => h.date).sort()]) : got);

  it('a past day fed by the sink is not claimed (nor locked) until the sink stops storing records of past days; then it is claimed whole', async () => {
    const prefix = uniqueId('bt-hold');
    const q = queue(prefix);
    const k = assetKey(asset);
    await q.notify([hinted('2026-03-01'), hinted('2026-03-02')]);
    const held = await q.lockAndClaimMany(asset, 'run-1', 'lock-1', 5000, 0, hold(600));
    expect(held).toEqual({ heldForMs: expect.any(Number) });
    expect((held as { heldForMs: number }).heldForMs).toBeGreaterThan(0);
    expect((held as { heldForMs: number }).heldForMs).toBeLessThanOrEqual(600);
    expect(await q.redis.exists(rollupKeys(prefix).lock(k))).toBe(0);
    expect(await q.unsettled([hinted('2026-03-01'), hinted('2026-03-02')])).toBe(2);
    await sleep(400);
    // Notified again: the quiet time starts again.
    await q.notify([hinted('2026-03-02')]);
    await sleep(400);
    expect(await q.lockAndClaimMany(asset, 'run-2', 'lock-2', 5000, 0, hold(600))).toEqual({ heldForMs: expect.any(Number) });
    await sleep(300);
    expect(asClaims(await q.lockAndClaimMany(asset, 'run-3', 'lock-3', 5000, 0, hold(600)))).toEqual([[k, ['2026-03-01', '2026-03-02']]]);
    // The claim forgot the notification times: the next notification starts a new hold.
    await q.release(asset, ['2026-03-01', '2026-03-02'], false, 'run-3');
    await q.redis.del(rollupKeys(prefix).lock(k));
    await q.notify([hinted('2026-03-01')]);
    expect(await q.lockAndClaimMany(asset, 'run-4', 'lock-4', 5000, 0, hold(600))).toEqual({ heldForMs: expect.any(Number) });
  });

  it('is never longer than the most, counted from the first notification since the last claim', async () => {
    const prefix = uniqueId('bt-hold');
    const q = queue(prefix);
    await q.notify([hinted('2026-03-01')]);
    for (let i = 0; i < 4; i++) {
      await sleep(200);
      await q.notify([hinted('2026-03-01')]);
      const got = await q.lockAndClaimMany(asset, `run-${i}`, `lock-${i}`, 5000, 0, hold(10_000, 1000));
      if (Array.isArray(got)) throw new Error(`claimed after ${(i + 1) * 200} ms`);
      expect(got!.heldForMs).toBeLessThanOrEqual(1000 - (i + 1) * 200 + 50);
    }
    await sleep(300);
    expect(asClaims(await q.lockAndClaimMany(asset, 'run-x', 'lock-x', 5000, 0, hold(10_000, 1000)))).toEqual([[assetKey(asset), ['2026-03-01']]]);
  });

  it("not held: today's (or a not yet closed) date beside the past one, a date without a hint (a replay's end, the sweep's close), or no hold asked", async () => {
    const prefix = uniqueId('bt-hold');
    const q = queue(prefix);
    const k = assetKey(asset);
    const lock = rollupKeys(prefix).lock(k);
    const claimed = async (run: string, h: ReturnType<typeof hold> | undefined) => {
      const got = asClaims(await q.lockAndClaimMany(asset, run, run, 5000, 0, h));
      if (Array.isArray(got)) {
        await q.release(asset, got[0]![1] as string[], false, run);
        await q.redis.del(lock);
      }
      return got;
    };
    await q.notify([hinted('2026-03-01'), hinted('2026-03-05')]);
    expect(await claimed('r1', hold())).toEqual([[k, ['2026-03-01', '2026-03-05']]]);
    await q.notify([hinted('2026-03-01')]);
    await q.markReplayed([hinted('2026-03-01')]);
    expect(await claimed('r2', hold())).toEqual([[k, ['2026-03-01']]]);
    await q.notify([hinted('2026-03-01')]);
    await q.markDirty([{ ...asset, date: '2026-03-02' }]);
    expect(await claimed('r3', hold())).toEqual([[k, ['2026-03-01', '2026-03-02']]]);
    await q.notify([hinted('2026-03-01')]);
    expect(await claimed('r4', undefined)).toEqual([[k, ['2026-03-01']]]);
    expect(await claimed('r5', { ...hold(), quietMs: 0 })).toEqual([[k, []]]);
  });

  it("a held asset is left out of another asset's batch, unlocked, and its dates stay dirty", async () => {
    const prefix = uniqueId('bt-hold');
    const q = queue(prefix);
    await q.notify([hinted('2026-03-01', other)]);
    await q.notify([hinted('2026-03-09')]);
    expect(asClaims(await q.lockAndClaimMany(asset, 'r1', 'l1', 5000, 3, hold()))).toEqual([[assetKey(asset), ['2026-03-09']]]);
    expect(await q.redis.exists(rollupKeys(prefix).lock(assetKey(other)))).toBe(0);
    expect(await q.unsettled([hinted('2026-03-01', other)])).toBe(1);
    // Without the hold, the same batch takes it.
    await q.release(asset, ['2026-03-09'], false, 'r1');
    await q.redis.del(rollupKeys(prefix).lock(assetKey(asset)));
    await q.notify([hinted('2026-03-09')]);
    expect(asClaims(await q.lockAndClaimMany(asset, 'r2', 'l2', 5000, 3))).toEqual([
      [assetKey(asset), ['2026-03-09']],
      [assetKey(other), ['2026-03-01']],
    ]);
  });
});
