/**
 * Import benchmark (issue 24; a script, not a timed test): `npm run bench -- import`.
 *
 * A synthetic PMXT v2 Polymarket hour of BENCH_ROWS rows (default 1,000,000; 50 markets of two
 * tokens, mostly one-level price_change rows, a book every 200 rows of a token, some trades
 * and tick size changes), written as Parquet by the engine with the public files' column
 * types, then imported into an empty embedded store with `importPmxtFile` (what
 * `booktape import` runs), then imported again (every identity already stored: nothing
 * written). Figures: wall time and rows/s of each import, the file's size, and memory while
 * importing: the process's peak RSS above its RSS before (the engine runs in process, so this
 * includes it) and the peak JavaScript heap above the heap before (the rows never pass through
 * JavaScript, so it must not grow with the file).
 * Target (issue 24): 1,000,000 rows in <= 10 s, memory bounded.
 *
 * Then booktape's own export: a one-market hour of BENCH_ROWS rows is imported into a second
 * database of the engine, exported as a raw Parquet export with include=record (what
 * `booktape export --include record` downloads), and the export imported into a third,
 * empty database with `importBooktapeFile`, then again. Figures as above, in records.
 * The last line printed is the JSON summary.
 *
 *   BENCH_ROWS=200000   a quicker run
 */
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ExportRepository, importBooktapeFile, importPmxtFile, migrate, openClickHouse, RawEventsRepository, type ClickHouse } from '@booktape/storage';
import { writeSyntheticPmxtHour } from '../libs/storage/src/pmxt.test-support.ts';
import { intEnv } from './bench-env.ts';

const ROWS = intEnv('BENCH_ROWS', 1_000_000, 1000);
const HOUR = Date.UTC(2026, 2, 10, 14);

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-bench-import-'));
const file = path.join(dir, 'polymarket_orderbook_2026-03-10T14.parquet');

/** Peak RSS and heap over `fn`, sampled every 20 ms, above what they were before it. */
async function measured<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number; rssMb: number; heapMb: number }> {
  (globalThis as { gc?: () => void }).gc?.();
  const rss0 = process.memoryUsage.rss();
  const heap0 = process.memoryUsage().heapUsed;
  let rss = rss0;
  let heap = heap0;
  const timer = setInterval(() => {
    rss = Math.max(rss, process.memoryUsage.rss());
    heap = Math.max(heap, process.memoryUsage().heapUsed);
  }, 20);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  try {
    const value = await fn();
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    rss = Math.max(rss, process.memoryUsage.rss());
    heap = Math.max(heap, process.memoryUsage().heapUsed);
    return { value, ms, cpuMs, rssMb: Math.round((rss - rss0) / 2 ** 20), heapMb: Math.round(((heap - heap0) / 2 ** 20) * 10) / 10 };
  } finally {
    clearInterval(timer);
  }
}

const ch = await openClickHouse({ database: 'bench_import', embeddedPath: path.join(dir, 'ch') });
try {
  await migrate(ch);
  const g0 = performance.now();
  await writeSyntheticPmxtHour(ch, file, { rows: ROWS, markets: 50, hourStartMs: HOUR });
  const generateMs = performance.now() - g0;
  const fileMb = Math.round((statSync(file).size / 2 ** 20) * 10) / 10;
  console.log(`[import] generated ${ROWS} rows (${fileMb} MB of Parquet) in ${Math.round(generateMs)} ms`);

  const first = await measured(() => importPmxtFile(ch, file));
  console.log(`[import] first import: ${first.value.inserted} records in ${Math.round(first.ms)} ms (${Math.round(ROWS / (first.ms / 1000))} rows/s), CPU ${first.cpuMs} ms, +${first.rssMb} MB RSS, +${first.heapMb} MB heap`);
  const second = await measured(() => importPmxtFile(ch, file));
  console.log(`[import] again: ${second.value.inserted} written, ${second.value.alreadyStored} already stored, in ${Math.round(second.ms)} ms (CPU ${second.cpuMs} ms)`);
  const stored = await new RawEventsRepository(ch).count('exchange-a');
  if (first.value.inserted !== ROWS - first.value.skipped || second.value.inserted !== 0 || stored !== first.value.inserted) {
    throw new Error(`import counts do not add up: first ${first.value.inserted}, second ${second.value.inserted}, stored ${stored}, rows ${ROWS}`);
  }
  const own = await ownExport(path.join(dir, 'ch'));
  console.log(
    JSON.stringify({
      rows: ROWS,
      file_mb: fileMb,
      import_ms: Math.round(first.ms),
      rows_per_s: Math.round(ROWS / (first.ms / 1000)),
      import_cpu_ms: first.cpuMs,
      peak_rss_above_mb: first.rssMb,
      peak_heap_above_mb: first.heapMb,
      reimport_ms: Math.round(second.ms),
      reimport_cpu_ms: second.cpuMs,
      reimport_written: second.value.inserted,
      target_ms: 10_000,
      ...own,
      cpus: cpus().length,
      load1: Math.round(loadavg()[0]! * 100) / 100,
    }),
  );
} finally {
  await ch.close();
  rmSync(dir, { recursive: true, force: true });
}

/** booktape's own export of one market of ROWS records, imported into an empty database (see the head). */
async function ownExport(embeddedPath: string): Promise<Record<string, number>> {
  const open = async (database: string) => {
    const c = await openClickHouse({ database, embeddedPath });
    await migrate(c);
    return c;
  };
  const source: ClickHouse = await open('bench_import_source');
  const one = path.join(dir, 'polymarket_orderbook_2026-03-11T14.parquet');
  const exported = path.join(dir, 'export.parquet');
  await writeSyntheticPmxtHour(source, one, { rows: ROWS, markets: 1, hourStartMs: HOUR + 86_400_000 });
  const records = (await importPmxtFile(source, one)).inserted;
  const rs = await source.client.query({ query: `SELECT any(market) AS m FROM ${source.table('raw_exchange_a')}`, format: 'JSONEachRow' });
  const market = (await rs.json<{ m: string }>())[0]!.m;
  const e0 = performance.now();
  await pipeline(await new ExportRepository(source).rawParquet('exchange-a', market, '2026-03-11', '2026-03-11', { record: true }), createWriteStream(exported));
  const exportMs = performance.now() - e0;
  const exportMb = Math.round((statSync(exported).size / 2 ** 20) * 10) / 10;
  const target = await open('bench_import_target');
  const first = await measured(() => importBooktapeFile(target, exported, 'booktape-parquet'));
  const second = await measured(() => importBooktapeFile(target, exported, 'booktape-parquet'));
  console.log(`[import] booktape export of ${records} records (${exportMb} MB, written in ${Math.round(exportMs)} ms): imported in ${Math.round(first.ms)} ms (${Math.round(records / (first.ms / 1000))} records/s), CPU ${first.cpuMs} ms, +${first.rssMb} MB RSS, +${first.heapMb} MB heap; again ${Math.round(second.ms)} ms, ${second.value.inserted} written`);
  if (first.value.inserted !== records || second.value.inserted !== 0) throw new Error(`export import counts do not add up: ${first.value.inserted} then ${second.value.inserted} of ${records}`);
  return {
    export_records: records,
    export_mb: exportMb,
    export_import_ms: Math.round(first.ms),
    export_records_per_s: Math.round(records / (first.ms / 1000)),
    export_import_rss_above_mb: first.rssMb,
    export_import_heap_above_mb: first.heapMb,
    export_reimport_ms: Math.round(second.ms),
  };
}
