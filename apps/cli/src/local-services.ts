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
