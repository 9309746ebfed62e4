import type { Redis } from 'ioredis';

/**
 * The key prefixes tests and benchmarks write under: `uniqueId('bt-…')`, `bt-bench-…`,
 * `bench-<pid>`. Never the service's own (`booktape`), and no glob characters, which would
 * widen the SCAN pattern beyond the prefix.
 */
const TEST_PREFIX = /^(bt|bench)-[A-Za-z0-9_.:-]{4,}$/;

/**
 * Deletes every key under a test's prefix. Like tempClickHouse's cleanup, it refuses what is
 * not plainly a test's own: the project's Redis is shared with a running service.
 */
export async function deleteRedisPrefix(redis: Redis, prefix: string): Promise<void> {
  if (!TEST_PREFIX.test(prefix)) throw new Error(`refusing to delete Redis keys under ${JSON.stringify(prefix)}: not a test prefix (bt-… or bench-…)`);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}
