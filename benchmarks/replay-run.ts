/**
 * One replay measurement (replay.bench.ts runs it, in this tree and in the baseline's):
 * `booktape replay FILE --wait` of the capture BENCH_CAPTURE_FILE, the replay CLI in its own
 * process as an operator runs it, against a sink and a rollup worker in this process (the
 * `npm start` side, embedded ClickHouse). --wait returns once everything is stored and every
 * summary is rebuilt. Uses only the packages' public exports, so that it runs unchanged in
 * an older tree. Prints one JSON line last.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, createLogger, parseEnv, silentLogger } from '@booktape/config';
import { createKafka } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor, ingestorConfig, ingestorEnvSchema } from '@booktape/ingestor';
import { createRollupWorker, rollupOptions } from '@booktape/rollup-worker';

const file = process.env.BENCH_CAPTURE_FILE;
const frames = Number(process.env.BENCH_CAPTURE_FRAMES);
if (!file || !Number.isInteger(frames)) throw new Error('BENCH_CAPTURE_FILE and BENCH_CAPTURE_FRAMES are required (replay.bench.ts sets them)');
const profileDir = process.env.BENCH_PROFILE;
const log = process.env.BENCH_LOG ? createLogger('bench', process.env.BENCH_LOG) : silentLogger();

// The /proc readers below are @booktape/testkit's procCpuSeconds and procRssBytes, copied:
// this runner also runs inside the baseline commit's tree, whose testkit predates them.

/** CPU seconds (user + system, all threads) a process has used so far; 0 once it is gone. */
function cpuOf(pid: number | string | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}

/** The pid a service's pid file names (the project's own Kafka and Redis), or undefined. */
function servicePid(name: 'kafka' | 'redis'): number | undefined {
  try {
    return Number(readFileSync(path.join(process.env.BENCH_SERVICES_DIR ?? path.join(REPO_ROOT, 'data', 'services'), name, `${name}.pid`), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}


/**
 * CPU seconds of this process's threads by kind, threads that ended included (sampled): the
 * embedded engine's background merges (its MergeMutate threads), its query threads (the
 * pipelines of inserts and reads), and the rest (the JavaScript main thread is counted
 * apart; libuv's and V8's helpers, where the engine's calls start, fall under `other`).
 */
const THREAD_KIND = (name: string): 'engine_merges' | 'engine_queries' | 'other' =>
  name.startsWith('MergeMutate') ? 'engine_merges' : /^(ThreadPool|QueryPipeline|QueryCompPipe|QueryPullPipe|QueryPushPipe)/.test(name) ? 'engine_queries' : 'other';
const threadSeen = new Map<string, { kind: ReturnType<typeof THREAD_KIND>; cpu: number }>();
const threadGone = { engine_merges: 0, engine_queries: 0, other: 0 };
function sampleThreads(): void {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${process.pid}/task`);
  } catch {
    return;
  }
  const live = new Set<string>();
  for (const t of tasks) {
    if (t === String(process.pid)) continue;
    try {
      const raw = readFileSync(`/proc/${process.pid}/task/${t}/stat`, 'utf8');
      const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
      threadSeen.set(t, { kind: THREAD_KIND(raw.slice(raw.indexOf('(') + 1, raw.lastIndexOf(')'))), cpu: (Number(f[11]) + Number(f[12])) / 100 });
      live.add(t);
    } catch {
      // ended between the listing and the read: its last sample stands
    }
  }
  for (const [t, v] of threadSeen) {
    if (live.has(t)) continue;
    threadGone[v.kind] += v.cpu;
    threadSeen.delete(t);
  }
}
function threadKinds(): Record<'engine_merges' | 'engine_queries' | 'other', number> {
  sampleThreads();
  const out = { ...threadGone };
  for (const v of threadSeen.values()) out[v.kind] += v.cpu;
  return out;
}

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-replay-bench-'));
const prefix = `bench-replay-${Date.now()}`;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  KAFKA_TOPIC_PREFIX: `${prefix}.`,
  SINK_GROUP_ID: `${prefix}-sink`,
  ROLLUP_QUEUE_PREFIX: prefix,
  BOOKTAPE_DATA_DIR: dir,
  INGESTOR_ROLES: 'sink',
  LOG_LEVEL: 'warn',
};
const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
const ch = await openClickHouse(config.platform.clickhouse);
await migrate(ch);
const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'bench-replay' }, log);
const worker = createRollupWorker({ ch, redisUrl: config.platform.redisUrl, log, options: rollupOptions(env, config.platform) });
const ingestor = createIngestor({ config, kafka, ch, log, onStored: (parts) => worker.queue?.notify(parts) });
await worker.start();
await ingestor.start();
await ingestor.sinkJoined;

let peakSelf = 0;
let peakReplay = 0;
const kafkaPid = servicePid('kafka');
const redisPid = servicePid('redis');
// This process's main thread (JavaScript: sink, rollup worker) apart from its other threads
// (the embedded engine's, libuv's, the garbage collector's helpers).
const mainThread = () => cpuOf(`${process.pid}/task/${process.pid}`);
// The engine's own counters (system.events, this process's engine since it opened): how many
// inserts and reads it ran, the rows it merged.
const ENGINE_EVENTS = ['InsertQuery', 'SelectQuery', 'InsertedRows', 'MergeTreeDataWriterBlocks', 'Merge', 'MergedRows', 'SelectedRows'];
const engineEvents = async (): Promise<Record<string, number>> => {
  const rs = await ch.client.query({ query: `SELECT event, value FROM system.events WHERE event IN (${ENGINE_EVENTS.map((e) => `'${e}'`).join(', ')})`, format: 'JSONEachRow' });
  return Object.fromEntries((await rs.json<{ event: string; value: string }>()).map((r) => [r.event, Number(r.value)]));
};
const events0 = await engineEvents();
const threads0 = threadKinds();
const cpu0 = { self: process.cpuUsage(), main: mainThread(), kafka: cpuOf(kafkaPid), redis: cpuOf(redisPid) };
let replayCpu = 0;
let cpuAtStored: Record<string, number> | null = null;
const t0 = Date.now();
const marks: Record<string, number> = {};
const replay = spawn(
  process.execPath,
  [...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'replay', file, '--wait', '--timeout', '3600'],
  { env, stdio: ['ignore', 'inherit', 'pipe'] },
);
const sampler = setInterval(() => {
  peakSelf = Math.max(peakSelf, process.memoryUsage.rss());
  sampleThreads();
  peakReplay = Math.max(peakReplay, rssOf(replay.pid!));
  replayCpu = Math.max(replayCpu, cpuOf(replay.pid));
}, 500);
let stderr = '';
replay.stderr!.on('data', (d: Buffer) => {
  stderr += d.toString();
  const now = Date.now() - t0;
  // Searched in everything so far: a marker may be cut across two chunks.
  if (marks.produced === undefined && stderr.includes('replayed ')) marks.produced = now;
  if (marks.stored === undefined && stderr.includes('everything replayed is stored')) {
    marks.stored = now;
    // What the sink side had used when everything was stored (the rest is summaries).
    const c = process.cpuUsage(cpu0.self);
    cpuAtStored = { sink_rollup_and_engine: Math.round((c.user + c.system) / 1e5) / 10, of_which_js_main_thread: Math.round((mainThread() - cpu0.main) * 10) / 10 };
  }
  if (marks.summaries === undefined && stderr.includes('summaries rebuilt')) marks.summaries = now;
});
const code = await new Promise<number | null>((r) => replay.once('exit', r));
const total = Date.now() - t0;
clearInterval(sampler);
const selfCpu = process.cpuUsage(cpu0.self);
const threads1 = threadKinds();
const events1 = await engineEvents();
const cpuSeconds = {
  replay_process: Math.round(replayCpu * 10) / 10,
  sink_rollup_and_engine: Math.round((selfCpu.user + selfCpu.system) / 1e5) / 10,
  of_which_js_main_thread: Math.round((mainThread() - cpu0.main) * 10) / 10,
  kafka: Math.round((cpuOf(kafkaPid) - cpu0.kafka) * 10) / 10,
  redis: Math.round((cpuOf(redisPid) - cpu0.redis) * 10) / 10,
  // The sink side's threads other than the JavaScript main thread, by kind (threadKinds).
  of_which_engine_merges: Math.round((threads1.engine_merges - threads0.engine_merges) * 10) / 10,
  of_which_engine_queries: Math.round((threads1.engine_queries - threads0.engine_queries) * 10) / 10,
  of_which_other_threads: Math.round((threads1.other - threads0.other) * 10) / 10,
};
const engineCounts = Object.fromEntries(ENGINE_EVENTS.map((e) => [e, (events1[e] ?? 0) - (events0[e] ?? 0)]));
if (code !== 0) {
  console.error(stderr.slice(-4000));
  throw new Error(`replay exited with ${code}`);
}
const replayed = /→ (\d+) records/.exec(stderr);
if (!replayed) throw new Error(`replay's output did not say how many records it replayed (its last lines: ${stderr.slice(-500)})`);
const records = Number(replayed[1]);

const q = async <T>(query: string): Promise<T[]> => (await ch.client.query({ query, format: 'JSONEachRow' })).json<T>();
const [stored] = await q<{ a: string; b: string }>(`SELECT (SELECT count() FROM ${ch.table('raw_exchange_a')} FINAL) AS a, (SELECT count() FROM ${ch.table('raw_exchange_b')} FINAL) AS b`);
const storedRows = Number(stored!.a) + Number(stored!.b);
const diskBytes = async () =>
  Number((await q<{ n: string }>(`SELECT sum(bytes_on_disk) AS n FROM system.parts WHERE active AND database = '${ch.database}' AND table IN ('raw_exchange_a', 'raw_exchange_b')`))[0]!.n);
const diskAsStored = await diskBytes();
await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });
await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_b')} FINAL` });
const diskMerged = await diskBytes();
// Where the bytes are, per column (both raw tables), after the merge.
const columns = Object.fromEntries(
  (await q<{ name: string; n: string }>(`SELECT name, sum(data_compressed_bytes) AS n FROM system.columns WHERE database = '${ch.database}' AND table IN ('raw_exchange_a', 'raw_exchange_b') GROUP BY name ORDER BY sum(data_compressed_bytes) DESC`)).map((r) => [r.name, Math.round((Number(r.n) / storedRows) * 10) / 10]),
);

const sinkStats = ingestor.health().sink!;
await ingestor.stop();
await worker.stop();
// The topics this run made hold the whole run's records: deleted, not left to Kafka's retention.
const admin = kafka.admin();
await admin.connect();
await admin.deleteTopics({ topics: [...Object.values(ingestor.topics.raw), ingestor.topics.deadLetter, ingestor.topics.gaps] }).catch(() => undefined);
await admin.disconnect();
await ch.close();
rmSync(dir, { recursive: true, force: true });

const perS = (ms: number | undefined) => (ms ? Math.round((frames * 1000) / ms) : null);
const result = {
  frames,
  records,
  stored_rows: storedRows,
  lost_or_doubled: storedRows - records,
  seconds_total: total / 1000,
  frames_per_second_end_to_end: perS(total),
  frames_per_second_produced: perS(marks.produced),
  frames_per_second_stored: perS(marks.stored),
  seconds_to_summaries_after_stored: marks.summaries !== undefined && marks.stored !== undefined ? (marks.summaries - marks.stored) / 1000 : null,
  sink_batches: sinkStats.batches,
  // Older trees have no insert count: there, one insert per batch.
  sink_inserts: (sinkStats as { inserts?: number }).inserts ?? sinkStats.batches,
  rows_per_insert: Math.round(sinkStats.stored / Math.max(1, (sinkStats as { inserts?: number }).inserts ?? sinkStats.batches)),
  disk_bytes_per_event: Math.round((diskAsStored / storedRows) * 10) / 10,
  disk_bytes_per_event_merged: Math.round((diskMerged / storedRows) * 10) / 10,
  disk_bytes_merged: diskMerged,
  disk_bytes_per_event_by_column: columns,
  // Where the two cores went (the replay process's last sample before it exited).
  cpu_seconds: cpuSeconds,
  cpu_seconds_until_stored: cpuAtStored,
  engine_counts: engineCounts,
  peak_rss_mb: { replay: Math.round(peakReplay / 2 ** 20), sink_and_rollup: Math.round(peakSelf / 2 ** 20) },
};
console.log(`${REPO_ROOT}: replay of ${frames} frames (${records} records): ${result.frames_per_second_end_to_end} frames/s end to end, stored rows ${storedRows}`);
console.log(JSON.stringify(result));
process.exit(0);
