import path from 'node:path';
import { z } from 'zod';
import { envInt, envList, envOptional, envString, envUrl } from './env.ts';
import { LOG_LEVELS } from './logger.ts';
import { dataDir } from './paths.ts';

/**
 * Variables every app shares: where the real services are and where local state lives.
 * Each app's schema extends this one; `npm start` and `npm test` fill KAFKA_BROKERS and
 * REDIS_URL with the project's own local services.
 */
export const platformEnvSchema = z.object({
  BOOKTAPE_DATA_DIR: envOptional(),
  LOG_LEVEL: z.preprocess((v) => (v === '' ? undefined : v), z.enum(LOG_LEVELS).default('info')),
  /** json or pretty; unset: pretty when stdout is a terminal, JSON lines otherwise (see createLogger). */
  LOG_FORMAT: z.preprocess((v) => (typeof v === 'string' ? v.trim().toLowerCase() || undefined : v), z.enum(['json', 'pretty']).optional()),
  CLICKHOUSE_URL: envUrl(undefined, ['http', 'https']),
  CLICKHOUSE_USER: envOptional(),
  CLICKHOUSE_PASSWORD: envOptional(),
  CLICKHOUSE_DATABASE: z.preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be an identifier').default('booktape')),
  CLICKHOUSE_CLUSTER: z.preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be an identifier').optional()),
  KAFKA_BROKERS: envList(['127.0.0.1:19092']).refine((l) => l.length > 0 && l.every((b) => /^[^\s:]+:\d{1,5}$/.test(b)), 'must be host:port[,host:port…]'),
  KAFKA_TOPIC_PREFIX: envString(''),
  REDIS_URL: envUrl('redis://127.0.0.1:16379', ['redis', 'rediss']),
  WORKER_ID: envInt(1, 0, 2 ** 31),
  /** Redis key prefix of the rollup queue (BullMQ), shared by sink, rollup worker and CLI. */
  ROLLUP_QUEUE_PREFIX: z.preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 characters of A-Z a-z 0-9 _ . -').default('booktape')),
  /** Stored-data notifications within this window are served by one rollup run per asset (DEFAULT_DEBOUNCE_MS of the rollup queue). */
  ROLLUP_DEBOUNCE_MS: envInt(250, 0, 600_000),
});

export type PlatformEnv = z.infer<typeof platformEnvSchema>;

export interface PlatformConfig {
  dataDir: string;
  logLevel: string;
  clickhouse: {
    url: string | undefined;
    username: string | undefined;
    password: string | undefined;
    database: string;
    cluster: string | undefined;
    embeddedPath: string;
  };
  kafka: { brokers: string[]; topicPrefix: string };
  redisUrl: string;
  workerId: number;
  rollup: { queuePrefix: string; debounceMs: number };
}

export function platformConfig(env: PlatformEnv, rawEnv: NodeJS.ProcessEnv = process.env): PlatformConfig {
  const dir = env.BOOKTAPE_DATA_DIR ? path.resolve(env.BOOKTAPE_DATA_DIR) : dataDir(rawEnv);
  return {
    dataDir: dir,
    logLevel: env.LOG_LEVEL,
    clickhouse: {
      url: env.CLICKHOUSE_URL,
      username: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
      cluster: env.CLICKHOUSE_CLUSTER,
      embeddedPath: path.join(dir, 'clickhouse'),
    },
    kafka: { brokers: env.KAFKA_BROKERS, topicPrefix: env.KAFKA_TOPIC_PREFIX },
    redisUrl: env.REDIS_URL!,
    workerId: env.WORKER_ID,
    rollup: { queuePrefix: env.ROLLUP_QUEUE_PREFIX, debounceMs: env.ROLLUP_DEBOUNCE_MS },
  };
}
