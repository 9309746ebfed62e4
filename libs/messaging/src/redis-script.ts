import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run by its SHA-1 (EVALSHA), falling back to its text (EVAL) when the server
 * does not know it yet: first use, a restart, SCRIPT FLUSH. One command either way, so the
 * script runs atomically.
 */
export class RedisScript {
  readonly sha: string;
  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number> = []): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (e) {
      if (!String((e as Error).message).includes('NOSCRIPT')) throw e;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}
