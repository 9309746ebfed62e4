/**
 * The rollup of one dense asset-day, in parts, in one process (summaries-run.ts's day):
 *
 *   ROLL_DIR=/tmp/dir node --import tsx benchmarks/rollup-profile.ts [rounds]
 *
 * ROLL_DIR keeps the embedded engine's data between runs (filled once, BENCH_EVENTS events;
 * BENCH_CLAIMS=1 fills a day whose every price_change entry has a hash and claims).
 * Prints, per round: the engine's read alone (bytes drained, not decoded), the read with
 * the decode into records, and the whole rollDay (read, decode, book, buckets, write).
 * Run under --cpu-prof for where the main thread's time goes.
 */
import 'ioredis';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '@booktape/config';
import { migrate, openClickHouse, RawEventsRepository, streamQuery, SummariesRepository, BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { intEnv } from './bench-env.ts';
import { DENSE_DAY, fillClaimsDay, fillDay } from './fill-day.ts';

const EVENTS = intEnv('BENCH_EVENTS', 1_000_000, 5000);
const { market: MARKET, asset: ASSET, date: DATE, dayMs: DAY } = DENSE_DAY;
const rounds = Number(process.argv[2] ?? 3);

// Each phase's time (a call's time includes waiting for the engine), per round.
const phases: Record<string, number> = {};
function wrap(proto: Record<string, unknown>, name: string) {
  const f = proto[name] as (...a: unknown[]) => Promise<unknown>;
  proto[name] = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    const t0 = performance.now();
    try {
      return await f.apply(this, args);
    } finally {
      phases[name] = Math.round((phases[name] ?? 0) + performance.now() - t0);
    }
  };
}
for (const m of ['bookEventsRead', 'bookEventsFold', 'writeMany']) wrap(SummariesRepository.prototype as unknown as Record<string, unknown>, m);
for (const m of ['output']) wrap(Roller.prototype as unknown as Record<string, unknown>, m);

const keep = process.env.ROLL_DIR;
const dir = keep ?? mkdtempSync(path.join(tmpdir(), 'booktape-rollup-profile-'));
const fresh = !existsSync(path.join(dir, 'booktape_bench.filled'));
const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
try {
  await migrate(ch);
  if (fresh) {
    // BENCH_CLAIMS=1: every price_change entry with its hash and best bid / ask (fill-day.ts fillClaimsDay).
    await (process.env.BENCH_CLAIMS === '1' ? fillClaimsDay : fillDay)(new RawEventsRepository(ch), MARKET, ASSET, DAY, EVENTS, 5, 0);
    await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });
    if (keep) (await import('node:fs')).writeFileSync(path.join(dir, 'booktape_bench.filled'), String(EVENTS));
  }
  const summaries = new SummariesRepository(ch);
  const roller = new Roller(summaries, silentLogger(), { closeGraceMs: 0 });
  // ROLL_ALTERNATE=1: every other round folds arrays of records (applyFromColumns false), for the ratio.
  const byRecords = new Roller(summaries, silentLogger(), { closeGraceMs: 0, applyFromColumns: false });
  const key = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };
  const where = `market = {market:String} AND asset_id = {asset:String} AND event_type IN ('book', 'price_change') AND event_date = {date:Date}`;
  const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };
  for (let k = 0; k < rounds; k++) {
    for (const k of Object.keys(phases)) delete phases[k];
    const fromColumns = process.env.ROLL_ALTERNATE !== '1' || k % 2 === 1;
    let t0 = performance.now();
    let c0 = cpu();
    let bytes = 0;
    let rows = 0;
    const only = process.env.ROLL_ONLY === '1';
    if (!only) for await (const b of streamQuery(ch, { query: `SELECT ${BOOK_ROW_COLUMNS['exchange-a']} FROM ${ch.table('raw_exchange_a')} FINAL WHERE ${where} ORDER BY event_ts, ingest_seq, dedup_id`, query_params: { market: MARKET, asset: ASSET, date: DATE }, format: BOOK_ROW_FORMAT })) bytes += b.length;
    const readMs = performance.now() - t0;
    const readCpu = cpu() - c0;
    t0 = performance.now();
    c0 = cpu();
    if (!only) {
      const r = await summaries.bookEventsRead(key, DATE, DAY, DAY + 86_400_000, null);
      for await (const b of r.events) rows += b.length;
    } else rows = EVENTS;
    const decodeMs = performance.now() - t0;
    const decodeCpu = cpu() - c0;
    t0 = performance.now();
    c0 = cpu();
    const res = await (fromColumns ? roller : byRecords).rollDay(key, DATE, true);
    const rollMs = performance.now() - t0;
    const rollCpu = cpu() - c0;
    if (res.applied !== EVENTS || rows !== EVENTS) throw new Error(`rolled ${res.applied}, read ${rows}, expected ${EVENTS}`);
    console.log(JSON.stringify({ round: k, from_columns: fromColumns, read_ms: Math.round(readMs), read_cpu_ms: Math.round(readCpu), mb: Math.round(bytes / 2 ** 20), read_decode_ms: Math.round(decodeMs), read_decode_cpu_ms: Math.round(decodeCpu), rollup_ms: Math.round(rollMs), rollup_cpu_ms: Math.round(rollCpu), load: loadavg()[0]!.toFixed(2), phases }));
  }
} finally {
  await ch.close();
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
