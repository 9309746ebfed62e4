import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { ApiKeysRepository, SubscriptionsRepository } from '@booktape/storage';
import { uniqueId } from '@booktape/testkit';
import { KeyService } from '../keys/keys.service.ts';
import { SubscriptionService } from '../billing/subscription.service.ts';
import { startTestApi, type TestApi } from '../testing.ts';

/**
 * One key's burst never queues the engine for everyone else (issue 27). When a key's or a
 * user's cache entry is missing (first use, or expired under load), the many requests of
 * that key arriving together must cost the store one read: the embedded engine answers its
 * queries in turn, so 200 identical reads from one key stood in front of every other user's
 * first request (measured in the fairness benchmark: another key's 5-row page took 1.3 s at
 * the start of a 200-connection load while /health stayed fast). Counted here on the real
 * repositories, against a real engine and Redis.
 */

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(async () => t?.close());

/** `repo` with its method `name` counted. */
function counted<T extends object>(repo: T, name: keyof T & string): { repo: T; calls: () => number } {
  let n = 0;
  const original = (repo[name] as (...a: unknown[]) => unknown).bind(repo);
  (repo as Record<string, unknown>)[name] = (...a: unknown[]) => {
    n++;
    return original(...a);
  };
  return { repo, calls: () => n };
}

describe('cache misses of one key at once', () => {
  it('read its subscription row once', async () => {
    const { repo, calls } = counted(new SubscriptionsRepository(t.ch), 'findByUser');
    const service = new SubscriptionService({ repo, redis: t.redis, log: silentLogger(), redisKeyPrefix: t.config.redisKeyPrefix, billing: undefined });
    const user = uniqueId('burst');
    const plans = await Promise.all(Array.from({ length: 200 }, () => service.planOf(user)));
    expect(new Set(plans)).toEqual(new Set(['free']));
    expect(calls()).toBe(1);
    // Cached afterwards: no read at all.
    await service.planOf(user);
    expect(calls()).toBe(1);
  });

  it('read its key record once, and every request is still authenticated (or refused) on its own', async () => {
    const { repo, calls } = counted(new ApiKeysRepository(t.ch), 'findByHash');
    const keys = new KeyService({ repo, redis: t.redis, log: silentLogger(), redisKeyPrefix: t.config.redisKeyPrefix, usageFlushMs: 60_000 });
    const { record, apiKey } = await keys.create(uniqueId('burst'), 'load');
    // The cache entry gone (expired): the next requests must go to the store.
    await t.redis.del(`${t.config.redisKeyPrefix}apikey:${record.key_hash}`);
    const got = await Promise.all(Array.from({ length: 200 }, () => keys.authenticate(`Bearer ${apiKey}`)));
    expect(got.every((r) => r.key_id === record.key_id)).toBe(true);
    expect(calls()).toBe(1);
    // A wrong key among them is still refused by itself.
    const wrong = `${apiKey.slice(0, -4)}${apiKey.endsWith('aaaa') ? 'bbbb' : 'aaaa'}`;
    await expect(keys.authenticate(`Bearer ${wrong}`)).rejects.toMatchObject({ statusCode: 401 });
  });
});
