import { describe, expect, it } from 'vitest';
import { DelayedError } from 'bullmq';
import { silentLogger } from '@booktape/config';
import type { AssetRef, PartitionRef } from '@booktape/messaging';
import type { DayResult } from '@booktape/summaries';
import { ClosedDaySettle } from './closed-day-settle.ts';
import { STALE_PENDING_MS, isClosedDate, runAssetJob, runBackfillJob, runSweepJob, type JobContext } from './jobs.ts';

const A: AssetRef = { venue: 'exchange-a', market: '0xm', asset: 'tok' };
const day = (date: string): DayResult => ({ date, outcome: 'full', applied: 1, endStateChanged: false, alerts: [], nextDataDate: null });

/** Fakes of the queue, roller, repository and locks, with a log of what happened in order. */
function fakes(
  o: { locked?: boolean; dirty?: string[]; failOn?: string; dataDates?: Record<string, string[]>; assets?: string[]; others?: Record<string, string[]>; failAsset?: string; hints?: Record<string, number> } = {},
) {
  const hinted: string[] = [];
  const marked: PartitionRef[] = [];
  const events: string[] = [];
  const runs: Array<{ a: AssetRef; results: DayResult[] }> = [];
  const ctx: JobContext = {
    queue: {
      lockAndClaimMany: async (a, claimId, _lockId, _ms, more) => {
        if (o.locked) return null;
        events.push(`lock ${a.asset}`, `claim ${claimId.split(':')[0]}`);
        const claimedOf = (asset: string, dates: string[]) => dates.map((date) => ({ date, earliestMs: o.hints?.[`${asset} ${date}`] ?? null }));
        const others = Object.entries(o.others ?? {}).slice(0, more).map(([asset, dates]) => ({ asset: { ...A, asset }, dates, claimed: claimedOf(asset, dates) }));
        for (const x of others) events.push(`lock ${x.asset.asset}`);
        return [{ asset: a, dates: [...(o.dirty ?? [])], claimed: claimedOf(a.asset, o.dirty ?? []) }, ...others];
      },
      release: async (a, dates, failed) => void events.push(`release${a.asset === A.asset ? '' : ` ${a.asset}`} ${dates.join(',')} ${failed ? 'failed' : 'done'}`),
      enqueueAsset: async (_k, a, delay) => void events.push(`enqueue ${a.asset}${delay === undefined ? '' : ` in ${delay}`}`),
      renewClaim: async () => true,
      markDirty: async (parts: readonly PartitionRef[]) => {
        events.push(`dirty ${parts.length}`);
        marked.push(...parts);
      },
      enqueueStalePending: async (ms) => (events.push(`stale pending ${ms}`), 0),
      takeOverExpiredClaims: async () => [A],
    },
    roller: {
      rollFrom: async (a, date, force, earliestMs) => {
        events.push(`roll ${a.asset} ${date}${force ? ' forced' : ''}`);
        hinted.push(`${a.asset} ${date} ${earliestMs ?? 'unknown'}`);
        if (date === o.failOn) throw new Error('engine down');
        return [day(date)];
      },
      rollMany: async (keys, date, earliestMs) => {
        events.push(`roll ${keys.map((k) => k.asset).join('+')} ${date}`);
        keys.forEach((k, i) => hinted.push(`${k.asset} ${date} ${earliestMs?.[i] ?? 'unknown'}`));
        return keys.map((k) => (k.asset === o.failAsset || date === o.failOn ? { error: new Error(`${k.asset} failed`) } : { results: [day(date)] }));
      },
    },
    repo: {
      assetsOf: async () => o.assets ?? [],
      dataDates: async (a) => o.dataDates?.[a.asset] ?? [],
      openDaysBefore: async () => [{ ...A, date: '2026-04-01' }],
      outdatedDays: async () => [{ ...A, date: '2026-03-01' }],
      recentPartitions: async () => [{ ...A, date: '2026-04-02' }],
    },
    locks: {
      ttlMs: 30_000,
      held: (a) => async () => void events.push(`unlock ${a.asset}`),
      waitLock: async (a) => {
        events.push(`lock ${a.asset}`);
        return async () => void events.push(`unlock ${a.asset}`);
      },
    },
    afterRun: (a, results) => void runs.push({ a, results }),
    log: silentLogger(),
    opts: { closeGraceMs: 60_000, sweepEveryMs: 60_000, claimLeaseMs: 30_000, batchAssets: 4 },
    now: () => Date.UTC(2026, 3, 2, 0, 0, 30),
  };
  const progress: unknown[] = [];
  const delayed: number[] = [];
  const job = { id: 'j1', moveToDelayed: async (ts: number) => void delayed.push(ts), updateProgress: async (p: unknown) => void progress.push(p) };
  return { ctx, events, runs, job, progress, delayed, hinted, marked };
}

describe('asset job', () => {
  it('rolls the claimed dates in date order under the asset lock, then releases them as done', async () => {
    const f = fakes({ dirty: ['2026-04-03', '2026-04-01', '2026-04-02'] });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.events).toEqual(['lock tok', 'claim j1', 'roll tok 2026-04-01', 'roll tok 2026-04-02', 'roll tok 2026-04-03', 'release 2026-04-01,2026-04-02,2026-04-03 done', 'unlock tok']);
    expect(f.runs.map((r) => r.results[0]!.date)).toEqual(['2026-04-01', '2026-04-02', '2026-04-03']);
  });

  it("hands each claimed date's late-data hint to the roller with it, alone or batched; a date without one goes unknown", async () => {
    const f = fakes({
      dirty: ['2026-04-01', '2026-04-02'],
      others: { t2: ['2026-04-02'] },
      hints: { 'tok 2026-04-01': 1_000, 't2 2026-04-02': 2_000 },
    });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.hinted).toEqual(['tok 2026-04-01 1000', 'tok 2026-04-02 unknown', 't2 2026-04-02 2000']);
  });

  it('releases the dates as failed (dirty again) when a run throws, unlocks, and fails the job', async () => {
    const f = fakes({ dirty: ['2026-04-01', '2026-04-02'], failOn: '2026-04-01' });
    await expect(runAssetJob(f.ctx, f.job, A, undefined)).rejects.toThrow('engine down');
    expect(f.events.slice(-2)).toEqual(['release 2026-04-01,2026-04-02 failed', 'unlock tok']);
  });

  it('with nothing claimed, only locks and unlocks; an asset locked by another job is tried again in 500 ms', async () => {
    const f = fakes();
    await runAssetJob(f.ctx, f.job, A, undefined);
    expect(f.events).toEqual(['lock tok', 'claim j1', 'unlock tok']);
    const g = fakes({ locked: true });
    await expect(runAssetJob(g.ctx, g.job, A, 'tok-1')).rejects.toBeInstanceOf(DelayedError);
    expect(g.delayed).toEqual([Date.UTC(2026, 3, 2, 0, 0, 30) + 500]);
    expect(g.events).toEqual([]);
  });
});

describe('asset job with other assets of its venue', () => {
  it('rolls the assets of each date in one run, date after date, and releases each asset as done', async () => {
    const f = fakes({ dirty: ['2026-04-02', '2026-04-01'], others: { t2: ['2026-04-02'], t3: ['2026-04-01', '2026-04-03'] } });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.events.slice(0, 6)).toEqual(['lock tok', 'claim j1', 'lock t2', 'lock t3', 'roll tok+t3 2026-04-01', 'roll tok+t2 2026-04-02']);
    // A date only one asset holds is rolled alone.
    expect(f.events[6]).toBe('roll t3 2026-04-03');
    expect(f.events.slice(7, 10).sort()).toEqual(['release 2026-04-01,2026-04-02 done', 'release t2 2026-04-02 done', 'release t3 2026-04-01,2026-04-03 done']);
    expect(f.events.slice(10).sort()).toEqual(['unlock t2', 'unlock t3', 'unlock tok']);
    expect(f.runs.map((r) => `${r.a.asset} ${r.results[0]!.date}`)).toEqual(['tok 2026-04-01', 't3 2026-04-01', 'tok 2026-04-02', 't2 2026-04-02', 't3 2026-04-03']);
  });

  it('an asset whose run failed gets its dates dirty again and a job of its own; the others are done and the job succeeds', async () => {
    const f = fakes({ dirty: ['2026-04-01'], others: { t2: ['2026-04-01', '2026-04-02'], t3: ['2026-04-01'] }, failAsset: 't2' });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    // t2's later date is not rolled once its earlier one failed (a day starts from the one before).
    expect(f.events.filter((e) => e.startsWith('roll'))).toEqual(['roll tok+t2+t3 2026-04-01']);
    const i = f.events.indexOf('release t2 2026-04-01,2026-04-02 failed');
    expect(i).toBeGreaterThan(0);
    expect(f.events.indexOf('enqueue t2')).toBeGreaterThan(i);
    expect(f.events).toContain('release 2026-04-01 done');
    expect(f.events).toContain('release t3 2026-04-01 done');
    expect(f.events.filter((e) => e.startsWith('unlock')).sort()).toEqual(['unlock t2', 'unlock t3', 'unlock tok']);
    expect(f.runs.map((r) => r.a.asset).sort()).toEqual(['t3', 'tok']);
  });

  it('fails the job when its own asset failed, the others standing', async () => {
    const f = fakes({ dirty: ['2026-04-01'], others: { t2: ['2026-04-01'] }, failAsset: 'tok' });
    await expect(runAssetJob(f.ctx, f.job, A, 'tok-1')).rejects.toThrow('tok failed');
    expect(f.events).toContain('release 2026-04-01 failed');
    expect(f.events).toContain('release t2 2026-04-01 done');
    expect(f.events).not.toContain('enqueue tok');
    expect(f.events.filter((e) => e.startsWith('unlock')).sort()).toEqual(['unlock t2', 'unlock tok']);
  });

  it('with nothing of its own claimed, still rolls the others it claimed', async () => {
    const f = fakes({ others: { t2: ['2026-04-01'] } });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.events).toEqual(['lock tok', 'claim j1', 'lock t2', 'roll t2 2026-04-01', 'release t2 2026-04-01 done', 'unlock tok', 'unlock t2']);
  });
});

describe('closed days fed again within their settle window (a replay of a past day)', () => {
  const NOW = Date.UTC(2026, 3, 2, 0, 0, 30);
  // With a close grace of 60 s at NOW: 2026-03-30 is closed, 2026-04-01 is not yet, 2026-04-02 is open.
  const CLOSED = '2026-03-30';
  const withSettle = (o: Parameters<typeof fakes>[0]) => {
    const f = fakes(o);
    f.ctx.settle = new ClosedDaySettle();
    let t = NOW;
    f.ctx.now = () => t;
    return { ...f, settle: f.ctx.settle, at: (ms: number) => void (t = ms) };
  };

  it('knows a closed date as the roller does: ended at least the close grace ago', () => {
    expect(isClosedDate(CLOSED, NOW, 60_000)).toBe(true);
    expect(isClosedDate('2026-04-01', NOW, 60_000)).toBe(false);
    expect(isClosedDate('2026-04-01', Date.UTC(2026, 3, 2, 0, 1), 60_000)).toBe(true);
    expect(isClosedDate('2026-04-02', NOW, 0)).toBe(false);
  });

  it('a rebuilt closed date claimed again with a hint inside its window goes back to dirty, the rest is rolled, and the job waits for the window', async () => {
    const f = withSettle({ dirty: [CLOSED, '2026-04-02'], hints: { [`tok ${CLOSED}`]: 5, 'tok 2026-04-02': 6 } });
    f.settle.rebuilt(`exchange-a|0xm|tok|${CLOSED}`, NOW - 100, 1000);
    await expect(runAssetJob(f.ctx, f.job, A, 'tok-1')).rejects.toBeInstanceOf(DelayedError);
    expect(f.events).toEqual(['lock tok', 'claim j1', `release ${CLOSED} failed`, 'roll tok 2026-04-02', 'release 2026-04-02 done', 'unlock tok']);
    // The window: three times the rebuild's 1 s, from its end.
    expect(f.delayed).toEqual([NOW - 100 + 3000]);
  });

  it('the first run of a closed date opens its window: the next hinted claim within it is deferred, one after it is rolled', async () => {
    const f = withSettle({ dirty: [CLOSED], hints: { [`tok ${CLOSED}`]: 5 } });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.events.filter((e) => e.startsWith('roll'))).toEqual([`roll tok ${CLOSED}`]);
    f.at(NOW + 500);
    await expect(runAssetJob(f.ctx, f.job, A, 'tok-1')).rejects.toBeInstanceOf(DelayedError);
    // The fake rebuild took no time: the window is the 1 s floor.
    expect(f.delayed).toEqual([NOW + 1000]);
    expect(f.events.filter((e) => e.startsWith('roll') || e.startsWith('release'))).toEqual([`roll tok ${CLOSED}`, `release ${CLOSED} done`, `release ${CLOSED} failed`]);
    // The deferred date came back dirty without its hint: the delayed job, inside the window still, defers it again ...
    const g = { ...f, ctx: { ...f.ctx, queue: { ...f.ctx.queue } } };
    f.at(NOW + 900);
    const noHint = fakes({ dirty: [CLOSED] }).ctx.queue.lockAndClaimMany;
    g.ctx.queue.lockAndClaimMany = async (...a) => (f.events.push('claim again'), noHint(...a));
    await expect(runAssetJob(g.ctx, f.job, A, 'tok-1')).rejects.toBeInstanceOf(DelayedError);
    expect(f.delayed).toEqual([NOW + 1000, NOW + 1000]);
    // ... and once it ended, rolls it.
    f.at(NOW + 1000);
    await runAssetJob(g.ctx, f.job, A, 'tok-1');
    expect(f.events.filter((e) => e.startsWith('roll'))).toEqual([`roll tok ${CLOSED}`, `roll tok ${CLOSED}`]);
  });

  it('rolls as before: an open day, a claim without a hint (a sweep), a window that ended, a date this process did not rebuild', async () => {
    const cases: Array<[string, (f: ReturnType<typeof withSettle>) => void, Parameters<typeof fakes>[0]]> = [
      ['open day', (f) => f.settle.rebuilt('exchange-a|0xm|tok|2026-04-01', NOW, 1000), { dirty: ['2026-04-01'], hints: { 'tok 2026-04-01': 5 } }],
      ['no hint', (f) => f.settle.rebuilt(`exchange-a|0xm|tok|${CLOSED}`, NOW, 1000), { dirty: [CLOSED] }],
      ['window ended', (f) => f.settle.rebuilt(`exchange-a|0xm|tok|${CLOSED}`, NOW - 3000, 1000), { dirty: [CLOSED], hints: { [`tok ${CLOSED}`]: 5 } }],
      ['another asset rebuilt', (f) => f.settle.rebuilt(`exchange-a|0xm|t2|${CLOSED}`, NOW, 1000), { dirty: [CLOSED], hints: { [`tok ${CLOSED}`]: 5 } }],
    ];
    for (const [name, prep, o] of cases) {
      const f = withSettle(o);
      prep(f);
      await runAssetJob(f.ctx, f.job, A, 'tok-1');
      expect(f.events.filter((e) => e.startsWith('roll') || e.startsWith('release')), name).toEqual([`roll tok ${o!.dirty![0]}`, `release ${o!.dirty![0]} done`]);
      expect(f.delayed, name).toEqual([]);
    }
  });

  it('another asset of a batched claim: its deferred date goes back to dirty and it gets a job due when its window ends; this job completes', async () => {
    const f = withSettle({ dirty: ['2026-04-02'], others: { t2: [CLOSED, '2026-04-02'], t3: [CLOSED] }, hints: { [`t2 ${CLOSED}`]: 5, [`t3 ${CLOSED}`]: 5 } });
    f.settle.rebuilt(`exchange-a|0xm|t2|${CLOSED}`, NOW, 2000);
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.delayed).toEqual([]);
    const i = f.events.indexOf(`release t2 ${CLOSED} failed`);
    expect(i).toBeGreaterThan(0);
    expect(f.events.indexOf('enqueue t2 in 6000')).toBeGreaterThan(i);
    expect(f.events.filter((e) => e.startsWith('roll'))).toEqual([`roll t3 ${CLOSED}`, 'roll tok+t2 2026-04-02']);
    expect(f.events.filter((e) => e.includes('done')).sort()).toEqual(['release 2026-04-02 done', 'release t2 2026-04-02 done', `release t3 ${CLOSED} done`]);
    expect(f.events.filter((e) => e.startsWith('unlock')).sort()).toEqual(['unlock t2', 'unlock t3', 'unlock tok']);
  });

  it('the window is three rebuilds long, between 1 s and 15 s; the oldest entries are forgotten past the cap', () => {
    const s = new ClosedDaySettle({ minMs: 1000, maxMs: 15_000, maxEntries: 2 });
    expect([0, 100, 2000, 5000, 60_000].map((ms) => s.windowMs(ms))).toEqual([1000, 1000, 6000, 15_000, 15_000]);
    s.rebuilt('a', 0, 0);
    s.rebuilt('b', 0, 0);
    s.rebuilt('a', 10, 0);
    s.rebuilt('c', 0, 0);
    expect(s.size).toBe(2);
    expect(s.deferUntil('b', 1, true)).toBeNull();
    expect(s.deferUntil('a', 1, true)).toBe(1010);
    expect(s.deferUntil('c', 999, false)).toBeNull();
    expect(s.deferUntil('c', 1000, true)).toBeNull();
  });
});

describe('backfill job', () => {
  it('rebuilds (forced) every data date of every asset, asset by asset under its lock, with progress', async () => {
    const f = fakes({ assets: ['t1', 't2'], dataDates: { t1: ['2026-04-01', '2026-04-02'], t2: ['2026-04-02'] } });
    const out = await runBackfillJob(f.ctx, f.job, { kind: 'backfill', venue: 'exchange-a', market: '0xm', from: '2026-04-01', to: '2026-04-02' } as never);
    expect(out).toEqual({ days: 3, assets: 2 });
    expect(f.events).toEqual(['lock t1', 'roll t1 2026-04-01 forced', 'roll t1 2026-04-02 forced', 'unlock t1', 'lock t2', 'roll t2 2026-04-02 forced', 'unlock t2']);
    expect(f.progress).toEqual([
      { done: 0, total: 3 },
      { done: 1, total: 3, asset: 't1', date: '2026-04-01' },
      { done: 2, total: 3, asset: 't1', date: '2026-04-02' },
      { done: 3, total: 3, asset: 't2', date: '2026-04-02' },
    ]);
  });

  it('an exchange B back-fill has one asset, its ticker', async () => {
    const f = fakes({ dataDates: { KX: ['2026-04-01'] } });
    expect(await runBackfillJob(f.ctx, f.job, { kind: 'backfill', venue: 'exchange-b', market: 'KX', from: '2026-04-01', to: '2026-04-01' } as never)).toEqual({ days: 1, assets: 1 });
  });
});

describe('sweep job', () => {
  it('marks open, outdated and recently stored partitions dirty, gives assets pending without a job one, then takes over expired claims', async () => {
    const f = fakes();
    expect(await runSweepJob(f.ctx)).toEqual({ marked: 3, takenOver: 1 });
    expect(f.events).toEqual(['dirty 3', `stale pending ${STALE_PENDING_MS}`]);
  });

  it('marks without a late-data hint, even when the repository hands richer rows: each marked day is counted whole', async () => {
    const f = fakes();
    f.ctx.repo.recentPartitions = async () => [{ ...A, date: '2026-04-02', earliestMs: Date.UTC(2026, 3, 2, 23) } as never];
    await runSweepJob(f.ctx);
    expect(f.marked.map((p) => p.date)).toEqual(['2026-04-01', '2026-03-01', '2026-04-02']);
    for (const p of f.marked) expect(p.earliestMs).toBeUndefined();
  });
});
