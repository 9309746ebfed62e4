/**
 * API benchmark (a script, not a timed test): `npx tsx apps/api/bench/api.bench.ts`.
 *
 * The API runs in a child process of its own (so the load generator does not share its
 * event loop, and its RSS is its own): it fills an embedded ClickHouse in a temp dir with
 * BENCH_RECORDS (default 200,000) exchange A records of one market and one UTC date, the
 * way the sink writes them (batches of 20,000), starts the API on 127.0.0.1 (port 0) with
 * the project's Redis (REDIS_URL, default redis://127.0.0.1:16379, keys under a unique
 * prefix, deleted at the end), and creates an API key.
 *
 * The parent then measures, over loopback:
 *   - latency (time to last byte) of 10,000-record pages at offsets spread over the day;
 *   - extra RSS of the API process while it serves a 100,000-record page (sampled from
 *     /proc every 2 ms, against the idle RSS just before);
 *   - requests/s of small authenticated queries with autocannon (~10 s each).
 * The last line printed is the JSON summary. Targets: p50 <= 60 ms, extra RSS <= 64 MB,
 * >= 3,000 req/s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { procCpuSeconds, procRssBytes } from '@booktape/testkit';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 200_000);
const MARKET = `0x${'5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1'}`;
const DATE = '2026-03-01';
const DAY = Date.UTC(2026, 2, 1);

interface Ready {
  url: string;
  key: string;
  pid: number;
  parts: number;
  fillMs: number;
}

// ---------------------------------------------------------------------------------------
// Child: the API under test.
// ---------------------------------------------------------------------------------------
async function serve(): Promise<void> {
  const { silentLogger } = await import('@booktape/config');
  const { openClickHouse, migrate, RawEventsRepository } = await import('@booktape/storage');
  const { createApi, createRedis } = await import('../src/index.ts');
  const { deleteRedisPrefix, testConfig } = await import('../src/testing.ts');
  type ExchangeAMessage = import('@booktape/domain').ExchangeAMessage;

  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-api-bench-'));
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
  await migrate(ch);
  const repo = new RawEventsRepository(ch);
  const asset = '71321045679252212594626385532706912750332728571942532289631379312455583992563';
  const message = (i: number): ExchangeAMessage => {
    const ts = DAY + Math.floor(i / 4); // four records per millisecond
    const received = ts + 5;
    const hash = `0x${randomBytes(32).toString('hex')}`;
    const book = i % 50 === 0;
    return {
      venue: 'exchange-a',
      received_at: new Date(received).toISOString(),
      worker_id: 1,
      ingest_seq: (BigInt(received) * 2n ** 23n + BigInt(i % 4)).toString(),
      dedup_id: hash,
      event: book
        ? {
            market: MARKET,
            asset_id: asset,
            timestamp: String(ts),
            hash,
            event_type: 'book',
            bids: Array.from({ length: 8 }, (_, k) => ({ price: `0.${40 + k}`, size: String(100 + k * 13) })),
            asks: Array.from({ length: 8 }, (_, k) => ({ price: `0.${60 - k}`, size: String(90 + k * 11) })),
            extra: { tick_size: '0.01' },
          }
        : {
            market: MARKET,
            asset_id: asset,
            timestamp: String(ts),
            hash,
            event_type: 'price_change',
            changes: [{ price: `0.${45 + (i % 10)}`, side: i % 2 ? 'BUY' : 'SELL', size: String((i * 7) % 1000) }],
            extra: { best_bid: '0.48', best_ask: '0.52' },
          },
    };
  };
  const t0 = Date.now();
  const BATCH = 20_000;
  for (let off = 0; off < RECORDS; off += BATCH) {
    const n = Math.min(BATCH, RECORDS - off);
    await repo.insert(
      'exchange-a',
      Array.from({ length: n }, (_, k) => ({ message: message(off + k), position: { partition: 0, offset: String(off + k) } })),
      `bench-${off}`,
    );
  }
  const fillMs = Date.now() - t0;
  // Let the engine finish merging the fresh parts (as it has for any past date) so the
  // figures measure the API, not a background merge in the same process.
  for (let i = 0; i < 300; i++) {
    const m = await ch.client.query({ query: 'SELECT toString(count()) AS n FROM system.merges', format: 'JSONEachRow' });
    if (Number((await m.json<{ n: string }>())[0]?.n ?? 0) === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const partsRs = await ch.client.query({
    query: `SELECT toString(count()) AS n FROM system.parts WHERE database = {db:String} AND table = 'raw_exchange_a' AND active`,
    query_params: { db: ch.database },
    format: 'JSONEachRow',
  });
  const parts = Number((await partsRs.json<{ n: string }>())[0]?.n ?? 0);

  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:16379';
  const redis = createRedis(redisUrl, { connectionName: 'booktape-bench' });
  const prefix = `bt-bench-${randomBytes(4).toString('hex')}:`;
  // Production timings and plan limits, not the tests' ones.
  const config = testConfig({ redisKeyPrefix: prefix, resultCacheMs: 1000, usageFlushMs: 5000, requestLogFlushMs: 2000 });
  const api = createApi({ ch, log: silentLogger(), redis, config }, { host: '127.0.0.1', port: 0 });
  const url = await api.start();
  const created = await fetch(`${url}/api/v1/keys?name=bench&user_id=bench`, { method: 'POST' });
  const key = ((await created.json()) as { data: { api_key: string } }).data.api_key;

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await api.stop();
    await deleteRedisPrefix(redis, prefix);
    redis.disconnect();
    await ch.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
  const ready: Ready = { url, key, pid: process.pid, parts, fillMs };
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
}

// ---------------------------------------------------------------------------------------
// Parent: the measurements.
// ---------------------------------------------------------------------------------------
/** GET to the last byte, discarding the body as it arrives (the client holds nothing). */
function get(url: string, key: string, onChunk?: () => void): Promise<{ status: number; bytes: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        onChunk?.();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function startChild(): Promise<{ child: ChildProcess; ready: Ready }> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--import', 'tsx', self, '--serve'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: process.env });
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`API process exited early (${code})`)));
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) resolve(JSON.parse(line.slice(6)) as Ready);
    });
  });
  return { child, ready };
}

async function autocannonRps(url: string, key: string, seconds: number): Promise<{ rps: number; p50: number; p99: number; errors: number; non2xx: number }> {
  // autocannon ships no types: the part of its API used here.
  type Result = { requests: { average: number }; latency: { p50: number; p99: number }; errors: number; timeouts: number; non2xx: number };
  const specifier = 'autocannon';
  const { default: autocannon } = (await import(specifier)) as { default: (o: Record<string, unknown>) => Promise<Result> };
  const result = await autocannon({ url, connections: 32, duration: seconds, headers: { authorization: `Bearer ${key}` } });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

async function main(): Promise<void> {
  const log = (...a: unknown[]) => console.error('[bench]', ...a);
  log(`filling ${RECORDS} records and starting the API…`);
  const { child, ready } = await startChild();
  const base = `${ready.url}/api/v1`;
  log(`filled in ${ready.fillMs} ms (${ready.parts} active parts); API at ${ready.url}`);
  try {
    const page = (offset: number, limit: number) => `${base}/exchange-a/market/data?condition_id=${MARKET}&date=${DATE}&offset=${offset}&limit=${limit}`;
    // Warm-up (first queries load marks and caches).
    for (let i = 0; i < 5; i++) await get(page(i * 10_000, 10_000), ready.key);

    // 1. 10,000-record pages. (a) A client walking the day page by page (offsets 0, 10k,
    // 20k, …: each page continues from where the previous one ended). (b) Cold pages at
    // offsets no earlier page ended at, spread over the day: the engine skips `offset`.
    const lat: number[] = [];
    const firstPage: number[] = [];
    const pages = Math.floor(RECORDS / 10_000);
    let cpu0 = 1000 * procCpuSeconds(ready.pid);
    for (let i = 0; i < 60; i++) {
      const r = await get(page((i % pages) * 10_000, 10_000), ready.key);
      if (r.status !== 200) throw new Error(`10k page: HTTP ${r.status}`);
      lat.push(r.ms);
      if (i % pages === 0) firstPage.push(r.ms);
    }
    const walkCpu = (1000 * procCpuSeconds(ready.pid) - cpu0) / 60;
    const cold: number[] = [];
    cpu0 = 1000 * procCpuSeconds(ready.pid);
    for (let i = 0; i < 40; i++) {
      const r = await get(page(((i * 7) % (pages - 1)) * 10_000 + 3_333 + i, 10_000), ready.key);
      if (r.status !== 200) throw new Error(`10k cold page: HTTP ${r.status}`);
      cold.push(r.ms);
    }
    const coldCpu = (1000 * procCpuSeconds(ready.pid) - cpu0) / 40;
    const rangeLat: number[] = [];
    for (let i = 0; i < 30; i++) {
      const start = DAY + (i % pages) * 2500;
      const r = await get(`${base}/exchange-a/market/data/range?condition_id=${MARKET}&start_timestamp=${start}&end_timestamp=${DAY + 86_399_999}&limit=10000`, ready.key);
      if (r.status !== 200) throw new Error(`10k range page: HTTP ${r.status}`);
      rangeLat.push(r.ms);
    }
    log(`server CPU per 10k page: ${round(walkCpu)} ms walking, ${round(coldCpu)} ms cold`);
    log(`10k date page, walking: p50 ${round(pct(lat, 50))} ms, p99 ${round(pct(lat, 99))} ms; cold offsets: p50 ${round(pct(cold, 50))} ms, p99 ${round(pct(cold, 99))} ms; 10k range page p50 ${round(pct(rangeLat, 50))} ms`);

    // 2. Extra RSS while serving a 100,000-record page.
    const rss: Array<{ extraMb: number; ms: number; mb: number }> = [];
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 300));
      const idle = procRssBytes(ready.pid);
      let peak = idle;
      const sample = () => (peak = Math.max(peak, procRssBytes(ready.pid)));
      const timer = setInterval(sample, 2);
      const r = await get(page(0, 100_000), ready.key, sample);
      clearInterval(timer);
      sample();
      if (r.status !== 200) throw new Error(`100k page: HTTP ${r.status}`);
      rss.push({ extraMb: (peak - idle) / 2 ** 20, ms: r.ms, mb: r.bytes / 2 ** 20 });
    }
    const extraRss = Math.max(...rss.map((r) => r.extraMb));
    log(`100k page: ${round(rss[0]!.mb)} MiB in ${round(rss[0]!.ms)} ms; extra RSS ${rss.map((r) => round(r.extraMb)).join(', ')} MiB`);

    // 3. Small authenticated queries (autocannon, ~10 s each).
    const small = await autocannonRps(`${base}/exchange-a/market/date-range?condition_id=${MARKET}`, ready.key, 10);
    log(`date-range: ${small.rps} req/s (p50 ${small.p50} ms, p99 ${small.p99} ms, errors ${small.errors}, non-2xx ${small.non2xx})`);
    const smallRaw = await autocannonRps(`${base}/exchange-a/market/data/range?condition_id=${MARKET}&start_timestamp=${DAY + 10_000}&end_timestamp=${DAY + 20_000}&limit=10`, ready.key, 10);
    log(`raw range page of 10: ${smallRaw.rps} req/s (p50 ${smallRaw.p50} ms, p99 ${smallRaw.p99} ms, errors ${smallRaw.errors}, non-2xx ${smallRaw.non2xx})`);

    const summary = {
      records: RECORDS,
      // Other processes on the machine skew every figure: the 1-minute load when done.
      load_avg_1m: round(loadavg()[0]!, 2),
      raw_parts: ready.parts,
      page10k_p50_ms: round(pct(lat, 50)),
      page10k_p99_ms: round(pct(lat, 99)),
      page10k_first_page_p50_ms: round(pct(firstPage, 50)),
      // Server CPU per page (all its threads): what a page costs, whatever else the machine runs.
      page10k_server_cpu_ms: round(walkCpu),
      page10k_cold_server_cpu_ms: round(coldCpu),
      page10k_cold_offset_p50_ms: round(pct(cold, 50)),
      page10k_cold_offset_p99_ms: round(pct(cold, 99)),
      range10k_p50_ms: round(pct(rangeLat, 50)),
      range10k_p99_ms: round(pct(rangeLat, 99)),
      page100k_extra_rss_mb: round(extraRss),
      page100k_ms: round(Math.min(...rss.map((r) => r.ms))),
      page100k_body_mb: round(rss[0]!.mb),
      small_rps_date_range: small.rps,
      small_p99_ms_date_range: small.p99,
      small_rps_raw_range_limit10: smallRaw.rps,
      small_errors: small.errors + small.non2xx + smallRaw.errors + smallRaw.non2xx,
      targets_met: { p50: pct(lat, 50) <= 60, rss: extraRss <= 64, rps: small.rps >= 3000 },
    };
    console.log(JSON.stringify(summary));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await main();
}
