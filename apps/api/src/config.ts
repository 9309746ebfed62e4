import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { envInt, envString, platformConfig, platformEnvSchema } from '@booktape/config';

const unsetEmpty = (v: unknown) => (v === '' ? undefined : v);

/** Dates as YYYY-MM-DD that exist on the calendar. */
export function isCalendarDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

export const apiEnvSchema = platformEnvSchema.extend({
  HOST: envString('127.0.0.1'),
  PORT: envInt(8080, 0, 65535),
  /** When set, `/keys` requires it in `X-Admin-Token`. */
  ADMIN_TOKEN: z.preprocess(unsetEmpty, z.string().min(16, 'must be at least 16 characters').optional()) as unknown as z.ZodType<string | undefined>,
  /** Signs pagination cursors; unset: a secret generated once and kept under the data dir. */
  CURSOR_SECRET: z.preprocess(unsetEmpty, z.string().min(16, 'must be at least 16 characters').optional()) as unknown as z.ZodType<string | undefined>,
  EXCHANGE_A_EARLIEST_DATE: z.preprocess(
    unsetEmpty,
    z.string().refine(isCalendarDate, 'must be a date YYYY-MM-DD').default('2026-02-08'),
  ) as unknown as z.ZodType<string>,
  REDIS_KEY_PREFIX: z.preprocess(
    unsetEmpty,
    z.string().regex(/^[A-Za-z0-9:_.-]{0,64}$/, 'must be up to 64 characters of A-Z a-z 0-9 : _ . -').default('booktape:'),
  ) as unknown as z.ZodType<string>,
  /** How long availability and market-list answers are reused within one process. */
  API_RESULT_CACHE_MS: envInt(1000, 0, 60_000),
  /** How long the end of an offset page is remembered so the next page can continue from it. */
  API_OFFSET_CONTINUATION_MS: envInt(60_000, 0, 3_600_000),
  /** How often last-use times of keys are written to ClickHouse. */
  API_USAGE_FLUSH_MS: envInt(5000, 100, 600_000),
  /** Embedded engine: how many raw-data pages may stream at once (one chdb session each). */
  API_STREAM_SESSIONS: envInt(4, 1, 64),
});

export type ApiEnv = z.infer<typeof apiEnvSchema>;

export interface ApiConfig {
  host: string;
  port: number;
  adminToken: string | undefined;
  cursorSecret: Buffer;
  /** YYYY-MM-DD: exchange A raw data before this UTC date is refused. */
  exchangeAEarliestDate: string;
  redisKeyPrefix: string;
  resultCacheMs: number;
  offsetContinuationMs: number;
  usageFlushMs: number;
  streamSessions: number;
}

/**
 * The cursor secret when none is configured: 32 random bytes, written once to a file under
 * the data dir and read back on every later start, so cursors survive restarts. (Several
 * API processes on different machines must share CURSOR_SECRET instead.)
 */
export function loadOrCreateSecret(file: string): Buffer {
  try {
    const hex = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
    throw new Error(`${file}: not a cursor secret (64 hex digits); remove it or set CURSOR_SECRET`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (e) {
    // Another process created it first: use theirs.
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return loadOrCreateSecret(file);
}

export function apiConfigFromEnv(env: ApiEnv, rawEnv: NodeJS.ProcessEnv = process.env): ApiConfig {
  const dataDir = platformConfig(env, rawEnv).dataDir;
  const secretFile = path.join(dataDir, 'api', 'cursor-secret');
  return {
    host: env.HOST,
    port: env.PORT,
    adminToken: env.ADMIN_TOKEN,
    cursorSecret: env.CURSOR_SECRET ? Buffer.from(env.CURSOR_SECRET, 'utf8') : loadOrCreateSecret(secretFile),
    exchangeAEarliestDate: env.EXCHANGE_A_EARLIEST_DATE,
    redisKeyPrefix: env.REDIS_KEY_PREFIX,
    resultCacheMs: env.API_RESULT_CACHE_MS,
    offsetContinuationMs: env.API_OFFSET_CONTINUATION_MS,
    usageFlushMs: env.API_USAGE_FLUSH_MS,
    streamSessions: env.API_STREAM_SESSIONS,
  };
}
