import { Readable, pipeline } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { csvField } from '@booktape/domain';
import { DAY_MS, SUMMARY_CSV_COLUMNS, summaryBucketsCsvBytes, utcDayWindow, type ExactBucket } from '@booktape/book';
import { decimalOf, timestampOfMs } from '@booktape/storage';
import { planSummary } from '@booktape/summaries';
import { datesBetween } from '../coverage/coverage.ts';
import { KEY_SECURITY } from '../http/auth.ts';
import { errors, guard } from '../http/errors.ts';
import { earliestMs, optionalField, parseDate, parseInteger, q, requiredField } from '../http/params.ts';
import type { Services } from '../services.ts';
import { closeRows, csvCutMarker, heldToFloor, openRows } from './raw-page.ts';
import { RawRowsToCsv } from './raw-rows.ts';
import { exportIncludeField, includeOf, trailOf, type Include } from './include.ts';
import { slugRoute } from './market-by-slug.ts';
import { dataFloor, VENUES, marketOf, venueName } from './venues.ts';

/** What an export is sent as: format=csv, format=parquet (also its OpenAPI media types). */
const GZIPPED_CSV = 'application/gzip';
const PARQUET = 'application/vnd.apache.parquet';
const EXPORT_MEDIA_TYPES = [GZIPPED_CSV, PARQUET];

/** Longest export, in UTC days (inclusive). */
const EXPORT_MAX_DAYS = 31;

/** The UTC days from start_date to end_date inclusive (valid dates, start first: 1 or more). */
const daysOf = (q: { start_date: string; end_date: string }): number => (Date.parse(`${q.end_date}T00:00:00Z`) - Date.parse(`${q.start_date}T00:00:00Z`)) / DAY_MS + 1;

/** A bucket as a row of the Parquet temp table: the decimals as their exact text (written as Decimal(38, 18)). */
export function bucketRow(lead: Record<string, string>, b: ExactBucket): Record<string, unknown> {
  const n = (v: string | null) => v;
  const row: Record<string, unknown> = { ...lead, timestamp: b.timestamp, quote_count: b.quote_count, is_forward_filled: b.is_forward_filled, best_bid: n(b.best_bid), best_bid_size: n(b.best_bid_size), best_ask: n(b.best_ask), best_ask_size: n(b.best_ask_size), mid_price: n(b.mid_price), spread: n(b.spread) };
  for (const [name, o] of [['best_bid', b.best_bid_ohlc], ['best_ask', b.best_ask_ohlc], ['mid_price', b.mid_price_ohlc], ['spread', b.spread_ohlc]] as const) {
    row[`${name}_open`] = n(o && o.open);
    row[`${name}_high`] = n(o && o.high);
    row[`${name}_low`] = n(o && o.low);
    row[`${name}_close`] = n(o && o.close);
  }
  return row;
}

/** Summary columns in the Parquet file (docs/api.md, "Parquet columns"): the rest are decimals kept as text, written as Decimal(38, 18). */
const SUMMARY_TYPES: Record<string, { type: string; out?: string }> = {
  timestamp: { type: 'Int64', out: timestampOfMs('timestamp') },
  quote_count: { type: 'UInt32' },
  is_forward_filled: { type: 'Bool' },
};
export const summaryColumn = (name: string) => SUMMARY_TYPES[name] ?? { type: 'Nullable(String)', out: decimalOf(name) };

/**
 * Bulk export (issue 12): one market's whole date range, up to 31 UTC days, raw records or
 * summary buckets, as a gzipped CSV or a Parquet file, streamed.
 */
export const exportRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requireKey, data, summaries, exports, assetMarkets, lookup } = services;
  for (const v of VENUES) {
    const floor = dataFloor(v, config);
    // The outcome (an asset_id) only with kind=summary, as asset_id; the rule below says so.
    const bySlug = slugRoute(v, lookup, { marketRequired: true, outcome: 'optional' });
    // Every rule about the range and the options is part of the schema, so a request that
    // breaks one is a 400 before the quota is asked (an export costs its days).
    const query = z
      .object({
        [v.marketParam]: v.market(),
        start_date: requiredField(parseDate, 'First UTC date, YYYY-MM-DD.', '2026-03-01'),
        end_date: requiredField(parseDate, `Last UTC date, inclusive; at most ${EXPORT_MAX_DAYS} days from start_date.`, '2026-03-31'),
        kind: q.oneOf(['raw', 'summary'] as const, 'raw (default): every record, the long format of the CSV pages; summary: the buckets at `resolution`.'),
        resolution: optionalField((r) => parseInteger(r, 1, 3600), 'kind=summary: bucket seconds, 1 to 3600. Default 60.', { type: 'integer', minimum: 1, maximum: 3600 }),
        format: q.oneOf(['csv', 'parquet'] as const, 'csv (default): a gzipped CSV file; parquet: a Parquet file with typed columns.'),
        include: exportIncludeField(' (kind=raw only; last columns)'),
        ...(v.asset ? { [v.asset.param]: q.optionalText(`kind=summary: one outcome token (${v.asset.description}); default every token with data in the range.`, 128) } : {}),
        ...bySlug.fields,
      })
      .superRefine((qs, ctx) => {
        const { start_date: from, end_date: to } = qs as { start_date: string; end_date: string };
        const fail = (param: string, message: string) => ctx.addIssue({ code: 'custom', path: [param], message });
        if (from > to) fail('start_date', 'must not be after end_date');
        else if (daysOf({ start_date: from, end_date: to }) > EXPORT_MAX_DAYS) fail('end_date', `an export spans at most ${EXPORT_MAX_DAYS} days: ask again for the rest`);
        if (floor !== undefined && from < floor) fail('start_date', `${venueName(v)} data is served from ${floor} on`);
        if (qs.kind !== 'summary') {
          if (qs.resolution !== undefined) fail('resolution', 'applies to kind=summary only');
          if (v.asset && qs[v.asset.param] !== undefined) fail(v.asset.param, 'applies to kind=summary only: a raw export holds every token of the market');
        } else if (qs.include !== undefined) fail('include', 'applies to kind=raw only: summary buckets have no source');
      });
    app.get(
      `/${v.venue}/market/export`,
      {
        schema: {
          summary: `${v.label} bulk export of one market: raw records or summary buckets over up to ${EXPORT_MAX_DAYS} days, gzipped CSV or Parquet`,
          tags: [v.venue],
          security: KEY_SECURITY,
          produces: EXPORT_MEDIA_TYPES,
          answerHeaders: ['Content-Disposition', 'X-Export-Days', ...bySlug.answerHeaders],
          querystring: query,
          response: { 200: z.string().describe('The file, as an attachment (Content-Disposition names it; X-Export-Days says how many days it covers and counted).'), ...errors },
        },
        onRequest: requireKey,
        ...bySlug.options,
        // An export counts as the days it covers (the schema has checked the range).
        config: { quotaUnits: (qs: unknown) => daysOf(qs as { start_date: string; end_date: string }) },
        // A HEAD would build and bill the whole export for nothing (fastify drains a streamed body).
        exposeHeadRoute: false,
      },
      async (req, reply) => {
        const qs = req.query as Record<string, string | undefined> & { start_date: string; end_date: string; kind?: 'raw' | 'summary'; resolution?: number; format?: 'csv' | 'parquet'; include?: Include[] };
        const market = marketOf(v, req.query);
        const { start_date: from, end_date: to } = qs;
        const days = datesBetween(from, to);
        const kind = qs.kind ?? 'raw';
        const format = qs.format ?? 'csv';
        const resolution = qs.resolution ?? 60;
        const include = includeOf(qs.include);
        const oneAsset = v.asset ? qs[v.asset.param] : undefined;
        // Set once the first read succeeded: an error answer is never offered as the file.
        const fileHeaders = () => {
          const name = `${market}_${from}_${to}_${kind}${kind === 'summary' ? `_${resolution}s` : ''}.${format === 'csv' ? 'csv.gz' : 'parquet'}`;
          reply.header('content-disposition', `attachment; filename="${name}"`);
          reply.header('x-export-days', String(days.length));
          reply.header('cache-control', 'no-store');
        };

        // Summary buckets per series and day, as they come.
        const assets = async () => (!v.asset ? [market] : oneAsset !== undefined ? [oneAsset] : (await guard('ClickHouse', () => assetMarkets.assetsOf(market, from, to))).filter((id) => id !== ''));
        async function* summaryDays(series: string[]) {
          for (const asset of series) {
            for (const date of days) {
              const exact = await guard('ClickHouse', () => summaries.summary({ venue: v.venue, market, asset }, planSummary(utcDayWindow(date), resolution)));
              yield { asset, exact };
            }
          }
        }
        const lead = v.asset ? [v.asset.param] : [];

        if (format === 'parquet') {
          const file =
            kind === 'raw'
              ? await guard('ClickHouse', () => exports.rawParquet(v.venue, market, from, to, include))
              : await guard('ClickHouse', async () =>
                  exports.rowsParquet(
                    [...lead.map((name) => ({ name, type: 'String' })), ...SUMMARY_CSV_COLUMNS.map((name) => ({ name, ...summaryColumn(name) }))],
                    (async function* () {
                      for await (const { asset, exact } of summaryDays(await assets())) yield exact.map((b) => bucketRow(v.asset ? { [v.asset.param]: asset } : {}, b));
                    })(),
                  ),
                );
          fileHeaders();
          return reply.type(PARQUET).send(file as never);
        }

        let body: AsyncGenerator<Buffer>;
        // A store stream to give back when the answer ends, however (a client gone before the
        // body generator ran never enters its finally).
        let release = async (): Promise<void> => undefined;
        if (kind === 'raw') {
          const rows = await openRows(data.streamByRange(v.venue, market, earliestMs(from), earliestMs(to) + DAY_MS - 1, null, Number.MAX_SAFE_INTEGER, undefined, null, req.apiKey?.key_id, include));
          const conv = new RawRowsToCsv(Number.MAX_SAFE_INTEGER, v.venue, '', trailOf(include));
          // The slow-reader floor holds for exports as for raw pages: the rate counts the CSV
          // bytes handed to the compressor, which takes them only as fast as the socket drains.
          body = (async function* () {
            try {
              yield Buffer.from(RawRowsToCsv.header(v.venue, [], trailOf(include)), 'utf8');
              yield* heldToFloor(reply, rows, conv, { floor: config.streamFloor, marker: csvCutMarker }, () => closeRows(rows));
            } finally {
              await closeRows(rows);
            }
          })();
          release = () => closeRows(rows);
        } else {
          // The first day is read before the status line, so a store that fails gets a 503.
          const parts = summaryDays(await assets());
          const first = await parts.next();
          body = (async function* () {
            let header = true;
            for (let r = first; !r.done; r = await parts.next()) {
              yield summaryBucketsCsvBytes(r.value.exact, header, v.asset ? { names: lead, values: [csvField(r.value.asset)] } : null);
              header = false;
            }
            if (header) yield summaryBucketsCsvBytes([], true, v.asset ? { names: lead, values: [] } : null);
          })();
        }
        fileHeaders();
        // pipeline: a client that goes away destroys the gzip stream, and with it the source,
        // whose generator then gives its store session back.
        const gz = createGzip({ level: 6 });
        pipeline(Readable.from(body, { objectMode: false }), gz, (err) => {
          if (err && !reply.raw.destroyed) reply.log.error({ err }, 'export stream failed after the status line was sent');
        });
        gz.once('close', () => void release());
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) gz.destroy();
        });
        return reply.type(GZIPPED_CSV).send(gz as never);
      },
    );
  }
};
