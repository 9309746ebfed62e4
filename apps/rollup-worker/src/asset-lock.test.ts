import { describe, expect, it } from 'vitest';
import { assetKey, rollupKeys, type RollupQueue } from '@booktape/messaging';
import { AssetLocks } from './asset-lock.ts';

/** The few Redis commands the lock uses, in memory, with expiry. */
function fakeRedis() {
  const keys = new Map<string, { value: string; until: number }>();
  const live = (k: string) => {
    const e = keys.get(k);
    if (e && e.until <= Date.now()) keys.delete(k);
    return keys.get(k);
  };
  const redis = {
    set: async (k: string, v: string, _px: 'PX', ms: number, _nx: 'NX') => {
      if (live(k)) return null;
      keys.set(k, { value: v, until: Date.now() + ms });
      return 'OK';
    },
    pexpire: async (k: string, ms: number) => {
      const e = live(k);
      if (!e) return 0;
      e.until = Date.now() + ms;
      return 1;
    },
    // The release script: delete only while the value is ours.
    eval: async (_script: string, _n: number, k: string, id: string) => {
      if (live(k)?.value !== id) return 0;
      keys.delete(k);
      return 1;
    },
  };
  return { redis: redis as unknown as RollupQueue['redis'], keys };
}

const A = { venue: 'exchange-a' as const, market: '0xm', asset: 'tok' };
const B = { ...A, asset: 'other' };

describe('AssetLocks', () => {
  it('one holder per asset: a second try gets nothing until the first unlocks; other assets are free', async () => {
    const { redis } = fakeRedis();
    const locks = new AssetLocks(() => redis, 'p', 1000);
    const unlock = await locks.tryLock(A);
    expect(unlock).not.toBeNull();
    expect(await locks.tryLock(A)).toBeNull();
    const other = await locks.tryLock(B);
    expect(other).not.toBeNull();
    await unlock!();
    const again = await locks.tryLock(A);
    expect(again).not.toBeNull();
    await again!();
    await other!();
  });

  it('renews a held lock past its lifetime; a dead holder\'s lock expires', async () => {
    const { redis } = fakeRedis();
    const locks = new AssetLocks(() => redis, 'p', 600);
    const unlock = await locks.tryLock(A);
    await new Promise((r) => setTimeout(r, 1300));
    expect(await locks.tryLock(A)).toBeNull(); // renewed every 200 ms
    await unlock!();

    // A holder that stops renewing (its process died): the lock goes after its lifetime.
    await redis.set(rollupKeys('p').lock(assetKey(B)), 'dead process', 'PX', 40, 'NX');
    expect(await locks.tryLock(B)).toBeNull();
    await new Promise((r) => setTimeout(r, 60));
    const taken = await locks.tryLock(B);
    expect(taken).not.toBeNull();
    await taken!();
  });

  it('an unlock never deletes a lock another holder took after it expired', async () => {
    const { redis, keys } = fakeRedis();
    const locks = new AssetLocks(() => redis, 'p', 1000);
    const first = await locks.tryLock(A);
    // Expired meanwhile (a stalled process), and taken by another job.
    const [key] = [...keys.keys()];
    keys.delete(key!);
    const second = await locks.tryLock(A);
    expect(second).not.toBeNull();
    await first!();
    expect(await locks.tryLock(A)).toBeNull();
    await second!();
  });

  it('waitLock waits until the holder lets go', async () => {
    const { redis } = fakeRedis();
    const locks = new AssetLocks(() => redis, 'p', 1000, 5);
    const unlock = await locks.tryLock(A);
    let got = false;
    const waiting = locks.waitLock(A).then((u) => {
      got = true;
      return u;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(got).toBe(false);
    await unlock!();
    await (await waiting)();
    expect(got).toBe(true);
  });
});
