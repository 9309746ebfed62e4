import { generateKeyPairSync } from 'node:crypto';
import { createLogger, parseEnv, untilSignal } from '@booktape/config';
import { createKafka } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor, createStatusPublisher, ingestorConfig, ingestorEnvSchema } from '@booktape/ingestor';
import { apiConfigFromEnv, apiEnvSchema, createApi, createRedis } from '@booktape/api';
import { createRollupWorker, rollupOptions } from '@booktape/rollup-worker';
import { startSimulator, type Simulator } from '@booktape/simulator';

export interface StartOptions {
  simulate: boolean;
  rate: number | undefined;
}

/**
 * The root launcher: ingestor, API and rollup worker in one process sharing one ClickHouse
 * client (the embedded engine allows one process per data directory). With --simulate the
 * venue simulator runs in-process too and capture points at it, exchange B signing
 * included (a key pair is generated for the session).
 */
export async function runStart(opts: StartOptions): Promise<number> {
  const log = createLogger('booktape');
  let simulator: Simulator | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (opts.simulate) {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keyId = 'simulator-key';
    simulator = await startSimulator({
      eventsPerSecond: opts.rate ?? 2000,
      markets: { exchangeA: 20, exchangeB: 10 },
      kalshiKeyId: keyId,
      kalshiPublicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    Object.assign(env, {
      EXCHANGE_A_WS_URL: simulator.urls.exchangeA,
      EXCHANGE_A_GAMMA_URL: simulator.urls.gamma,
      EXCHANGE_A_TOKENS: '',
      EXCHANGE_A_MARKETS: '',
      EXCHANGE_B_WS_URL: simulator.urls.exchangeB,
      EXCHANGE_B_TICKERS: simulator.markets.exchangeB.map((m) => m.ticker).join(','),
      EXCHANGE_B_API_KEY_ID: keyId,
      EXCHANGE_B_PRIVATE_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      EXCHANGE_B_PRIVATE_KEY_FILE: '',
    });
    log.info({ urls: simulator.urls, eventsPerSecond: opts.rate ?? 2000 }, 'capturing the built-in venue simulator');
  } else {
    log.info('capturing the live venues (use `npm start -- --simulate` for the built-in simulator)');
  }

  const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
  const apiConfig = apiConfigFromEnv(parseEnv(apiEnvSchema, env), env);
  const ch = await openClickHouse(config.platform.clickhouse);
  const applied = await migrate(ch);
  if (applied.length) log.info({ applied }, 'migrations applied');
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: `booktape-${config.platform.workerId}` }, log);

  const worker = createRollupWorker({ ch, redisUrl: config.platform.redisUrl, log: log.child({ app: 'rollup-worker' }), options: rollupOptions(env, config.platform) });
  // The sink's stored partitions go to the rollup queue (the worker's, same process).
  const ingestor = createIngestor({ config, kafka, ch, log: log.child({ app: 'ingestor' }), onStored: (parts) => worker.queue?.notify(parts) });
  const redis = createRedis(config.platform.redisUrl);
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
  const api = createApi(
    { ch, redis, config: apiConfig, log: log.child({ app: 'api' }), probes: { sink: () => ingestor.sink?.health().ok ?? true } },
    { host: apiConfig.host, port: apiConfig.port },
  );

  await worker.start();
  await ingestor.start();
  // The ingestor's report for /monitoring/status goes through Redis, as between separate processes.
  const status = createStatusPublisher({ redis, prefix: config.platform.rollup.queuePrefix, log: log.child({ app: 'ingestor' }), ingestor, config, kafka });
  status.start();
  const address = await api.start();
  log.info({ address, dataDir: config.platform.dataDir }, `booktape is running: ${address}/api/v1/health, status page ${address}/status`);

  return untilSignal(log, async () => {
    await status.stop();
    await api.stop();
    await ingestor.stop();
    await worker.stop();
    await simulator?.close();
    redis.disconnect();
    await ch.close();
  });
}
