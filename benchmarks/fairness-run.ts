/**
 * One run of the fairness benchmark (issue 27) in one tree; fairness.bench.ts runs it in the
 * baseline commit's tree and in this one. Uses only what both trees export.
 *
 * The API runs in a child process of its own (`--serve`: its event loop and RSS are its
 * own, not the load generator's): one dense exchange A asset-day (fill-day.ts, BENCH_EVENTS
 * events, default 300,000: every second of the day holds observations) stored in an
 * embedded ClickHouse in a temp dir and rolled up, the project's Redis under a unique
 * prefix, production plan limits and stream-session settings, keys of three users:
 * `heavy` (pro), `slow` (free) and `other` (free), new ones per scenario so that each
 * scenario's billing is its own.
 *
 * Scenarios, BENCH_SCENARIO_S seconds each (default 20):
 *   - summaries_12, summaries_200: the heavy key pulls whole-day R=1 summaries (86,400
 *     buckets, tens of MB of JSON; each request another 24-hour window, so that none is served
 *     from the API's settled answers) on 12, then 200 connections, each asking again as soon
 *     as an answer ended (after the Retry-After of 1 s when refused with 429, 100 ms after
 *     another failure: a load generator spinning on refusals would take this two-core
 *     machine's CPU from the API it measures);
 *   - slow_readers: the slow key reads raw pages of limit=100000 on 4 connections at
 *     1 KB/s (a net socket in paused mode, 1,024 bytes taken a second), starting again
 *     when a page ends or is refused.
 * Meanwhile: GET /health every 100 ms and the other key's 5-row raw page every 250 ms
 * (latency to the last byte, 10 s timeout counted as 10 s), the API process's RSS every
 * 50 ms. After each scenario, once /usage stands still (two equal readings 2 s apart: the
 * server settles the requests the clients left): the calls it counted for each user against
 * the 2xx answers that user's client received whole. The last line printed is the JSON summary.
 *
 * A guard: an API process above BENCH_RSS_KILL_MB (default 3072) is killed (the machine is
 * shared), and the scenario says so.
 *
 * To find where a slow probe's time went: BENCH_ONLY=<scenario> runs one scenario;
 * BENCH_DIAG=1 prints, per scenario, the other key's requests over 150 ms as the server logged
 * them (arrival, latency) beside the client's (start, latency), /health probes over 100 ms,
 * the load generator's own event-loop delay, and the API process's event-loop blocks over
 * 150 ms and garbage collections over 80 ms; BENCH_CHILD_PROF=DIR writes the API process's
 * CPU profile there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { Agent, request } from 'node:http';
import { tmpdir, loadavg } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { intEnv } from './bench-env.ts';

const EVENTS = intEnv('BENCH_EVENTS', 100_000, 5000);
const SCENARIO_MS = intEnv('BENCH_SCENARIO_S', 20, 1) * 1000;
const RSS_KILL = intEnv('BENCH_RSS_KILL_MB', 3072, 256) * 1024 * 1024;
const MARKET = `0x${'3c'.repeat(32)}`;
const ASSET = '5550027';
const DATE = '2026-03-03';
const DAY = Date.UTC(2026, 2, 3);
const SCENARIOS = ['summaries_12', 'summaries_200', 'slow_readers'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Ready {
  url: string;
  pid: number;
  fill_s: number;
  /** Per scenario: user ids and keys. */
  keys: Record<Scenario, { heavy: [string, string]; slow: [string, string]; other: [string, string] }>;
}

// ---------------------------------------------------------------------------------------
// Child: the API under test.
// ---------------------------------------------------------------------------------------
async function serve(): Promise<void> {
  const { silentLogger } = await import('@booktape/config');
  const { openClickHouse, migrate, RawEventsRepository, SummariesRepository, SubscriptionsRepository } = await import('@booktape/storage');
  const { createApi, createRedis } = await import('@booktape/api');
  const { deleteRedisPrefix, testConfig } = await import('@booktape/api/testing');
  const { Roller } = await import('@booktape/summaries');
  const { assetKey, rollupKeys } = await import('@booktape/messaging');
  const { fillDay } = await import('./fill-day.ts');

  if (process.env.BENCH_DIAG) {
    const { PerformanceObserver } = await import('node:perf_hooks');
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) if (e.duration > 80) process.stderr.write(`[diag] API gc kind ${(e as unknown as { detail?: { kind?: number } }).detail?.kind} ${e.duration.toFixed(0)} ms at ${new Date(performance.timeOrigin + e.startTime).toISOString().slice(11, 23)}\n`);
    }).observe({ entryTypes: ['gc'] });
    let last = Date.now();
    setInterval(() => {
      const n = Date.now();
      if (n - last > 150) process.stderr.write(`[diag] API event loop blocked ${n - last - 20} ms at ${new Date(last).toISOString().slice(11, 23)}\n`);
      last = n;
    }, 20).unref();
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-fairness-bench-'));
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
  await migrate(ch);
  const t0 = Date.now();
  await fillDay(new RawEventsRepository(ch), MARKET, ASSET, DAY, EVENTS, 27, 0);
  await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });
  const log = silentLogger();
  await new Roller(new SummariesRepository(ch), log, { closeGraceMs: 0 }).rollDay({ venue: 'exchange-a', market: MARKET, asset: ASSET }, DATE, true);
  const fillS = (Date.now() - t0) / 1000;

  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379', { connectionName: 'booktape-fairness-bench' });
  const prefix = `bt-fair-bench-${randomBytes(4).toString('hex')}:`;
  const queuePrefix = `bench-fair-${process.pid}`;
  await redis.incr(rollupKeys(queuePrefix).version(assetKey({ venue: 'exchange-a', market: MARKET, asset: ASSET })));
  // Production limits and stream settings (the tests' config lifts them); what a tree does
  // not know is ignored by it.
  const config = testConfig({
    redisKeyPrefix: prefix,
    rollupQueuePrefix: queuePrefix,
    dataFloors: { 'exchange-a': null, 'exchange-b': null },
    resultCacheMs: 1000,
    usageFlushMs: 5000,
    requestLogFlushMs: 2000,
    streamSessions: 4,
    streamSessionsPerKey: 2,
    plans: {
      free: { monthly: null, perSecond: 5, concurrent: 2 },
      starter: { monthly: 100_000, perSecond: 20, concurrent: 4 },
      pro: { monthly: null, perSecond: 100, concurrent: 8 },
    },
    ...({ streamFloor: { bytesPerSecond: 32_768, windowMs: 10_000 } } as object),
  } as Parameters<typeof testConfig>[0]);
  const subs = new SubscriptionsRepository(ch);
  const api = createApi({ ch, log, redis, config }, { host: '127.0.0.1', port: 0 });
  const url = await api.start();
  const keys = {} as Ready['keys'];
  const run = randomBytes(3).toString('hex');
  for (const s of SCENARIOS) {
    const users = { heavy: `fair-${run}-${s}-heavy`, slow: `fair-${run}-${s}-slow`, other: `fair-${run}-${s}-other` };
    const now = new Date().toISOString();
    await subs.save({
      user_id: users.heavy,
      email: '',
      stripe_customer_id: null,
      stripe_subscription_id: null,
      tier: 'pro',
      status: 'active',
      plan: 'pro',
      current_period_end: null,
      cancel_at_period_end: false,
      event_created: 0,
      last_event_id: '',
      updated_at: now,
      version: 1,
    });
    const made = {} as Ready['keys'][Scenario];
    for (const [who, user] of Object.entries(users) as [keyof typeof users, string][]) {
      const res = await fetch(`${url}/api/v1/keys?name=${who}&user_id=${user}`, { method: 'POST' });
      made[who] = [user, ((await res.json()) as { data: { api_key: string } }).data.api_key];
    }
    keys[s] = made;
  }

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await Promise.race([api.stop(), new Promise((r) => setTimeout(r, 5000))]);
    await deleteRedisPrefix(redis, prefix).catch(() => undefined);
    await redis.del(rollupKeys(queuePrefix).version(assetKey({ venue: 'exchange-a', market: MARKET, asset: ASSET }))).catch(() => undefined);
    redis.disconnect();
    await ch.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
  const ready: Ready = { url, pid: process.pid, fill_s: fillS, keys };
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
}

// ---------------------------------------------------------------------------------------
// Parent: load and measurements.
// ---------------------------------------------------------------------------------------
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};

interface Got {
  status: number;
  /** 2xx with the body received to its end. */
  whole: boolean;
  ms: number;
  bytes: number;
}

/** GET to the last byte, the body discarded as it arrives; status 0 on a network error or timeout. */
function get(url: string, key: string | null, agent: Agent | false, timeoutMs: number, stop?: AbortSignal): Promise<Got> {
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (status: number, whole: boolean, bytes: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ status, whole, bytes, ms: performance.now() - started });
    };
    const req = request(url, { headers: key ? { authorization: `Bearer ${key}` } : {}, agent, ...(stop ? { signal: stop } : {}) }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => finish(res.statusCode ?? 0, res.complete && (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300, bytes));
      res.on('error', () => finish(res.statusCode ?? 0, false, bytes));
      res.on('aborted', () => finish(res.statusCode ?? 0, false, bytes));
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish(0, false, 0);
    }, timeoutMs);
    req.on('error', () => finish(0, false, 0));
    req.end();
  });
}

interface ClientTally {
  requests: number;
  whole2xx: number;
  byStatus: Record<string, number>;
}
const tally = (): ClientTally => ({ requests: 0, whole2xx: 0, byStatus: {} });
function count(t: ClientTally, g: Got): void {
  t.requests++;
  if (g.whole) t.whole2xx++;
  const k = String(g.status);
  t.byStatus[k] = (t.byStatus[k] ?? 0) + 1;
}

/** The heavy key: `conns` loops asking for the whole-day R=1 summary until `stop`. */
async function heavyLoad(base: string, key: string, conns: number, stop: AbortSignal): Promise<ClientTally & { mb: number }> {
  const t = tally();
  let bytes = 0;
  const agent = new Agent({ keepAlive: true, maxSockets: conns });
  // Each request a different 24-hour window (its start a second later than the one before):
  // every answer is built, none is a settled answer kept from before (the API keeps those),
  // the worst case for everyone else.
  let n = 0;
  const url = () => {
    const start = DAY + (n++ % 86_400) * 1000;
    return `${base}/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&start_timestamp=${start}&end_timestamp=${start + 86_399_999}&resolution=1`;
  };
  await Promise.all(
    Array.from({ length: conns }, async () => {
      while (!stop.aborted) {
        // An answer in flight at the end of the scenario is read to its end (at most 60 s):
        // cutting it would leave the server with an answer handed to the socket whole that
        // the client never read, and the billing comparison would measure the cut.
        const g = await get(url(), key, agent, 60_000);
        count(t, g);
        bytes += g.bytes;
        if (stop.aborted) break;
        // A refusal: again after its Retry-After (1 s), as the documented client does.
        if (!g.whole) await sleep(g.status === 429 ? 1000 : 100);
      }
    }),
  );
  agent.destroy();
  return { ...t, mb: Math.round(bytes / 1e6) };
}

/** One raw page read at 1 KB/s on a raw socket; resolves with its status line's code when it ends or at `stop`. */
function slowPage(port: number, path: string, key: string, stop: AbortSignal): Promise<{ status: number; bytes: number; ended: boolean; marker: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let status = 0;
    let bytes = 0;
    let head = '';
    let tail = '';
    let ended = false;
    const finish = () => {
      clearInterval(tick);
      stop.removeEventListener('abort', finish);
      s.destroy();
      resolve({ status, bytes, ended, marker: tail.includes('slow_reader') });
    };
    s.pause();
    const tick = setInterval(() => {
      const c = s.read(1024) ?? s.read();
      if (c) {
        bytes += c.length;
        if (head.length < 64) {
          head += c.toString('latin1');
          const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
          if (m) status = Number(m[1]);
        }
        tail = (tail + c.toString('latin1')).slice(-4096);
        // A short refusal (429) is read whole at once; a page ends with the chunked terminator.
        if (status !== 200 && status !== 0 && bytes < 4096) ended = true;
        if (tail.endsWith('0\r\n\r\n')) ended = true;
        if (ended) finish();
      }
    }, 1000);
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer ${key}\r\n\r\n`));
    s.on('error', finish);
    s.on('end', () => {
      ended = true;
      finish();
    });
    stop.addEventListener('abort', finish);
  });
}

async function slowLoad(base: string, key: string, conns: number, stop: AbortSignal) {
  const port = Number(new URL(base).port);
  const path = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=${DATE}&limit=100000`;
  const out = { pages: 0, byStatus: {} as Record<string, number>, cut_with_marker: 0, kb_read: 0 };
  await Promise.all(
    Array.from({ length: conns }, async () => {
      while (!stop.aborted) {
        const p = await slowPage(port, path, key, stop);
        out.pages++;
        out.kb_read += Math.round(p.bytes / 1024);
        out.byStatus[String(p.status)] = (out.byStatus[String(p.status)] ?? 0) + 1;
        if (p.marker) out.cut_with_marker++;
        if (!stop.aborted && p.status !== 200) await sleep(1000);
      }
    }),
  );
  return out;
}

/** /health and the other key's 5-row page, until `stop`. */
async function probes(base: string, otherKey: string, stop: AbortSignal) {
  const health: number[] = [];
  const healthStatus: Record<string, number> = {};
  const page: number[] = [];
  const pageAt: Array<[string, number]> = [];
  const healthAt: Array<[string, number]> = [];
  const other = tally();
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  await Promise.all([
    (async () => {
      while (!stop.aborted) {
        const g = await get(`${base}/api/v1/health`, null, agent, 10_000);
        health.push(g.status === 0 ? 10_000 : g.ms);
        healthAt.push([new Date(Date.now() - g.ms).toISOString().slice(11, 23), Math.round(g.ms)]);
        healthStatus[String(g.status)] = (healthStatus[String(g.status)] ?? 0) + 1;
        await sleep(100);
      }
    })(),
    (async () => {
      let i = 0;
      while (!stop.aborted) {
        const start = DAY + ((i++ * 997_000) % 86_000_000);
        const g = await get(`${base}/api/v1/exchange-a/market/data/range?condition_id=${MARKET}&start_timestamp=${start}&end_timestamp=${start + 600_000}&limit=5`, otherKey, agent, 10_000);
        page.push(g.status === 0 ? 10_000 : g.ms);
        pageAt.push([new Date(Date.now() - g.ms).toISOString().slice(11, 23), Math.round(g.ms)]);
        count(other, g);
        await sleep(250);
      }
    })(),
  ]);
  agent.destroy();
  return { health, healthStatus, page, other, pageAt, healthAt };
}

async function billed(base: string, user: string, key: string): Promise<number | null> {
  const g = await fetch(`${base}/api/v1/usage?user_id=${user}`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(15_000) }).catch(() => null);
  if (!g || !g.ok) return null;
  return ((await g.json()) as { calls_this_period: number }).calls_this_period;
}

async function startChild(): Promise<{ child: ChildProcess; ready: Ready }> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...(process.env.BENCH_CHILD_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CHILD_PROF}`] : []), '--import', 'tsx', self, '--serve'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: process.env });
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`API process exited early (${code})`)));
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) resolve(JSON.parse(line.slice(6)) as Ready);
    });
  });
  return { child, ready };
}

async function main(): Promise<void> {
  const { readFileSync } = await import('node:fs');
  const rss = (pid: number) => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : 0;
    } catch {
      return 0;
    }
  };
  const { child, ready } = await startChild();
  let killed = false;
  const results: Record<string, unknown> = {};
  try {
    process.stderr.write(`[fairness] API ready (${EVENTS} events stored and rolled up in ${ready.fill_s.toFixed(1)} s)\n`);
    for (const s of SCENARIOS.filter((x) => !process.env.BENCH_ONLY || x === process.env.BENCH_ONLY)) {
      if (killed) {
        results[s] = { error: 'the API process was killed in an earlier scenario (RSS guard)' };
        continue;
      }
      const k = ready.keys[s];
      const ctl = new AbortController();
      setMaxListeners(0, ctl.signal);
      let rssMax = 0;
      const sampler = setInterval(() => {
        const r = rss(ready.pid);
        rssMax = Math.max(rssMax, r);
        if (r > RSS_KILL && !killed) {
          killed = true;
          child.kill('SIGKILL');
          ctl.abort();
        }
      }, 50);
      const timer = setTimeout(() => ctl.abort(), SCENARIO_MS);
      const started = Date.now();
      const { monitorEventLoopDelay } = await import('node:perf_hooks');
      const loopH = monitorEventLoopDelay({ resolution: 10 });
      loopH.enable();
      const blocks: string[] = [];
      let lastT = Date.now();
      const ticker = setInterval(() => { const n = Date.now(); if (n - lastT > 150) blocks.push(`${new Date(lastT).toISOString().slice(11, 23)}+${n - lastT}`); lastT = n; }, 20);
      const [load, p] = await Promise.all([
        s === 'slow_readers' ? slowLoad(ready.url, k.slow[1], 4, ctl.signal) : heavyLoad(ready.url, k.heavy[1], s === 'summaries_12' ? 12 : 200, ctl.signal),
        probes(ready.url, k.other[1], ctl.signal),
      ]);
      clearTimeout(timer);
      loopH.disable();
      clearInterval(ticker);
      if (process.env.BENCH_DIAG) process.stderr.write(`[diag] ${s} load generator's event loop: max ${(loopH.max / 1e6).toFixed(0)} ms, p99 ${(loopH.percentile(99) / 1e6).toFixed(0)} ms; blocks ${blocks.join(' ')}\n`);
      const ranS = (Date.now() - started) / 1000;
      // Closes settle (a reservation is given back when its answer closes), then the counters.
      await sleep(2000);
      clearInterval(sampler);
      const loadUser = s === 'slow_readers' ? k.slow : k.heavy;
      // Counted once the counters stand still (requests the clients left are still being
      // settled by the server for a while): two equal readings 2 s apart, at most 60 s.
      const settled = async (user: [string, string]) => {
        let last = await billed(ready.url, user[0], user[1]);
        for (let i = 0; i < 30 && !killed; i++) {
          await sleep(2000);
          const now = await billed(ready.url, user[0], user[1]);
          if (now !== null && now === last) return now;
          last = now;
        }
        return last;
      };
      const loadBilled = killed ? null : await settled(loadUser);
      const otherBilled = killed ? null : await settled(k.other);
      if (process.env.BENCH_DIAG) {
        const r = await fetch(`${ready.url}/api/v1/user/${k.other[0]}/requests/recent?limit=100`, { headers: { authorization: `Bearer ${k.other[1]}` } });
        const j = (await r.json()) as { data: Array<{ latency_ms: number; time: string; endpoint: string }> };
        process.stderr.write(`[diag] ${s} server: ${JSON.stringify(j.data.map((x) => [x.time.slice(11, 23), Math.round(x.latency_ms)]).filter((x) => (x[1] as number) > 150))}\n`);
        process.stderr.write(`[diag] ${s} client: ${JSON.stringify(p.pageAt.filter((x) => x[1] > 150))}\n`);
        process.stderr.write(`[diag] ${s} health: ${JSON.stringify(p.healthAt.filter((x) => x[1] > 100))}\n`);
      }
      const load2xx = 'whole2xx' in load ? load.whole2xx : 0;
      const other5xx = Object.entries(p.other.byStatus).reduce((n, [st, c]) => n + (Number(st) >= 500 || st === '0' ? c : 0), 0);
      results[s] = {
        seconds: Math.round(ranS),
        health_p50_ms: pct(p.health, 50),
        health_p99_ms: pct(p.health, 99),
        health_max_ms: pct(p.health, 100),
        health_status: p.healthStatus,
        other_page_p50_ms: pct(p.page, 50),
        other_page_p99_ms: pct(p.page, 99),
        other_status: p.other.byStatus,
        other_5xx_or_timeout: other5xx,
        load,
        billed: { load: loadBilled, load_2xx_received: load2xx, load_diff: loadBilled === null ? null : loadBilled - load2xx, other: otherBilled, other_2xx_received: p.other.whole2xx, other_diff: otherBilled === null ? null : otherBilled - p.other.whole2xx },
        rss_max_mb: Math.round(rssMax / 1048576),
        killed_by_rss_guard: killed,
      };
      process.stderr.write(`[fairness] ${s}: ${JSON.stringify(results[s])}\n`);
      await sleep(3000);
    }
  } finally {
    if (!killed) child.kill('SIGTERM');
    // A child the RSS guard killed has a signal and no exit code: waiting for its exit again would leave
    // nothing to keep this process alive, and it would end without printing the summary.
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
  }
  console.log(JSON.stringify({ events: EVENTS, fill_s: Math.round(ready.fill_s), scenario_s: SCENARIO_MS / 1000, load_avg_1m: Math.round(loadavg()[0]! * 100) / 100, scenarios: results }));
}

if (process.argv.includes('--serve')) {
  serve().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
