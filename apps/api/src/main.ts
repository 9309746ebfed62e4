// Runs the API alone (production shape: one process per app, against a ClickHouse server).
import { ConfigError, appLogger, parseEnv, platformConfig, untilSignal } from '@booktape/config';
import { openClickHouse, migrate } from '@booktape/storage';
import { apiConfigFromEnv, apiEnvSchema, createApi, createRedis } from './index.ts';

const log = appLogger('api');
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
  process.exitCode = await untilSignal(log, async () => {
    await api.stop();
    redis.disconnect();
    await ch.close();
  });
} catch (e) {
  log.fatal(e instanceof ConfigError ? e.message : { err: e }, 'api failed to start');
  process.exitCode = e instanceof ConfigError ? 2 : 1;
}
