import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openClickHouse, migrate, type ClickHouse } from '@booktape/storage';

/**
 * Test kit: real services only. Kafka and Redis are the project's own (started by
 * `npm test` through scripts/services.mjs, which exports KAFKA_BROKERS and REDIS_URL);
 * ClickHouse is the embedded engine in a fresh directory per test file (one engine per
 * process, and vitest runs each file in its own process).
 */

export function requireEnv(name: 'KAFKA_BROKERS' | 'REDIS_URL'): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the integration tests through \`npm test\`, which starts the services`);
  return v;
}

export function uniqueId(prefix = 't'): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

export interface TestClickHouse {
  ch: ClickHouse;
  dir: string;
  cleanup(): Promise<void>;
}

/** A migrated embedded ClickHouse in a temporary directory; refuses any non-temp path. */
export async function tempClickHouse(): Promise<TestClickHouse> {
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-ch-'));
  const ch = await openClickHouse({ database: 'booktape_test', embeddedPath: dir });
  await migrate(ch);
  return {
    ch,
    dir,
    cleanup: async () => {
      await ch.close();
      if (!dir.startsWith(tmpdir())) throw new Error(`refusing to delete ${dir}: not a temporary directory`);
      await removeTempDir(dir);
    },
  };
}

/**
 * Removes a test's engine directory. The embedded engine's background threads can go on
 * writing parts for a while after close (rmdir then fails with ENOTEMPTY, as one CI run
 * showed even after ten quick retries): keep trying for a few seconds, and if the directory
 * still will not go, say so and try once more when the process exits. Teardown of a temporary
 * directory never fails a test that passed.
 */
export async function removeTempDir(dir: string): Promise<void> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
      return;
    } catch (e) {
      lastError = e;
      await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
    }
  }
  console.warn(`[testkit] could not remove ${dir} yet (${String(lastError)}); trying again at exit`);
  process.once('exit', () => {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Left in the temporary directory for the OS to clear.
    }
  });
}

export { waitFor, waitUntil } from './wait.ts';
export { deleteRedisPrefix } from './redis-prefix.ts';
export { startPrivateKafka, freePort, type PrivateKafka } from './private-kafka.ts';
export { OwnRedis } from './own-redis.ts';
export { procCpuSeconds, procRssBytes } from './proc.ts';
