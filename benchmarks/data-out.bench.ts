/**
 * Data-out benchmark (issue 12; a script, not a timed test): `npm run bench -- data-out`.
 *
 * Two 1,000,000-record days in an embedded ClickHouse in a temp dir, written as the sink
 * writes them:
 *   - exchange A, one outcome token, a `book` every 5,000 events (the summaries benchmark's
 *     day): the book at an instant is rebuilt from at most 5,000 events;
 *   - exchange B, one ticker with a single snapshot at 00:00 and deltas after it (a venue that
 *     sends snapshots only on subscribe): the worst case, every delta since midnight replayed.
 * Measured through the API in process (inject: routing, key, reads, book, serialisation),
 * BENCH_REQUESTS (default 40) random instants each: p50 / p95 of GET …/market/book at depth
 * 10, and of GET …/market/book-snapshots for a whole day at interval 60 (1,440 snapshots,
 * both venues) and 3600 (exchange B),
 * twice in one run: first before any rollup (the book rebuilt from its last raw snapshot),
 * then after both days are rolled up with the rollup's checkpoints (every
 * ROLLUP_CHECKPOINT_EVENTS, default 500): the ratio is the checkpoints' gain.
 * Target (issue 12): p50 <= 20 ms for any instant of a 1,000,000-event day.
 * Then the memory of streaming: the exchange B day exported whole (1,000,000 CSV rows, and as
 * Parquet) over a real socket to a client that discards it, and a 100,000-record NDJSON page:
 * the process's peak RSS above its RSS before each (target: a 1,000,000-row export adds
 * <= 64 MB).
 * The last line printed is the JSON summary.
 *
 *   BENCH_EVENTS=200000   a quicker run
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createApp, createRedis } from '@booktape/api';
import { deleteRedisPrefix, testConfig } from '@booktape/api/testing';
import { silentLogger } from '@booktape/config';
import { assetKey, rollupKeys, type AssetRef } from '@booktape/messaging';
import { migrate, openClickHouse, RawEventsRepository, SummariesRepository } from '@booktape/storage';
import { CHECKPOINT_EVENTS, Roller } from '@booktape/summaries';
import { intEnv } from './bench-env.ts';
import { fillDay, fillTicker, rng } from './fill-day.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
/** BENCH_PARTS: `book`, `memory` or both (default). */
const PARTS = new Set((process.env.BENCH_PARTS || 'book,memory').split(','));
for (const p of PARTS) if (p !== 'book' && p !== 'memory') throw new Error(`BENCH_PARTS=${process.env.BENCH_PARTS}: expected book, memory or both, comma-separated`);
const REQUESTS = intEnv('BENCH_REQUESTS', 40, 1);
const CHECKPOINT_EVERY = intEnv('ROLLUP_CHECKPOINT_EVENTS', CHECKPOINT_EVENTS, 100);
const MARKET = `0x${'7b'.repeat(32)}`;
const ASSET = '5550002';
const TICKER = 'KXBENCHBOOK-26MAR02';
const DAY = Date.UTC(2026, 2, 2);

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-book-bench-'));
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
  const config = testConfig({ rollupQueuePrefix: `bench-book-${process.pid}`, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  try {
    await migrate(ch);
    const repo = new RawEventsRepository(ch);
    const t0 = performance.now();
    await fillDay(repo, MARKET, ASSET, DAY, EVENTS, 5, 0);
    await fillTicker(repo, TICKER, DAY, EVENTS);
    for (const t of ['raw_exchange_a', 'raw_exchange_b']) await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table(t)} FINAL` });
    process.stderr.write(`[data-out] stored 2 x ${EVENTS} records in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

    const app = await createApp({ ch, log: silentLogger(), redis, config });
    const res = await app.inject({ method: 'POST', url: '/api/v1/keys?name=bench&user_id=bench' });
    const headers = { authorization: `Bearer ${(res.json() as { data: { api_key: string } }).data.api_key}` };
    const r = rng(17);
    const measure = async (name: string, url: (at: number) => string, n: number) => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const at = DAY + Math.floor(r() * 86_400_000);
        const s = performance.now();
        const out = await app.inject({ method: 'GET', url: url(at), headers });
        times.push(performance.now() - s);
        if (out.statusCode !== 200) throw new Error(`${name}: ${out.statusCode} ${out.body.slice(0, 200)}`);
      }
      times.sort((a, b) => a - b);
      const fig = { p50: +quantile(times, 0.5).toFixed(1), p95: +quantile(times, 0.95).toFixed(1) };
      process.stderr.write(`[data-out] ${name}: p50 ${fig.p50} ms, p95 ${fig.p95} ms (${n} requests)\n`);
      return fig;
    };
    const bookFigures = async (label: string, n: number) => ({
      a_book_depth10: await measure(`${label}: exchange A book, depth 10 (a snapshot every 5,000 events)`, (at) => `/api/v1/exchange-a/market/book?asset_id=${ASSET}&condition_id=${MARKET}&timestamp=${at}`, n),
      b_book_depth10: await measure(`${label}: exchange B book, depth 10 (one snapshot at 00:00)`, (at) => `/api/v1/exchange-b/market/book?ticker=${TICKER}&timestamp=${at}`, n),
      a_snapshots_day_60s: await measure(
        `${label}: exchange A book-snapshots, whole day at 60 s`,
        () => `/api/v1/exchange-a/market/book-snapshots?asset_id=${ASSET}&condition_id=${MARKET}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&interval=60`,
        Math.min(n, 5),
      ),
      b_snapshots_day_60s: await measure(
        `${label}: exchange B book-snapshots, whole day at 60 s`,
        () => `/api/v1/exchange-b/market/book-snapshots?ticker=${TICKER}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&interval=60`,
        Math.min(n, 5),
      ),
      // Hourly: the instants lie many checkpoints apart, so a series can restart from one.
      b_snapshots_day_3600s: await measure(
        `${label}: exchange B book-snapshots, whole day at 3600 s`,
        () => `/api/v1/exchange-b/market/book-snapshots?ticker=${TICKER}&start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}&interval=3600`,
        Math.min(n, 5),
      ),
    });
    let figures = {};
    if (PARTS.has('book')) {
      // The raw path replays up to a day of deltas per request (seconds for B): fewer requests.
      const raw = await bookFigures('raw events', Math.min(REQUESTS, 10));
      // As the worker runs it: bumping the asset's summaries version around each write, which
      // the API's readers key their caches by.
      const versionKey = (a: AssetRef) => rollupKeys(config.rollupQueuePrefix).version(assetKey(a));
      const versions = { current: async (a: AssetRef) => Number((await redis.get(versionKey(a))) ?? 0), bump: (a: AssetRef) => redis.incr(versionKey(a)) };
      const roller = new Roller(new SummariesRepository(ch), silentLogger(), { closeGraceMs: 0, checkpointEvery: CHECKPOINT_EVERY, versions });
      const r0 = performance.now();
      await roller.rollDay({ venue: 'exchange-a', market: MARKET, asset: ASSET }, '2026-03-02');
      await roller.rollDay({ venue: 'exchange-b', market: TICKER, asset: TICKER }, '2026-03-02');
      const rollupSeconds = +((performance.now() - r0) / 1000).toFixed(1);
      process.stderr.write(`[data-out] rolled up both days with a checkpoint every ${CHECKPOINT_EVERY} events in ${rollupSeconds} s\n`);
      const checkpoints = await bookFigures('checkpoints', REQUESTS);
      const ratio = Object.fromEntries(Object.entries(checkpoints).map(([k, v]) => [k, +(raw[k as keyof typeof raw].p50 / v.p50).toFixed(1)]));
      process.stderr.write(`[data-out] p50 raw / checkpoints: ${JSON.stringify(ratio)}\n`);
      const rs = await ch.client.query({
        query: `SELECT sum(data_compressed_bytes) AS bytes FROM system.parts WHERE database = {db:String} AND table = 'book_checkpoints' AND active`,
        query_params: { db: ch.database },
        format: 'JSONEachRow',
      });
      const [parts] = await rs.json<{ bytes: string }>();
      const stored = await ch.client.query({ query: `SELECT count() AS n FROM ${ch.table('book_checkpoints')}`, format: 'JSONEachRow' });
      const checkpointRows = Number((await stored.json<{ n: string }>())[0]!.n);
      const checkpointMb = +(Number(parts?.bytes ?? 0) / 1e6).toFixed(2);
      process.stderr.write(`[data-out] ${checkpointRows} checkpoints stored, ${checkpointMb} MB compressed\n`);
      figures = { raw, checkpoints, p50_ratio_raw_over_checkpoints: ratio, checkpoint_every: CHECKPOINT_EVERY, rollup_seconds_both_days: rollupSeconds, checkpoint_rows: checkpointRows, checkpoint_mb: checkpointMb };
    }
    // Streaming memory, over a real socket: the client counts bytes and drops them.
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const memory = async (name: string, url: string) => {
      (globalThis as { gc?: () => void }).gc?.();
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
      const s = performance.now();
      const out = await fetch(`${address}${url}`, { headers: { ...headers, 'accept-encoding': 'identity' } });
      let bytes = 0;
      for await (const chunk of out.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength;
      clearInterval(sampler);
      if (out.status !== 200) throw new Error(`${name}: ${out.status}`);
      const fig = { added_rss_mb: +((peak - before) / 1e6).toFixed(1), mb: +(bytes / 1e6).toFixed(1), seconds: +((performance.now() - s) / 1000).toFixed(1) };
      process.stderr.write(`[data-out] ${name}: ${fig.mb} MB in ${fig.seconds} s, peak RSS +${fig.added_rss_mb} MB\n`);
      return fig;
    };
    const exportsFig = !PARTS.has('memory') ? {} : {
      b_raw_csv_gz: await memory('exchange B day export, csv.gz', `/api/v1/exchange-b/market/export?ticker=${TICKER}&start_date=2026-03-02&end_date=2026-03-02`),
      b_raw_parquet: await memory('exchange B day export, parquet', `/api/v1/exchange-b/market/export?ticker=${TICKER}&start_date=2026-03-02&end_date=2026-03-02&format=parquet`),
      b_page_ndjson_100k: await memory('exchange B 100,000-record NDJSON page', `/api/v1/exchange-b/market/data?ticker=${TICKER}&date=2026-03-02&limit=100000&format=ndjson`),
    };
    await app.close();
    console.log(JSON.stringify({ events_per_day: EVENTS, ...figures, target_p50_ms: 20, memory: exportsFig, target_added_rss_mb: 64, cpus: cpus().length, load: loadavg()[0] }));
  } finally {
    await deleteRedisPrefix(redis, config.redisKeyPrefix).catch(() => undefined);
    await deleteRedisPrefix(redis, config.rollupQueuePrefix).catch(() => undefined);
    redis.disconnect();
    await ch.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
