// Runs the rollup worker alone (production shape).
import { ConfigError, createLogger, parseEnv, platformConfig, platformEnvSchema } from '@booktape/config';
import { openClickHouse, migrate } from '@booktape/storage';
import { createRollupWorker } from './index.ts';

const log = createLogger('rollup-worker');
try {
  const platform = platformConfig(parseEnv(platformEnvSchema));
  const ch = await openClickHouse(platform.clickhouse);
  await migrate(ch);
  const worker = createRollupWorker({ ch, redisUrl: platform.redisUrl, log });
  await worker.start();
  const shutdown = async () => {
    await worker.stop();
    await ch.close();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
} catch (e) {
  log.fatal(e instanceof ConfigError ? e.message : { err: e }, 'rollup worker failed to start');
  process.exit(e instanceof ConfigError ? 2 : 1);
}
