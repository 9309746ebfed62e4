import { createLogger, parseEnv, untilSignal } from '@booktape/config';
import { createKafka } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor } from './ingestor.ts';
import { ingestorConfig, ingestorEnvSchema } from './config.ts';

/** The ingestor alone: the production shape, and what the crash tests kill and restart. */
export async function runIngest(): Promise<number> {
  const log = createLogger('ingestor', process.env.LOG_LEVEL);
  const config = ingestorConfig(parseEnv(ingestorEnvSchema));
  const ch = config.roles.sink ? await openClickHouse(config.platform.clickhouse) : null;
  if (ch) await migrate(ch);
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: `booktape-ingestor-${config.platform.workerId}` }, log);
  const ingestor = createIngestor({ config, kafka, ch, log });
  await ingestor.start();
  log.info({ roles: config.roles }, 'ingestor running');
  return untilSignal(log, async () => {
    await ingestor.stop();
    await ch?.close();
  });
}
