import { generateKeyPairSync } from 'node:crypto';
import { createLogger, parseEnv, untilSignal, type Logger } from '@booktape/config';
import { createKafka } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor, createStatusPublisher, ingestorConfig, ingestorEnvSchema, type Ingestor } from '@booktape/ingestor';
import { apiConfigFromEnv, apiEnvSchema, createApi, createRedis, type ProbeResult } from '@booktape/api';
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
  const running = await composeStart(opts, process.env, log);
  return untilSignal(log, running.stop);
}

export interface Running {
  /** The API's base address (http://host:port). */
  address: string;
  ingestor: Ingestor;
  /** Stops everything, in order: status, API, ingestor (capture, then sink), worker. */
  stop(): Promise<void>;
}

/**
 * Starts the launcher's composition. The API comes first and serves reads and health at
 * once: after a crash, the sink's consumer group keeps the dead process's slot until its
 * session times out (~30 s), and nothing else has to wait for that. The sink joins in the
 * background (health says `joining` meanwhile); capture starts without waiting for it.
 */
export async function composeStart(opts: StartOptions, baseEnv: NodeJS.ProcessEnv, log: Logger): Promise<Running> {
  let simulator: Simulator | undefined;
  const env: NodeJS.ProcessEnv = { ...baseEnv };
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
  log.info({ dataDir: config.platform.dataDir }, 'local state in the data directory');
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
    { ch, redis, config: apiConfig, log: log.child({ app: 'api' }), probes: { sink: () => sinkProbe(ingestor, config.roles.sink) } },
    { host: apiConfig.host, port: apiConfig.port },
  );
  // The ingestor's report for /monitoring/status goes through Redis, as between separate processes.
  const status = createStatusPublisher({ redis, prefix: config.platform.rollup.queuePrefix, log: log.child({ app: 'ingestor' }), ingestor, config, kafka });

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await status.stop();
      await api.stop();
      await ingestor.stop();
      await worker.stop();
      await simulator?.close();
      redis.disconnect();
      await ch.close();
    })());

  try {
    const address = await api.start();
    await worker.start();
    await ingestor.start();
    status.start();
    log.info(readyLine(address, apiConfig.adminToken !== undefined));
    void ingestor.sinkJoined.then(() => config.roles.sink && log.info('sink joined its consumer group'));
    return { address, ingestor, stop };
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
}

/** The one line that ends startup: where everything an operator opens is. */
function readyLine(address: string, adminToken: boolean): string {
  return `booktape is ready: API ${address}/api/v1, docs ${address}/api/v1/docs, status page ${address}/status, metrics ${address}/metrics${adminToken ? ' (with X-Admin-Token)' : ''}`;
}

/** The sink for /health: ok while joining (reads do not need it), down when its consumer died. */
function sinkProbe(ingestor: Ingestor, sinkRole: boolean): ProbeResult {
  const h = ingestor.sink?.health();
  // The API answers before the ingestor has made its sink (the rollup worker starts first).
  if (!h) return sinkRole ? { ok: true, state: 'joining', detail: 'the sink is starting' } : true;
  return { ok: h.ok, state: h.consumer === 'running' && h.paused ? 'paused' : h.consumer, detail: h.reason };
}
