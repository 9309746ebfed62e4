/**
 * The raw tables' granule size, side by side in one process: the book at an instant through
 * the API (inject) and the closed-day rollup, on the same rows stored with 8,192-row granules
 * (the engine's default, what migration 012 created) and with smaller ones.
 *
 * The store is the data-out benchmark's (two 1,000,000-event days, exchange A with a `book`
 * every 5,000 events, exchange B with one snapshot at midnight; merged; rolled up with a
 * checkpoint every 500 events), kept in GRANULES_DIR between runs. Each other layout is a copy
 * of both raw tables with `index_granularity` set (INSERT … SELECT, merged), made once. A
 * layout is put in place by EXCHANGE TABLES (metadata only), so every reader reads
 * `raw_exchange_a` / `raw_exchange_b` as the service does. The layouts take turns:
 *
 *   - book: blocks of GRANULES_BLOCK instants (random, the same for every layout in a block);
 *     per block each layout in turn (the order rotating), both venues, depth 10;
 *   - rollup: GRANULES_ROUNDS rounds of a forced rollDay of each venue's day per layout
 *     (the order rotating): wall and process CPU (the engine runs in this process).
 *
 * The 8,192 layout is back in place when the script ends (also after an error).
 *
 *   GRANULES_DIR=/tmp/granules-probe GRANULES_SIZES=1024,2048 npx tsx benchmarks/granules-ab.ts
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createApp, createRedis } from '@booktape/api';
import { deleteRedisPrefix, testConfig } from '@booktape/api/testing';
import { silentLogger } from '@booktape/config';
import { assetKey, rollupKeys, type AssetRef } from '@booktape/messaging';
import { migrate, openClickHouse, RawEventsRepository, SummariesRepository, type SummaryKey } from '@booktape/storage';
import { CHECKPOINT_EVENTS, Roller } from '@booktape/summaries';
import { intEnv } from './bench-env.ts';
import { fillDay, fillTicker, rng } from './fill-day.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
const BLOCKS = intEnv('GRANULES_BLOCKS', 8, 1);
const BLOCK = intEnv('GRANULES_BLOCK', 10, 1);
const ROUNDS = intEnv('GRANULES_ROUNDS', 3, 0);
const DIR = process.env.GRANULES_DIR ?? '/tmp/granules-probe';
const SIZES = (process.env.GRANULES_SIZES ?? '1024,2048').split(',').map(Number);
for (const s of SIZES) if (!Number.isInteger(s) || s < 64 || s > 65536) throw new Error(`GRANULES_SIZES: ${s} is not a granule size`);
const LAYOUTS = [8192, ...SIZES.filter((s) => s !== 8192)];
const MARKET = `0x${'7b'.repeat(32)}`;
const ASSET = '5550002';
const TICKER = 'KXBENCHBOOK-26MAR02';
const DAY = Date.UTC(2026, 2, 2);
const DATE = '2026-03-02';
const PREFIX = 'bench-granules-ab';
const RAW = ['raw_exchange_a', 'raw_exchange_b'] as const;

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: +quantile(s, 0.5).toFixed(2), p95: +quantile(s, 0.95).toFixed(2), min: +s[0]!.toFixed(2), n: s.length };
};
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };

async function main(): Promise<void> {
  const fresh = !existsSync(`${DIR}/.filled`);
  mkdirSync(DIR, { recursive: true });
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: DIR });
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
  const config = testConfig({ rollupQueuePrefix: PREFIX, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  const versionKey = (a: AssetRef) => rollupKeys(config.rollupQueuePrefix).version(assetKey(a));
  const versions = { current: async (a: AssetRef) => Number((await redis.get(versionKey(a))) ?? 0), bump: (a: AssetRef) => redis.incr(versionKey(a)) };
  const roller = new Roller(new SummariesRepository(ch), silentLogger(), { closeGraceMs: 0, checkpointEvery: CHECKPOINT_EVENTS, versions });
  const keys: SummaryKey[] = [
    { venue: 'exchange-a', market: MARKET, asset: ASSET },
    { venue: 'exchange-b', market: TICKER, asset: TICKER },
  ];
  const one = async <T>(query: string): Promise<T[]> => (await ch.client.query({ query, format: 'JSONEachRow' })).json<T>();
  /** The granule size of a table, from its settings (the engine's default when none is set). */
  const granuleOf = async (name: string): Promise<number> => {
    const [row] = await one<{ engine_full: string }>(`SELECT engine_full FROM system.tables WHERE database = '${ch.database}' AND name = '${name}'`);
    if (!row) throw new Error(`no table ${name}`);
    const m = /index_granularity = (\d+)/.exec(row.engine_full);
    return m ? Number(m[1]) : 8192;
  };
  const holder = (t: string, g: number) => (g === 8192 ? `${t}_g8192` : `${t}_g${g}`);
  /** Puts layout g in place: the table holding it takes the live name (EXCHANGE, metadata only). */
  const put = async (g: number) => {
    for (const t of RAW) {
      const live = await granuleOf(t);
      if (live === g) continue;
      await ch.client.command({ query: `EXCHANGE TABLES ${ch.table(t)} AND ${ch.table(holder(t, g))}` });
      // The table that was live now holds the name of g's; give it its own.
      await ch.client.command({ query: `RENAME TABLE ${ch.table(holder(t, g))} TO ${ch.table(holder(t, live))}` });
    }
  };
  try {
    await migrate(ch);
    if (fresh) {
      const t0 = performance.now();
      const repo = new RawEventsRepository(ch);
      await fillDay(repo, MARKET, ASSET, DAY, EVENTS, 5, 0);
      await fillTicker(repo, TICKER, DAY, EVENTS);
      for (const t of RAW) await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table(t)} FINAL` });
      for (const k of keys) await roller.rollDay(k, DATE);
      writeFileSync(`${DIR}/.filled`, String(EVENTS));
      process.stderr.write(`filled, merged and rolled up in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    }
    // One part per partition in the live tables (a store migrated since holds the late copy's rows twice until merged).
    for (const t of RAW) {
      const [p] = await one<{ n: string }>(`SELECT count() AS n FROM system.parts WHERE database = '${ch.database}' AND table = '${t}' AND active`);
      if (Number(p!.n) > 1) await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table(t)} FINAL` });
    }
    // A holder of the live table's own layout is a stale copy (the live table was rewritten since, by a migration): dropped.
    for (const t of RAW) await ch.client.command({ query: `DROP TABLE IF EXISTS ${ch.table(holder(t, await granuleOf(t)))}` });
    // A copy of the live tables for each layout that no table holds yet.
    for (const g of LAYOUTS) {
      for (const t of RAW) {
        if ((await granuleOf(t)) === g) continue;
        const copy = ch.table(holder(t, g));
        if ((await one(`SELECT 1 FROM system.tables WHERE database = '${ch.database}' AND name = '${holder(t, g)}'`)).length) continue;
        const [row] = await one<Record<string, string>>(`SHOW CREATE TABLE ${ch.table(t)}`);
        const ddl = Object.values(row!)[0]!
          .replace(`CREATE TABLE ${ch.table(t)}`, `CREATE TABLE ${copy}`)
          .replace(/index_granularity = \d+/, `index_granularity = ${g}`);
        if (!ddl.includes(`index_granularity = ${g}`)) throw new Error(`cannot set the granule size in ${ddl}`);
        const t0 = performance.now();
        await ch.client.command({ query: ddl });
        await ch.client.command({ query: `INSERT INTO ${copy} SELECT * FROM ${ch.table(t)}` });
        await ch.client.command({ query: `OPTIMIZE TABLE ${copy} FINAL` });
        process.stderr.write(`made ${copy} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
      }
    }
    await put(8192);
    // Every layout holds the same rows (count and a hash of every column in key order).
    const sig = async (t: string) => (await one<{ n: string; h: string }>(`SELECT count() AS n, groupBitXor(cityHash64(*)) AS h FROM ${ch.table(t)}`))[0]!;
    for (const t of RAW) {
      const base = await sig(t);
      for (const g of LAYOUTS.filter((x) => x !== 8192)) {
        const s = await sig(holder(t, g));
        if (s.n !== base.n || s.h !== base.h) throw new Error(`${holder(t, g)} differs from ${t}: ${JSON.stringify(s)} against ${JSON.stringify(base)}`);
      }
    }
    const app = await createApp({ ch, log: silentLogger(), redis, config });
    const res = await app.inject({ method: 'POST', url: '/api/v1/keys?name=bench&user_id=bench' });
    const headers = { authorization: `Bearer ${(res.json() as { data: { api_key: string } }).data.api_key}` };
    const urls = [
      (at: number) => `/api/v1/exchange-a/market/book?asset_id=${ASSET}&condition_id=${MARKET}&timestamp=${at}&depth=10`,
      (at: number) => `/api/v1/exchange-b/market/book?ticker=${TICKER}&timestamp=${at}&depth=10`,
    ];
    process.stderr.write(`book: load ${load()}\n`);
    const result: Record<string, unknown> = { load_start: load() };
    const r = rng(23);
    const book: Record<number, number[][]> = Object.fromEntries(LAYOUTS.map((g) => [g, [[], []]]));
    // The process's CPU per answer (the engine runs in this process): less moved by other processes than wall time.
    const bookCpu: Record<number, number[][]> = Object.fromEntries(LAYOUTS.map((g) => [g, [[], []]]));
    let differ = 0;
    const t0 = performance.now();
    for (let b = 0; b < BLOCKS; b++) {
      const ats = Array.from({ length: BLOCK }, () => DAY + Math.floor(r() * 86_400_000));
      const order = LAYOUTS.map((_, i) => LAYOUTS[(i + b) % LAYOUTS.length]!);
      const bodies = new Map<string, string>();
      for (const g of order) {
        await put(g);
        for (let v = 0; v < 2; v++) {
          for (const at of ats) {
            const s = performance.now();
            const c = cpu();
            const out = await app.inject({ method: 'GET', url: urls[v]!(at), headers });
            book[g]![v]!.push(performance.now() - s);
            bookCpu[g]![v]!.push(cpu() - c);
            if (out.statusCode !== 200) throw new Error(out.body);
            const prev = bodies.get(`${v} ${at}`);
            if (prev === undefined) bodies.set(`${v} ${at}`, out.body);
            else if (prev !== out.body) differ++;
          }
        }
      }
    }
    const bookS = ((performance.now() - t0) / 1000).toFixed(1);
    Object.assign(result, { events: EVENTS, book_seconds: +bookS, answers_differing: differ });
    for (const g of LAYOUTS) result[`book_${g}`] = { a: stats(book[g]![0]!), b: stats(book[g]![1]!), a_cpu: stats(bookCpu[g]![0]!), b_cpu: stats(bookCpu[g]![1]!) };
    for (const g of SIZES) {
      result[`book_p50_ratio_8192_over_${g}`] = {
        a: +(stats(book[8192]![0]!).p50 / stats(book[g]![0]!).p50).toFixed(3),
        b: +(stats(book[8192]![1]!).p50 / stats(book[g]![1]!).p50).toFixed(3),
        a_cpu: +(stats(bookCpu[8192]![0]!).p50 / stats(bookCpu[g]![0]!).p50).toFixed(3),
        b_cpu: +(stats(bookCpu[8192]![1]!).p50 / stats(bookCpu[g]![1]!).p50).toFixed(3),
      };
    }
    process.stderr.write(`book done in ${bookS} s, load ${load()}\n`);
    await app.close();
    // Closed-day rollups, forced, each venue's day, layouts alternating.
    const roll: Record<number, { wall: number[]; cpu: number[] }[]> = Object.fromEntries(LAYOUTS.map((g) => [g, [{ wall: [], cpu: [] }, { wall: [], cpu: [] }]]));
    for (let k = 0; k < ROUNDS; k++) {
      const order = LAYOUTS.map((_, i) => LAYOUTS[(i + k) % LAYOUTS.length]!);
      for (const g of order) {
        await put(g);
        for (let v = 0; v < 2; v++) {
          const w = performance.now();
          const c = cpu();
          const out = await roller.rollDay(keys[v]!, DATE, true);
          roll[g]![v]!.wall.push(performance.now() - w);
          roll[g]![v]!.cpu.push(cpu() - c);
          if (out.applied !== EVENTS) throw new Error(`rolled ${out.applied} events of ${keys[v]!.venue}, expected ${EVENTS}`);
        }
      }
      process.stderr.write(`rollup round ${k} load ${load()}\n`);
    }
    if (ROUNDS > 0) {
      for (const g of LAYOUTS) result[`rollup_${g}`] = { a_wall: stats(roll[g]![0]!.wall), a_cpu: stats(roll[g]![0]!.cpu), b_wall: stats(roll[g]![1]!.wall), b_cpu: stats(roll[g]![1]!.cpu) };
      for (const g of SIZES) {
        result[`rollup_median_ratio_${g}_over_8192`] = {
          a_wall: +(stats(roll[g]![0]!.wall).p50 / stats(roll[8192]![0]!.wall).p50).toFixed(3),
          a_cpu: +(stats(roll[g]![0]!.cpu).p50 / stats(roll[8192]![0]!.cpu).p50).toFixed(3),
          b_wall: +(stats(roll[g]![1]!.wall).p50 / stats(roll[8192]![1]!.wall).p50).toFixed(3),
          b_cpu: +(stats(roll[g]![1]!.cpu).p50 / stats(roll[8192]![1]!.cpu).p50).toFixed(3),
        };
      }
    }
    result.load_end = load();
    console.log(JSON.stringify(result));
  } finally {
    await put(8192).catch((e) => process.stderr.write(`could not put the 8,192 layout back: ${e}\n`));
    await deleteRedisPrefix(redis, config.redisKeyPrefix).catch(() => undefined);
    redis.disconnect();
    await ch.close();
  }
}

await main();
