// Runs the API alone (production shape: one process per app, against a ClickHouse server).
import { ConfigError, createLogger, parseEnv, platformConfig } from '@booktape/config';
import { openClickHouse, migrate } from '@booktape/storage';
import { apiConfigFromEnv, apiEnvSchema, createApi, createRedis } from './index.ts';

const log = createLogger('api');
try {
  const env = parseEnv(apiEnvSchema);
  const platform = platformConfig(env);
  const config = apiConfigFromEnv(env);
  const ch = await openClickHouse(platform.clickhouse);
  await migrate(ch);
  // Fails fast: with Redis down, requests answer 503 at once instead of hanging.
  const redis = createRedis(platform.redisUrl);
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
  const api = createApi({ ch, log, redis, config }, { host: config.host, port: config.port });
  await api.start();
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ signal }, 'api shutting down');
    try {
      await api.stop();
      redis.disconnect();
      await ch.close();
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'api shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
} catch (e) {
  if (e instanceof ConfigError) {
    log.fatal(e.message);
    process.exit(2);
  }
  log.fatal({ err: e }, 'api failed to start');
  process.exit(1);
}
