/**
 * Websocket replay benchmark (issue 25; a script, not a timed test): `npm run bench -- replay-ws`.
 *
 * The real API in a child process of its own (its CPU and event loop are not the client's)
 * over one dense exchange A asset-day (fill-day.ts, BENCH_EVENTS events, default 1,000,000,
 * rolled up), one local client on the exchange A replay socket
 * (`/api/v1/exchange-a/replay/ws/market`), subscribed to the asset:
 *   - as fast as the client reads (no `speed`): the whole day, events/s and frames/s from the
 *     first frame to the close (target: >= 200,000 messages/s from a 1M-event day), and the
 *     CPU seconds the API process (with its engine) and the client used meanwhile;
 *   - paced (`speed=1`, and `speed=20`): BENCH_PACED_S seconds of the socket's time each
 *     (default 15), each event's lateness = its arrival - its due time, where the due time is
 *     origin + venue time / speed and the origin the earliest the arrivals allow (the most
 *     punctual event is 0 late); p50, p99 and max (target at speed=1: p99 <= 5 ms).
 * The last line printed is the JSON summary. No baseline: the replay did not exist before.
 * BENCH_CHILD_PROF=DIR writes a CPU profile of the API process there.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { intEnv } from './bench-env.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
const PACED_S = intEnv('BENCH_PACED_S', 15, 2);
const MARKET = `0x${'5e'.repeat(32)}`;
const ASSET = '5550025';
const DATE = '2026-03-04';
const DAY = Date.UTC(2026, 2, 4);
const TARGETS = { messages_per_s: 200_000, paced_p99_ms: 5 };

interface Ready {
  url: string;
  key: string;
  fill_s: number;
}

async function serve(): Promise<void> {
  const { silentLogger } = await import('@booktape/config');
  const { openClickHouse, migrate, RawEventsRepository, SummariesRepository } = await import('@booktape/storage');
  const { createApi, createRedis } = await import('@booktape/api');
  const { deleteRedisPrefix, testConfig } = await import('@booktape/api/testing');
  const { Roller } = await import('@booktape/summaries');
  const { fillDay } = await import('./fill-day.ts');

  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-replay-ws-bench-'));
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
  await migrate(ch);
  const t0 = Date.now();
  await fillDay(new RawEventsRepository(ch), MARKET, ASSET, DAY, EVENTS, 25, 0);
  await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });
  const log = silentLogger();
  await new Roller(new SummariesRepository(ch), log, { closeGraceMs: 0 }).rollDay({ venue: 'exchange-a', market: MARKET, asset: ASSET }, DATE, true);
  const fillS = (Date.now() - t0) / 1000;
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379', { connectionName: 'booktape-replay-ws-bench' });
  const config = testConfig({
    redisKeyPrefix: `bt-replay-ws-bench-${randomBytes(4).toString('hex')}:`,
    rollupQueuePrefix: `bench-replay-ws-${process.pid}`,
    dataFloors: { 'exchange-a': null, 'exchange-b': null },
    plans: { free: { monthly: null, perSecond: null }, starter: { monthly: null, perSecond: null }, pro: { monthly: null, perSecond: null } },
  });
  const api = createApi({ ch, log, redis, config }, { host: '127.0.0.1', port: 0 });
  const url = await api.start();
  const made = await fetch(`${url}/api/v1/keys?name=bench&user_id=replay-ws-bench`, { method: 'POST' });
  const key = ((await made.json()) as { data: { api_key: string } }).data.api_key;
  const ready: Ready = { url, key, fill_s: fillS };
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await Promise.race([api.stop(), new Promise((r) => setTimeout(r, 5000))]);
    await deleteRedisPrefix(redis, config.redisKeyPrefix).catch(() => undefined);
    redis.disconnect();
    await ch.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
  // Runs until the parent closes its stdin (or stops it).
  process.stdin.resume();
  process.stdin.once('end', () => void stop());
}

/** One replay: events (array items of the frames) and frames received, with each event's arrival and venue time when `timed`. */
function replay(ready: Ready, query: string, timed: boolean, stopAfterMs = Infinity) {
  return new Promise<{ frames: number; events: number; firstMs: number; lastMs: number; code: number; times: Array<[number, number]> }>((resolve, reject) => {
    const wsUrl = `${ready.url.replace(/^http/, 'ws')}/api/v1/exchange-a/replay/ws/market?${query}`;
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${ready.key}` } });
    let frames = 0;
    let events = 0;
    let firstMs = 0;
    let lastMs = 0;
    const times: Array<[number, number]> = [];
    let stopper: NodeJS.Timeout | undefined;
    ws.once('open', () => ws.send(JSON.stringify({ assets_ids: [ASSET], type: 'market' })));
    ws.on('message', (data: Buffer) => {
      const now = performance.now();
      if (frames === 0) {
        firstMs = now;
        if (Number.isFinite(stopAfterMs)) stopper = setTimeout(() => ws.close(1000), stopAfterMs);
      }
      lastMs = now;
      frames++;
      const text = data.toString('utf8');
      if (text === 'PONG') return;
      const parsed = JSON.parse(text) as unknown;
      const list = Array.isArray(parsed) ? parsed : [parsed];
      events += list.length;
      if (timed) for (const e of list as Array<{ timestamp?: string; event_type?: string }>) if (e.event_type !== 'book' || times.length > 0) times.push([now, Number(e.timestamp)]);
    });
    ws.once('close', (code) => {
      clearTimeout(stopper);
      resolve({ frames, events, firstMs, lastMs, code, times });
    });
    ws.once('error', reject);
  });
}

function quantile(sorted: number[], q: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/**
 * Lateness of each event against the schedule (ms): due = origin + venue time / speed, the
 * origin the earliest any event's arrival allows (so the most punctual event is 0 late, and a
 * replay that drifts behind shows it as growing lateness).
 */
function lateness(times: Array<[number, number]>, speed: number) {
  if (times.length < 2) return { events: times.length, p50_ms: null, p99_ms: null, max_ms: null };
  const v0 = times[0]![1];
  let origin = Infinity;
  for (const [a, v] of times) origin = Math.min(origin, a - (v - v0) / speed);
  const late = times.map(([a, v]) => a - (origin + (v - v0) / speed)).sort((x, y) => x - y);
  const r = (x: number | null) => (x === null ? null : Math.round(x * 100) / 100);
  return { events: times.length, p50_ms: r(quantile(late, 0.5)), p99_ms: r(quantile(late, 0.99)), max_ms: r(late[late.length - 1]!) };
}

async function main(): Promise<void> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...(process.env.BENCH_CHILD_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CHILD_PROF}`] : []), '--import', 'tsx', self, '--serve'], { stdio: ['pipe', 'pipe', 'inherit'], env: process.env });
  try {
    const ready = await new Promise<Ready>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`API process exited early (${code})`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.startsWith('READY ')) resolve(JSON.parse(line.slice(6)) as Ready);
      });
    });
    // CPU seconds of the API process (all its threads: the API's and the embedded engine's): on a
    // busy machine the seconds a replay takes say little; the CPU it used says what it costs.
    const { procCpuSeconds } = await import('@booktape/testkit');
    const cpuSeconds = (pid: number | undefined): number | null => (pid === undefined ? null : procCpuSeconds(pid));
    process.stderr.write(`[replay-ws] API ready (${EVENTS} events stored and rolled up in ${ready.fill_s.toFixed(1)} s)\n`);
    const from = DAY;
    const to = DAY + 86_400_000 - 1;
    // Warm-up: a short window (code loaded, first reads).
    await replay(ready, `from=${from}&to=${from + 600_000}`, false);

    const serverCpu0 = cpuSeconds(child.pid);
    const clientCpu0 = process.cpuUsage();
    const whole = await replay(ready, `from=${from}&to=${to}`, false);
    const serverCpu1 = cpuSeconds(child.pid);
    const clientCpu = process.cpuUsage(clientCpu0);
    const seconds = (whole.lastMs - whole.firstMs) / 1000;
    const serverCpuS = serverCpu0 === null || serverCpu1 === null ? null : Math.round((serverCpu1 - serverCpu0) * 100) / 100;
    const fast = {
      events: whole.events,
      frames: whole.frames,
      seconds: Math.round(seconds * 100) / 100,
      events_per_s: Math.round(whole.events / seconds),
      frames_per_s: Math.round(whole.frames / seconds),
      close_code: whole.code,
      // What the replay cost, whatever else the machine ran: the API process's CPU (its threads and the engine's) and the client's.
      server_cpu_s: serverCpuS,
      events_per_server_cpu_s: serverCpuS ? Math.round(whole.events / serverCpuS) : null,
      client_cpu_s: Math.round((clientCpu.user + clientCpu.system) / 10_000) / 100,
    };
    process.stderr.write(`[replay-ws] as fast as read: ${JSON.stringify(fast)}\n`);

    const paced: Record<string, unknown> = {};
    for (const speed of [1, 20]) {
      // A busy stretch of the day: its middle.
      const start = DAY + 12 * 3_600_000;
      const r = await replay(ready, `from=${start}&to=${start + Math.ceil(PACED_S * speed * 1000) + 60_000}&speed=${speed}`, true, PACED_S * 1000);
      paced[`speed_${speed}`] = lateness(r.times, speed);
      process.stderr.write(`[replay-ws] speed=${speed}: ${JSON.stringify(paced[`speed_${speed}`])}\n`);
    }
    const summary = {
      events: EVENTS,
      fill_s: ready.fill_s,
      load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
      fast,
      paced,
      targets: TARGETS,
      met: {
        messages_per_s: fast.events_per_s >= TARGETS.messages_per_s,
        paced_p99: ((paced.speed_1 as { p99_ms: number | null }).p99_ms ?? Infinity) <= TARGETS.paced_p99_ms,
      },
    };
    console.log(JSON.stringify(summary));
  } finally {
    child.stdin?.end();
    // Given time to remove its store; killed if it hangs.
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => {
        child.kill('SIGKILL');
        resolve();
      }, 15_000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
    });
  }
}

if (process.argv.includes('--serve')) await serve();
else await main();
