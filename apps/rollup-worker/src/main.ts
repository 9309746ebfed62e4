// Runs the rollup worker alone (production shape).
import { ConfigError, appLogger, parseEnv, platformConfig, platformEnvSchema, untilSignal } from '@booktape/config';
import { openClickHouse, migrate } from '@booktape/storage';
import { createRollupWorker, rollupOptions } from './index.ts';

const log = appLogger('rollup-worker');
try {
  const platform = platformConfig(parseEnv(platformEnvSchema));
  const ch = await openClickHouse(platform.clickhouse);
  await migrate(ch);
  const worker = createRollupWorker({ ch, redisUrl: platform.redisUrl, log, options: rollupOptions(process.env, platform) });
  await worker.start();
  process.exitCode = await untilSignal(log, async () => {
    await worker.stop();
    await ch.close();
  });
} catch (e) {
  log.fatal(e instanceof ConfigError ? e.message : { err: e }, 'rollup worker failed to start');
  process.exitCode = e instanceof ConfigError ? 2 : 1;
}
