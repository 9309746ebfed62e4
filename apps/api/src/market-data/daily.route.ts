import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { csvField, type Venue } from '@booktape/domain';
import { DAY_MS, HOUR_MS, SUMMARY_CSV_COLUMNS, summaryBucketsCsvBytes, utcDayWindow } from '@booktape/book';
import { planSummary } from '@booktape/summaries';
import { KEY_SECURITY } from '../http/auth.ts';
import { cacheHeaders, etagOf, isFinalised, notModified } from '../http/caching.ts';
import { ApiError, errors, errorSchema, guard, invalidParameter } from '../http/errors.ts';
import { TtlMap } from '../http/result-cache.ts';
import { earliestMs, optionalField, parseInteger, q } from '../http/params.ts';
import type { Services } from '../services.ts';
import { byteRange, DailyFiles, StaleBuild } from './daily-files.ts';
import { bucketRow, summaryColumn } from './export.route.ts';
import { closeRows, converted, openRows } from './raw-page.ts';
import { RawRowsToCsv } from './raw-rows.ts';
import { dataFloor, VENUES, venueName, type VenueApi } from './venues.ts';

const GZIPPED_CSV = 'application/gzip';
const PARQUET = 'application/vnd.apache.parquet';

/**
 * What the files are built by: raised whenever their bytes would change for the same data
 * (columns, order, writer settings), so the cached files and every ETag change with it.
 */
const BUILD_VERSION = 1;

/**
 * How long a file's version (the day's row count) is reused: a few seconds. Every HEAD, 304
 * and Range GET needs the version for its ETag, and a remote Parquet reader (DuckDB httpfs,
 * fsspec) sends a HEAD and then tens of range GETs within a second or two; without this each
 * of them ran `count() FINAL` over the whole day. A day is served only once finalised, but
 * late rows and back-fills can still be written into it: for at most this long after one, a
 * request may still be answered with the version before it (the bytes always match the ETag:
 * the file is named for its version). Short, so a day still being written is seen current
 * within seconds; a version is reused only while its file is still in the cache (a newer
 * build removes it), and a build always reads the version afresh.
 */
export const DAILY_VERSION_TTL_MS = 3_000;
/** Files whose version is kept at once: beyond this the oldest entry goes. */
const DAILY_VERSIONS_MAX = 1_000;

type Kind = 'raw' | 'summary';
type FileFormat = 'parquet' | 'csv.gz';

/**
 * Daily files across markets (issue 26, point 5): one file per venue and finalised UTC day
 * holding every market's raw records or summary buckets, built once into the cache under
 * BOOKTAPE_DATA_DIR and then served from disk with a strong ETag and byte ranges.
 *
 * The cached file's name, and the ETag, carry the day's version: the venue's deduplicated
 * raw-row count of the day (one count over the day), reused for DAILY_VERSION_TTL_MS. A late
 * row changes it, so a request after that builds a new file and the old one is removed.
 */
export const dailyRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requireKey, data, summaries, exports } = services;
  const files = new DailyFiles(config.dailyDir);
  /** Per file (stem and extension): its version as last read. */
  const versions = new TtlMap<number>(DAILY_VERSION_TTL_MS, DAILY_VERSIONS_MAX);
  // What builds of a process that died left behind (a live build's process is running).
  app.addHook('onReady', async () => void files.sweep().then((n) => n > 0 && app.log.info({ files: n }, 'removed what failed daily-file builds left behind'), () => undefined));

  /**
   * The market columns that lead every row: a venue with outcome tokens (exchange A) the
   * market (and the token, in summaries), since its raw records' own columns do not name the
   * market; otherwise (B) the market in summaries only (its raw rows carry the ticker).
   */
  const leadColumns = (v: VenueApi, kind: Kind): string[] => (v.asset !== undefined ? (kind === 'raw' ? [v.marketParam] : [v.marketParam, v.asset.param]) : kind === 'raw' ? [] : [v.marketParam]);

  /** The instants a file covers: the UTC day, or one hour of it. */
  const windowOf = (date: string, hour: number | undefined) => {
    const day = utcDayWindow(date);
    return hour === undefined ? day : { startMs: day.startMs + hour * HOUR_MS, endMs: day.startMs + (hour + 1) * HOUR_MS - 1 };
  };

  async function build(v: VenueApi, date: string, hour: number | undefined, kind: Kind, resolution: number, format: FileFormat): Promise<Readable> {
    const venue: Venue = v.venue;
    const window = windowOf(date, hour);
    // An hour's summaries are that hour of the day's file: every series of the day, those
    // forward-filled through the hour included; its raw records are those of the hour.
    if (kind === 'raw' && format === 'parquet') return exports.rawDayParquet(venue, date, hour);
    const series = await exports.dayMarkets(venue, date, kind === 'raw' ? hour : undefined);
    if (kind === 'raw') {
      const markets = [...new Set(series.map((s) => s.market))];
      const body = (async function* () {
        yield Buffer.from(RawRowsToCsv.header(venue, leadColumns(v, kind)), 'utf8');
        for (const market of markets) {
          const rows = await openRows(data.streamByRange(venue, market, window.startMs, window.endMs, null, Number.MAX_SAFE_INTEGER, undefined, null));
          try {
            yield* converted(rows, new RawRowsToCsv(Number.MAX_SAFE_INTEGER, venue, v.asset !== undefined ? `${csvField(market)},` : ''));
          } finally {
            await closeRows(rows);
          }
        }
      })();
      return Readable.from(body, { objectMode: false }).pipe(createGzip({ level: 6 }));
    }
    const lead = leadColumns(v, kind);
    const plan = planSummary(window, resolution);
    const keyed = series.filter((s) => v.asset === undefined || s.asset !== '');
    async function* buckets() {
      for (const s of keyed) {
        const asset = v.asset !== undefined ? s.asset : s.market;
        yield { s, exact: await summaries.summary({ venue, market: s.market, asset }, plan) };
      }
    }
    const values = (s: { market: string; asset: string }) => (v.asset !== undefined ? [s.market, s.asset] : [s.market]);
    if (format === 'parquet') {
      return exports.rowsParquet(
        [...lead.map((name) => ({ name, type: 'String' })), ...SUMMARY_CSV_COLUMNS.map((name) => ({ name, ...summaryColumn(name) }))],
        (async function* () {
          for await (const { s, exact } of buckets()) {
            const vs = values(s);
            yield exact.map((b) => bucketRow(Object.fromEntries(lead.map((n, i) => [n, vs[i]!])), b));
          }
        })(),
      );
    }
    const body = (async function* () {
      let header = true;
      for await (const { s, exact } of buckets()) {
        yield summaryBucketsCsvBytes(exact, header, { names: lead, values: values(s).map(csvField) });
        header = false;
      }
      if (header) yield summaryBucketsCsvBytes([], true, { names: lead, values: [] });
    })();
    return Readable.from(body, { objectMode: false }).pipe(createGzip({ level: 6 }));
  }

  for (const v of VENUES) {
    const floor = dataFloor(v, config);
    for (const kind of ['raw', 'summary'] as const) {
      const query = z.object({
        date: q.date(),
        format: q.oneOf(['parquet', 'csv.gz'] as const, 'parquet (default): typed columns (docs/api.md, "Parquet columns"); csv.gz: a gzipped CSV file.'),
        hour: optionalField((r) => parseInteger(r, 0, 23), 'One UTC hour of the day, 0 to 23: the file of that hour only. Default the whole day.', { type: 'integer', minimum: 0, maximum: 23 }),
        ...(kind === 'summary' ? { resolution: optionalField((r) => parseInteger(r, 1, 3600), 'Bucket seconds, 1 to 3600. Default 60.', { type: 'integer', minimum: 1, maximum: 3600 }) } : {}),
      });
      app.get(
        `/${v.venue}/daily/${kind}`,
        {
          schema: {
            summary: `${v.label} daily file of every market: ${kind === 'raw' ? 'raw records' : 'summary buckets'} of one finalised UTC day, Parquet or gzipped CSV`,
            tags: [v.venue],
            security: KEY_SECURITY,
            produces: [PARQUET, GZIPPED_CSV],
            answerHeaders: ['Content-Disposition', 'Accept-Ranges', 'Content-Range', 'Content-Length'],
            querystring: query,
            response: {
              200: z.string().describe('The whole file, as an attachment (Content-Disposition names it).'),
              206: z.string().describe('The byte range the Range header asked for (Content-Range says which).'),
              304: notModified,
              409: errorSchema.describe('`not_finalised`: the day is not finalised yet; the message says from when the file is available.'),
              416: errorSchema.describe('`range_not_satisfiable`: the range starts beyond the file (Content-Range: bytes */<size>).'),
              ...errors,
            },
          },
          onRequest: requireKey,
          // A daily file counts as an export of one day (one quota unit), a range or a 304 too.
          config: { quotaUnits: () => 1 },
          // HEAD: what remote Parquet readers (DuckDB httpfs, fsspec) ask first for the size; it
          // builds the file like a GET (the next GET is then served from disk).
          exposeHeadRoute: true,
        },
        async (req, reply) => {
          const qs = req.query as { date: string; format?: FileFormat; resolution?: number; hour?: number };
          const { date, hour } = qs;
          const format = qs.format ?? 'parquet';
          const resolution = kind === 'summary' ? (qs.resolution ?? 60) : 0;
          if (floor !== undefined && date < floor) throw invalidParameter('date', `${venueName(v)} data is served from ${floor} on`);
          const now = Date.now();
          if (!isFinalised(earliestMs(date), now, config.caching.finalisedAfterMs)) {
            const at = new Date(earliestMs(date) + DAY_MS + config.caching.finalisedAfterMs).toISOString();
            throw new ApiError(409, 'not_finalised', `${date} is not finalised yet: its daily file is available from ${at}`, 'date');
          }
          const stem = `${v.venue}_${date}${hour !== undefined ? `T${String(hour).padStart(2, '0')}` : ''}_${kind}${kind === 'summary' ? `_${resolution}s` : ''}`;
          const ext = format === 'parquet' ? 'parquet' : 'csv.gz';
          // Raw: the rows of the day (or hour) are the file. Summaries also carry the book
          // state in from before: the whole day and the day before count (a late row further
          // back that changes the carried state is not seen; docs/api.md says so).
          const dayVersion = () =>
            guard('ClickHouse', () => (kind === 'raw' ? exports.dayVersion(v.venue, date, date, hour) : exports.dayVersion(v.venue, new Date(earliestMs(date) - DAY_MS).toISOString().slice(0, 10), date)));
          const nameOf = (version: number) => `${stem}_v${BUILD_VERSION}-${version}.${ext}`;
          const fileKey = `${stem}.${ext}`;
          /** The version last read, while recent and its file still cached; else read now (and kept). */
          const currentVersion = async (fresh: boolean): Promise<number> => {
            const known = fresh ? undefined : versions.get(fileKey);
            if (known !== undefined && (await files.has(nameOf(known)))) return known;
            const version = await dayVersion();
            versions.set(fileKey, version);
            return version;
          };
          reply.header('accept-ranges', 'bytes');
          // A build the data changed under keeps nothing and is retried at the new version;
          // a day that keeps changing (a back-fill in progress) is a 503 to retry later.
          let file: string | undefined;
          for (let attempt = 0; file === undefined; attempt++) {
            const version = await currentVersion(attempt > 0);
            if (cacheHeaders(req, reply, etagOf('daily', BUILD_VERSION, v.venue, date, hour ?? 'day', kind, resolution, format, version), config.caching)) return reply.send(null);
            const name = nameOf(version);
            try {
              file = await guard('ClickHouse', () =>
                files.ensure(
                  name,
                  () => build(v, date, hour, kind, resolution, format),
                  async () => (await dayVersion()) === version,
                  (other) => other.startsWith(`${stem}_v`) && other.endsWith(`.${ext}`),
                ),
              );
            } catch (e) {
              if (!(e instanceof StaleBuild)) throw e;
              versions.delete(fileKey);
              if (attempt === 2) {
                reply.header('retry-after', '5');
                throw new ApiError(503, 'service_unavailable', `${date} is being back-filled: its daily file changed while it was built; retry later`);
              }
            }
          }
          // A newer version built meanwhile removes this one: say so, not a 500.
          const size = await stat(file).then(
            (st) => st.size,
            (e: NodeJS.ErrnoException) => {
              if (e.code !== 'ENOENT') throw e;
              versions.delete(fileKey);
              reply.header('retry-after', '1');
              throw new ApiError(503, 'service_unavailable', `the ${date} file was replaced by a newer build while this request was answered; retry`);
            },
          );
          const range = byteRange(req.headers.range, size);
          if (range === 'unsatisfiable') {
            reply.header('content-range', `bytes */${size}`);
            throw new ApiError(416, 'range_not_satisfiable', `the file has ${size} bytes: the range asked for starts beyond it`);
          }
          reply.header('content-disposition', `attachment; filename="${stem}.${ext}"`);
          reply.type(format === 'parquet' ? PARQUET : GZIPPED_CSV);
          // A HEAD reads nothing from the file (fastify would read a stream through to discard it).
          const body = (start: number, end: number) => (req.method === 'HEAD' ? Readable.from([]) : createReadStream(file, { start, end }));
          if (range === null) {
            reply.header('content-length', String(size));
            return reply.send(body(0, Math.max(0, size - 1)) as never);
          }
          reply.code(206);
          reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`);
          reply.header('content-length', String(range.end - range.start + 1));
          return reply.send(body(range.start, range.end) as never);
        },
      );
    }
  }
};
