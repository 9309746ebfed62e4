/**
 * A rollup process caught in the middle of a job, for the claim-lease test: it claims an
 * asset's dirty dates through the queue under the asset's lock and renews both every third
 * of the lease, as the worker does while it rolls, and never ends them; like a worker it
 * writes its liveness beat (which outlives it by the beat's time to live). The test kills it
 * with SIGKILL.
 * Run with `node --import tsx`; reads CLAIM_REDIS_URL, CLAIM_PREFIX, CLAIM_LEASE_MS and
 * CLAIM_ASSET (JSON of an AssetRef); prints `claimed <dates JSON>` once it holds them.
 */
import { ROLLUP_WORKER_BEAT_VERSION, RollupQueue, writeRollupWorkerBeat, type AssetRef } from '@booktape/messaging';
import { AssetLocks } from './asset-lock.ts';

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const leaseMs = Number(env('CLAIM_LEASE_MS'));
const asset = JSON.parse(env('CLAIM_ASSET')) as AssetRef;
const queue = new RollupQueue({ redisUrl: env('CLAIM_REDIS_URL'), prefix: env('CLAIM_PREFIX'), claimLeaseMs: leaseMs });
const claimId = `doomed-${process.pid}`;
// The worker's lock lasts as long as a lease (worker.ts), so it is gone when the claim is taken over.
const locks = new AssetLocks(() => queue.redis, env('CLAIM_PREFIX'), leaseMs);
const claimed = await queue.lockAndClaimMany(asset, claimId, claimId, locks.ttlMs, 0);
if (claimed === null) throw new Error('the asset is locked');
locks.held(asset, claimId);
const dates = claimed[0]!.claimed.map((c) => c.date);
setInterval(() => void queue.renewClaim(asset, claimId).catch(() => undefined), leaseMs / 3);
const startedAt = new Date().toISOString();
const beat = () =>
  writeRollupWorkerBeat(queue.redis, env('CLAIM_PREFIX'), { v: ROLLUP_WORKER_BEAT_VERSION, instance: claimId, started_at: startedAt, published_at: new Date().toISOString(), interval_ms: 1000, concurrency: 1 });
await beat();
setInterval(() => void beat().catch(() => undefined), 1000);
process.stdout.write(`claimed ${JSON.stringify(dates)}\n`);
