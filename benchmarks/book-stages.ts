/**
 * A cold book answer's stages, timed in one process (a script, not part of `npm run bench`):
 * the data-out benchmark's two days (a checkpoint every 500 events), kept in BOOK_PROBE_DIR
 * between runs, then BENCH_REQUESTS random instants; at each, every stage named in STAGES
 * (comma-separated; default all) runs once, the order reversed every other instant. On a
 * shared machine only figures of one run compare.
 *
 *   inject            the answer through the API (key, quota, reads, book, JSON)
 *   bookNew, bookOld  bookAt without HTTP: this tree, and the reads bound as before (queued
 *                     behind each other in the embedded engine's bound-query chain)
 *   bookNoStates      bookNew keeping no checkpoint state (each answer reads its own)
 *   bookFull          bookNew reading every book column after the checkpoint (hashes and claims
 *                     too), as before BOOK_LEVEL_COLUMNS; sameFull: both, and the same book
 *   afterFull         `after` in every book column, decoded
 *   same              both of those, and a check that they give the same book
 *   cpState, cpStateBound, cpStateSession   the checkpoint state read (values in the text,
 *                     bound, on a stream session)
 *   after, afterBound, afterLit             the records after the checkpoint (≤ 500)
 *   stateAndAfter, stateAndAfterBound       both reads at once
 *   afterCount, afterTsOnly, afterNoFinal, afterT1, afterUC   the same read counting only,
 *                     one column, without FINAL, max_threads = 1, the uncompressed cache
 *   afterG1024, afterG1024c, afterG256c     on copies of the raw tables with smaller granules
 *                     (and compression blocks), made once in the store
 *   redisState, select1, select1Bound       the rollup state in Redis; SELECT 1 (bound)
 *
 *   BOOK_PROBE_DIR=/tmp/book-probe STAGES=bookOld,bookNew npx tsx benchmarks/book-stages.ts
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createApp, createRedis } from '@booktape/api';
import { deleteRedisPrefix, testConfig } from '@booktape/api/testing';
import { silentLogger } from '@booktape/config';
import { ENGINE_VERSION } from '@booktape/book';
import { assetKey, assetRollupState, rollupKeys, type AssetRef } from '@booktape/messaging';
import { inlineParams, BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT, bookRowBatches, BookEventsRepository, migrate, streamQuery, openClickHouse, RawEventsRepository, SummariesRepository, type SummaryKey } from '@booktape/storage';
import { bookAt, BookReader, Roller } from '@booktape/summaries';
import { intEnv } from './bench-env.ts';
import { fillDay, fillTicker, rng } from './fill-day.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
const N = intEnv('BENCH_REQUESTS', 60, 1);
const DIR = process.env.BOOK_PROBE_DIR ?? '/tmp/book-probe';
const MARKET = `0x${'7b'.repeat(32)}`;
const ASSET = '5550002';
const TICKER = 'KXBENCHBOOK-26MAR02';
const DAY = Date.UTC(2026, 2, 2);
const PREFIX = 'bench-book-stages';

/** The SQL with its values in the text (they are all of their placeholder's type here). */
const inlined = (sql: string, params: Record<string, unknown>): string => {
  const r = inlineParams(sql, params);
  if (!r.ok) throw new Error(r.reason);
  return r.query;
};
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const fig = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${quantile(s, 0.5).toFixed(1)} p95 ${quantile(s, 0.95).toFixed(1)}`;
};

async function main(): Promise<void> {
  const fresh = !existsSync(`${DIR}/.filled`);
  mkdirSync(DIR, { recursive: true });
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: DIR });
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
  const config = testConfig({ rollupQueuePrefix: PREFIX, dataFloors: { 'exchange-a': null, 'exchange-b': null } });
  const versionKey = (a: AssetRef) => rollupKeys(config.rollupQueuePrefix).version(assetKey(a));
  try {
    await migrate(ch);
    if (fresh) {
      const repo = new RawEventsRepository(ch);
      await fillDay(repo, MARKET, ASSET, DAY, EVENTS, 5, 0);
      await fillTicker(repo, TICKER, DAY, EVENTS);
      for (const t of ['raw_exchange_a', 'raw_exchange_b']) await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table(t)} FINAL` });
      const versions = { current: async (a: AssetRef) => Number((await redis.get(versionKey(a))) ?? 0), bump: (a: AssetRef) => redis.incr(versionKey(a)) };
      const roller = new Roller(new SummariesRepository(ch), silentLogger(), { closeGraceMs: 0, checkpointEvery: 500, versions });
      await roller.rollDay({ venue: 'exchange-a', market: MARKET, asset: ASSET }, '2026-03-02');
      await roller.rollDay({ venue: 'exchange-b', market: TICKER, asset: TICKER }, '2026-03-02');
      writeFileSync(`${DIR}/.filled`, String(EVENTS));
      process.stderr.write('filled and rolled up\n');
    }
    // Copies of the raw tables with smaller granules (and compression blocks), for the read's cost on them.
    for (const [suffix, settings] of [['g1024', 'index_granularity = 1024'], ['g1024c', 'index_granularity = 1024, min_compress_block_size = 8192, max_compress_block_size = 65536'], ['g256c', 'index_granularity = 256, min_compress_block_size = 4096, max_compress_block_size = 65536']] as const) {
      for (const t of ['raw_exchange_a', 'raw_exchange_b']) {
        const copy = ch.table(`${t}_${suffix}`);
        const exists = await ch.client.query({ query: `EXISTS TABLE ${copy}`, format: 'JSONEachRow' });
        if (Number(Object.values((await exists.json<Record<string, number>>())[0]!)[0]) === 1) continue;
        const rs = await ch.client.query({ query: `SHOW CREATE TABLE ${ch.table(t)}`, format: 'JSONEachRow' });
        let ddl = Object.values((await rs.json<Record<string, string>>())[0]!)[0]!;
        ddl = ddl.replace(`CREATE TABLE ${ch.table(t)}`, `CREATE TABLE ${copy}`).replace(/SETTINGS (.*)$/s, `SETTINGS $1, ${settings}`).replace(/index_granularity = 8192, /, '');
        await ch.client.command({ query: ddl });
        await ch.client.command({ query: `INSERT INTO ${copy} SELECT * FROM ${ch.table(t)}` });
        await ch.client.command({ query: `OPTIMIZE TABLE ${copy} FINAL` });
        process.stderr.write(`made ${copy}\n`);
      }
    }
    const app = await createApp({ ch, log: silentLogger(), redis, config });
    const res = await app.inject({ method: 'POST', url: '/api/v1/keys?name=bench&user_id=bench' });
    const headers = { authorization: `Bearer ${(res.json() as { data: { api_key: string } }).data.api_key}` };
    const summaries = new SummariesRepository(ch);
    const events = new BookEventsRepository(ch);
    const keys: SummaryKey[] = [
      { venue: 'exchange-a', market: MARKET, asset: ASSET },
      { venue: 'exchange-b', market: TICKER, asset: TICKER },
    ];
    const urls = [
      (at: number) => `/api/v1/exchange-a/market/book?asset_id=${ASSET}&condition_id=${MARKET}&timestamp=${at}`,
      (at: number) => `/api/v1/exchange-b/market/book?ticker=${TICKER}&timestamp=${at}`,
    ];
    const positions = await Promise.all(keys.map(async (k) => {
      const [day] = await summaries.dayBuilds(k);
      return { day: day!, list: await summaries.checkpointPositions(k, day!.date, day!.baseVersion, ENGINE_VERSION) };
    }));
    const cpOf = (v: number, at: number) => {
      const { day, list } = positions[v]!;
      let j = list.length - 1;
      while (j >= 0 && list[j]!.at > at) j--;
      return { day, cp: list[j]!, next: list[j + 1] };
    };
    const r = rng(17);
    const afterBound = async (v: number, at: number) => {
      const { cp } = cpOf(v, at);
      const k = keys[v]!;
      const where = v === 0 ? "market = {m:String} AND asset_id = {a:String} AND event_type IN ('book', 'price_change')" : "ticker = {m:String} AND record_type IN ('snapshot', 'delta', 'gap')";
      const table = ch.table(v === 0 ? 'raw_exchange_a' : 'raw_exchange_b');
      const query = `SELECT ${BOOK_ROW_COLUMNS[k.venue]} FROM ${table} FINAL
        PREWHERE ${where}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC') ORDER BY event_ts, ingest_seq, dedup_id`;
      let n = 0;
      for await (const b of bookRowBatches(k.venue, streamQuery(ch, { query, query_params: { m: k.market, a: k.asset, from: cp.at + 1, to: at }, format: BOOK_ROW_FORMAT, whole: true }), k.market, k.asset)) n += b.length;
      return n;
    };
    /** The bounded read's SQL with its values in the text, `cols` selected, `tail` appended (FINAL unless `final` false). */
    const afterVariant = async (v: number, at: number, cols: string | null, tail = '', final = true, suffix = '') => {
      const { cp } = cpOf(v, at);
      const k = keys[v]!;
      const where = v === 0 ? "market = {m:String} AND asset_id = {a:String} AND event_type IN ('book', 'price_change')" : "ticker = {m:String} AND record_type IN ('snapshot', 'delta', 'gap')";
      const table = ch.table((v === 0 ? 'raw_exchange_a' : 'raw_exchange_b') + suffix);
      const query = inlined(`SELECT ${cols ?? BOOK_ROW_COLUMNS[k.venue]} FROM ${table} ${final ? 'FINAL' : ''}
        PREWHERE ${where}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC') ${cols?.startsWith('count') ? '' : 'ORDER BY event_ts, ingest_seq, dedup_id'} ${tail}`, { m: k.market, a: k.asset, from: cp.at + 1, to: at });
      let n = 0;
      for await (const c of streamQuery(ch, { query, format: BOOK_ROW_FORMAT, whole: true })) n += c.length;
      return n;
    };
    // Book answers without the HTTP layer: this tree's reader, and one whose two reads are bound as before (chained).
    const readerNew = new BookReader({ summaries, events, redis, queuePrefix: PREFIX });
    // The same reader keeping no checkpoint state: every answer reads its own.
    const readerNoStates = new BookReader({ summaries, events, redis, queuePrefix: PREFIX, stateCharsHeld: 0 });
    class BoundSummaries extends SummariesRepository {
      override async checkpointState(key: SummaryKey, date: string, baseVersion: number, n: number): Promise<string | null> {
        const rs = await ch.client.query({
          query: `SELECT state FROM ${ch.table('book_checkpoints')}
        WHERE venue = {venue:String} AND market = {market:String} AND asset = {asset:String} AND event_date = {date:Date} AND events = {events:UInt64} AND base_version = {base:UInt64} LIMIT 1`,
          query_params: { venue: key.venue, market: key.market, asset: key.asset, date, events: n, base: baseVersion },
          format: 'JSONEachRow',
        });
        return (await rs.json<{ state: string }>())[0]?.state ?? null;
      }
    }
    class BoundEvents extends BookEventsRepository {
      override async after(venue: SummaryKey['venue'], market: string, asset: string, afterMs: number, untilMs: number) {
        const v = venue === 'exchange-a' ? 0 : 1;
        const where = v === 0 ? "market = {m:String} AND asset_id = {a:String} AND event_type IN ('book', 'price_change')" : "ticker = {m:String} AND record_type IN ('snapshot', 'delta', 'gap')";
        const query = `SELECT ${BOOK_ROW_COLUMNS[venue]} FROM ${ch.table(v === 0 ? 'raw_exchange_a' : 'raw_exchange_b')} FINAL
        PREWHERE ${where}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC') ORDER BY event_ts, ingest_seq, dedup_id`;
        const batches = bookRowBatches(venue, streamQuery(ch, { query, query_params: { m: market, a: asset, from: afterMs + 1, to: untilMs }, format: BOOK_ROW_FORMAT, whole: true }), market, asset);
        const all = [];
        for await (const b of batches) all.push(...b);
        return { anchorMs: null, count: null, records: (async function* () { yield* all; })(), close: async () => undefined };
      }
    }
    const readerOld = new BookReader({ summaries: new BoundSummaries(ch), events: new BoundEvents(ch), redis, queuePrefix: PREFIX });
    /** The records after a checkpoint as this tree reads them, but every book column (hashes and claims too: BOOK_ROW_COLUMNS), values in the text. */
    const afterFull = async (venue: SummaryKey['venue'], market: string, asset: string, afterMs: number, untilMs: number) => {
      const v = venue === 'exchange-a' ? 0 : 1;
      const where = v === 0 ? "market = {m:String} AND asset_id = {a:String} AND event_type IN ('book', 'price_change')" : "ticker = {m:String} AND record_type IN ('snapshot', 'delta', 'gap')";
      const query = inlined(`SELECT ${BOOK_ROW_COLUMNS[venue]} FROM ${ch.table(v === 0 ? 'raw_exchange_a' : 'raw_exchange_b')} FINAL
        PREWHERE ${where}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC') ORDER BY event_ts, ingest_seq, dedup_id`, { m: market, a: asset, from: afterMs + 1, to: untilMs });
      const all = [];
      for await (const b of bookRowBatches(venue, streamQuery(ch, { query, format: BOOK_ROW_FORMAT, whole: true }), market, asset)) all.push(...b);
      return all;
    };
    class FullEvents extends BookEventsRepository {
      override async after(venue: SummaryKey['venue'], market: string, asset: string, afterMs: number, untilMs: number) {
        const all = await afterFull(venue, market, asset, afterMs, untilMs);
        return { anchorMs: null, count: null, records: (async function* () { yield* all; })(), close: async () => undefined };
      }
    }
    // This tree's reader with the records after the checkpoint read in every book column (as before BOOK_LEVEL_COLUMNS).
    const readerFull = new BookReader({ summaries, events: new FullEvents(ch), redis, queuePrefix: PREFIX });
    const same = async (v: number, at: number) => {
      const a = await bookAt(readerNew, keys[v]!, at, 10);
      const b = await bookAt(readerOld, keys[v]!, at, 10);
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`books differ at ${at}`);
    };
    const stages: Record<string, (v: number, at: number) => Promise<unknown>> = {
      inject: async (v, at) => {
        const out = await app.inject({ method: 'GET', url: urls[v]!(at) + `&depth=${10 + (Math.floor(at) % 7)}`, headers });
        if (out.statusCode !== 200) throw new Error(out.body);
      },
      redisState: (v) => assetRollupState(redis, PREFIX, keys[v]!),
      cpState: (v, at) => {
        const { day, cp } = cpOf(v, at);
        return summaries.checkpointState(keys[v]!, day.date, day.baseVersion, cp.events);
      },
      after: async (v, at) => {
        const { cp } = cpOf(v, at);
        const k = keys[v]!;
        const h = await events.after(k.venue, k.market, k.asset, cp.at, at, false, true);
        let n = 0;
        for await (const _ of h.records) n++;
        return n;
      },
      stateAndAfter: async (v, at) => {
        const { day, cp } = cpOf(v, at);
        const k = keys[v]!;
        const [, h] = await Promise.all([summaries.checkpointState(k, day.date, day.baseVersion, cp.events), events.after(k.venue, k.market, k.asset, cp.at, at, false, true)]);
        for await (const _ of h.records);
      },
      // The code before: the same reads, bound (chained process-wide).
      cpStateBound: async (v, at) => {
        const { day, cp } = cpOf(v, at);
        const k = keys[v]!;
        const rs = await ch.client.query({
          query: `SELECT state FROM ${ch.table('book_checkpoints')}
        WHERE venue = {venue:String} AND market = {market:String} AND asset = {asset:String} AND event_date = {date:Date} AND events = {events:UInt64} AND base_version = {base:UInt64} LIMIT 1`,
          query_params: { venue: k.venue, market: k.market, asset: k.asset, date: day.date, events: cp.events, base: day.baseVersion },
          format: 'JSONEachRow',
        });
        return rs.json();
      },
      afterBound: (v, at) => afterBound(v, at),
      stateAndAfterBound: async (v, at) => {
        await Promise.all([stages.cpStateBound!(v, at), afterBound(v, at)]);
      },
      afterLit: (v, at) => afterVariant(v, at, null),
      cpStateSession: async (v, at) => {
        const { day, cp } = cpOf(v, at);
        const k = keys[v]!;
        const query = inlined(`SELECT state FROM ${ch.table('book_checkpoints')}
        WHERE venue = {venue:String} AND market = {market:String} AND asset = {asset:String} AND event_date = {date:Date} AND events = {events:UInt64} AND base_version = {base:UInt64} LIMIT 1`, { venue: k.venue, market: k.market, asset: k.asset, date: day.date, events: cp.events, base: day.baseVersion });
        let n = 0;
        for await (const c of streamQuery(ch, { query, format: 'RowBinary', whole: true })) n += c.length;
        return n;
      },
      bookNew: (v, at) => bookAt(readerNew, keys[v]!, at, 10),
      bookNoStates: (v, at) => bookAt(readerNoStates, keys[v]!, at, 10),
      bookOld: (v, at) => bookAt(readerOld, keys[v]!, at, 10),
      bookFull: (v, at) => bookAt(readerFull, keys[v]!, at, 10),
      sameFull: async (v, at) => {
        const depth = 1 + (at % 40);
        const a = await bookAt(readerNew, keys[v]!, at, depth);
        const b = await bookAt(readerFull, keys[v]!, at, depth);
        if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`books differ at ${at} (levels only against every column)`);
      },
      afterFull: async (v, at) => {
        const { cp } = cpOf(v, at);
        const k = keys[v]!;
        return (await afterFull(k.venue, k.market, k.asset, cp.at, at)).length;
      },
      same: (v, at) => same(v, at),
      afterG1024: (v, at) => afterVariant(v, at, null, '', true, '_g1024'),
      afterG1024c: (v, at) => afterVariant(v, at, null, '', true, '_g1024c'),
      afterG256c: (v, at) => afterVariant(v, at, null, '', true, '_g256c'),
      afterUC: (v, at) => afterVariant(v, at, null, 'SETTINGS use_uncompressed_cache = 1'),
      afterCount: (v, at) => afterVariant(v, at, 'count()'),
      afterT1: (v, at) => afterVariant(v, at, null, 'SETTINGS max_threads = 1'),
      afterNoFinal: (v, at) => afterVariant(v, at, null, '', false),
      afterTsOnly: (v, at) => afterVariant(v, at, 'toUnixTimestamp64Milli(event_ts)'),
      select1: async () => (await ch.client.query({ query: 'SELECT 1', format: 'JSONEachRow' })).json(),
      select1Bound: async () => (await ch.client.query({ query: 'SELECT {x:UInt8}', query_params: { x: 1 }, format: 'JSONEachRow' })).json(),
    };
    const chosen = (process.env.STAGES ?? Object.keys(stages).join(',')).split(',');
    process.stderr.write(`load ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
    for (let v = 0; v < 2; v++) {
      const times: Record<string, number[]> = Object.fromEntries(chosen.map((s) => [s, []]));
      for (let i = 0; i < N; i++) {
        const at = DAY + Math.floor(r() * 86_400_000);
        // Taking turns at going first.
        const order = i % 2 === 0 ? chosen : [...chosen].reverse();
        for (const s of order) {
          const t = performance.now();
          await stages[s]!(v, at);
          times[s]!.push(performance.now() - t);
        }
      }
      for (const s of chosen) process.stderr.write(`${v === 0 ? 'A' : 'B'} ${s.padEnd(14)} ${fig(times[s]!)}\n`);
    }
    process.stderr.write(`load ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
    await app.close();
  } finally {
    await deleteRedisPrefix(redis, config.redisKeyPrefix).catch(() => undefined);
    redis.disconnect();
    await ch.close();
  }
}

await main();
