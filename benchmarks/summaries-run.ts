/**
 * One run of the summaries benchmark in one tree (summaries.bench.ts runs it in the
 * baseline commit's tree and in this one, and compares). Uses only what both trees export.
 *
 * One dense exchange A asset-day: BENCH_EVENTS (default 1,000,000) book events over one
 * UTC day (a `book` every 5,000, the rest `price_change`s of one or two levels), so nearly
 * every second holds observations: the worst case for stored 1 s buckets. Written the way
 * the sink writes (batches of 50,000) into an embedded ClickHouse in a temp dir.
 *
 * Measured, in one process, one after the other:
 *   - rollup: a full rebuild of that asset-day (read in serving order, book, buckets at
 *     every ladder level, write): seconds and events/s. Target <= 1 s (issue 11).
 *   - serving: p50/p95 of GET orderbook-summary for the whole day at R=60 and R=7 through
 *     the API (in-process inject: routing, validation, reads, merge, fill, serialisation),
 *     from the stored buckets, and the same answer computed from raw events (the path an
 *     asset without rollups takes) for the ratio; R=1 too (86,400 buckets), without the raw ratio.
 *     The same answers are also asked over a real socket (the API listening on 127.0.0.1, a
 *     keep-alive client that reads and drops the body): time to the last byte, what a client
 *     sees. inject turns the whole body into one string for its result, a cost no client pays
 *     (tens of ms for the 37 MB of a day at R=1), and skips the socket, which a client pays.
 *   - back-fill: BENCH_BACKFILL_DAYS (default 31) days of one busy exchange A market (two
 *     outcome tokens, BENCH_BACKFILL_EVENTS book events per token-day, default 20,000), rolled
 *     up day after day per token as the worker's jobs would: seconds and events/s.
 * The last line printed is the JSON summary.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir, cpus } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { apiEnvSchema, createApp, createRedis } from '@booktape/api';
import { deleteRedisPrefix, testConfig } from '@booktape/api/testing';
import { planBuckets, utcDayWindow } from '@booktape/book';
import { silentLogger } from '@booktape/config';
import { assetKey, rollupKeys } from '@booktape/messaging';
import { BookEventsRepository, migrate, openClickHouse, RawEventsRepository, SummariesRepository } from '@booktape/storage';
import { Roller, SummaryReader } from '@booktape/summaries';
import { intEnv } from './bench-env.ts';
import { fillDay } from './fill-day.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
const REQUESTS = intEnv('BENCH_REQUESTS', 40, 1);
const MARKET = `0x${'7a'.repeat(32)}`;
const ASSET = '5550001';
const DATE = '2026-03-02';
const DAY = Date.UTC(2026, 2, 2);

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const BACKFILL_DAYS = intEnv('BENCH_BACKFILL_DAYS', 31);
const BACKFILL_EVENTS = intEnv('BENCH_BACKFILL_EVENTS', 20_000, 5000);
/** BENCH_RESOLUTIONS: the whole-day answers measured, e.g. `60,7` (default 60, 7 and 1). */
const RESOLUTIONS = (process.env.BENCH_RESOLUTIONS || '60,7,1').split(',').map((r) => {
  const n = Number(r);
  if (!Number.isInteger(n) || n < 1 || n > 3600) throw new Error(`BENCH_RESOLUTIONS=${process.env.BENCH_RESOLUTIONS}: expected resolutions 1 to 3600, comma-separated`);
  return n;
});
const BACKFILL_MARKET = `0x${'6b'.repeat(32)}`;

/** GET over one keep-alive connection; the body read and dropped. Resolves at its last byte. */
function getOverSocket(agent: http.Agent, port: number, url: string, apiKey: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: url, agent, headers: { authorization: `Bearer ${apiKey}`, 'accept-encoding': 'identity' } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** p50 and p95 (ms) of `n` answers to `url` over a socket to `port`, after `warm` not counted. */
async function socketTimes(port: number, url: string, apiKey: string, n: number, warm: number): Promise<{ p50: number; p95: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const times: number[] = [];
    for (let i = 0; i < n + warm; i++) {
      const t0 = performance.now();
      const r = await getOverSocket(agent, port, url, apiKey);
      const dt = performance.now() - t0;
      if (r.status !== 200) throw new Error(`GET ${url} over a socket: ${r.status}`);
      if (i >= warm) times.push(dt);
    }
    times.sort((a, b) => a - b);
    return { p50: quantile(times, 0.5), p95: quantile(times, 0.95) };
  } finally {
    agent.destroy();
  }
}
const BACKFILL_FIRST = Date.UTC(2026, 0, 1);

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-summaries-bench-'));
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
  const log = silentLogger();
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
  // The API as the tests build it: no plan limits, no result cache, no slug lookups, no
  // billing; its own key prefix and rollup queue, and no data floor. The request log and the
  // keys' last use are written to the engine as often as the service writes them
  // (REQUEST_LOG_FLUSH_MS, API_USAGE_FLUSH_MS), not every 200 ms as in the tests: each write is
  // an engine insert of some 15 ms of CPU, and at the tests' pace they were half of an
  // answer's CPU at R=60 here, a cost the service does not pay.
  const flushes = { requestLogFlushMs: apiEnvSchema.shape.REQUEST_LOG_FLUSH_MS.parse(undefined), usageFlushMs: apiEnvSchema.shape.API_USAGE_FLUSH_MS.parse(undefined) };
  const config = testConfig({ rollupQueuePrefix: `bench-${process.pid}`, dataFloors: { 'exchange-a': null, 'exchange-b': null }, ...flushes });
  try {
    await migrate(ch);
    const repo = new RawEventsRepository(ch);
    const fillStart = performance.now();
    await fillDay(repo, MARKET, ASSET, DAY, EVENTS, 5, 0);
    const fillMs = performance.now() - fillStart;
    process.stderr.write(`[summaries] stored ${EVENTS} events in ${(fillMs / 1000).toFixed(1)} s\n`);
    await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });

    // Rollup: a full rebuild of the asset-day (closed day).
    const summaries = new SummariesRepository(ch);
    const roller = new Roller(summaries, log, { closeGraceMs: 0 });
    const key = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };
    const rollups: number[] = [];
    let rss = 0;
    const sampler = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 20);
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      const res = await roller.rollDay(key, DATE, true);
      rollups.push(performance.now() - t0);
      if (res.applied !== EVENTS) throw new Error(`rolled ${res.applied} events, expected ${EVENTS}`);
    }
    clearInterval(sampler);
    if (process.env.BENCH_PROFILE) {
      // The rollup's read alone: the engine's FINAL read in serving order, then (in a tree whose
      // reader yields JSON text per row) the JSON parse; a tree that decodes binary rows yields
      // records in batches, decoded within the read.
      const t0 = performance.now();
      const texts: string[] = [];
      let rows = 0;
      for await (const x of summaries.bookEvents(key, DATE, DAY, DAY + 86_400_000) as AsyncIterable<unknown>) {
        if (typeof x === 'string') texts.push(x);
        rows += Array.isArray(x) ? x.length : 1;
      }
      const t1 = performance.now();
      for (const text of texts) JSON.parse(text);
      const t2 = performance.now();
      process.stderr.write(`[summaries]   rollup read: ${(t1 - t0).toFixed(0)} ms for ${rows} rows; JSON.parse ${(t2 - t1).toFixed(0)} ms\n`);
    }
    rollups.sort((a, b) => a - b);
    const rollupMs = rollups[1]!;
    process.stderr.write(`[summaries] rollup of the asset-day: ${rollups.map((x) => (x / 1000).toFixed(2)).join(' / ')} s\n`);

    // As the worker does after a write: readers may cache what they read until the next bump.
    await redis.incr(rollupKeys(config.rollupQueuePrefix!).version(assetKey({ venue: 'exchange-a', market: MARKET, asset: ASSET })));

    // Serving, from stored buckets and from raw events.
    // Built every time: the API's settled answers (kept as sent) are measured apart, below.
    const app = await createApp({ ch, log, redis, config: { ...config, summaryAnswerCacheBytes: 0 } });
    const res = await app.inject({ method: 'POST', url: '/api/v1/keys?name=bench&user_id=bench' });
    const apiKey = (res.json() as { data: { api_key: string } }).data.api_key;
    const url = (R: number) => `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=${DATE}&resolution=${R}`;
    const reader = new SummaryReader({ summaries, events: new BookEventsRepository(ch), redis, queuePrefix: config.rollupQueuePrefix! });
    const serving: Record<string, { p50: number; p95: number; socket_p50: number; socket_p95: number; buckets: number; raw_p50: number; ratio: number }> = {};
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    if (process.env.BENCH_PROFILE) {
      // The fixed cost of one answer: a one-bucket window, same route, key and hooks.
      const tiny = `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&start_timestamp=${DAY + 3_600_000}&end_timestamp=${DAY + 3_600_000}&resolution=60`;
      const ts: number[] = [];
      for (let i = 0; i < 30; i++) {
        const t0 = performance.now();
        const r3 = await app.inject({ method: 'GET', url: tiny, headers: { authorization: `Bearer ${apiKey}` } });
        ts.push(performance.now() - t0);
        if (r3.statusCode !== 200) throw new Error(`GET ${tiny}: ${r3.statusCode} ${r3.body.slice(0, 200)}`);
      }
      ts.sort((a, b) => a - b);
      process.stderr.write(`[summaries]   one-bucket answer (fixed cost): p50 ${quantile(ts, 0.5).toFixed(1)} ms\n`);
    }
    for (const R of RESOLUTIONS) {
      const times: number[] = [];
      let buckets = 0;
      for (let i = 0; i < REQUESTS + 3; i++) {
        const t0 = performance.now();
        const r2 = await app.inject({ method: 'GET', url: url(R), headers: { authorization: `Bearer ${apiKey}` } });
        const dt = performance.now() - t0;
        if (r2.statusCode !== 200) throw new Error(`GET ${url(R)}: ${r2.statusCode} ${r2.body.slice(0, 200)}`);
        if (i >= 3) times.push(dt);
        buckets = (r2.json() as { data_points: number }).data_points;
      }
      const socket = await socketTimes(port, url(R), apiKey, REQUESTS, 3);
      const plan = planBuckets(utcDayWindow(DATE), R);
      if (process.env.BENCH_PROFILE) {
        const part = async (name: string, f: () => Promise<unknown>) => {
          const ts: number[] = [];
          for (let i = 0; i < 15; i++) {
            const t0 = performance.now();
            await f();
            ts.push(performance.now() - t0);
          }
          ts.sort((a, b) => a - b);
          process.stderr.write(`[summaries]   R=${R} ${name}: p50 ${quantile(ts, 0.5).toFixed(1)} ms\n`);
        };
        await part('window query', () => summaries.window(key, DATE, DATE));
        await part('reader.buckets', () => reader.buckets(key, plan, R));
        const exact = await reader.buckets(key, plan, R);
        const book: Record<string, unknown> = await import('@booktape/book');
        // The answer's JSON as the API writes it (summaryBucketsJsonBytes since issue 11).
        const writer = (book.summaryBucketsJsonBytes ?? book.summaryBucketsJson) as (b: unknown[]) => unknown;
        await part('answer JSON', async () => writer(exact));
      }
      const raw: number[] = [];
      // R=1 from raw events is not the comparison the figure is about (and slow): skipped.
      for (let i = 0; i < (R === 1 ? 0 : 3); i++) {
        const t0 = performance.now();
        await reader.fromRaw(key, plan, R);
        raw.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      raw.sort((a, b) => a - b);
      const rawP50 = raw.length ? quantile(raw, 0.5) : NaN;
      serving[`R${R}`] = { p50: quantile(times, 0.5), p95: quantile(times, 0.95), socket_p50: socket.p50, socket_p95: socket.p95, buckets, raw_p50: rawP50, ratio: rawP50 / quantile(times, 0.5) };
      process.stderr.write(`[summaries] day at R=${R}: p50 ${quantile(times, 0.5).toFixed(1)} ms, p95 ${quantile(times, 0.95).toFixed(1)} ms (${buckets} buckets); over a socket p50 ${socket.p50.toFixed(1)} ms, p95 ${socket.p95.toFixed(1)} ms; ${raw.length ? `from raw events p50 ${rawP50.toFixed(0)} ms` : 'not measured from raw events'}\n`);
    }
    // The same answers asked again with the settled answers kept (API_SUMMARY_ANSWER_CACHE_MB
    // default): what a backtest asking for finished days again gets. A tree without them builds.
    const kept: Record<string, number> = {};
    const keptSocket: Record<string, number> = {};
    const keptApp = await createApp({ ch, log, redis, config: { ...config, summaryAnswerCacheBytes: 256 * 1024 * 1024 } });
    await keptApp.listen({ host: '127.0.0.1', port: 0 });
    const keptPort = (keptApp.server.address() as AddressInfo).port;
    for (const R of RESOLUTIONS) {
      const times: number[] = [];
      for (let i = 0; i < REQUESTS + 1; i++) {
        const t0 = performance.now();
        const r2 = await keptApp.inject({ method: 'GET', url: url(R), headers: { authorization: `Bearer ${apiKey}` } });
        if (r2.statusCode !== 200) throw new Error(`GET ${url(R)}: ${r2.statusCode} ${r2.body.slice(0, 200)}`);
        if (i >= 1) times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      kept[`R${R}`] = Number(quantile(times, 0.5).toFixed(1));
      keptSocket[`R${R}`] = Number((await socketTimes(keptPort, url(R), apiKey, REQUESTS, 1)).p50.toFixed(1));
      process.stderr.write(`[summaries] day at R=${R} asked again (settled answer kept): p50 ${kept[`R${R}`]} ms, over a socket ${keptSocket[`R${R}`]} ms\n`);
    }
    await keptApp.close();
    await app.close();

    // Back-fill: a month of one busy market, each token's days rolled in order.
    const backfill = { days: BACKFILL_DAYS, events: 0, fill_s: 0, rollup_s: 0, events_per_s: 0 };
    if (BACKFILL_DAYS > 0) {
      const assets = ['6660001', '6660002'];
      const t0 = performance.now();
      for (let d = 0; d < BACKFILL_DAYS; d++) for (const [k, a] of assets.entries()) await fillDay(repo, BACKFILL_MARKET, a, BACKFILL_FIRST + d * 86_400_000, BACKFILL_EVENTS, 100 + d * 2 + k, 1 + d * 2 + k);
      backfill.fill_s = Number(((performance.now() - t0) / 1000).toFixed(1));
      await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });
      const t1 = performance.now();
      for (const a of assets) {
        const k = { venue: 'exchange-a' as const, market: BACKFILL_MARKET, asset: a };
        for (let d = 0; d < BACKFILL_DAYS; d++) backfill.events += (await roller.rollDay(k, new Date(BACKFILL_FIRST + d * 86_400_000).toISOString().slice(0, 10))).applied;
      }
      const s = (performance.now() - t1) / 1000;
      if (backfill.events !== BACKFILL_DAYS * assets.length * BACKFILL_EVENTS) throw new Error(`back-fill rolled ${backfill.events} events, expected ${BACKFILL_DAYS * assets.length * BACKFILL_EVENTS}`);
      backfill.rollup_s = Number(s.toFixed(1));
      backfill.events_per_s = Math.round(backfill.events / s);
      process.stderr.write(`[summaries] back-fill of ${BACKFILL_DAYS} days x 2 tokens x ${BACKFILL_EVENTS}: stored in ${backfill.fill_s} s, rolled up in ${backfill.rollup_s} s (${backfill.events_per_s} events/s)\n`);
    }
    await deleteRedisPrefix(redis, config.redisKeyPrefix);
    await deleteRedisPrefix(redis, `${config.rollupQueuePrefix}:`);

    const out = {
      events: EVENTS,
      machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg().map((x) => Number(x.toFixed(2))) },
      fill_s: Number((fillMs / 1000).toFixed(1)),
      rollup_s: Number((rollupMs / 1000).toFixed(2)),
      rollup_events_per_s: Math.round(EVENTS / (rollupMs / 1000)),
      rollup_peak_rss_mb: Math.round(rss / 2 ** 20),
      backfill,
      serving_ms: Object.fromEntries(Object.entries(serving).map(([k, v]) => [k, { p50: Number(v.p50.toFixed(1)), p95: Number(v.p95.toFixed(1)), socket_p50: Number(v.socket_p50.toFixed(1)), socket_p95: Number(v.socket_p95.toFixed(1)), buckets: v.buckets, raw_p50: Number.isNaN(v.raw_p50) ? null : Number(v.raw_p50.toFixed(0)), stored_vs_raw: Number.isNaN(v.ratio) ? null : Number(v.ratio.toFixed(1)) }])),
      serving_kept_ms: kept,
      serving_kept_socket_ms: keptSocket,
      targets: { rollup_s: 1, R60_p50_ms: 5, R7_p50_ms: 30, R1_p50_ms: 120 },
    };
    console.log(JSON.stringify(out));
  } finally {
    redis.disconnect();
    await ch.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
