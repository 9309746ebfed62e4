import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import { parseDateArg, parseMarketArg, parseTextArg, parseVenueArg, VENUE_SHAPES } from '../args.ts';
import { resolvedLine, type SlugRef } from './data.ts';
import { apiBase } from './outage.ts';

/**
 * `booktape export`: one market's bulk export (GET /api/v1/{venue}/market/export), or with
 * `--all-markets --date D` the daily file of every market of the venue (GET
 * /api/v1/{venue}/daily/{kind}), from the running API into a file, with a progress bar. The key comes from --key or BOOKTAPE_API_KEY.
 * The file is written beside `--out` and renamed into place when complete, so a broken
 * download never leaves a file that looks whole. Exit codes: 0 done, 1 refused or failed,
 * 2 bad arguments (checked here before any request).
 */

export class ExportUsageError extends Error {}

export interface ExportOptions {
  api: string;
  key: string;
  venue: 'exchange-a' | 'exchange-b';
  market: string;
  from: string;
  to: string;
  kind: 'raw' | 'summary';
  format: 'csv' | 'parquet';
  resolution?: number;
  asset?: string;
  out: string;
  progress: boolean;
  /** The daily file of every market of the venue on `from` (= `to`): `market` is ''. */
  allMarkets: boolean;
  /** With allMarkets: one UTC hour of the day, 0 to 23. */
  hour?: number;
  /** The market (and, for summaries, the token) by slug and outcome name, sent as they are (`market` is ''): the API resolves them. */
  slug?: SlugRef;
  /** Raw exports: the columns `include` adds (source, record: the stored records, for `booktape import`). */
  include?: Array<'source' | 'record'>;
}

export interface ExportFlags {
  venue?: string;
  market?: string;
  from?: string;
  to?: string;
  kind?: string;
  format?: string;
  resolution?: string;
  asset?: string;
  out?: string;
  api?: string;
  key?: string;
  progress?: boolean;
  slug?: string;
  outcome?: string;
  allMarkets?: boolean;
  date?: string;
  hour?: string;
  include?: string;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Checks the flags of `export` (pure): what to ask for, or a usage error. */
export function parseExportOptions(f: ExportFlags, env: NodeJS.ProcessEnv = process.env): ExportOptions {
  let venue: 'exchange-a' | 'exchange-b';
  let market: string;
  let slug: SlugRef | undefined;
  const all = f.allMarkets === true;
  try {
    venue = parseVenueArg(f.venue);
    if (all) {
      for (const [flag, v] of [['--market', f.market], ['--slug', f.slug], ['--outcome', f.outcome], ['--asset', f.asset], ['--from', f.from], ['--to', f.to]] as const) {
        if (v !== undefined) throw new Error(`${flag} does not go with --all-markets (one file of every market of --date)`);
      }
      if (f.date === undefined) throw new Error('--all-markets needs --date YYYY-MM-DD');
      market = '';
    } else if (f.date !== undefined) {
      throw new Error('--date goes with --all-markets; one market takes --from and --to');
    } else if (f.slug !== undefined) {
      if (!VENUE_SHAPES[venue].tokens) throw new Error(`--slug names an exchange A (polymarket) market; ${VENUE_SHAPES[venue].label} names a market by --market`);
      if (f.market !== undefined) throw new Error('give --slug or --market, not both');
      if (f.outcome !== undefined && f.asset !== undefined) throw new Error('give --outcome or --asset, not both');
      // As the API takes them: with a slug, the token is named by its outcome.
      if (f.asset !== undefined) throw new Error('with --slug, name the outcome token by --outcome (its name), not by --asset');
      if (f.outcome !== undefined && f.kind !== 'summary') throw new Error('--outcome is for --kind summary (a raw export holds every outcome)');
      slug = { slug: parseTextArg(f.slug, '--slug', 2048), outcome: f.outcome === undefined ? undefined : parseTextArg(f.outcome, '--outcome', 256) };
      market = '';
    } else {
      if (f.outcome !== undefined) throw new Error('--outcome names an outcome of the market given by --slug');
      market = parseMarketArg(venue, f.market, '--market');
    }
  } catch (e) {
    throw new ExportUsageError((e as Error).message);
  }
  for (const [name, v] of all ? ([['--date', f.date]] as const) : ([['--from', f.from], ['--to', f.to]] as const)) {
    try {
      if (v === undefined || !DATE.test(v)) throw new Error();
      parseDateArg(v, name);
    } catch {
      throw new ExportUsageError(`${name} must be a UTC date YYYY-MM-DD, got ${JSON.stringify(v ?? '')}`);
    }
  }
  const kind = f.kind ?? 'raw';
  if (kind !== 'raw' && kind !== 'summary') throw new ExportUsageError(`--kind must be raw or summary, got ${JSON.stringify(kind)}`);
  const format = f.format ?? (f.out?.endsWith('.parquet') ? 'parquet' : 'csv');
  if (format !== 'csv' && format !== 'parquet') throw new ExportUsageError(`--format must be csv or parquet, got ${JSON.stringify(format)}`);
  let resolution: number | undefined;
  if (f.resolution !== undefined) {
    resolution = Number(f.resolution);
    if (!Number.isInteger(resolution) || resolution < 1 || resolution > 3600) throw new ExportUsageError(`--resolution must be seconds from 1 to 3600, got ${JSON.stringify(f.resolution)}`);
    if (kind !== 'summary') throw new ExportUsageError('--resolution is for --kind summary');
  }
  if (f.asset !== undefined && (!VENUE_SHAPES[venue].tokens || kind !== 'summary')) throw new ExportUsageError('--asset is for exchange A summary exports');
  if (f.asset !== undefined && !/^[0-9A-Za-z]{1,128}$/.test(f.asset)) throw new ExportUsageError(`--asset ${JSON.stringify(f.asset)} is not an outcome token id (1 to 128 letters or digits)`);
  let hour: number | undefined;
  if (f.hour !== undefined) {
    if (!all) throw new ExportUsageError('--hour goes with --all-markets --date');
    hour = Number(f.hour);
    if (!/^\d{1,2}$/.test(f.hour) || hour > 23) throw new ExportUsageError(`--hour must be a UTC hour from 0 to 23, got ${JSON.stringify(f.hour)}`);
  }
  let include: Array<'source' | 'record'> | undefined;
  if (f.include !== undefined) {
    if (kind !== 'raw' || all) throw new ExportUsageError('--include is for raw exports of one market');
    const items = f.include.split(',').map((x) => x.trim());
    const bad = items.find((x) => x !== 'source' && x !== 'record');
    if (bad !== undefined) throw new ExportUsageError(`--include takes source and record (comma-separated), got ${JSON.stringify(bad)}`);
    // The API's order: source, then record.
    include = (['source', 'record'] as const).filter((x) => items.includes(x));
  }
  if (f.out === undefined || f.out === '') throw new ExportUsageError('export needs --out FILE');
  const key = f.key ?? env.BOOKTAPE_API_KEY;
  if (!key) throw new ExportUsageError('export needs an API key: --key or BOOKTAPE_API_KEY');
  let api: string;
  try {
    api = apiBase(f.api, env);
  } catch (e) {
    throw new ExportUsageError((e as Error).message);
  }
  return {
    api,
    key,
    venue,
    market,
    from: all ? f.date! : f.from!,
    to: all ? f.date! : f.to!,
    allMarkets: all,
    ...(hour !== undefined ? { hour } : {}),
    kind,
    format,
    ...(resolution !== undefined ? { resolution } : {}),
    ...(f.asset !== undefined ? { asset: f.asset } : {}),
    out: f.out,
    progress: f.progress ?? true,
    ...(slug !== undefined ? { slug } : {}),
    ...(include !== undefined ? { include } : {}),
  };
}

export function exportUrl(o: ExportOptions): string {
  if (o.allMarkets) {
    const q = new URLSearchParams({ date: o.from, format: o.format === 'csv' ? 'csv.gz' : 'parquet' });
    if (o.resolution !== undefined) q.set('resolution', String(o.resolution));
    if (o.hour !== undefined) q.set('hour', String(o.hour));
    return `${o.api}/api/v1/${o.venue}/daily/${o.kind}?${q}`;
  }
  const market: Record<string, string> = o.slug !== undefined ? { slug: o.slug.slug, ...(o.slug.outcome !== undefined ? { outcome: o.slug.outcome } : {}) } : { [VENUE_SHAPES[o.venue].marketField]: o.market };
  const q = new URLSearchParams({ ...market, start_date: o.from, end_date: o.to, kind: o.kind, format: o.format });
  if (o.resolution !== undefined) q.set('resolution', String(o.resolution));
  if (o.asset !== undefined) q.set('asset_id', o.asset);
  if (o.include !== undefined && o.include.length > 0) q.set('include', o.include.join(','));
  return `${o.api}/api/v1/${o.venue}/market/export?${q}`;
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

export async function runExport(o: ExportOptions): Promise<number> {
  const url = exportUrl(o);
  let res: Response;
  try {
    // The file is compressed already: no content coding on top (and no decoding here).
    res = await fetch(url, { headers: { authorization: `Bearer ${o.key}`, 'accept-encoding': 'identity' } });
  } catch (e) {
    process.stderr.write(`booktape: cannot reach the API at ${o.api} (${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}); is the service running (npm start)? Use --api URL otherwise.\n`);
    return 1;
  }
  if (!res.ok || res.body === null) {
    const text = await res.text();
    let msg = text.slice(0, 200);
    let error: { code?: string; message?: string; param?: string } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
      msg = error?.message ?? msg;
    } catch {
      // not JSON: the text as it is
    }
    // A slug or outcome the API refused (no such market, an event of several, no such outcome): exit 2, its own words.
    if (o.slug !== undefined && (res.status === 400 || res.status === 404) && (error?.param === 'slug' || error?.param === 'outcome')) {
      process.stderr.write(`booktape: the API refused the ${error.param === 'slug' ? '--slug' : '--outcome'} (${res.status} ${error.code ?? ''}): ${msg}\n`);
      return 2;
    }
    process.stderr.write(`booktape: the API refused the export (${res.status}): ${msg}\n`);
    return 1;
  }
  if (o.slug !== undefined) process.stderr.write(resolvedLine(o.slug, { conditionId: res.headers.get('x-resolved-condition-id') ?? undefined, assetId: res.headers.get('x-resolved-asset-id') ?? undefined }));
  const expected = res.headers.get('content-type') === (o.format === 'csv' ? 'application/gzip' : 'application/vnd.apache.parquet');
  if (!expected) {
    await res.body.cancel();
    process.stderr.write(`booktape: ${url} answered ${res.status} with ${res.headers.get('content-type')}, not an export; is --api the booktape API?\n`);
    return 1;
  }
  const partial = `${o.out}.partial`;
  const bar = o.progress && process.stderr.isTTY ? new cliProgress.SingleBar({ format: 'export {received} | {rate}/s | {duration_formatted}', stream: process.stderr, hideCursor: true }, cliProgress.Presets.shades_classic) : null;
  let received = 0;
  const started = Date.now();
  bar?.start(1, 0, { received: mb(0), rate: mb(0) });
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      received += chunk.length;
      bar?.update(0, { received: mb(received), rate: mb((received * 1000) / Math.max(1, Date.now() - started)) });
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as never), count, createWriteStream(partial));
    await rename(partial, o.out);
  } catch (e) {
    bar?.stop();
    await rm(partial, { force: true });
    process.stderr.write(`booktape: the export broke off after ${mb(received)}: ${(e as Error).message}\n`);
    return 1;
  }
  bar?.stop();
  process.stderr.write(`booktape: wrote ${o.out} (${mb(received)}, ${o.allMarkets ? `every market of ${o.from}${o.hour !== undefined ? `, hour ${o.hour}` : ''}` : `${res.headers.get('x-export-days') ?? '?'} days`})\n`);
  return 0;
}
