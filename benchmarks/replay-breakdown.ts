/**
 * Where the sink side's CPU goes during a replay (issue 23): replay-run.ts's measurement with
 * the engine's statements counted by kind (statement and table: count, wall time, rows the
 * engine reports read), and a run without the rollup to subtract it.
 *
 *   BENCH_CAPTURE_FILE=… BENCH_CAPTURE_FRAMES=… BD_ROLLUP=on|off [BD_AFTER=1] npx tsx benchmarks/replay-breakdown.ts
 *
 * BD_ROLLUP=off: the sink's notifications are only collected, nobody rolls during the
 * replay; with BD_AFTER=1 the replayed partitions are then marked dirty once (unhinted, as
 * `replay --wait` does at its end) and rolled, measured apart.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, parseEnv, silentLogger } from '@booktape/config';
import { createKafka, partitionKey, type PartitionRef } from '@booktape/messaging';
import { migrate, openClickHouse } from '@booktape/storage';
import { createIngestor, ingestorConfig, ingestorEnvSchema } from '@booktape/ingestor';
import { createRollupWorker, rollupOptions } from '@booktape/rollup-worker';

const file = process.env.BENCH_CAPTURE_FILE!;
const frames = Number(process.env.BENCH_CAPTURE_FRAMES);
const rollupOn = process.env.BD_ROLLUP !== 'off';
const log = silentLogger();

// Every engine statement, by kind.
type Stat = { n: number; wallMs: number; engineMs: number; rows: number };
const stats = new Map<string, Stat>();
const kindOf = (sql: string): string => {
  const s = sql.replace(/\s+/g, ' ').trim();
  const m = /^(?:SET [^;]*; )*(INSERT INTO|SELECT|OPTIMIZE TABLE|ALTER TABLE|CREATE|SYSTEM|WITH)\s*([\w.]+)?/i.exec(s);
  if (!m) return s.slice(0, 40);
  if (/^INSERT/i.test(m[1]!)) return `INSERT ${m[2]}`;
  if (s.includes("'n' AS kind")) return `FACTS${s.includes("'c' AS kind") ? ' +count' : ''}${s.includes("'i' AS kind") ? ' +imports' : ''}`;
  const from = /FROM\s+([\w.]+)/i.exec(s);
  const tag = /summary_days|summary_chunks|book_checkpoints|raw_exchange_[ab]|system\.\w+|market_dates/.exec(s);
  return `${m[1]!.toUpperCase()} ${from?.[1] ?? ''}${tag && tag[0] !== from?.[1]?.split('.').pop() ? ` …${tag[0]}` : ''} [${s.length > 60 ? s.slice(0, 60) : s}]`.replace(/bench_replay_\d+/g, '');
};
const add = (k: string, t0: number, r: { rowsRead?: number; elapsed?: number } | undefined) => {
  const st = stats.get(k) ?? { n: 0, wallMs: 0, engineMs: 0, rows: 0 };
  st.n++;
  st.wallMs += performance.now() - t0;
  st.engineMs += (r?.elapsed ?? 0) * 1000;
  st.rows += r?.rowsRead ?? 0;
  stats.set(k, st);
};
{
  const req = createRequire(path.join(REPO_ROOT, 'libs/storage/package.json'));
  const { Session } = req('chdb') as { Session: { prototype: Record<string, (...a: unknown[]) => unknown> } };
  for (const name of ['queryAsync', 'queryBindAsync']) {
    const orig = Session.prototype[name]!;
    Session.prototype[name] = function (this: unknown, sql: string, ...rest: unknown[]) {
      const t0 = performance.now();
      const k = kindOf(sql);
      const p = orig.call(this, sql, ...rest) as Promise<{ rowsRead?: number; elapsed?: number }>;
      return p.then((r) => (add(k, t0, r), r));
    } as never;
  }
  for (const name of ['queryStream', 'queryStreamBind']) {
    const orig = Session.prototype[name]!;
    Session.prototype[name] = function (this: unknown, sql: string, ...rest: unknown[]) {
      const t0 = performance.now();
      const k = `STREAM ${kindOf(sql)}`;
      const s = orig.call(this, sql, ...rest) as AsyncIterable<{ numRows: number }>;
      const it = s[Symbol.asyncIterator].bind(s);
      let rows = 0;
      (s as { [Symbol.asyncIterator]: unknown })[Symbol.asyncIterator] = async function* () {
        try {
          for await (const c of { [Symbol.asyncIterator]: it }) {
            rows += c.numRows;
            yield c;
          }
        } finally {
          add(k, t0, { rowsRead: rows });
        }
      };
      return s;
    } as never;
  }
}

function cpuOf(pid: number | string | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}
const THREAD_KIND = (name: string): string =>
  name.startsWith('MergeMutate') ? 'engine_merges' : /^(ThreadPool|QueryPipeline|QueryCompPipe|QueryPullPipe|QueryPushPipe)/.test(name) ? 'engine_queries' : `other:${name.replace(/\d+$/, '#')}`;
const seen = new Map<string, { kind: string; cpu: number }>();
const gone: Record<string, number> = { engine_merges: 0, engine_queries: 0 };
function sample(): void {
  const live = new Set<string>();
  for (const t of require_('fs').readdirSync(`/proc/${process.pid}/task`) as string[]) {
    if (t === String(process.pid)) continue;
    try {
      const raw = readFileSync(`/proc/${process.pid}/task/${t}/stat`, 'utf8');
      const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
      seen.set(t, { kind: THREAD_KIND(raw.slice(raw.indexOf('(') + 1, raw.lastIndexOf(')'))), cpu: (Number(f[11]) + Number(f[12])) / 100 });
      live.add(t);
    } catch {}
  }
  for (const [t, v] of seen) if (!live.has(t)) (gone[v.kind] = (gone[v.kind] ?? 0) + v.cpu), seen.delete(t);
}
const require_ = createRequire(import.meta.url);
function kinds(): Record<string, number> {
  sample();
  const o = { ...gone };
  for (const v of seen.values()) o[v.kind] = (o[v.kind] ?? 0) + v.cpu;
  return o;
}
const mainThread = () => cpuOf(`${process.pid}/task/${process.pid}`);

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-breakdown-'));
const prefix = `bench-replay-${Date.now()}`;
const env: NodeJS.ProcessEnv = { ...process.env, KAFKA_TOPIC_PREFIX: `${prefix}.`, SINK_GROUP_ID: `${prefix}-sink`, ROLLUP_QUEUE_PREFIX: prefix, BOOKTAPE_DATA_DIR: dir, INGESTOR_ROLES: 'sink', LOG_LEVEL: 'warn' };
const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
const ch = await openClickHouse(config.platform.clickhouse);
await migrate(ch);
const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'bench-breakdown' }, log);
const worker = createRollupWorker({ ch, redisUrl: config.platform.redisUrl, log, options: rollupOptions(env, config.platform) });
const collected = new Map<string, PartitionRef>();
const ingestor = createIngestor({
  config,
  kafka,
  ch,
  log,
  onStored: rollupOn ? (parts) => worker.queue?.notify(parts) : (parts) => void parts.forEach((p) => collected.set(partitionKey(p), p)),
});
if (rollupOn) await worker.start();
await ingestor.start();
await ingestor.sinkJoined;
stats.clear();

const ENGINE_EVENTS = ['InsertQuery', 'SelectQuery', 'InsertedRows', 'MergeTreeDataWriterBlocks', 'Merge', 'MergedRows', 'SelectedRows', 'SelectedMarks', 'SelectedParts'];
const engineEvents = async (): Promise<Record<string, number>> => {
  const rs = await ch.client.query({ query: `SELECT event, value FROM system.events WHERE event IN (${ENGINE_EVENTS.map((e) => `'${e}'`).join(', ')})`, format: 'JSONEachRow' });
  return Object.fromEntries((await rs.json<{ event: string; value: string }>()).map((r) => [r.event, Number(r.value)]));
};
const snap = async () => ({ ev: await engineEvents(), th: kinds(), self: process.cpuUsage(), main: mainThread(), t: Date.now() });
type Snap = Awaited<ReturnType<typeof snap>>;
const diff = (a: Snap, b: Snap) => {
  const c = { user: b.self.user - a.self.user, system: b.self.system - a.self.system };
  const r1 = (x: number) => Math.round(x * 10) / 10;
  return {
    seconds: (b.t - a.t) / 1000,
    process_cpu: r1((c.user + c.system) / 1e6),
    js_main: r1(b.main - a.main),
    engine_queries: r1((b.th.engine_queries ?? 0) - (a.th.engine_queries ?? 0)),
    engine_merges: r1((b.th.engine_merges ?? 0) - (a.th.engine_merges ?? 0)),
    other_threads: Object.fromEntries(Object.keys(b.th).filter((k) => k.startsWith('other')).map((k) => [k.slice(6), r1((b.th[k] ?? 0) - (a.th[k] ?? 0))])),
    events: Object.fromEntries(ENGINE_EVENTS.map((e) => [e, (b.ev[e] ?? 0) - (a.ev[e] ?? 0)])),
  };
};
const dumpStats = () => {
  const out = [...stats.entries()].sort((a, b) => b[1].wallMs - a[1].wallMs).map(([k, s]) => ({ k, n: s.n, wall_s: Math.round(s.wallMs) / 1000, engine_s: Math.round(s.engineMs) / 1000, rows: s.rows }));
  stats.clear();
  return out;
};

const s0 = await snap();
let sStored: Snap | null = null;
const replay = spawn(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'replay', file, '--wait', '--timeout', '3600'], { env, stdio: ['ignore', 'inherit', 'pipe'] });
const sampler = setInterval(sample, 500);
let stderr = '';
let replayCpu = 0;
const sampler2 = setInterval(() => (replayCpu = Math.max(replayCpu, cpuOf(replay.pid))), 500);
let storedStats: ReturnType<typeof dumpStats> | null = null;
let storedSeen = false;
const stored = new Promise<void>((resolve) =>
  replay.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (!storedSeen && stderr.includes('everything replayed is stored')) {
      storedSeen = true;
      void snap().then((s) => {
        sStored = s;
        storedStats = dumpStats();
        resolve();
      });
    }
  }),
);
const exited = new Promise<number | null>((r) => replay.once('exit', r));
let result: Record<string, unknown>;
if (rollupOn) {
  const code = await exited;
  if (code !== 0) throw new Error(`replay exited ${code}: ${stderr.slice(-2000)}`);
  const s1 = await snap();
  result = { until_stored: diff(s0, sStored!), after_stored: diff(sStored!, s1), whole: diff(s0, s1), queries_until_stored: storedStats, queries_after_stored: dumpStats() };
} else {
  await stored;
  replay.kill('SIGTERM');
  await exited;
  result = { until_stored: diff(s0, sStored!), queries_until_stored: storedStats };
  if (process.env.BD_AFTER === '1') {
    await worker.start();
    const parts = [...collected.values()];
    const a0 = await snap();
    await worker.queue!.markDirty(parts.map((p) => ({ venue: p.venue, market: p.market, asset: p.asset, date: p.date })));
    while ((await worker.queue!.unsettled(parts)) > 0) await new Promise((r) => setTimeout(r, 100));
    const a1 = await snap();
    result.rollup_after = diff(a0, a1);
    result.queries_rollup_after = dumpStats();
  }
}
clearInterval(sampler);
clearInterval(sampler2);
const health = ingestor.health().sink!;
result.replay_cpu = replayCpu;
result.sink = { batches: health.batches, inserts: (health as { inserts?: number }).inserts, stored: health.stored };
result.rollup = rollupOn || process.env.BD_AFTER === '1' ? worker.health() : null;
result.frames = frames;
await ingestor.stop();
await worker.stop();
const admin = kafka.admin();
await admin.connect();
await admin.deleteTopics({ topics: [...Object.values(ingestor.topics.raw), ingestor.topics.deadLetter, ingestor.topics.gaps] }).catch(() => undefined);
await admin.disconnect();
await ch.close();
if (process.env.BD_KEEP === '1') console.error(`kept ${dir}`);
else rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(result, null, 1));
process.exit(0);
