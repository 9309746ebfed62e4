import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import type { Venue } from '@booktape/domain';
import { defaultSessionsPerOwner } from '@booktape/storage';
import { ConfigError, envInt, envString, envUrl, platformConfig, platformEnvSchema } from '@booktape/config';
import type { BillingConfig } from './billing/stripe-client.ts';
import type { CachePolicy } from './http/caching.ts';
import type { FloorOptions } from './http/slow-reader.ts';
import { parseCorsOrigins, type CorsOrigins } from './http/cors.ts';
import { isCalendarDate } from './http/params.ts';
import { DEFAULT_THRESHOLDS, type Thresholds } from './monitoring/status.ts';
import { DEFAULT_PLAN_LIMITS, parseLimit, type PlanLimits } from './usage/limits.ts';

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

/**
 * The exchange A floor is the interface's own data availability; exchange B has none. A
 * self-hosted service that replays older captures lifts it with `none`.
 */
export const DEFAULT_DATA_FLOORS: DataFloors = { 'exchange-a': '2026-02-08', 'exchange-b': null };

/** A data floor: a date YYYY-MM-DD, or `none` for no floor (→ null); unset → undefined. */
const envDataFloor = () =>
  z.preprocess(
    unsetEmpty,
    z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return undefined;
        const t = v.trim();
        if (t.toLowerCase() === 'none') return null;
        if (!isCalendarDate(t)) {
          ctx.addIssue({ code: 'custom', message: 'must be a date YYYY-MM-DD or none' });
          return z.NEVER;
        }
        return t;
      }),
  ) as unknown as z.ZodType<string | null | undefined>;

/** CORS_ORIGINS: `*` or comma-separated origins; unset or empty = CORS off (http/cors.ts). */
const envCorsOrigins = () =>
  z.preprocess(
    unsetEmpty,
    z
      .string()
      .optional()
      .transform((v, ctx) => {
        const r = parseCorsOrigins(v);
        if (!r.ok) {
          ctx.addIssue({ code: 'custom', message: r.message });
          return z.NEVER;
        }
        return r.value;
      }),
  ) as unknown as z.ZodType<CorsOrigins | undefined>;

export const apiEnvSchema = platformEnvSchema.extend({
  HOST: envString('127.0.0.1'),
  PORT: envInt(8080, 0, 65535),
  /** The base URL clients reach the API at, when not http://HOST:PORT (a proxy): the OpenAPI document's server. */
  PUBLIC_URL: envUrl(undefined, ['http', 'https']),
  /** When set, `/keys` and `/subscriptions/*` require it in `X-Admin-Token`. */
  ADMIN_TOKEN: z.preprocess(unsetEmpty, z.string().min(16, 'must be at least 16 characters').optional()) as unknown as z.ZodType<string | undefined>,
  /**
   * `1`: serve the operator routes without ADMIN_TOKEN on a non-loopback HOST (refused
   * otherwise). Exactly `1`: opening the service to anyone must not follow from a value
   * that only looks like yes (`true`, `yes`, `on`), so anything else is a malformed variable.
   */
  BOOKTAPE_ALLOW_OPEN: z.preprocess(
    unsetEmpty,
    z.literal('1', { message: 'must be 1 to serve the operator routes open, or unset' }).optional().transform((v) => v === '1'),
  ) as unknown as z.ZodType<boolean>,
  /** Origins whose pages may call the API from a browser (CORS); unset: none. */
  CORS_ORIGINS: envCorsOrigins(),
  /** Signs pagination cursors; unset: a secret generated once and kept under the data dir. */
  CURSOR_SECRET: z.preprocess(unsetEmpty, z.string().min(16, 'must be at least 16 characters').optional()) as unknown as z.ZodType<string | undefined>,
  /** The first UTC date served per venue (earlier data is refused), or `none`. */
  EXCHANGE_A_DATA_FLOOR: envDataFloor(),
  EXCHANGE_B_DATA_FLOOR: envDataFloor(),
  /** The former name of EXCHANGE_A_DATA_FLOOR, still read when that is unset. */
  EXCHANGE_A_EARLIEST_DATE: envDataFloor(),
  REDIS_KEY_PREFIX: z.preprocess(
    unsetEmpty,
    z.string().regex(/^[A-Za-z0-9:_.-]{0,64}$/, 'must be up to 64 characters of A-Z a-z 0-9 : _ . -').default('booktape:'),
  ) as unknown as z.ZodType<string>,
  /** How long availability and market-list answers are reused within one process. */
  API_RESULT_CACHE_MS: envInt(1000, 0, 60_000),
  /** MB of settled summary answers kept as sent (summaries/answer-cache.ts); 0: none kept. */
  API_SUMMARY_ANSWER_CACHE_MB: envInt(256, 0, 65_536),
  /** How long the end of an offset page is remembered so the next page can continue from it. */
  API_OFFSET_CONTINUATION_MS: envInt(60_000, 0, 3_600_000),
  /** How often last-use times of keys are written to ClickHouse. */
  API_USAGE_FLUSH_MS: envInt(5000, 100, 600_000),
  /**
   * Caching: a UTC day is finalised this long after its end; answers about finalised days get
   * a strong ETag and `Cache-Control: private, max-age=API_IMMUTABLE_MAX_AGE_S, immutable`.
   */
  API_FINALISED_AFTER_MS: envInt(3_600_000, 0, 30 * 86_400_000),
  API_IMMUTABLE_MAX_AGE_S: envInt(86_400, 0, 31_536_000),
  /** Embedded engine: how many raw-data pages may stream at once (one chdb session each). */
  API_STREAM_SESSIONS: envInt(4, 1, 64),
  /** Websocket replays (issue 25) one API key may run at once in this process; 0 = no cap. */
  API_REPLAYS_PER_KEY: envInt(2, 0, 1000),
  /** Embedded engine: of those, how many one API key may hold at once; 0 = half of them (at least 1). */
  API_STREAM_SESSIONS_PER_KEY: envInt(0, 0, 64),
  /**
   * The slow-reader floor: a streamed raw page handed to its client at less than this many
   * bytes a second over the last API_STREAM_FLOOR_WINDOW_SECONDS is cut (error `slow_reader`)
   * and its store stream session released; 0 = no floor.
   */
  API_STREAM_FLOOR_BYTES_PER_SECOND: envInt(32_768, 0, 1 << 30),
  API_STREAM_FLOOR_WINDOW_SECONDS: envInt(10, 1, 3600),
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
  MONITORING_MAX_EVENT_AGE_MS: envInt(DEFAULT_THRESHOLDS.maxEventAgeMs, 1000, 86_400_000),
  /** Monitoring: Kafka consumer lag (messages) above which the status is degraded. */
  MONITORING_MAX_KAFKA_LAG: envInt(DEFAULT_THRESHOLDS.maxKafkaLag, 0, 2 ** 31),
  /** Monitoring: an asset pending rollup for longer makes the status degraded. */
  MONITORING_MAX_ROLLUP_DELAY_MS: envInt(DEFAULT_THRESHOLDS.maxRollupDelayMs, 1000, 86_400_000),
  /** Plans: monthly request quota (calendar month, UTC) and per-second burst limit per user. */
  PLAN_FREE_MONTHLY: envLimit(DEFAULT_PLAN_LIMITS.free.monthly),
  PLAN_FREE_PER_SECOND: envLimit(DEFAULT_PLAN_LIMITS.free.perSecond),
  PLAN_STARTER_MONTHLY: envLimit(DEFAULT_PLAN_LIMITS.starter.monthly),
  PLAN_STARTER_PER_SECOND: envLimit(DEFAULT_PLAN_LIMITS.starter.perSecond),
  PLAN_PRO_MONTHLY: envLimit(DEFAULT_PLAN_LIMITS.pro.monthly),
  PLAN_PRO_PER_SECOND: envLimit(DEFAULT_PLAN_LIMITS.pro.perSecond),
  /** Plans: requests in progress at once per API key in one API process. */
  PLAN_FREE_CONCURRENT: envLimit(DEFAULT_PLAN_LIMITS.free.concurrent ?? null),
  PLAN_STARTER_CONCURRENT: envLimit(DEFAULT_PLAN_LIMITS.starter.concurrent ?? null),
  PLAN_PRO_CONCURRENT: envLimit(DEFAULT_PLAN_LIMITS.pro.concurrent ?? null),
  /** How often the request log is written to ClickHouse (also at once when 5,000 rows wait). */
  REQUEST_LOG_FLUSH_MS: envInt(2000, 50, 600_000),
});

export type ApiEnv = z.infer<typeof apiEnvSchema>;

export type DataFloors = Record<Venue, string | null>;

export interface ApiConfig {
  host: string;
  port: number;
  /** PUBLIC_URL: the OpenAPI document's server; unset: http://HOST:PORT. */
  publicUrl: string | undefined;
  adminToken: string | undefined;
  /** CORS_ORIGINS: origins allowed to call from a browser (`*`: any); undefined: CORS off. */
  corsOrigins: CorsOrigins | undefined;
  /** Set when the operator routes are open on a non-loopback HOST: logged at start, shown on the status. */
  openServiceWarning: string | undefined;
  cursorSecret: Buffer;
  /** Where the daily files across markets are built and kept (BOOKTAPE_DATA_DIR/api/daily). */
  dailyDir: string;
  /** Per venue, the first UTC date served (YYYY-MM-DD; earlier dates are refused), or null: no floor. */
  dataFloors: DataFloors;
  redisKeyPrefix: string;
  resultCacheMs: number;
  /** Bytes of settled summary answers kept as sent (0: none). */
  summaryAnswerCacheBytes: number;
  /** HTTP caching of answers about finalised days (http/caching.ts). */
  caching: CachePolicy;
  offsetContinuationMs: number;
  usageFlushMs: number;
  streamSessions: number;
  /** Of the stream sessions, how many one API key may hold at once (a raw page holds one while it streams). */
  streamSessionsPerKey: number;
  /** The slow-reader floor of streamed raw pages (http/slow-reader.ts). */
  streamFloor: FloorOptions;
  /** Replays one API key may run at once in this process, websocket replays and merged streams together (null: no cap); unset: 2. */
  replaysPerKey?: number | null;
  /** Slug lookup: the metadata API for catalogue misses (null: catalogue only) and how it is asked. */
  slugLookup: { gammaUrl: string | null; timeoutMs: number; missCacheMs: number };
  /** Key prefix of the rollup queue (ROLLUP_QUEUE_PREFIX): summaries ask it which dates are still being rolled up. */
  rollupQueuePrefix: string;
  /** Stripe billing; undefined when STRIPE_SECRET_KEY is unset (billing routes answer 503). */
  billing: BillingConfig | undefined;
  /** Thresholds of /monitoring/status (MONITORING_*). */
  monitoring: Thresholds;
  /** Quota and burst limit of each plan (PLAN_*). */
  plans: PlanLimits;
  /** How often the request log is written to ClickHouse. */
  requestLogFlushMs: number;
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

/** 127.0.0.0/8, ::1 (any spelling, also IPv4-mapped) and localhost: reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (!h.includes(':')) return false;
  let canonical: string;
  try {
    // The URL parser writes an IPv6 address in its shortest form (0:0:0:0:0:0:0:1 → ::1).
    canonical = new URL(`http://[${h}]/`).hostname.slice(1, -1);
  } catch {
    return false;
  }
  if (canonical === '::1') return true;
  // ::ffff:127.x.y.z, written by the parser as ::ffff:7fxx:yyzz.
  return /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(canonical);
}

/**
 * Why the API must not start, or undefined. Without ADMIN_TOKEN the operator routes (key
 * creation and listing, usage, billing) are open to whoever reaches the port: fine on
 * loopback, not on an address others can reach, unless the operator says so explicitly.
 */
export function openServiceRefusal(host: string, adminToken: string | undefined, allowOpen: boolean): string | undefined {
  if (adminToken !== undefined || allowOpen || isLoopbackHost(host)) return undefined;
  return `ADMIN_TOKEN: required when HOST is not a loopback address (HOST=${host}): without it anyone who can reach the API can create and list keys and read usage and billing. Set ADMIN_TOKEN (16 characters or more), or BOOKTAPE_ALLOW_OPEN=1 to serve an open API on purpose`;
}

/**
 * The warning an open service logs at start and shows on its status, or undefined: no
 * ADMIN_TOKEN on a HOST others can reach (only possible with BOOKTAPE_ALLOW_OPEN=1).
 */
export function openServiceWarning(host: string, adminToken: string | undefined): string | undefined {
  if (adminToken !== undefined || isLoopbackHost(host)) return undefined;
  return `Open service: HOST=${host} is not a loopback address and ADMIN_TOKEN is unset (BOOKTAPE_ALLOW_OPEN=1): anyone who reaches the port can create, list and revoke keys and read every user's usage and billing`;
}

/** API_STREAM_SESSIONS_PER_KEY: 0 = half the pool (so another key always finds one when there are two or more); never more than the pool. */
export function streamSessionsPerKey(sessions: number, perKey: number): number {
  if (perKey > sessions) throw new ConfigError([`API_STREAM_SESSIONS_PER_KEY: must be at most API_STREAM_SESSIONS (${sessions}), or 0 for half of them`]);
  return perKey === 0 ? defaultSessionsPerOwner(sessions) : perKey;
}

/** The first value that was set (null, `none`, counts as set). */
const firstSet = <T>(...values: Array<T | undefined>): T => values.find((v) => v !== undefined) as T;

export function apiConfigFromEnv(env: ApiEnv, rawEnv: NodeJS.ProcessEnv = process.env): ApiConfig {
  const refusal = openServiceRefusal(env.HOST, env.ADMIN_TOKEN, env.BOOKTAPE_ALLOW_OPEN);
  if (refusal !== undefined) throw new ConfigError([refusal]);
  const dataDir = platformConfig(env, rawEnv).dataDir;
  const secretFile = path.join(dataDir, 'api', 'cursor-secret');
  return {
    host: env.HOST,
    port: env.PORT,
    publicUrl: env.PUBLIC_URL,
    adminToken: env.ADMIN_TOKEN,
    corsOrigins: env.CORS_ORIGINS,
    openServiceWarning: openServiceWarning(env.HOST, env.ADMIN_TOKEN),
    dailyDir: path.join(dataDir, 'api', 'daily'),
    cursorSecret: env.CURSOR_SECRET ? Buffer.from(env.CURSOR_SECRET, 'utf8') : loadOrCreateSecret(secretFile),
    dataFloors: {
      'exchange-a': firstSet(env.EXCHANGE_A_DATA_FLOOR, env.EXCHANGE_A_EARLIEST_DATE, DEFAULT_DATA_FLOORS['exchange-a']),
      'exchange-b': firstSet(env.EXCHANGE_B_DATA_FLOOR, DEFAULT_DATA_FLOORS['exchange-b']),
    },
    redisKeyPrefix: env.REDIS_KEY_PREFIX,
    resultCacheMs: env.API_RESULT_CACHE_MS,
    summaryAnswerCacheBytes: env.API_SUMMARY_ANSWER_CACHE_MB * 1024 * 1024,
    caching: { finalisedAfterMs: env.API_FINALISED_AFTER_MS, maxAgeSeconds: env.API_IMMUTABLE_MAX_AGE_S },
    offsetContinuationMs: env.API_OFFSET_CONTINUATION_MS,
    usageFlushMs: env.API_USAGE_FLUSH_MS,
    streamSessions: env.API_STREAM_SESSIONS,
    streamSessionsPerKey: streamSessionsPerKey(env.API_STREAM_SESSIONS, env.API_STREAM_SESSIONS_PER_KEY),
    streamFloor: { bytesPerSecond: env.API_STREAM_FLOOR_BYTES_PER_SECOND, windowMs: env.API_STREAM_FLOOR_WINDOW_SECONDS * 1000 },
    replaysPerKey: env.API_REPLAYS_PER_KEY === 0 ? null : env.API_REPLAYS_PER_KEY,
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
      free: { monthly: env.PLAN_FREE_MONTHLY, perSecond: env.PLAN_FREE_PER_SECOND, concurrent: env.PLAN_FREE_CONCURRENT },
      starter: { monthly: env.PLAN_STARTER_MONTHLY, perSecond: env.PLAN_STARTER_PER_SECOND, concurrent: env.PLAN_STARTER_CONCURRENT },
      pro: { monthly: env.PLAN_PRO_MONTHLY, perSecond: env.PLAN_PRO_PER_SECOND, concurrent: env.PLAN_PRO_CONCURRENT },
    },
    requestLogFlushMs: env.REQUEST_LOG_FLUSH_MS,
  };
}
