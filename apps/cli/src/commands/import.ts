import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import cliProgress from 'cli-progress';
import { createLogger, parseEnv, platformConfig, platformEnvSchema, redactUrl } from '@booktape/config';
import type { Venue } from '@booktape/domain';
import { importCaptureFiles } from '@booktape/ingestor';
import { partitionKey, RollupQueue, type PartitionRef } from '@booktape/messaging';
import { ImportError, PMXT_FORMAT, PMXT_VENUE, detectImportFormat, importBooktapeFile, importPmxtFile, migrate, openClickHouse, type ClickHouse, type ImportFormat, type ImportResult } from '@booktape/storage';
import { chooseRedis } from '../local-services.ts';
import { DownloadError, fetchToTemp, isUrl, urlFileName } from './fetch-file.ts';


export interface ImportOptions {
  paths: string[];
  /** The files' format as `--format` names it; undefined: told from each file (detectImportFormat). */
  format?: ImportFormat | undefined;
  /** Mark the imported days for the rollup workers (summaries, cross-checks). */
  rollup: boolean;
  /** Only files of this venue: a file of the other is refused (`--venue`). */
  venue?: Venue | undefined;
}

/** The files a directory holds that import reads: Parquet, booktape CSV exports, capture files. */
const IMPORTED_NAME = /\.(parquet|csv\.gz|csv|ndjson|ndjson\.gz)$/;

const REDIS_TIMEOUT_MS = 15_000;

/**
 * The files to import, in order: each path as given; a directory's `.parquet`, `.csv.gz`,
 * `.csv`, `.ndjson[.gz]` files by name (hour order for PMXT, time order for capture files); a URL as given.
 */
export async function importFiles(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if (isUrl(p)) {
      urlFileName(p); // a URL that names no file is refused before anything runs
      out.push(p);
      continue;
    }
    const s = await stat(p).catch(() => null);
    if (s === null) throw new ImportError(p, 'no such file or directory');
    if (s.isDirectory()) {
      const names = (await readdir(p)).filter((n) => IMPORTED_NAME.test(n)).sort();
      if (names.length === 0) throw new ImportError(p, 'directory without files to import (.parquet, .csv.gz, .csv, .ndjson, .ndjson.gz)');
      out.push(...names.map((n) => path.join(p, n)));
    } else out.push(p);
  }
  return out;
}

function line(r: ImportResult): string {
  const s = (r.ms / 1000).toFixed(1);
  const skipped = r.skipped > 0 ? `, ${r.skipped} ${r.skippedWhat ?? 'of event types not imported'}` : '';
  if (r.rows === 0) return `${r.file}: no rows${r.source.startsWith(`import:${PMXT_FORMAT}:`) ? ' (an empty hour)' : ''} in ${s} s`;
  const superseded = r.superseded > 0 ? `, ${r.superseded} of earlier imports replaced by captured records` : '';
  return `${r.file}: ${r.rows} rows, ${r.inserted} records stored, ${r.alreadyStored} already stored${skipped}${superseded}, in ${s} s`;
}

/**
 * `booktape import`: archive files into the store, in the order given, each whole or not at
 * all (docs/rules/imports.md). Exit statuses: 0 every file imported, 1 a file could not be
 * (each named with the reason; nothing of it is stored; the others are imported), 2 usage.
 */
export async function runImport(opts: ImportOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let files: string[];
  try {
    files = await importFiles(opts.paths);
  } catch (e) {
    if (!(e instanceof ImportError) && !(e instanceof DownloadError)) throw e;
    process.stderr.write(`booktape import: ${e.message}\n`);
    return 1;
  }
  const platform = platformConfig(parseEnv(platformEnvSchema, env));
  const ch = await openClickHouse(platform.clickhouse);
  const parts = new Map<string, PartitionRef>();
  const failed: string[] = [];
  let stored = 0;
  let superseded = 0;
  const progress = importProgress(process.stderr);
  const ctx: FileContext = { venue: opts.venue, workerId: platform.workerId, progress, env };
  try {
    await migrate(ch);
    progress.start(files.length);
    let done = 0;
    for (const unit of await importUnits(ch, files, opts.format)) {
      progress.file(done, unit.files[0]!);
      try {
        const r = await importUnit(ch, unit, ctx);
        stored += r.inserted;
        superseded += r.superseded;
        for (const p of r.partitions) {
          const venue = p.venue ?? r.venue ?? PMXT_VENUE;
          parts.set(partitionKey({ ...p, venue }), { venue, market: p.market, asset: p.asset, date: p.date });
        }
        progress.log(process.stdout, line(r));
      } catch (e) {
        if (!(e instanceof ImportError) && !(e instanceof DownloadError)) throw e;
        failed.push(...unit.files);
        progress.log(process.stderr, `booktape import: ${e.message}`);
      }
      done += unit.files.length;
      progress.file(done, unit.files[unit.files.length - 1]!);
    }
  } finally {
    progress.stop();
    await ch.close();
  }
  process.stdout.write(`${files.length - failed.length} of ${files.length} file(s) imported, ${stored} records stored\n`);
  // Days where captured records replaced imported ones are rebuilt too.
  if (opts.rollup && stored + superseded > 0) await markForRollup([...parts.values()], env);
  if (failed.length > 0) {
    process.stderr.write(`not imported (nothing of them stored): ${failed.join(', ')}\n`);
    return 1;
  }
  return 0;
}

/**
 * One file; a URL is downloaded first (fetch-file.ts) to a temporary file of the URL's file
 * name, so the source is `import:<format>:<that name>` as for a local copy, and every error
 * names the URL. The download is deleted once imported or refused.
 */
/** What one import step takes: one file, or consecutive local capture files (one replay of them). */
interface ImportUnit {
  files: string[];
  /** Given or told from the file; undefined for a URL (told once downloaded); an error when it cannot be told. */
  format: ImportFormat | undefined | ImportError;
}

/**
 * The files' formats, told before anything is imported, and the steps: consecutive local
 * capture files form one step, so that a capture rotated over several files is replayed as
 * one (docs/rules/imports.md#capture-files).
 */
async function importUnits(ch: ClickHouse, files: readonly string[], given: ImportFormat | undefined): Promise<ImportUnit[]> {
  const units: ImportUnit[] = [];
  for (const file of files) {
    let format: ImportUnit['format'] = given;
    if (format === undefined && !isUrl(file)) {
      format = await detectImportFormat(ch, file).catch((e: unknown) => {
        if (e instanceof ImportError) return e;
        throw e;
      });
    }
    const last = units[units.length - 1];
    if (format === 'capture' && !isUrl(file) && last?.format === 'capture' && !isUrl(last.files[0]!)) last.files.push(file);
    else units.push({ files: [file], format });
  }
  return units;
}

async function importUnit(ch: ClickHouse, unit: ImportUnit, ctx: FileContext): Promise<ImportResult> {
  if (unit.format instanceof ImportError) throw unit.format;
  if (unit.format === 'capture' && unit.files.length > 1) return importCapture(ch, unit.files, ctx);
  return importOne(ch, unit.files[0]!, unit.format, ctx);
}

function importCapture(ch: ClickHouse, files: string[], ctx: FileContext): Promise<ImportResult> {
  return importCaptureFiles(ch, files, {
    workerId: ctx.workerId,
    log: createLogger('import', ctx.env.LOG_LEVEL?.trim() || 'warn'),
    onProgress: (p) => ctx.progress.detail(`${path.basename(p.file)}: ${p.frames}/${p.totalFrames} lines`),
    ...(ctx.venue !== undefined ? { venue: ctx.venue } : {}),
  });
}

async function importOne(ch: ClickHouse, file: string, format: ImportFormat | undefined, ctx: FileContext): Promise<ImportResult> {
  if (!isUrl(file)) return importFormat(ch, file, format, ctx);
  const d = await fetchToTemp(file);
  try {
    return { ...(await importFormat(ch, d.file, format, ctx)), file };
  } catch (e) {
    if (e instanceof ImportError) throw new ImportError(file, e.reason, e.row);
    throw e;
  } finally {
    await d.cleanup();
  }
}

interface FileContext {
  venue: Venue | undefined;
  /** The worker a capture file's records are stamped with, as replay stamps them (WORKER_ID). */
  workerId: number;
  progress: ImportProgress;
  /** runImport's environment (LOG_LEVEL of a capture file's pipeline). */
  env: NodeJS.ProcessEnv;
}

/** A local file in its format: given, or told from the file. */
async function importFormat(ch: ClickHouse, file: string, given: ImportFormat | undefined, ctx: FileContext): Promise<ImportResult> {
  const format = given ?? (await detectImportFormat(ch, file));
  if (format === PMXT_FORMAT) {
    if (ctx.venue !== undefined && ctx.venue !== PMXT_VENUE) throw new ImportError(file, `a PMXT v2 file holds ${PMXT_VENUE} records, not ${ctx.venue} (--venue); nothing imported`);
    return importPmxtFile(ch, file);
  }
  if (format === 'booktape-parquet' || format === 'booktape-csv') return importBooktapeFile(ch, file, format, ctx.venue !== undefined ? { venue: ctx.venue } : {});
  return importCapture(ch, [file], ctx);
}

export interface ImportProgress {
  start(files: number): void;
  /** `done` files are done; `file` is the one at hand. */
  file(done: number, file: string): void;
  /** Progress within the file at hand (a capture file's lines). */
  detail(text: string): void;
  /** A line of output that must not be drawn over by the bar. */
  log(stream: NodeJS.WritableStream, text: string): void;
  stop(): void;
}

/**
 * The import's progress on stderr: on a terminal, a bar of the files with the one at hand
 * and its own progress where there is one (cli-progress, which replay and export use
 * already); elsewhere (a pipe, a log, a test), a plain line every `everyMs` (10 s) while an
 * import runs, and so none for an import that ends before.
 */
export function importProgress(stream: NodeJS.WritableStream & { isTTY?: boolean }, everyMs = 10_000): ImportProgress {
  const tty = stream.isTTY === true;
  let total = 0;
  let done = 0;
  let name = '';
  let detail = '';
  if (!tty) {
    let timer: NodeJS.Timeout | undefined;
    return {
      start(files) {
        total = files;
        timer = setInterval(() => stream.write(`import: ${done}/${total} file(s) done; at ${name}${detail ? ` (${detail})` : ''}\n`), everyMs);
        timer.unref();
      },
      file(n, file) {
        done = n;
        name = path.basename(file);
        detail = '';
      },
      detail(text) {
        detail = text;
      },
      log(out, text) {
        out.write(`${text}\n`);
      },
      stop() {
        clearInterval(timer);
      },
    };
  }
  const bar = new cliProgress.SingleBar(
    { format: 'import [{bar}] {value}/{total} files | {duration_formatted} | {file} {detail}', stream, hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let running = false;
  return {
    start(files) {
      bar.start(files, 0, { file: '', detail: '' });
      running = true;
    },
    file(n, file) {
      name = path.basename(file);
      if (running) bar.update(n, { file: name, detail: '' });
    },
    detail(text) {
      if (running) bar.update({ file: name, detail: text });
    },
    log(out, text) {
      // The bar's line is cleared first, and drawn again below the text.
      if (running) stream.write('\r\x1b[K');
      out.write(`${text}\n`);
      if (running) bar.render();
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
}

/**
 * The imported asset-days are marked dirty for the rollup workers, as the sink marks what it
 * stores: their summaries and cross-checks are rebuilt when a worker runs. An unreachable
 * Redis is not an import failure: what to run later is printed instead.
 */
async function markForRollup(parts: PartitionRef[], env: NodeJS.ProcessEnv): Promise<void> {
  const redis = chooseRedis(env);
  const platform = platformConfig(parseEnv(platformEnvSchema, { ...env, REDIS_URL: redis.url }));
  const queue = new RollupQueue({ redisUrl: platform.redisUrl, prefix: platform.rollup.queuePrefix });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      queue.markDirty(parts),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), REDIS_TIMEOUT_MS))),
    ]);
    process.stderr.write(`summaries: ${parts.length} asset-day(s) marked for the rollup workers (Redis ${redactUrl(redis.url)})\n`);
  } catch (e) {
    const days = [...new Set(parts.map((p) => p.date))].sort();
    process.stderr.write(
      `summaries: could not reach Redis ${redactUrl(redis.url)} (${(e as Error).message}); the imported days' summaries are not rebuilt yet. ` +
        `Once it runs: booktape rollup --venue exchange-a --market M --from ${days[0]} --to ${days[days.length - 1]} for each imported market\n`,
    );
  } finally {
    clearTimeout(timer);
    await queue.close().catch(() => undefined);
  }
}
