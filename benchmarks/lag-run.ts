/**
 * One run of the ingest-to-summary lag benchmark in one tree (lag.bench.ts runs it in the
 * baseline commit's tree and in this one). Uses only what both trees export.
 *
 * The whole path in one process, as `npm start -- --simulate` runs it: the venue simulator
 * at BENCH_RATE events/s (default 5,000; the ingest benchmark sustains ~7,000 stored
 * records/s on this machine) over 20 exchange A markets (40 outcome tokens) and 10
 * exchange B tickers → capture → Kafka → sink → rollup queue → rollup worker, for
 * BENCH_SECONDS (default 90, the first 15 s not sampled). The worker runs at its tree's default
 * concurrency unless BENCH_CONCURRENCY says otherwise.
 *
 * Every 500 ms, for every asset with a row today: lag = now − covered_until, i.e. how old
 * the newest event is that the stored summaries do not include yet (every event before
 * covered_until is rolled up). Served answers are fresh regardless (the live part); this
 * is how far behind the stored rollups run. Target p99 <= 5 s. Last line: JSON.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, parseEnv } from '@booktape/config';
import { utcDate } from '@booktape/domain';
import { createIngestor, ingestorConfig, ingestorEnvSchema } from '@booktape/ingestor';
import { createKafka, RollupQueue } from '@booktape/messaging';
import { startSimulator } from '@booktape/simulator';
import { createRollupWorker } from '@booktape/rollup-worker';
import { migrate, openClickHouse, RawEventsRepository, SummariesRepository } from '@booktape/storage';
import { eventTimeMs } from '@booktape/venues';
import { Roller } from '@booktape/summaries';

// BENCH_PROBE=1: the time of each repository, queue and roller call (where a job's time goes),
// added to the output as `probe` (a call's time includes waiting for the engine or Redis).
const probe: Record<string, number[]> = {};
let dayCount = 0;
function wrap(proto: Record<string, unknown>, name: string, label: string) {
  const f = proto[name];
  if (typeof f !== 'function' || process.env.BENCH_PROBE !== '1') return;
  proto[name] = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const t0 = performance.now();
    try {
      return await f.apply(this, args);
    } finally {
      (probe[label] ??= []).push(performance.now() - t0);
      if (label === 'roll.rollMany') dayCount += (args[0] as unknown[]).length;
      if (label === 'roll.rollFrom') dayCount += 1;
    }
  };
}
for (const m of ['window', 'bookEventsRead', 'bookEventsReadMany', 'write', 'writeMany', 'hourChunks', 'dayAndBeforeMany']) wrap(SummariesRepository.prototype as unknown as Record<string, unknown>, m, `repo.${m}`);
for (const m of ['lockAndClaim', 'lockAndClaimMany', 'release', 'version', 'bumpVersion', 'notify']) wrap(RollupQueue.prototype as unknown as Record<string, unknown>, m, `queue.${m}`);
for (const m of ['rollFrom', 'rollMany']) wrap(Roller.prototype as unknown as Record<string, unknown>, m, `roll.${m}`);
wrap(RawEventsRepository.prototype as unknown as Record<string, unknown>, 'insert', 'sink.rawInsert');
// The sink's side (by path: not exported, and absent in some trees): how long a batch's
// commit waits for the notification, and how old the newest record of a batch is when
// the rollup queue hears of it (the sink's share of the lag).
if (process.env.BENCH_PROBE === '1') {
  const mod = (await import('../apps/ingestor/src/sink/notifier.ts').catch(() => null)) as { StoredNotifier?: { prototype: Record<string, unknown> } } | null;
  const proto = mod?.StoredNotifier?.prototype;
  const notify = proto?.notify;
  if (proto && typeof notify === 'function') {
    proto.notify = async function (this: unknown, messages: Array<Parameters<typeof eventTimeMs>[0]>): Promise<void> {
      const t0 = performance.now();
      let newest = 0;
      for (const m of messages) newest = Math.max(newest, eventTimeMs(m));
      (probe['sink.ageWhenStored'] ??= []).push(Date.now() - newest);
      try {
        await notify.call(this, messages);
      } finally {
        (probe['sink.notifyWait'] ??= []).push(performance.now() - t0);
      }
    };
  }
}
function probeSummary() {
  const out: Record<string, unknown> = { assetDaysAsked: dayCount };
  for (const [k, v] of Object.entries(probe)) {
    const s = [...v].sort((a, b) => a - b);
    out[k] = { n: v.length, p50: Math.round(s[Math.floor(s.length / 2)]!), p95: Math.round(s[Math.floor(s.length * 0.95)]!), mean: Math.round(v.reduce((a, b) => a + b, 0) / v.length), sum_s: Math.round(v.reduce((a, b) => a + b, 0) / 100) / 10 };
  }
  return out;
}
import { intEnv } from './bench-env.ts';

const RATE = intEnv('BENCH_RATE', 5000, 1);
const WARMUP = 15;
// Samples are taken after the warm-up: a shorter run would report nothing.
const SECONDS = intEnv('BENCH_SECONDS', 90, WARMUP + 5);

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function main(): Promise<void> {
  const log = createLogger('lag-bench', 'warn');
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-lag-bench-'));
  const ch = await openClickHouse({ database: 'booktape_lag', embeddedPath: dir });
  await migrate(ch);
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const sim = await startSimulator({ eventsPerSecond: RATE, seed: 9, markets: { exchangeA: 20, exchangeB: 10 }, kalshiKeyId: 'k', kalshiPublicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() });
  const id = `lagbench${process.pid}`;
  const env = {
    ...process.env,
    KAFKA_TOPIC_PREFIX: `${id}.`,
    SINK_GROUP_ID: `${id}-sink`,
    EXCHANGE_A_WS_URL: sim.urls.exchangeA,
    EXCHANGE_A_GAMMA_URL: sim.urls.gamma,
    EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '0',
    EXCHANGE_B_WS_URL: sim.urls.exchangeB,
    EXCHANGE_B_TICKERS: sim.markets.exchangeB.map((m) => m.ticker).join(','),
    EXCHANGE_B_API_KEY_ID: 'k',
    EXCHANGE_B_PRIVATE_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
  const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: id }, log);
  const worker = createRollupWorker({ ch, redisUrl: config.platform.redisUrl, log, options: { queuePrefix: id, ...(process.env.BENCH_CONCURRENCY === undefined ? {} : { concurrency: intEnv('BENCH_CONCURRENCY', 4, 1) }) } });
  await worker.start();
  const ingestor = createIngestor({ config, kafka, ch, log, onStored: (parts) => worker.queue?.notify(parts) });
  await ingestor.start();

  const lags: number[] = [];
  const started = Date.now();
  let maxAssets = 0;
  try {
    while (Date.now() - started < SECONDS * 1000) {
      await new Promise((r) => setTimeout(r, 500));
      if (Date.now() - started < WARMUP * 1000) continue;
      const now = Date.now();
      const rs = await ch.client.query({
        query: `SELECT toUnixTimestamp64Milli(covered_until) AS c FROM ${ch.table('summary_days')} FINAL WHERE event_date = {d:Date}`,
        query_params: { d: utcDate(now) },
        format: 'JSONEachRow',
      });
      const rows = await rs.json<{ c: string | number }>();
      maxAssets = Math.max(maxAssets, rows.length);
      for (const r of rows) lags.push(now - Number(r.c));
    }
  } finally {
    const stored = ingestor.sink?.health();
    await ingestor.stop();
    await worker.stop();
    await sim.close();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(ingestor.topics.raw).concat([ingestor.topics.deadLetter, ingestor.topics.gaps]) }).catch(() => undefined);
    await admin.disconnect();
    await ch.close();
    rmSync(dir, { recursive: true, force: true });
    lags.sort((a, b) => a - b);
    const out = {
      rate: RATE,
      seconds: SECONDS,
      assets: maxAssets,
      samples: lags.length,
      lag_ms: { p50: quantile(lags, 0.5), p95: quantile(lags, 0.95), p99: quantile(lags, 0.99), max: lags[lags.length - 1] ?? NaN },
      worker: worker.health(),
      sink: stored,
      machine: { cpus: cpus().length, loadavg: loadavg().map((x) => Number(x.toFixed(2))) },
      target_p99_ms: 5_000,
      ...(process.env.BENCH_PROBE === '1' ? { probe: probeSummary() } : {}),
    };
    process.stderr.write(`[lag] ${maxAssets} assets, p50 ${out.lag_ms.p50} ms, p99 ${out.lag_ms.p99} ms, max ${out.lag_ms.max} ms over ${lags.length} samples\n`);
    console.log(JSON.stringify(out));
  }
}

await main();
