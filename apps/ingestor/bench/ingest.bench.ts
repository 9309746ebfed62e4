/**
 * End-to-end ingest benchmark: the venue simulator (its own process, like a real venue)
 * at a high rate → capture → Kafka → sink → embedded ClickHouse, for BENCH_SECONDS
 * (default 180), with simulator, capture and sink each in its own process. Reports sustained stored events/s over the steady window, frame-to-row
 * latency percentiles (row inserted_at − frame received_at, computed in ClickHouse), and
 * the peak RSS of both processes. Prints one JSON line last.
 *
 *   npx tsx apps/ingestor/bench/ingest.bench.ts    (npm run bench runs it with the services up)
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, createLogger, parseEnv, silentLogger } from '@booktape/config';
import { createKafka } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor, ingestorConfig, ingestorEnvSchema } from '../src/index.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 180);
const rate = Number(process.env.BENCH_RATE ?? 150_000);
const warmup = Math.min(20, Math.floor(seconds / 6));
const log = process.env.BENCH_LOG ? createLogger('bench', process.env.BENCH_LOG) : silentLogger();

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-bench-'));
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const keyFile = path.join(dir, 'key.pem');
writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
const simPort = 19400 + Math.floor(Math.random() * 500);
const sim = spawn(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'simulate', '--port', String(simPort), '--rate', String(rate), '--markets-a', '200', '--markets-b', '100'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, LOG_LEVEL: 'warn' },
});
const simOut = await new Promise<string>((resolve, reject) => {
  let buf = '';
  sim.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    if (buf.includes('EXCHANGE_B_TICKERS=')) setTimeout(() => resolve(buf), 100);
  });
  sim.once('exit', (c) => reject(new Error(`simulator exited with ${c}`)));
});
const simEnv = Object.fromEntries(
  simOut
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^[A-Z_]+=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
);

const prefix = `bench-${Date.now()}.`;
const env = {
  ...process.env,
  ...simEnv,
  EXCHANGE_B_API_KEY_ID: 'simulator-key',
  EXCHANGE_B_PRIVATE_KEY_FILE: simEnv.EXCHANGE_B_PRIVATE_KEY_FILE ?? keyFile,
  KAFKA_TOPIC_PREFIX: prefix,
  SINK_GROUP_ID: `${prefix}sink`,
  BOOKTAPE_DATA_DIR: dir,
};
// Capture runs in its own process (as in production); this process is the sink, so it can
// query the store it fills.
const profile = process.env.BENCH_PROFILE_CAPTURE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_CAPTURE}`] : [];
const capture = spawn(process.execPath, [...profile, path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'ingest'], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...env, INGESTOR_ROLES: 'capture', LOG_LEVEL: 'warn' },
});
const config = ingestorConfig(parseEnv(ingestorEnvSchema, { ...env, INGESTOR_ROLES: 'sink' }), env);
const ch = await openClickHouse(config.platform.clickhouse);
await migrate(ch);
const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'bench' }, log);
const ingestor = createIngestor({ config, kafka, ch, log });
await ingestor.start();

let peakSelf = 0;
let peakSim = 0;
let peakCapture = 0;
const samples: Array<{ t: number; stored: number; captured: number }> = [];
const started = Date.now();
const timer = setInterval(() => {
  peakSelf = Math.max(peakSelf, process.memoryUsage().rss);
  peakSim = Math.max(peakSim, rssOf(sim.pid!));
  peakCapture = Math.max(peakCapture, rssOf(capture.pid!));
  samples.push({ t: Date.now() - started, stored: ingestor.sink!.stats.stored, captured: 0 });
  const last = samples[samples.length - 1]!;
  const prev = samples[Math.max(0, samples.length - 11)]!;
  if (samples.length % 10 === 0) {
    const dt = (last.t - prev.t) / 1000;
    process.stderr.write(
      `t=${(last.t / 1000).toFixed(0)}s stored ${((last.stored - prev.stored) / dt).toFixed(0)}/s rss sink ${(peakSelf / 2 ** 20).toFixed(0)} MB capture ${(peakCapture / 2 ** 20).toFixed(0)} MB batches ${ingestor.sink!.stats.batches}\n`,
    );
  }
}, 500);

await new Promise((r) => setTimeout(r, seconds * 1000));
clearInterval(timer);
const from = samples.find((s) => s.t >= warmup * 1000)!;
const to = samples[samples.length - 1]!;
const sustained = (to.stored - from.stored) / ((to.t - from.t) / 1000);
capture.kill('SIGTERM');
sim.kill('SIGTERM');

const lat = async (table: string) => {
  const rs = await ch.client.query({
    query: `SELECT count() AS n, quantile(0.5)(d) AS p50, quantile(0.99)(d) AS p99 FROM
      (SELECT toUnixTimestamp64Milli(inserted_at) - toUnixTimestamp64Milli(received_at) AS d FROM ${ch.table(table)}
       WHERE received_at >= fromUnixTimestamp64Milli(toInt64({from:UInt64})))`,
    query_params: { from: started + warmup * 1000 },
    format: 'JSONEachRow',
  });
  return (await rs.json<{ n: string; p50: number; p99: number }>())[0]!;
};
const latA = await lat('raw_exchange_a');
const latB = await lat('raw_exchange_b');
// Rows still in flight are not part of the figures; stop without waiting for them.
await Promise.race([ingestor.stop(), new Promise((r) => setTimeout(r, 10_000))]);
await ch.close().catch(() => undefined);
try {
  rmSync(dir, { recursive: true, force: true });
} catch {
  // the engine may still be finishing a merge in that directory; it is a temp dir
}

const result = {
  bench: 'ingest',
  seconds,
  simulatorRateTarget: rate,
  sustainedStoredRecordsPerSec: Math.round(sustained),
  latencyMs: { exchangeA: { p50: latA.p50, p99: latA.p99 }, exchangeB: { p50: latB.p50, p99: latB.p99 } },
  peakRssMB: { sinkProcess: Math.round(peakSelf / 2 ** 20), captureProcess: Math.round(peakCapture / 2 ** 20), simulatorProcess: Math.round(peakSim / 2 ** 20) },
};
console.log(JSON.stringify(result));
process.exit(0);
