import { Redis } from 'ioredis';

/**
 * A Redis client that fails fast: a request must get a 503 within about a second when
 * Redis is gone, never hang. One retry per command, a command timeout, a short connect
 * timeout, and reconnects that keep trying in the background (capped back-off) so the API
 * recovers by itself when Redis comes back.
 */
export function createRedis(url: string, opts: { connectionName?: string } = {}): Redis {
  return new Redis(url, {
    connectionName: opts.connectionName ?? 'booktape-api',
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 1000,
    enableAutoPipelining: true,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    lazyConnect: false,
  });
}

export type { Redis };
