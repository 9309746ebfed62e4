import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, envInt, envString, envUrl, platformConfig, platformEnvSchema } from '@booktape/config';
import type { BillingConfig } from './billing/stripe-client.ts';
import { DEFAULT_PLAN_LIMITS, parseLimit, type PlanLimits } from './quota/limits.ts';

const unsetEmpty = (v: unknown) => (v === '' ? undefined : v);

/** A plan limit: a non-negative integer, 0 or `unlimited` = no limit (→ null). */
const envLimit = (def: number | null) =>
  z.preprocess(
    unsetEmpty,
    z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return def;
        const n = parseLimit(v);
        if (n === undefined) {
          ctx.addIssue({ code: 'custom', message: 'must be a non-negative integer, or 0 or unlimited for no limit' });
          return z.NEVER;
        }
        return n;
      }),
  ) as unknown as z.ZodType<number | null>;

/** Dates as YYYY-MM-DD that exist on the calendar. */
export function isCalendarDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

export const apiEnvSchema = platformEnvSchema.extend({
  HOST: envString('127.0.0.1'),
  PORT: envInt(8080, 0, 65535),
  /** When set, `/keys` and `/subscriptions/*` require it in `X-Admin-Token`. */
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
  /** Exchange A metadata API, asked by the slug lookup when the market catalogue misses. */
  EXCHANGE_A_GAMMA_URL: envUrl('https://gamma-api.polymarket.com', ['http', 'https']),
  /** How long the slug lookup waits for the metadata API; 0 = answer from the catalogue only. */
  SLUG_LOOKUP_TIMEOUT_MS: envInt(3000, 0, 60_000),
  /** How long a slug the metadata API did not know is not asked about again. */
  SLUG_LOOKUP_MISS_CACHE_MS: envInt(30_000, 0, 3_600_000),
  /** Billing (Stripe). Unset key: billing routes answer 503 "billing is not configured". */
  STRIPE_SECRET_KEY: z.preprocess(unsetEmpty, z.string().trim().min(1).optional()) as unknown as z.ZodType<string | undefined>,
  STRIPE_WEBHOOK_SECRET: z.preprocess(unsetEmpty, z.string().trim().min(1).optional()) as unknown as z.ZodType<string | undefined>,
  STRIPE_PRICE_STARTER: z.preprocess(unsetEmpty, z.string().trim().min(1).optional()) as unknown as z.ZodType<string | undefined>,
  STRIPE_PRICE_PRO: z.preprocess(unsetEmpty, z.string().trim().min(1).optional()) as unknown as z.ZodType<string | undefined>,
  /** Where the Stripe API is (a local mock, tests); unset: api.stripe.com. */
  STRIPE_API_BASE: envUrl(undefined, ['http', 'https']),
  /** Defaults for checkout / portal requests that leave the URL out. */
  STRIPE_SUCCESS_URL: envUrl(undefined, ['http', 'https']),
  STRIPE_CANCEL_URL: envUrl(undefined, ['http', 'https']),
  STRIPE_PORTAL_RETURN_URL: envUrl(undefined, ['http', 'https']),
  STRIPE_TIMEOUT_MS: envInt(10_000, 100, 120_000),
  /** Monitoring: a connected venue without market data for longer is degraded. */
  MONITORING_MAX_EVENT_AGE_MS: envInt(300_000, 1000, 86_400_000),
  /** Monitoring: Kafka consumer lag (messages) above which the status is degraded. */
  MONITORING_MAX_KAFKA_LAG: envInt(100_000, 0, 2 ** 31),
  /** Monitoring: an asset pending rollup for longer makes the status degraded. */
  MONITORING_MAX_ROLLUP_DELAY_MS: envInt(900_000, 1000, 86_400_000),
  /** Plans: monthly request quota (calendar month, UTC) and per-second burst limit per user. */
  PLAN_FREE_MONTHLY: envLimit(DEFAULT_PLAN_LIMITS.free.monthly),
  PLAN_FREE_PER_SECOND: envLimit(DEFAULT_PLAN_LIMITS.free.perSecond),
  PLAN_STARTER_MONTHLY: envLimit(DEFAULT_PLAN_LIMITS.starter.monthly),
  PLAN_STARTER_PER_SECOND: envLimit(DEFAULT_PLAN_LIMITS.starter.perSecond),
  PLAN_PRO_MONTHLY: envLimit(DEFAULT_PLAN_LIMITS.pro.monthly),
  PLAN_PRO_PER_SECOND: envLimit(DEFAULT_PLAN_LIMITS.pro.perSecond),
  /** How often the request log is written to ClickHouse (also at once when 5,000 rows wait). */
  REQUEST_LOG_FLUSH_MS: envInt(2000, 50, 600_000),
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
  /** Slug lookup: the metadata API for catalogue misses (null: catalogue only) and how it is asked. */
  slugLookup?: { gammaUrl: string | null; timeoutMs: number; missCacheMs: number } | undefined;
  /** Key prefix of the rollup queue (ROLLUP_QUEUE_PREFIX): summaries ask it which dates are still being rolled up. */
  rollupQueuePrefix?: string | undefined;
  /** Stripe billing; undefined when STRIPE_SECRET_KEY is unset (billing routes answer 503). */
  billing?: BillingConfig | undefined;
  /** Thresholds of /monitoring/status (MONITORING_*); undefined: the defaults. */
  monitoring?: { maxEventAgeMs: number; maxKafkaLag: number; maxRollupDelayMs: number } | undefined;
  /** Quota and burst limit of each plan (PLAN_*); undefined: DEFAULT_PLAN_LIMITS. */
  plans?: PlanLimits | undefined;
  /** How often the request log is written to ClickHouse; undefined: 2000. */
  requestLogFlushMs?: number | undefined;
}

/** Billing from the env: all of key, webhook secret and both prices, or nothing. */
export function billingConfigFromEnv(env: ApiEnv): BillingConfig | undefined {
  if (!env.STRIPE_SECRET_KEY) return undefined;
  const required = ['STRIPE_WEBHOOK_SECRET', 'STRIPE_PRICE_STARTER', 'STRIPE_PRICE_PRO'] as const;
  const missing = required.filter((k) => !env[k]);
  if (missing.length > 0) throw new ConfigError(missing.map((k) => `${k}: required when STRIPE_SECRET_KEY is set`));
  if (env.STRIPE_PRICE_STARTER === env.STRIPE_PRICE_PRO) throw new ConfigError(['STRIPE_PRICE_PRO: must differ from STRIPE_PRICE_STARTER']);
  return {
    secretKey: env.STRIPE_SECRET_KEY,
    webhookSecret: env.STRIPE_WEBHOOK_SECRET!,
    prices: { starter: env.STRIPE_PRICE_STARTER!, pro: env.STRIPE_PRICE_PRO! },
    apiBase: env.STRIPE_API_BASE,
    successUrl: env.STRIPE_SUCCESS_URL,
    cancelUrl: env.STRIPE_CANCEL_URL,
    returnUrl: env.STRIPE_PORTAL_RETURN_URL,
    timeoutMs: env.STRIPE_TIMEOUT_MS,
  };
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
    slugLookup: {
      gammaUrl: env.SLUG_LOOKUP_TIMEOUT_MS > 0 ? env.EXCHANGE_A_GAMMA_URL! : null,
      timeoutMs: env.SLUG_LOOKUP_TIMEOUT_MS,
      missCacheMs: env.SLUG_LOOKUP_MISS_CACHE_MS,
    },
    rollupQueuePrefix: env.ROLLUP_QUEUE_PREFIX,
    billing: billingConfigFromEnv(env),
    monitoring: {
      maxEventAgeMs: env.MONITORING_MAX_EVENT_AGE_MS,
      maxKafkaLag: env.MONITORING_MAX_KAFKA_LAG,
      maxRollupDelayMs: env.MONITORING_MAX_ROLLUP_DELAY_MS,
    },
    plans: {
      free: { monthly: env.PLAN_FREE_MONTHLY, perSecond: env.PLAN_FREE_PER_SECOND },
      starter: { monthly: env.PLAN_STARTER_MONTHLY, perSecond: env.PLAN_STARTER_PER_SECOND },
      pro: { monthly: env.PLAN_PRO_MONTHLY, perSecond: env.PLAN_PRO_PER_SECOND },
    },
    requestLogFlushMs: env.REQUEST_LOG_FLUSH_MS,
  };
}
