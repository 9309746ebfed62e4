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
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns a truthy value or the time runs out (then throws `what`). */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
