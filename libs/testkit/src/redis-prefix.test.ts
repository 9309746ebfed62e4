import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { deleteRedisPrefix } from './redis-prefix.ts';
import { uniqueId } from './index.ts';

/** A Redis that holds `keys` and records what was scanned and deleted. */
function fakeRedis(keys: string[]) {
  const seen = { patterns: [] as string[], deleted: [] as string[] };
  const redis = {
    scan: async (_cursor: string, _match: 'MATCH', pattern: string) => {
      seen.patterns.push(pattern);
      const head = pattern.slice(0, -1);
      return ['0', keys.filter((k) => k.startsWith(head))] as [string, string[]];
    },
    del: async (...ks: string[]) => {
      seen.deleted.push(...ks);
      return ks.length;
    },
  };
  return { redis: redis as unknown as Redis, seen };
}

describe('deleteRedisPrefix', () => {
  it('deletes the keys under the prefixes tests and benchmarks use', async () => {
    const prefixes = [
      `${uniqueId('bt-api-test')}:`,
      `${uniqueId('bt-mon')}:rollup:`,
      uniqueId('bt-status-test'),
      'bt-bench-0a1b2c3d:',
      `bench-${process.pid}:`,
    ];
    for (const p of prefixes) {
      const { redis, seen } = fakeRedis([`${p}a`, `${p}b`, 'booktape:apikey:x']);
      await deleteRedisPrefix(redis, p);
      expect(seen.deleted).toEqual([`${p}a`, `${p}b`]);
    }
  });

  it('refuses an empty, short, non-test or glob prefix without touching Redis', async () => {
    for (const p of ['', 'bt-', 'bt-ab', 'booktape', 'booktape:', 'test', 'bt-x*', 'bt-abc?d', 'bt-ab[cd]', ' bt-abcdef']) {
      const { redis, seen } = fakeRedis(['booktape:apikey:x']);
      await expect(deleteRedisPrefix(redis, p)).rejects.toThrow(/refusing/);
      expect(seen.patterns).toEqual([]);
    }
  });
});
