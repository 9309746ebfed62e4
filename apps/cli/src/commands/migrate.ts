import { createLogger, parseEnv, platformConfig, platformEnvSchema } from '@booktape/config';
import { migrate, openClickHouse } from '@booktape/storage';

export async function runMigrate(): Promise<number> {
  const log = createLogger('migrate');
  const platform = platformConfig(parseEnv(platformEnvSchema));
  const ch = await openClickHouse(platform.clickhouse);
  try {
    const applied = await migrate(ch);
    log.info({ applied }, applied.length ? 'migrations applied' : 'schema is up to date');
    return 0;
  } finally {
    await ch.close();
  }
}
