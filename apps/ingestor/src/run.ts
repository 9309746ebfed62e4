import { appLogger, parseEnv, untilSignal } from '@booktape/config';
import { RollupQueue, createKafka } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor } from './ingestor.ts';
import { ingestorConfig, ingestorEnvSchema } from './config.ts';
import { createStatusPublisher, createStatusRedis } from './status-publisher.ts';

/** The ingestor alone: the production shape, and what the crash tests kill and restart. */
export async function runIngest(): Promise<number> {
  const log = appLogger('ingestor', process.env.LOG_LEVEL);
  const config = ingestorConfig(parseEnv(ingestorEnvSchema));
  const ch = config.roles.sink ? await openClickHouse(config.platform.clickhouse) : null;
  if (ch) await migrate(ch);
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: `booktape-ingestor-${config.platform.workerId}` }, log);
  // The sink tells the rollup queue which (venue, market, asset, date) got data.
  const rollups = config.roles.sink ? new RollupQueue({ redisUrl: config.platform.redisUrl, prefix: config.platform.rollup.queuePrefix, debounceMs: config.platform.rollup.debounceMs }) : null;
  const ingestor = createIngestor({ config, kafka, ch, log, ...(rollups ? { onStored: (parts) => rollups.notify(parts) } : {}) });
  await ingestor.start();
  // Capture and sink state for the API's /monitoring/status (this process's report in Redis).
  const statusRedis = createStatusRedis(config.platform.redisUrl);
  const status = createStatusPublisher({ redis: statusRedis, prefix: config.platform.rollup.queuePrefix, log, ingestor, config, kafka });
  status.start();
  log.info({ roles: config.roles }, 'ingestor running');
  return untilSignal(log, async () => {
    await status.stop();
    statusRedis.disconnect();
    await ingestor.stop();
    await rollups?.close();
    await ch?.close();
  });
}
