import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import cliProgress from 'cli-progress';
import { parseEnv, platformConfig, platformEnvSchema, redactUrl } from '@booktape/config';
import { RollupQueue, type PartitionRef } from '@booktape/messaging';
import { ImportError, PMXT_FORMAT, detectImportFormat, importPmxtFile, migrate, openClickHouse, type ClickHouse, type ImportFormat, type ImportResult } from '@booktape/storage';
import { chooseRedis } from '../local-services.ts';
import { DownloadError, fetchToTemp, isUrl, urlFileName } from './fetch-file.ts';


export interface ImportOptions {
  paths: string[];
  /** The files' format as `--format` names it; undefined: told from each file (detectImportFormat). */
  format?: ImportFormat | undefined;
  /** Mark the imported days for the rollup workers (summaries, cross-checks). */
  rollup: boolean;
}

const REDIS_TIMEOUT_MS = 15_000;

/** The files to import, in order: each path as given; a directory's `.parquet` files by name (hour order for PMXT); a URL as given. */
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
      const names = (await readdir(p)).filter((n) => n.endsWith('.parquet')).sort();
      if (names.length === 0) throw new ImportError(p, 'directory without .parquet files');
      out.push(...names.map((n) => path.join(p, n)));
    } else out.push(p);
  }
  return out;
}

function line(r: ImportResult): string {
  const s = (r.ms / 1000).toFixed(1);
  const skipped = r.skipped > 0 ? `, ${r.skipped} of event types not imported` : '';
  if (r.rows === 0) return `${r.file}: no rows (an empty hour) in ${s} s`;
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
  const tty = process.stderr.isTTY === true;
  const bar = new cliProgress.SingleBar(
    { format: 'import [{bar}] {value}/{total} files | {file}', stream: process.stderr, noTTYOutput: false, hideCursor: tty, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  try {
    await migrate(ch);
    if (tty && files.length > 1) bar.start(files.length, 0, { file: '' });
    for (const [i, file] of files.entries()) {
      if (tty && files.length > 1) bar.update(i, { file: path.basename(file) });
      try {
        const r = await importOne(ch, file, opts.format);
        stored += r.inserted;
        superseded += r.superseded;
        for (const p of r.partitions) parts.set(`${p.market}|${p.asset}|${p.date}`, { venue: 'exchange-a', ...p });
        if (tty && files.length > 1) bar.update(i + 1);
        process.stdout.write(`${line(r)}\n`);
      } catch (e) {
        if (!(e instanceof ImportError) && !(e instanceof DownloadError)) throw e;
        failed.push(file);
        process.stderr.write(`${tty && files.length > 1 ? '\n' : ''}booktape import: ${e.message}\n`);
      }
    }
  } finally {
    bar.stop();
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
async function importOne(ch: ClickHouse, file: string, format: ImportFormat | undefined): Promise<ImportResult> {
  if (!isUrl(file)) return importFormat(ch, file, format);
  const d = await fetchToTemp(file);
  try {
    return { ...(await importFormat(ch, d.file, format)), file };
  } catch (e) {
    if (e instanceof ImportError) throw new ImportError(file, e.reason, e.row);
    throw e;
  } finally {
    await d.cleanup();
  }
}

/** A local file in its format: given, or told from the file. Only PMXT v2 is imported so far. */
async function importFormat(ch: ClickHouse, file: string, given: ImportFormat | undefined): Promise<ImportResult> {
  const format = given ?? (await detectImportFormat(ch, file));
  if (format === PMXT_FORMAT) return importPmxtFile(ch, file);
  const what = given === undefined ? `a ${format} file` : `--format ${format}`;
  const instead = format === 'capture' ? '; store a capture file with `booktape replay FILE`' : '';
  throw new ImportError(file, `${what}: importing this format is not implemented yet (only ${PMXT_FORMAT})${instead}; nothing imported`);
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
