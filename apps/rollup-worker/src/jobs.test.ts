import { describe, expect, it } from 'vitest';
import { DelayedError } from 'bullmq';
import { silentLogger } from '@booktape/config';
import { STORED_RECENTLY_MS, type AssetRef, type PartitionRef, type PastDayHold } from '@booktape/messaging';
import type { DayResult } from '@booktape/summaries';
import { STALE_PENDING_MS, runAssetJob, runBackfillJob, runSweepJob, type JobContext } from './jobs.ts';

const A: AssetRef = { venue: 'exchange-a', market: '0xm', asset: 'tok' };
const day = (date: string): DayResult => ({ date, outcome: 'full', applied: 1, endStateChanged: false, alerts: [], nextDataDate: null });

/** Fakes of the queue, roller, repository and locks, with a log of what happened in order. */
function fakes(
  o: { locked?: boolean; heldForMs?: number; dirty?: string[]; failOn?: string; dataDates?: Record<string, string[]>; assets?: string[]; others?: Record<string, string[]>; failAsset?: string; hints?: Record<string, number> } = {},
) {
  const hinted: string[] = [];
  const marked: PartitionRef[] = [];
  const events: string[] = [];
  const runs: Array<{ a: AssetRef; results: DayResult[] }> = [];
  const ctx: JobContext = {
    queue: {
      lockAndClaimMany: (async (a: AssetRef, claimId: string, _lockId: string, _ms: number, more: number, hold?: PastDayHold) => {
        if (o.locked) return null;
        if (hold) events.push(`hold ${hold.closedBefore} ${hold.quietMs} ${hold.maxMs}`);
        if (o.heldForMs !== undefined && hold) return { heldForMs: o.heldForMs };
        events.push(`lock ${a.asset}`, `claim ${claimId.split(':')[0]}`);
        const claimedOf = (asset: string, dates: string[]) => dates.map((date) => ({ date, earliestMs: o.hints?.[`${asset} ${date}`] ?? null }));
        const others = Object.entries(o.others ?? {}).slice(0, more).map(([asset, dates]) => ({ asset: { ...A, asset }, claimed: claimedOf(asset, dates) }));
        for (const x of others) events.push(`lock ${x.asset.asset}`);
        return [{ asset: a, claimed: claimedOf(a.asset, o.dirty ?? []) }, ...others];
      }) as JobContext['queue']['lockAndClaimMany'],
      release: async (a, dates, failed) => void events.push(`release${a.asset === A.asset ? '' : ` ${a.asset}`} ${dates.join(',')} ${failed ? 'failed' : 'done'}`),
      enqueueAsset: async (_k, a) => void events.push(`enqueue ${a.asset}`),
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
  it('asks the claim for the past-day hold (days closed before now less the grace); a held asset rolls nothing and its job waits until it may be claimed', async () => {
    const f = fakes({ heldForMs: 4000, dirty: ['2026-03-01'] });
    f.ctx.opts = { ...f.ctx.opts, pastDayQuietMs: 10_000, pastDayHoldMaxMs: 300_000 };
    await expect(runAssetJob(f.ctx, f.job, A, 'tok')).rejects.toBeInstanceOf(DelayedError);
    // 00:00:30 with a 60 s grace: 2026-04-01 has not closed yet, so only dates before it are held.
    expect(f.events).toEqual(['hold 2026-04-01 10000 300000']);
    expect(f.delayed).toEqual([Date.UTC(2026, 3, 2, 0, 0, 34)]);
    expect(f.runs).toEqual([]);
  });

  it('without a quiet time no hold is asked', async () => {
    const f = fakes({ heldForMs: 4000, dirty: ['2026-03-01'] });
    await runAssetJob(f.ctx, f.job, A, 'tok');
    expect(f.events.some((e) => e.startsWith('hold'))).toBe(false);
    expect(f.runs.map((r) => r.results.map((d) => d.date))).toEqual([['2026-03-01']]);
  });

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

  it('marks open and outdated days without a hint (to close them) and recent ones with the stored-recently hint, even when the repository hands richer rows: each marked day is counted whole', async () => {
    const f = fakes();
    f.ctx.repo.recentPartitions = async () => [{ ...A, date: '2026-04-02', earliestMs: Date.UTC(2026, 3, 2, 23) } as never];
    await runSweepJob(f.ctx);
    expect(f.marked.map((p) => [p.date, p.earliestMs])).toEqual([
      ['2026-04-01', undefined],
      ['2026-03-01', undefined],
      ['2026-04-02', STORED_RECENTLY_MS],
    ]);
    // Below every covered time: the run counts.
    expect(STORED_RECENTLY_MS).toBeLessThan(Date.UTC(1970, 0, 2));
  });

  it('leaves a past open day that was stored to recently open: it is marked as recent, not to close', async () => {
    const f = fakes();
    f.ctx.repo.openDaysBefore = async () => [
      { ...A, date: '2026-04-01' },
      { ...A, date: '2026-04-02' },
    ];
    await runSweepJob(f.ctx);
    expect(f.marked.map((p) => [p.date, p.earliestMs])).toEqual([
      ['2026-04-01', undefined],
      ['2026-03-01', undefined],
      ['2026-04-02', STORED_RECENTLY_MS],
    ]);
  });
});
