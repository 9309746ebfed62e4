/**
 * The rollup's JavaScript alone, apart from the engine: a dense asset-day's rows are read
 * once from the embedded engine (as the rollup's read returns them: RowBinary, facts first),
 * kept in memory, and rolled up again and again by Roller from those bytes, the write
 * dropped. Alternates the two ways a closed day's rows reach the book, for the ratio: arrays
 * of records (applyFromColumns false) and rows applied as decoded (the default).
 *
 *   ROLL_DIR=/tmp/dir node --import tsx benchmarks/rollup-fold.ts [rounds]
 *
 * ROLL_DIR as for rollup-profile.ts (that script fills it). ioredis is loaded first, as in
 * the worker's process (it slows some string built-ins). ROLL_DIGEST=1: each round also
 * prints a hash of what it would write (day row, chunks, checkpoints; versions and clock
 * left out), to compare trees' output byte for byte (not timed).
 */
import { createHash } from 'node:crypto';
import 'ioredis';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '@booktape/config';
import { BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT, foldBookRows, openClickHouse, readBookRow, rowBinaryRows, streamQuery, type BookEventsFacts, type RowBinaryReader, type RowTime, type SummariesRepository } from '@booktape/storage';
import { Roller } from '@booktape/summaries';

const MARKET = `0x${'7a'.repeat(32)}`;
const ASSET = '5550001';
const DATE = '2026-03-02';
const DAY = Date.UTC(2026, 2, 2);
const rounds = Number(process.argv[2] ?? 6);
const dir = process.env.ROLL_DIR;
if (!dir) throw new Error('ROLL_DIR: the directory rollup-profile.ts filled');

const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: dir });
const chunks: Buffer[] = [];
try {
  const where = `market = {market:String} AND asset_id = {asset:String} AND event_type IN ('book', 'price_change') AND event_date = {date:Date}`;
  const query = `SELECT toUInt64(0) AS counted, '' AS next, toUInt8(0) AS imports, ${BOOK_ROW_COLUMNS['exchange-a']} FROM ${ch.table('raw_exchange_a')} FINAL WHERE ${where} ORDER BY event_ts, ingest_seq, dedup_id`;
  for await (const b of streamQuery(ch, { query, query_params: { market: MARKET, asset: ASSET, date: DATE }, format: BOOK_ROW_FORMAT })) chunks.push(Buffer.from(b));
} finally {
  await ch.close();
}
async function* replay(): AsyncGenerator<Buffer> {
  for (const c of chunks) yield c;
}
const skipFacts = (r: RowBinaryReader) => {
  r.pos += 8;
  r.skipString();
  r.pos += 1;
};
const facts: BookEventsFacts = { countedBefore: null, nextDataDate: null, holdsImports: false };
let rows = 0;
const time: RowTime = { ms: Number.NaN };
let written: Array<{ day: object; chunks: object[]; checkpoints: object[] }> | null = null;
const digestOf = (w: Array<{ day: object; chunks: object[]; checkpoints: object[] }>): string => {
  const h = createHash('sha256');
  for (const x of w) {
    h.update(JSON.stringify({ ...x.day, version: 0, baseVersion: 0, computedAt: 0 }));
    for (const c of x.chunks) h.update(JSON.stringify({ ...c, version: 0 }));
    for (const c of x.checkpoints) h.update(JSON.stringify({ ...c, version: 0, baseVersion: 0 }));
  }
  return h.digest('hex');
};
// What Roller asks of its repository for a forced rebuild of a closed day with no stored rows.
const repo = {
  window: async () => ({ rows: [], before: null }),
  bookEventsRead: async () => ({
    facts,
    events: rowBinaryRows(replay(), (r) => (skipFacts(r), readBookRow('exchange-a', r, MARKET, ASSET, time)), () => time.ms),
    close: async () => undefined,
  }),
  bookEventsFold: async () => ({ facts, fold: (sink: Parameters<typeof foldBookRows>[5]) => foldBookRows(replay(), 'exchange-a', MARKET, ASSET, skipFacts, sink), close: async () => undefined }),
  writeMany: async (w: Array<{ day: object; chunks: object[]; checkpoints: object[] }>) => {
    rows = w[0]!.chunks.length + w[0]!.checkpoints.length;
    if (process.env.ROLL_DIGEST === '1') written = w;
  },
} as unknown as SummariesRepository;
const key = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const times: Record<string, number[]> = { records: [], columns: [] };
for (let k = 0; k < rounds; k++) {
  const columns = process.env.ROLL_WAY ? process.env.ROLL_WAY === 'columns' : k % 2 === 1;
  const roller = new Roller(repo, silentLogger(), { closeGraceMs: 0, applyFromColumns: columns });
  const t0 = performance.now();
  const c0 = cpu();
  const res = await roller.rollDay(key, DATE, true);
  const ms = performance.now() - t0;
  const c1 = cpu();
  const digest = written === null ? null : digestOf(written);
  written = null;
  times[columns ? 'columns' : 'records']!.push(ms);
  console.log(JSON.stringify({ round: k, columns, applied: res.applied, rows, ms: Math.round(ms), cpu_ms: Math.round(c1 - c0), load: loadavg()[0]!.toFixed(2), ...(digest ? { digest } : {}) }));
}
const min = (a: number[]) => Math.round(Math.min(...a));
console.log(JSON.stringify({ records_min_ms: min(times.records!), columns_min_ms: min(times.columns!), day: DAY }));
