/**
 * Live ingest benchmark (issue 10's "live" goal): the venue simulator (its own process, like
 * a real venue) at BENCH_RATE events/s (default 50,000) → capture (its own process) → Kafka
 * → sink → embedded ClickHouse (this process), for BENCH_SECONDS (default 300). Reports
 * sustained stored records/s over the steady window, frame-to-row latency percentiles (row
 * inserted_at − frame received_at, computed in ClickHouse), what was dropped (connections
 * the simulator closed as slow consumers, i.e. capture gaps, and captured records that never
 * reached the store once the pipeline drained), and RSS at the end of the warm-up against the
 * end of the run for each process. Prints one JSON line last.
 *
 *   npx tsx apps/ingestor/bench/ingest.bench.ts    (npm run bench runs it with the services up)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, createLogger, parseEnv, silentLogger } from '@booktape/config';
import { Redis } from 'ioredis';
import { createKafka, ingestorReportKeys } from '@booktape/messaging';
import { procRssBytes } from '@booktape/testkit';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor, ingestorConfig, ingestorEnvSchema, waitUntilStored } from '../src/index.ts';

/**
 * Slack, in seconds, when setting a gap beside a stall: a gap may open up to 2 s after the
 * stall ended (a dead socket is noticed late) or have closed up to 10 s before it started
 * (what was in flight drains first). A gap still open at the end ends at the simulator's stop.
 */
const GAP_SLACK_AFTER_S = 2;
const GAP_SLACK_BEFORE_S = 10;

const seconds = Number(process.env.BENCH_SECONDS ?? 300);
const rate = Number(process.env.BENCH_RATE ?? 50_000);
const warmup = Math.min(20, Math.floor(seconds / 6));
const log = process.env.BENCH_LOG ? createLogger('bench', process.env.BENCH_LOG) : silentLogger();

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-bench-'));
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
  // `booktape simulate` prints the key file it wrote for its exchange B endpoint.
  EXCHANGE_B_PRIVATE_KEY_FILE: simEnv.EXCHANGE_B_PRIVATE_KEY_FILE,
  KAFKA_TOPIC_PREFIX: prefix,
  SINK_GROUP_ID: `${prefix}sink`,
  // The capture process's status report (its record counters) is read back under this prefix.
  ROLLUP_QUEUE_PREFIX: prefix.slice(0, -1),
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

/** RSS of each process when the warm-up ends, to compare with the end ("flat after warm-up"). */
type Rss = { sink: number; capture: number; simulator: number };
let rssAtWarmup = null as Rss | null;
let peakSelf = 0;
let peakSim = 0;
let peakCapture = 0;
const samples: Array<{ t: number; stored: number }> = [];
const started = Date.now();
const timer = setInterval(() => {
  peakSelf = Math.max(peakSelf, process.memoryUsage().rss);
  peakSim = Math.max(peakSim, procRssBytes(sim.pid!));
  peakCapture = Math.max(peakCapture, procRssBytes(capture.pid!));
  samples.push({ t: Date.now() - started, stored: ingestor.sink!.stats.stored });
  if (!rssAtWarmup && Date.now() - started >= warmup * 1000) rssAtWarmup = { sink: process.memoryUsage().rss, capture: procRssBytes(capture.pid!), simulator: procRssBytes(sim.pid!) };
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
const rssAtEnd = { sink: process.memoryUsage().rss, capture: procRssBytes(capture.pid!), simulator: procRssBytes(sim.pid!) };

// Dropped: stop the venues, read what capture counted, let the pipeline drain, compare.
const simStoppedAt = Date.now();
sim.kill('SIGTERM');
const statusRedis = new Redis(config.platform.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
const reportKeys = ingestorReportKeys(env.ROLLUP_QUEUE_PREFIX!);
/** What capture's status reports say it captured, per venue (its counters only grow), and when each report was published. */
async function capturedSoFar(): Promise<{ counts: Record<string, number>; published: string; intervalMs: number }> {
  const instances: string[] = await statusRedis.zrange(reportKeys.index, '0', '-1');
  const counts: Record<string, number> = { 'exchange-a': 0, 'exchange-b': 0 };
  const published: string[] = [];
  let intervalMs = 5000;
  for (const i of instances) {
    const report = JSON.parse((await statusRedis.get(reportKeys.report(i))) ?? 'null') as { published_at?: string; interval_ms?: number; capture?: { venues: Array<{ venue: string; records_total: number }> } } | null;
    if (!report?.capture) continue;
    if (typeof report.interval_ms === 'number') intervalMs = report.interval_ms;
    published.push(`${i}@${report.published_at ?? ''}`);
    for (const v of report.capture.venues) counts[v.venue] = (counts[v.venue] ?? 0) + v.records_total;
  }
  return { counts, published: published.sort().join(','), intervalMs };
}
// A capture that fell behind goes on working through frames it had already received after
// the venues stopped, so its counters are taken once a NEWER report (published later) shows
// the same counts as the one before: a count read too early would show rows stored that
// capture "never" captured. If that does not happen within 120 s, the result says so.
let last = await capturedSoFar();
let captured = last.counts;
let capturedSettled = false;
for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
  await new Promise((r) => setTimeout(r, last.intervalMs + 500));
  const next = await capturedSoFar();
  if (next.published === last.published) continue; // no new report yet: nothing learnt
  capturedSettled = Object.keys(next.counts).every((v) => next.counts[v] === last.counts[v]);
  last = next;
  captured = next.counts;
  if (capturedSettled) break;
}
capture.kill('SIGTERM');
await new Promise((r) => capture.once('exit', r));
await waitUntilStored(kafka, ingestor.topics, config.sinkGroupId, { timeoutMs: 600_000 });
const storedRows = async (table: string) => Number((await (await ch.client.query({ query: `SELECT count() AS n FROM ${ch.table(table)} FINAL`, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n);
const stored = { 'exchange-a': await storedRows('raw_exchange_a'), 'exchange-b': await storedRows('raw_exchange_b') };
const gapRows = await (await ch.client.query({ query: `SELECT venue, count() AS n FROM ${ch.table('capture_gaps')} FINAL WHERE started_at < fromUnixTimestamp64Milli(toInt64({stop:UInt64})) GROUP BY venue ORDER BY venue`, query_params: { stop: simStoppedAt }, format: 'JSONEachRow' })).json<{ venue: string; n: string }>();
// Each gap's time span, seconds since the start, to set beside the stalls below.
const gapSpans = (await (await ch.client.query({
  query: `SELECT venue, toUnixTimestamp64Milli(started_at) AS s, toUnixTimestamp64Milli(ifNull(ended_at, fromUnixTimestamp64Milli(toInt64({stop:UInt64})))) AS e
    FROM ${ch.table('capture_gaps')} FINAL WHERE started_at < fromUnixTimestamp64Milli(toInt64({stop:UInt64}))`,
  query_params: { stop: simStoppedAt },
  format: 'JSONEachRow',
})).json<{ venue: string; s: string; e: string }>()).map((g) => ({ venue: g.venue, from: (Number(g.s) - started) / 1000, to: (Number(g.e) - started) / 1000 }));
statusRedis.disconnect();

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
// The topics this run made hold the whole run's records: deleted, not left to Kafka's retention.
const admin = kafka.admin();
await admin.connect();
await admin.deleteTopics({ topics: [...Object.values(ingestor.topics.raw), ingestor.topics.deadLetter, ingestor.topics.gaps] }).catch(() => undefined);
await admin.disconnect();
await ch.close().catch(() => undefined);
try {
  rmSync(dir, { recursive: true, force: true });
} catch {
  // the engine may still be finishing a merge in that directory; it is a temp dir
}

const result = {
  bench: 'ingest',
  stalls: stallsWithGaps(stalls(samples), gapSpans),
  seconds,
  simulatorRateTarget: rate,
  sustainedStoredRecordsPerSec: Math.round(sustained),
  latencyMs: { exchangeA: { p50: latA.p50, p99: latA.p99 }, exchangeB: { p50: latB.p50, p99: latB.p99 } },
  // Records capture counted (its status report) against rows stored once everything drained:
  // a difference is a loss inside the pipeline. Capture gaps are connections that dropped
  // during the run (the simulator closes slow consumers, as the venues do): data the venue
  // sent and capture lost. Those the simulator's own stop caused are not counted.
  capturedRecords: captured,
  // False: capture's counters still moved when the wait ended, so lostInPipeline is not a loss figure.
  capturedSettled,
  storedRows: stored,
  lostInPipeline: { 'exchange-a': (captured['exchange-a'] ?? 0) - stored['exchange-a'], 'exchange-b': (captured['exchange-b'] ?? 0) - stored['exchange-b'] },
  captureGaps: Object.fromEntries(gapRows.map((g) => [g.venue, Number(g.n)])),
  rssMB: {
    atWarmupEnd: rssAtWarmup && { sink: Math.round(rssAtWarmup.sink / 2 ** 20), capture: Math.round(rssAtWarmup.capture / 2 ** 20), simulator: Math.round(rssAtWarmup.simulator / 2 ** 20) },
    atEnd: { sink: Math.round(rssAtEnd.sink / 2 ** 20), capture: Math.round(rssAtEnd.capture / 2 ** 20), simulator: Math.round(rssAtEnd.simulator / 2 ** 20) },
  },
  peakRssMB: { sinkProcess: Math.round(peakSelf / 2 ** 20), captureProcess: Math.round(peakCapture / 2 ** 20), simulatorProcess: Math.round(peakSim / 2 ** 20) },
};
console.log(JSON.stringify(result));
process.exit(0);

/**
 * Stretches of at least 3 s in which the sink stored nothing (after the first row), in
 * seconds since the start. Each is set beside the capture gaps whose span touches it: a
 * stall with gaps is capture reconnecting after the venue dropped it as a slow consumer;
 * one without is the pipeline itself stopping, which needs explaining.
 */
function stalls(series: Array<{ t: number; stored: number }>): Array<{ from: number; to: number }> {
  const out: Array<{ from: number; to: number }> = [];
  // `since`: the sample where the count last moved; `prev`: the sample before the current one.
  let since: { t: number; stored: number } | null = null;
  let prev: { t: number; stored: number } | null = null;
  const close = () => {
    if (since && prev && prev.t - since.t >= 3000) out.push({ from: since.t / 1000, to: prev.t / 1000 });
  };
  for (const s of series) {
    if (s.stored === 0) continue;
    if (!since || s.stored !== since.stored) {
      close();
      since = s;
    }
    prev = s;
  }
  close();
  return out;
}

function stallsWithGaps(list: Array<{ from: number; to: number }>, gaps: Array<{ venue: string; from: number; to: number }>) {
  return list.map((st) => {
    const touching = gaps.filter((g) => g.from <= st.to + GAP_SLACK_AFTER_S && g.to >= st.from - GAP_SLACK_BEFORE_S);
    return { fromS: st.from, toS: st.to, gaps: touching.length, gapVenues: [...new Set(touching.map((g) => g.venue))] };
  });
}
