/**
 * The engine's side of a closed day's rollup read alone (SummariesRepository.bookEventsFold's
 * query: FINAL, serving order, RowBinary), in variants of that query, on three layouts of
 * the same dense asset-day (fill-day.ts, as summaries-run.ts fills it):
 *
 *   - fresh: the sink's inserts as written (20 parts of 50,000 rows, merges stopped), what a
 *     live store holds before its merges catch up;
 *   - merged: the same rows after OPTIMIZE … FINAL (one part), what summaries-run.ts reads;
 *   - dups: the fresh parts plus parts of duplicates and ties (later copies that lose,
 *     earlier copies that win and so move, records sharing a millisecond whose sort-key
 *     order and serving order disagree), merges stopped.
 *
 * Each variant's rows are hashed once per layout (in order, as the engine sent them): a
 * variant is exact on a layout when its hash is the current query's. Then every variant is
 * timed, alternating, `rounds` times per layout (streamed to the end, not decoded): the
 * medians of wall time and of the process's CPU time (the engine runs in this process).
 *
 *   npx tsx benchmarks/rollup-read.ts [rounds]      ROLL_READ_DIR=/tmp/dir keeps the filled store
 *   ROLL_READ_ONLY=base,threads1                     only these variants
 *   ROLL_READ_TIMED=merged,fresh                     time only these layouts (every layout is hashed)
 *   ROLL_READ_ROLLUP=7                               then whole rollups, the read on one engine thread or the default
 *
 * A kept store's fresh parts stay apart only while merges are stopped: the engine resumes
 * them whenever a process opens it before this script stops them again (the part counts
 * printed first tell).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
// Loaded first, as in the worker's process (it slows some string built-ins: rollup-fold.ts).
import 'ioredis';
import { silentLogger } from '@booktape/config';
import { Roller } from '@booktape/summaries';
import { migrate, openClickHouse, RawEventsRepository, streamQuery, SummariesRepository, BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT, type ClickHouse } from '@booktape/storage';
import { intEnv } from './bench-env.ts';
import { DENSE_DAY, fillDay } from './fill-day.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
const { market: MARKET, asset: ASSET, date: DATE, dayMs: DAY } = DENSE_DAY;
const rounds = Number(process.argv[2] ?? 3);
const LAYOUTS = { fresh: 'raw_exchange_a', merged: 'raw_merged', dups: 'raw_dups' } as const;
type Layout = keyof typeof LAYOUTS;

const keep = process.env.ROLL_READ_DIR;
const dir = keep ?? mkdtempSync(path.join(tmpdir(), 'booktape-rollup-read-'));
const filled = keep !== undefined && existsSync(path.join(keep, 'filled'));
const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });

async function run(query: string): Promise<void> {
  await ch.client.command({ query });
}

async function fill(c: ClickHouse): Promise<void> {
  await migrate(c);
  const t = (x: string) => c.table(x);
  await run(`CREATE TABLE ${t('raw_merged')} AS ${t('raw_exchange_a')}`);
  await run(`CREATE TABLE ${t('raw_dups')} AS ${t('raw_exchange_a')}`);
  for (const x of Object.values(LAYOUTS)) await run(`SYSTEM STOP MERGES ${t(x)}`);
  const t0 = performance.now();
  await fillDay(new RawEventsRepository(c), MARKET, ASSET, DAY, EVENTS, 5, 0);
  process.stderr.write(`[rollup-read] stored ${EVENTS} events in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  for (const x of ['raw_merged', 'raw_dups']) await run(`ALTER TABLE ${t(x)} ATTACH PARTITION ID '202603' FROM ${t('raw_exchange_a')}`);
  await run(`SYSTEM START MERGES ${t('raw_merged')}`);
  await run(`OPTIMIZE TABLE ${t('raw_merged')} FINAL`);
  // Each INSERT … SELECT below is a part of its own (or a few), beside the fill's parts.
  const copy = (replace: string, where: string) => `INSERT INTO ${t('raw_dups')} SELECT * REPLACE (${replace}) FROM ${t('raw_exchange_a')} WHERE ${where}`;
  // Later copies of every 10th record: they lose (first copy wins), nothing changes. Their
  // sizes differ (a real duplicate's never do) so that a read that let one win would show.
  await run(copy('ingest_seq + 4000000000 AS ingest_seq, arrayMap(z -> z + 1, chg_size) AS chg_size', 'kafka_offset % 10 = 0'));
  // Earlier copies of every 7th record: they win, with the same content and millisecond.
  await run(copy('ingest_seq - 1 AS ingest_seq', 'kafka_offset % 7 = 3'));
  // New records in the same millisecond as every 11th, received after it, whose dedup_id
  // sorts before its: the sort key puts them first, the serving order after.
  // (Their sizes differ from the record's, so that their place shows in the rows.)
  await run(copy(`concat('0', dedup_id) AS dedup_id, ingest_seq + 2000000000 AS ingest_seq, arrayMap(z -> z + 2, chg_size) AS chg_size`, 'kafka_offset % 11 = 5'));
  // … and in the same millisecond as every 13th, received before it, sorting after it.
  await run(copy(`concat('z', dedup_id) AS dedup_id, ingest_seq - 1 AS ingest_seq, arrayMap(z -> z + 3, chg_size) AS chg_size`, 'kafka_offset % 13 = 6'));
  // A second copy of some of the every-11th records, received before the first copy and
  // before the record they share their millisecond with: it wins and moves them ahead.
  await run(copy(`concat('0', dedup_id) AS dedup_id, ingest_seq - 2 AS ingest_seq, arrayMap(z -> z + 2, chg_size) AS chg_size`, 'kafka_offset % 11 = 5 AND kafka_offset % 2 = 0'));
}

if (!filled) {
  await fill(ch);
  if (keep !== undefined) writeFileSync(path.join(keep, 'filled'), '');
}
// A stop of merges lasts until the engine closes: again on every open, before any read.
if (filled) for (const x of ['raw_exchange_a', 'raw_dups']) await run(`SYSTEM STOP MERGES ${ch.table(x)}`);
for (const x of Object.values(LAYOUTS)) {
  const rs = await ch.client.query({ query: `SELECT count() AS parts, sum(rows) AS rows FROM system.parts WHERE database = 'booktape_bench' AND table = '${x}' AND active`, format: 'JSONEachRow' });
  process.stderr.write(`[rollup-read] ${x}: ${JSON.stringify((await rs.json())[0])}\n`);
}

// The rollup's query as the repository builds it (a closed day's full rebuild: no count asked).
const repoQuery = (SummariesRepository.prototype as unknown as { bookEventsQuery: (this: unknown, ...a: unknown[]) => { query: string; params: Record<string, unknown> } }).bookEventsQuery.call(
  new SummariesRepository(ch),
  { venue: 'exchange-a', market: MARKET, asset: ASSET },
  DATE,
  DAY,
  DAY + 86_400_000,
  null,
);
const where = `market = {market:String} AND asset_id = {asset:String} AND event_type IN ('book', 'price_change') AND event_date = {date:Date}
  AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')`;
const SERVING = 'ORDER BY event_ts, ingest_seq, dedup_id';
/** The facts columns as constants (the repository's come from scalar subqueries: the `repo` variant). */
const q = (from: string, order: string, settings = '') =>
  `SELECT toUInt64(0) AS counted, '' AS next, toUInt8(0) AS imports, ${BOOK_ROW_COLUMNS['exchange-a']} FROM {T} ${from} WHERE ${where} ${order}${settings ? ` SETTINGS ${settings}` : ''}`;

/** Variants: the SQL with `{T}` for the table. `exact: false` marks a cost reference whose order differs by design. */
const VARIANTS: Record<string, { sql: string; exact?: false }> = {
  repo: { sql: repoQuery.query.replaceAll(ch.table('raw_exchange_a'), '{T}') },
  base: { sql: q('FINAL', SERVING) },
  no_merge_across_partitions: { sql: q('FINAL', SERVING, 'do_not_merge_across_partitions_select_final = 1') },
  no_split_ranges: { sql: q('FINAL', SERVING, 'split_parts_ranges_into_intersecting_and_non_intersecting_final = 0') },
  no_layers: { sql: q('FINAL', SERVING, 'split_intersecting_parts_ranges_into_layers_final = 0') },
  no_vertical_final: { sql: q('FINAL', SERVING, 'enable_vertical_final = 0') },
  threads1: { sql: q('FINAL', SERVING, 'max_threads = 1') },
  threads4: { sql: q('FINAL', SERVING, 'max_threads = 4') },
  no_read_in_order: { sql: q('FINAL', SERVING, 'optimize_read_in_order = 0') },
  two_level_0: { sql: q('FINAL', SERVING, 'read_in_order_two_level_merge_threshold = 0') },
  block_8k: { sql: q('FINAL', SERVING, 'max_block_size = 8192') },
  block_256k: { sql: q('FINAL', SERVING, 'max_block_size = 262144') },
  threads1_block_8k: { sql: q('FINAL', SERVING, 'max_threads = 1, max_block_size = 8192') },
  block_bytes_8m: { sql: q('FINAL', SERVING, 'preferred_block_size_bytes = 8000000') },
  sort_key_order: { sql: q('FINAL', 'ORDER BY event_ts, event_type, dedup_id'), exact: false },
  event_ts_order: { sql: q('FINAL', 'ORDER BY event_ts'), exact: false },
  no_order: { sql: q('FINAL', ''), exact: false },
  no_final: { sql: q('', SERVING), exact: false },
  no_final_no_order: { sql: q('', ''), exact: false },
};
const only = process.env.ROLL_READ_ONLY?.split(',');
const names = Object.keys(VARIANTS).filter((n) => only === undefined || only.includes(n));
const params = { ...repoQuery.params };

const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

/** One read to its end: its bytes (and their hash when asked), wall and CPU ms. */
async function read(sql: string, layout: Layout, hash: boolean): Promise<{ bytes: number; digest: string; ms: number; cpu: number }> {
  const h = hash ? createHash('sha256') : null;
  let bytes = 0;
  const t0 = performance.now();
  const c0 = cpu();
  for await (const b of streamQuery(ch, { query: sql.replaceAll('{T}', ch.table(LAYOUTS[layout])), query_params: params, format: BOOK_ROW_FORMAT })) {
    bytes += b.length;
    h?.update(b);
  }
  return { bytes, digest: h?.digest('hex').slice(0, 16) ?? '', ms: performance.now() - t0, cpu: cpu() - c0 };
}

/**
 * ROLL_READ_ROLLUP=n: whole rollups (Roller.rollDay, the write dropped) of the fresh and the
 * merged layout, n alternating rounds each of the repository's read on one engine thread
 * (`max_threads = 1`, what bookEventsFold picks for a date in one part) and with the engine's
 * default: what the engine and the fold cost together (they overlap). The day's `applied` is
 * checked each time.
 */
const ROLLUP_ROUNDS = intEnv('ROLL_READ_ROLLUP', 0);
async function rollups(): Promise<void> {
  const proto = SummariesRepository.prototype as unknown as { bookEventsQuery: (this: unknown, ...a: unknown[]) => { query: string } };
  const own = proto.bookEventsQuery;
  const state = { table: 'raw_exchange_a', oneThread: true };
  // The repository's query on another layout's table, with the setting or without any.
  proto.bookEventsQuery = function (this: unknown, ...a: unknown[]) {
    const r = own.apply(this, a);
    const query = r.query.replaceAll(ch.table('raw_exchange_a'), ch.table(state.table)).replace(/\s+SETTINGS [^)]*$/, '');
    return { ...r, query: state.oneThread ? `${query} SETTINGS max_threads = 1` : query };
  };
  class Dropped extends SummariesRepository {
    override async writeMany(): Promise<void> {}
  }
  const roller = new Roller(new Dropped(ch), silentLogger(), { closeGraceMs: 0 });
  for (const layout of ['fresh', 'merged'] as const) {
    state.table = LAYOUTS[layout];
    const times: Record<string, number[]> = { one_thread: [], default: [] };
    for (let k = 0; k < ROLLUP_ROUNDS; k++) {
      for (const oneThread of k % 2 === 0 ? [true, false] : [false, true]) {
        state.oneThread = oneThread;
        const t0 = performance.now();
        const res = await roller.rollDay({ venue: 'exchange-a', market: MARKET, asset: ASSET }, DATE, true);
        times[oneThread ? 'one_thread' : 'default']!.push(performance.now() - t0);
        if (res.applied !== EVENTS) throw new Error(`rolled ${res.applied} events, expected ${EVENTS}`);
      }
    }
    console.log(JSON.stringify({ rollup: layout, one_thread_ms: median(times.one_thread!), default_ms: median(times.default!), rounds: ROLLUP_ROUNDS }));
  }
  proto.bookEventsQuery = own;
}

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return Math.round(s[Math.floor(s.length / 2)]!);
};
try {
  const out: Record<string, Record<string, unknown>> = {};
  for (const layout of Object.keys(LAYOUTS) as Layout[]) {
    const ref = (await read(VARIANTS.base!.sql, layout, true)).digest;
    const times: Record<string, { ms: number[]; cpu: number[] }> = {};
    for (const n of names) {
      const r = await read(VARIANTS[n]!.sql, layout, true);
      times[n] = { ms: [], cpu: [] };
      out[n] = { ...out[n], [`${layout}_same`]: r.digest === ref, [`${layout}_bytes`]: r.bytes };
    }
    const timed = process.env.ROLL_READ_TIMED?.split(',').includes(layout) ?? true;
    for (let k = 0; timed && k < rounds; k++) {
      // Alternating, each round in another order: no variant always follows the same one.
      const order = k % 2 === 0 ? names : [...names].reverse();
      for (const n of order) {
        const r = await read(VARIANTS[n]!.sql, layout, false);
        times[n]!.ms.push(r.ms);
        times[n]!.cpu.push(r.cpu);
      }
    }
    if (timed) for (const n of names) out[n] = { ...out[n], [`${layout}_ms`]: median(times[n]!.ms), [`${layout}_cpu_ms`]: median(times[n]!.cpu) };
    process.stderr.write(`[rollup-read] ${layout} done, load ${loadavg()[0]!.toFixed(2)}\n`);
  }
  for (const n of names) console.log(JSON.stringify({ variant: n, ...(VARIANTS[n]!.exact === false ? { reference: true } : {}), ...out[n] }));
  if (ROLLUP_ROUNDS > 0) await rollups();
} finally {
  await ch.close();
  if (keep === undefined) rmSync(dir, { recursive: true, force: true });
}
