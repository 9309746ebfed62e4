import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { createRedis, type Redis } from '../redis.ts';
import { UNLIMITED_PLANS } from './limits.ts';
import { QuotaService } from './quota.service.ts';

/**
 * The monthly counter's hash in the real Redis, field by field: the count `n` and one
 * `o:<request id>` field per open reservation, nothing else. (It once held a generation `g`,
 * written by every rebuild and read by nothing since the `o:` fields took over its job.)
 */

let redis: Redis;
beforeAll(() => {
  redis = createRedis(requireEnv('REDIS_URL'), { connectionName: 'quota-counter-test' });
});
afterAll(async () => redis?.quit());

describe('the monthly counter in Redis', () => {
  it('a rebuild writes the count and the open reservations; settling leaves the count alone', async () => {
    const prefix = `${uniqueId('bt-qc')}:`;
    const quota = new QuotaService({
      redis,
      // The request log holds 3 successful requests of the month, none of them open here.
      repo: { countBillable: async () => ({ stored: 3, overlap: 0 }) },
      log: silentLogger(),
      redisKeyPrefix: prefix,
      limits: { ...UNLIMITED_PLANS, free: { monthly: 10, perSecond: null } },
      pending: { pendingSuccess: () => new Map() },
    });
    try {
      const now = Date.now();
      const a = await quota.reserve('u1', 'free', 'req-a', 2, now);
      const b = await quota.reserve('u1', 'free', 'req-b', 1, now);
      expect(a.ok && b.ok).toBe(true);
      if (!a.ok || !b.ok) return;
      const key = quota.monthlyKey('u1', a.reservation.period);
      expect(await redis.hgetall(key)).toEqual({ n: '6', 'o:req-a': '2', 'o:req-b': '1' });
      quota.settle(a.reservation, true);
      quota.settle(b.reservation, false);
      await waitFor('settled', async () => Object.keys(await redis.hgetall(key)).length === 1, 5_000, 20);
      expect(await redis.hgetall(key)).toEqual({ n: '5' });
      expect(await redis.pttl(key)).toBeGreaterThan(0);
      await redis.del(key, `${prefix}quota:{u1}:s`);
    } finally {
      quota.close();
    }
  });
});
