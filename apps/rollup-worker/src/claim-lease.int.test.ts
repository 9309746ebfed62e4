import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { RollupQueue, assetKey, rollupKeys, type PartitionRef } from '@booktape/messaging';
import { SummariesRepository } from '@booktape/storage';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { aMessage, conditionId, deleteRedisPrefix, startTestApi, type TestApi } from '@booktape/api/testing';
import type { MonitoringStatus } from '@booktape/api';
import { STALE_PENDING_MS } from './jobs.ts';
import { createRollupWorker, type RollupWorker } from './worker.ts';

/**
 * A rollup process killed (SIGKILL) while it holds a claim on an asset's dates. Before
 * leases the claim stayed for good when nothing dirtied the date again (the sweep only
 * re-marks dates whose summaries are behind the raw data, and these were current): the
 * date was never settled (`replay --wait` exit 4) while monitoring said the summaries were
 * up to date. Now: while the process lives and renews, its claim is reported live; once
 * killed, monitoring reports the claim stale, and after the lease a live worker takes the
 * date over and settles it.
 */

const LEASE_MS = 1500;
const HOLDER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'claim-holder.test-support.ts');
const MARKET = conditionId(0x16);
const ASSET = '16160016';
const DAY = Date.UTC(2026, 2, 1);
const DATE = '2026-03-01';

let t: TestApi;
let holder: ChildProcess | undefined;
let worker: RollupWorker | undefined;
const queuePrefix = uniqueId('bt-claim-lease');
const a = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };
const parts: PartitionRef[] = [{ ...a, date: DATE }];

beforeAll(async () => {
  t = await startTestApi({ rollupQueuePrefix: queuePrefix, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  const messages = [
    aMessage({ market: MARKET, asset: ASSET, ts: DAY + 1000, hash: '0xlease-book', kind: 'book' }),
    ...Array.from({ length: 200 }, (_, i) => aMessage({ market: MARKET, asset: ASSET, ts: DAY + 2000 + i * 100, hash: `0xlease${i}` })),
  ];
  await t.filler.insert('exchange-a', messages);
}, 60_000);

afterAll(async () => {
  if (holder && holder.exitCode === null && holder.signalCode === null) holder.kill('SIGKILL');
  await worker?.stop();
  await deleteRedisPrefix(t.redis, `${queuePrefix}:`);
  await t?.close();
});

/** A fresh app each time: the status is cached for a second per app. */
async function status(): Promise<MonitoringStatus> {
  const res = await (await t.another()).inject({ url: '/api/v1/monitoring/status' });
  expect(res.statusCode).toBe(200);
  return res.json() as MonitoringStatus;
}

function startHolder(): Promise<string[]> {
  holder = spawn(process.execPath, ['--import', 'tsx', HOLDER], {
    env: { ...process.env, CLAIM_REDIS_URL: requireEnv('REDIS_URL'), CLAIM_PREFIX: queuePrefix, CLAIM_LEASE_MS: String(LEASE_MS), CLAIM_ASSET: JSON.stringify(a) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    holder!.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /claimed (\[.*\])\n/.exec(out);
      if (m) resolve(JSON.parse(m[1]!) as string[]);
    });
    holder!.on('exit', (code, signal) => reject(new Error(`claim holder exited (${code ?? signal}) before claiming: ${out}`)));
  });
}

describe('a rollup claim held by a killed process', () => {
  it('is reported stale, then taken over and rolled by a live worker', async () => {
    const notifier = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix: queuePrefix, debounceMs: 100 });
    const options = { queuePrefix, debounceMs: 100, sweepEveryMs: 2000, claimLeaseMs: LEASE_MS };
    try {
      // The data is rolled up once: its summaries are current.
      const first = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options });
      await first.start();
      await notifier.notify(parts);
      await waitFor('the first rollup settled', async () => (await notifier.unsettled(parts)) === 0, 30_000, 200);
      expect((await new SummariesRepository(t.ch).day(a, DATE))?.events).toBe(201);
      await first.stop();

      // The sink stores the partition again (a redelivered batch): the date is dirty, and a
      // rollup process claims it and is killed before it ends the claim.
      await notifier.notify(parts);
      expect(await startHolder()).toEqual([DATE]);

      // Alive and renewing for several leases: claimed, never stale, summaries not "up to date".
      await new Promise((r) => setTimeout(r, 2.5 * LEASE_MS));
      const live = await status();
      expect(live.rollup).toMatchObject({ state: 'ok', claimed_assets: 1, stale_claims: 0, oldest_stale_claim: null });
      expect(live.rollup.detail).toBe('1 asset being rolled up');
      expect(await notifier.unsettled(parts)).toBe(1);

      holder!.kill('SIGKILL');
      await new Promise((r) => holder!.once('exit', r));

      // After the lease, and with no worker to take the claim over, monitoring says so.
      let stale: MonitoringStatus | undefined;
      await waitFor('the stale claim reported', async () => ((stale = await status()).rollup.stale_claims ?? 0) > 0, 10_000, 200);
      expect(stale!.rollup).toMatchObject({ state: 'behind', claimed_assets: 1, stale_claims: 1, oldest_stale_claim: { venue: 'exchange-a', market: MARKET, asset: ASSET, dates: [DATE] } });
      expect(stale!.status).not.toBe('ok');
      expect(stale!.reasons).toContain('Rollups: 1 claim is held by a rollup process that stopped; the sweep hands it to a live worker');
      const metrics = await (await t.another()).inject({ url: '/metrics' });
      expect(metrics.body).toMatch(/booktape_rollup_claims\{state="stale"\} 1\n/);
      expect(await notifier.unsettled(parts)).toBe(1);

      // A live worker: its sweep (run at start) takes the claim over and the date is rolled.
      worker = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options });
      await worker.start();
      await waitFor('the taken-over date settled', async () => (await notifier.unsettled(parts)) === 0, 20_000, 200);
      expect((await new SummariesRepository(t.ch).day(a, DATE))?.events).toBe(201);

      const after = await status();
      expect(after.rollup).toMatchObject({ state: 'ok', detail: 'summaries are up to date', pending_assets: 0, claimed_assets: 0, stale_claims: 0 });
      expect(worker.health().failures).toBe(0);
      // The taken-over date's hint is unknown and its day closed: the run counted its stored
      // events. The worker says so, and so does /metrics (the worker shares this process).
      expect(worker.health().lateChecks.counted).toBeGreaterThan(0);
      await waitFor(
        'the late-data checks on /metrics',
        async () => /^booktape_rollup_late_checks_total\{result="counted"\} [1-9]\d*$/m.test((await (await t.another()).inject({ url: '/metrics' })).body),
        10_000,
        200,
      );
    } finally {
      await notifier.close();
    }
  }, 90_000);

  it('dates a notifier recorded before it stopped, without adding the job, are rolled once the sweep finds the asset pending too long', async () => {
    // What RollupQueue.notify leaves when its process stops between recording the dates (before
    // the sink's commit) and adding the job (after it): dirty and pending, no job. The data is
    // a batch delivered again, so the summaries are current and only the queue says otherwise.
    const notifier = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix: queuePrefix });
    const keys = rollupKeys(queuePrefix);
    try {
      // The live worker of the test before (its sweep runs every 2 s), or one started now.
      if (!worker) {
        worker = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options: { queuePrefix, debounceMs: 100, sweepEveryMs: 2000, claimLeaseMs: LEASE_MS } });
        await worker.start();
      }
      await notifier.notify(parts);
      await waitFor('the summaries current', async () => (await notifier.unsettled(parts)) === 0, 20_000, 200);
      const since = Date.now() - STALE_PENDING_MS - 5000;
      await notifier.redis.multi().zadd(keys.dirty(assetKey(a)), 'NX', since, DATE).zadd(keys.pending, 'NX', since, assetKey(a)).exec();
      expect(await notifier.unsettled(parts)).toBe(1);
      await waitFor('the recorded date settled', async () => (await notifier.unsettled(parts)) === 0, 20_000, 200);
      expect(await notifier.redis.zscore(keys.pending, assetKey(a))).toBeNull();
      expect((await new SummariesRepository(t.ch).day(a, DATE))?.events).toBe(201);
    } finally {
      await notifier.close();
    }
  }, 60_000);
});
