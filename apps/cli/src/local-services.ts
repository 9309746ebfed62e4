import { ConfigError } from '@booktape/config';

/**
 * The project's own Kafka and Redis listen on BOOKTAPE_KAFKA_PORT / BOOKTAPE_REDIS_PORT
 * (scripts/services.mjs, defaults 19092 / 16379), and `npm start` / `npm test` derive
 * KAFKA_BROKERS / REDIS_URL from them. A command run by hand (`npx booktape replay`) must
 * reach the same services: where KAFKA_BROKERS or REDIS_URL is unset, it is derived from
 * the port the same way. An explicit KAFKA_BROKERS / REDIS_URL always wins.
 */
export function withLocalServicePorts(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  const issues: string[] = [];
  const port = (name: string): number | null => {
    const v = env[name];
    if (v === undefined || v === '') return null;
    if (!/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > 65_535) {
      issues.push(`${name}: must be a port number 1-65535 (got ${JSON.stringify(v.slice(0, 40))})`);
      return null;
    }
    return Number(v);
  };
  const kafka = port('BOOKTAPE_KAFKA_PORT');
  const redis = port('BOOKTAPE_REDIS_PORT');
  if (issues.length > 0) throw new ConfigError(issues);
  if (kafka !== null && !env.KAFKA_BROKERS) out.KAFKA_BROKERS = `127.0.0.1:${kafka}`;
  if (redis !== null && !env.REDIS_URL) out.REDIS_URL = `redis://127.0.0.1:${redis}`;
  return out;
}

/** The Redis a command that writes to it (`rollup`) uses, and why that one, in words for its output. */
export interface ChosenRedis {
  url: string;
  source: string;
}

export const PROJECT_REDIS_PORT = 16379;

/**
 * REDIS_URL when it is set; else the project's own Redis on 127.0.0.1 at
 * BOOKTAPE_REDIS_PORT (scripts/services.mjs, default 16379). Nothing else: no other port
 * or host is tried, so work is never enqueued on a Redis that merely happens to listen.
 */
export function chooseRedis(env: NodeJS.ProcessEnv): ChosenRedis {
  if (env.REDIS_URL) return { url: env.REDIS_URL, source: 'REDIS_URL' };
  // Only now read the ports: a bad BOOKTAPE_KAFKA_PORT must not stop a command that has its Redis.
  if (env.BOOKTAPE_REDIS_PORT) return { url: withLocalServicePorts(env).REDIS_URL!, source: `the project's own Redis, BOOKTAPE_REDIS_PORT=${env.BOOKTAPE_REDIS_PORT}` };
  return { url: `redis://127.0.0.1:${PROJECT_REDIS_PORT}`, source: `the project's own Redis, default port ${PROJECT_REDIS_PORT} (REDIS_URL and BOOKTAPE_REDIS_PORT unset)` };
}
