import { describe, expect, it } from 'vitest';
import { DelayedError } from 'bullmq';
import { silentLogger } from '@booktape/config';
import type { AssetRef, PartitionRef } from '@booktape/messaging';
import type { DayResult } from '@booktape/summaries';
import { runAssetJob, runBackfillJob, runSweepJob, type JobContext } from './jobs.ts';

const A: AssetRef = { venue: 'exchange-a', market: '0xm', asset: 'tok' };
const day = (date: string): DayResult => ({ date, outcome: 'full', applied: 1, endStateChanged: false, alerts: [], nextDataDate: null });

/** Fakes of the queue, roller, repository and locks, with a log of what happened in order. */
function fakes(o: { locked?: boolean; dirty?: string[]; failOn?: string; dataDates?: Record<string, string[]>; assets?: string[] } = {}) {
  const events: string[] = [];
  const runs: Array<{ a: AssetRef; results: DayResult[] }> = [];
  const ctx: JobContext = {
    queue: {
      lockAndClaim: async (a, claimId) => {
        if (o.locked) return null;
        events.push(`lock ${a.asset}`, `claim ${claimId.split(':')[0]}`);
        return [...(o.dirty ?? [])];
      },
      release: async (_a, dates, failed) => void events.push(`release ${dates.join(',')} ${failed ? 'failed' : 'done'}`),
      renewClaim: async () => true,
      markDirty: async (parts: readonly PartitionRef[]) => void events.push(`dirty ${parts.length}`),
      takeOverExpiredClaims: async () => [A],
    },
    roller: {
      rollFrom: async (a, date, force) => {
        events.push(`roll ${a.asset} ${date}${force ? ' forced' : ''}`);
        if (date === o.failOn) throw new Error('engine down');
        return [day(date)];
      },
    },
    repo: {
      assetsOf: async () => o.assets ?? [],
      dataDates: async (a) => o.dataDates?.[a.asset] ?? [],
      openDaysBefore: async () => [{ ...A, date: '2026-04-01' }],
      outdatedDays: async () => [{ ...A, date: '2026-03-01' }],
      staleRecentPartitions: async () => [],
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
    opts: { closeGraceMs: 60_000, sweepEveryMs: 60_000, claimLeaseMs: 30_000 },
    now: () => Date.UTC(2026, 3, 2, 0, 0, 30),
  };
  const progress: unknown[] = [];
  const delayed: number[] = [];
  const job = { id: 'j1', moveToDelayed: async (ts: number) => void delayed.push(ts), updateProgress: async (p: unknown) => void progress.push(p) };
  return { ctx, events, runs, job, progress, delayed };
}

describe('asset job', () => {
  it('rolls the claimed dates in date order under the asset lock, then releases them as done', async () => {
    const f = fakes({ dirty: ['2026-04-03', '2026-04-01', '2026-04-02'] });
    await runAssetJob(f.ctx, f.job, A, 'tok-1');
    expect(f.events).toEqual(['lock tok', 'claim j1', 'roll tok 2026-04-01', 'roll tok 2026-04-02', 'roll tok 2026-04-03', 'release 2026-04-01,2026-04-02,2026-04-03 done', 'unlock tok']);
    expect(f.runs.map((r) => r.results[0]!.date)).toEqual(['2026-04-01', '2026-04-02', '2026-04-03']);
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
  it('marks open, outdated and stale partitions dirty, then takes over expired claims', async () => {
    const f = fakes();
    expect(await runSweepJob(f.ctx)).toEqual({ marked: 2, takenOver: 1 });
    expect(f.events).toEqual(['dirty 2']);
  });
});
