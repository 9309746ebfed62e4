import { Readable, pipeline } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { SUMMARY_CSV_COLUMNS, summaryBucketsCsvBytes, utcDayWindow, type ExactBucket } from '@booktape/book';
import { planSummary } from '@booktape/summaries';
import { errors, guard, invalidParameter } from '../http/errors.ts';
import { earliestMs, optionalField, parseInteger, q, requiredField, parseDate } from '../http/params.ts';
import type { Services } from '../services.ts';
import { closeRows, openRows } from './raw-page.ts';
import { RawRowsToCsv } from './raw-rows.ts';
import { dataFloor, VENUES, marketOf, venueName } from './venues.ts';

/** Longest export, in UTC days (inclusive). */
export const EXPORT_MAX_DAYS = 31;
const DAY_MS = 86_400_000;
/** Raw rows are turned into CSV this many input bytes at a time (bounds an export's memory). */
const CSV_SLICE_BYTES = 128 * 1024;

const kinds = ['raw', 'summary'] as const;
const formats = ['csv', 'parquet'] as const;
const choice = <T extends string>(values: readonly T[], what: string) =>
  optionalField((r): { ok: true; value: T } | { ok: false; message: string } => (values.includes(r as T) ? { ok: true, value: r as T } : { ok: false, message: `must be one of ${values.join(', ')}` }), what, {
    enum: [...values],
  });

const dates = (from: string, to: string): string[] => {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
};

/** The UTC days an export covers, as the quota counts them: 1 to EXPORT_MAX_DAYS. */
export function exportDays(q: { start_date: string; end_date: string }): number {
  const days = Math.round((Date.parse(`${q.end_date}T00:00:00Z`) - Date.parse(`${q.start_date}T00:00:00Z`)) / DAY_MS) + 1;
  return Number.isFinite(days) ? Math.min(EXPORT_MAX_DAYS, Math.max(1, days)) : 1;
}

/** A summary bucket as a Parquet row (numbers as Float64; docs/api.md). */
function bucketRow(lead: Record<string, string>, b: ExactBucket): Record<string, unknown> {
  const n = (v: string | null) => (v === null ? null : Number(v));
  const row: Record<string, unknown> = { ...lead, timestamp: b.timestamp, quote_count: b.quote_count, is_forward_filled: b.is_forward_filled, best_bid: n(b.best_bid), best_bid_size: n(b.best_bid_size), best_ask: n(b.best_ask), best_ask_size: n(b.best_ask_size), mid_price: n(b.mid_price), spread: n(b.spread) };
  for (const [name, o] of [['best_bid', b.best_bid_ohlc], ['best_ask', b.best_ask_ohlc], ['mid_price', b.mid_price_ohlc], ['spread', b.spread_ohlc]] as const) {
    row[`${name}_open`] = n(o && o.open);
    row[`${name}_high`] = n(o && o.high);
    row[`${name}_low`] = n(o && o.low);
    row[`${name}_close`] = n(o && o.close);
  }
  return row;
}

const SUMMARY_TYPES: Record<string, string> = { timestamp: 'Int64', quote_count: 'UInt32', is_forward_filled: 'Bool' };

/**
 * Bulk export (issue 12): one market's whole date range, up to 31 UTC days, raw records or
 * summary buckets, as a gzipped CSV or a Parquet file, streamed.
 */
export const exportRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requireKey, data, summaries, exports, assetMarkets } = services;
  for (const v of VENUES) {
    const a = v.venue === 'exchange-a';
    app.get(
      `/${v.venue}/market/export`,
      {
        schema: {
          summary: `${v.label} bulk export of one market: raw records or summary buckets over up to ${EXPORT_MAX_DAYS} days, gzipped CSV or Parquet`,
          tags: [v.venue],
          security: [{ bearerAuth: [] }],
          querystring: z.object({
            [v.marketParam]: v.market(),
            start_date: requiredField(parseDate, 'First UTC date, YYYY-MM-DD.', '2026-03-01'),
            end_date: requiredField(parseDate, `Last UTC date, inclusive; at most ${EXPORT_MAX_DAYS} days after start_date's day.`, '2026-03-31'),
            kind: choice(kinds, 'raw (default): every record, the long format of the CSV pages; summary: the buckets at `resolution`.'),
            resolution: optionalField((r) => parseInteger(r, 1, 3600), 'kind=summary: bucket seconds, 1 to 3600. Default 60.', { type: 'integer', minimum: 1, maximum: 3600 }),
            format: choice(formats, 'csv (default): a gzipped CSV file; parquet: a Parquet file with typed columns.'),
            ...(a ? { asset_id: optionalField((r) => (r.trim() === '' || r.length > 128 ? { ok: false, message: 'must be a token id' } : { ok: true, value: r.trim() }), 'kind=summary: one outcome token; default every token with data in the range.') } : {}),
          }),
          response: { 200: z.string().describe('The file (application/gzip or application/vnd.apache.parquet).'), ...errors },
        },
        onRequest: requireKey,
        // An export counts as the days it covers (at least 1, at most the 31 it may cover).
        config: { quotaUnits: (query: unknown) => exportDays(query as { start_date: string; end_date: string }) },
      },
      async (req, reply) => {
        const qs = req.query as { start_date: string; end_date: string; kind?: 'raw' | 'summary'; resolution?: number; format?: 'csv' | 'parquet'; asset_id?: string };
        const market = marketOf(v, req.query);
        const { start_date: from, end_date: to } = qs;
        if (from > to) throw invalidParameter('start_date', 'start_date must not be after end_date');
        const days = dates(from, to);
        if (days.length > EXPORT_MAX_DAYS) throw invalidParameter('end_date', `an export spans at most ${EXPORT_MAX_DAYS} days: ask again for the rest`);
        const floor = dataFloor(v, config);
        if (floor !== undefined && from < floor) throw invalidParameter('start_date', `${venueName(v)} data is served from ${floor} on`);
        const kind = qs.kind ?? 'raw';
        const format = qs.format ?? 'csv';
        if (qs.resolution !== undefined && kind !== 'summary') throw invalidParameter('resolution', 'resolution applies to kind=summary only');
        const resolution = qs.resolution ?? 60;
        const name = `${market}_${from}_${to}_${kind}${kind === 'summary' ? `_${resolution}s` : ''}.${format === 'csv' ? 'csv.gz' : 'parquet'}`;
        reply.header('content-disposition', `attachment; filename="${name}"`);
        reply.header('x-export-days', String(days.length));
        reply.header('cache-control', 'no-store');

        // Summary buckets per series and day, as they come.
        const assets = async () => (!a ? [market] : qs.asset_id !== undefined ? [qs.asset_id] : (await guard('ClickHouse', () => assetMarkets.assetsOf(market, from, to))).filter((id) => id !== ''));
        async function* summaryDays(series: string[]) {
          for (const asset of series) {
            for (const date of days) {
              const exact = await guard('ClickHouse', () => summaries.summary({ venue: v.venue, market, asset }, planSummary(utcDayWindow(date), resolution)));
              yield { asset, exact };
            }
          }
        }
        const lead = a ? ['asset_id'] : [];

        if (format === 'parquet') {
          const file =
            kind === 'raw'
              ? await guard('ClickHouse', () => exports.rawParquet(v.venue, market, from, to))
              : await guard(
                  'ClickHouse',
                  async () =>
                    exports.rowsParquet(
                      [...lead.map((name) => ({ name, type: 'String' })), ...SUMMARY_CSV_COLUMNS.map((name) => ({ name, type: SUMMARY_TYPES[name] ?? 'Nullable(Float64)' }))],
                      (async function* () {
                        for await (const { asset, exact } of summaryDays(await assets())) yield exact.map((b) => bucketRow(a ? { asset_id: asset } : {}, b));
                      })(),
                    ),
                );
          return reply.type('application/vnd.apache.parquet').send(file as never);
        }

        let body: AsyncGenerator<Buffer>;
        if (kind === 'raw') {
          const rows = await openRows(data.streamByRange(v.venue, market, earliestMs(from), earliestMs(to) + DAY_MS - 1, null, Number.MAX_SAFE_INTEGER));
          const conv = new RawRowsToCsv(Number.MAX_SAFE_INTEGER, v.venue);
          body = (async function* () {
            try {
              yield Buffer.from(RawRowsToCsv.header(v.venue), 'utf8');
              for (let r = rows.first; !r.done; r = await rows.it.next()) {
                // In slices: a store chunk of several MB would otherwise become several MB of
                // row strings and one output buffer at once, held until gzip has taken it all.
                const chunk = r.value;
                for (let off = 0; off < chunk.length; off += CSV_SLICE_BYTES) {
                  const out = conv.push(chunk.subarray(off, Math.min(chunk.length, off + CSV_SLICE_BYTES)));
                  if (out.length > 0) yield out;
                }
              }
              conv.end();
            } finally {
              await closeRows(rows);
            }
          })();
        } else {
          const series = await assets();
          body = (async function* () {
            let first = true;
            for await (const { asset, exact } of summaryDays(series)) {
              yield summaryBucketsCsvBytes(exact, first, a ? { names: lead, values: [asset] } : null);
              first = false;
            }
            if (first) yield summaryBucketsCsvBytes([], true, a ? { names: lead, values: [] } : null);
          })();
        }
        // pipeline: a client that goes away destroys the gzip stream, and with it the source,
        // whose generator then gives its store session back.
        const gz = createGzip({ level: 6 });
        pipeline(Readable.from(body, { objectMode: false }), gz, (err) => {
          if (err && reply.raw.writableFinished === false && !reply.raw.destroyed) reply.log.error({ err }, 'export stream failed after the status line was sent');
        });
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) gz.destroy();
        });
        return reply.type('application/gzip').send(gz as never);
      },
    );
  }
};
