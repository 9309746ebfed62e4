import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Readable } from 'node:stream';
import { csvField } from '@booktape/domain';
import { bookAt, booksAt, type BookAt } from '@booktape/summaries';
import { KEY_SECURITY } from '../http/auth.ts';
import { cacheHeaders, etagOf, isFinalised, notModified } from '../http/caching.ts';
import { ApiError, errors, guard, invalidParameter } from '../http/errors.ts';
import { CONTENT_TYPES, FORMAT_MEDIA_TYPES, formatField, type Format } from '../http/formats.ts';
import { earliestMs, optionalField, parseConditionId, parseInteger, q } from '../http/params.ts';
import { spansAtMost } from '../http/time.ts';
import type { Services } from '../services.ts';
import { slugRoute } from './market-by-slug.ts';
import { dataFloor, VENUES, venueName } from './venues.ts';

const DEPTH_DEFAULT = 10;
const DEPTH_MAX = 500;
/** Snapshots of one series answer, and the longest window. */
const SNAPSHOTS_MAX = 10_000;
const SNAPSHOT_WINDOW_MAX_MS = 86_400_000;
const INTERVAL_DEFAULT = 60;
const INTERVAL_MAX = 86_400;

/** Snapshot instants: every multiple of the interval (since the epoch) in [start, end], as summary buckets start. */
function snapshotInstants(startMs: number, endMs: number, intervalMs: number): number[] {
  const out: number[] = [];
  for (let t = Math.ceil(startMs / intervalMs) * intervalMs; t <= endMs; t += intervalMs) out.push(t);
  return out;
}

const level = z.object({ price: z.string(), size: z.string() }).meta({ id: 'BookLevel' });
const levels = (what: string) => z.array(level).describe(what);
const common = {
  timestamp: z.number().int().describe('The instant asked for, Unix ms.'),
  as_of_ms: z.number().int().nullable().describe('Event time of the last book record at or before the instant; null when the book has no snapshot yet.'),
  is_known: z.boolean().describe('False where the book is unknown (docs/rules/summaries.md, rule 4): the levels are then empty.'),
};

/**
 * The full book at any instant (issue 12): the book after every record at or before
 * `timestamp`, by the summaries' engine and rules, carried across days, `depth` levels a
 * side. Exchange A: one outcome token (`asset_id`; `condition_id` optional, found from the
 * rollups when left out). Exchange B: the ticker's YES and NO bids.
 */
export const bookRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requireKey, books, assetMarkets, lookup } = services;
  const depth = () =>
    optionalField((r) => parseInteger(r, 1, DEPTH_MAX), `Levels per side, 1 to ${DEPTH_MAX}. Default ${DEPTH_DEFAULT}.`, { type: 'integer', minimum: 1, maximum: DEPTH_MAX });
  const timestamp = () => q.timestamp('The instant', 'instant');

  for (const v of VENUES) {
    const a = v.asset !== undefined;
    // The series: a venue's outcome token (its market optional: the rollups know it), else the market.
    const ids = () =>
      v.asset
        ? { [v.asset.param]: q.text(v.asset.description, 128), [v.marketParam]: optionalField(parseConditionId, 'Market condition id of the token; found from the rollups when left out.') }
        : { [v.marketParam]: v.market() };
    // Exchange A: the token by slug and outcome too (market-by-slug.ts).
    const bySlug = slugRoute(v, lookup, { marketRequired: false, outcome: 'required' });
    type Ids = Record<string, string | undefined>;
    const seriesKey = async (qs: Ids) => {
      let market = qs[v.marketParam];
      const asset = v.asset ? qs[v.asset.param]! : undefined;
      if (market === undefined) {
        market = (await guard('ClickHouse', () => assetMarkets.marketOfAsset(asset!))) ?? undefined;
        if (market === undefined) throw new ApiError(404, 'not_found', `no rolled-up data for ${v.asset!.param} ${asset}: pass its ${v.marketParam}`, v.asset!.param);
      }
      return { venue: v.venue, market, asset: asset ?? market };
    };
    const query = z.object({ ...ids(), ...bySlug.fields, timestamp: timestamp(), depth: depth() });
    const answer = (
      a
        ? z.object({ asset_id: z.string(), ...common, bids: levels('Bids, highest first.'), asks: levels('Asks, lowest first.') })
        : z.object({ ticker: z.string(), ...common, yes: levels('YES bids, highest first.'), no: levels('NO bids, highest first.') })
    ).describe('The book after every record at or before the instant, `depth` levels a side.');
    app.get(
      `/${v.venue}/market/book`,
      {
        schema: {
          summary: `${v.label} full order book at an instant`,
          tags: [v.venue],
          security: KEY_SECURITY,
          answerHeaders: bySlug.answerHeaders,
          querystring: query,
          response: { 200: answer, 304: notModified, ...errors },
        },
        onRequest: requireKey,
        ...bySlug.options,
      },
      async (req, reply) => {
        const qs = req.query as Ids & { timestamp: number; depth?: number };
        const floor = dataFloor(v, config);
        if (floor !== undefined && qs.timestamp < earliestMs(floor)) throw invalidParameter('timestamp', `${venueName(v)} data is served from ${floor} on`);
        const key = await seriesKey(qs);
        const market = key.market;
        const book = await guard('ClickHouse', () => bookAt(books, key, qs.timestamp, qs.depth ?? DEPTH_DEFAULT));
        const [first, second] = book.sides;
        const body = {
          ...(a ? { asset_id: key.asset } : { ticker: market }),
          timestamp: qs.timestamp,
          as_of_ms: book.asOfMs,
          is_known: book.known,
          ...(a ? { bids: first, asks: second } : { yes: first, no: second }),
        };
        const finalised = isFinalised(qs.timestamp, Date.now(), config.caching.finalisedAfterMs);
        if (cacheHeaders(req, reply, finalised ? etagOf('book', JSON.stringify(body)) : null, config.caching)) return reply.send(undefined as never);
        return body as never;
      },
    );

    const [firstName, secondName] = a ? ['bids', 'asks'] : ['yes', 'no'];
    const seriesQuery = {
      ...ids(),
      ...bySlug.fields,
      start_timestamp: q.timestamp('Window start', 'start'),
      end_timestamp: q.timestamp('Window end', 'end'),
      interval: optionalField((r) => parseInteger(r, 1, INTERVAL_MAX), `Seconds between snapshots, 1 to ${INTERVAL_MAX}. Default ${INTERVAL_DEFAULT}.`, { type: 'integer', minimum: 1, maximum: INTERVAL_MAX }),
      depth: depth(),
      format: formatField(),
    };
    const snapshot = z.object({ timestamp: z.number().int(), as_of_ms: common.as_of_ms, is_known: common.is_known, [firstName]: levels(''), [secondName]: levels('') });
    app.get(
      `/${v.venue}/market/book-snapshots`,
      {
        schema: {
          summary: `${v.label} full order book at fixed intervals (streamed; json, ndjson or csv)`,
          tags: [v.venue],
          security: KEY_SECURITY,
          produces: FORMAT_MEDIA_TYPES,
          answerHeaders: bySlug.answerHeaders,
          querystring: z.object(seriesQuery),
          response: {
            200: z.object({
              ...(a ? { asset_id: z.string() } : { ticker: z.string() }),
              start_timestamp: z.number().int(),
              end_timestamp: z.number().int(),
              interval_seconds: z.number().int(),
              depth: z.number().int(),
              data: z.array(snapshot),
            }).describe('The book at every multiple of the interval in the window (csv: one row per level), streamed.'),
            304: notModified,
            ...errors,
          },
        },
        onRequest: requireKey,
        ...bySlug.options,
        // A HEAD would read and bill the whole series for nothing (fastify drains a streamed body).
        exposeHeadRoute: false,
      },
      async (req, reply) => {
        const qs = req.query as Ids & { start_timestamp: number; end_timestamp: number; interval?: number; depth?: number; format?: Format };
        const { start_timestamp: start, end_timestamp: end } = qs;
        if (start > end) throw invalidParameter('start_timestamp', 'start_timestamp must not be after end_timestamp');
        // A day given in seconds (00:00:00 to the next 00:00:00) is one day (docs/api.md, "Time").
        if (!spansAtMost(start, end, SNAPSHOT_WINDOW_MAX_MS)) throw invalidParameter('end_timestamp', 'a window spans at most one day: ask day by day');
        const floor = dataFloor(v, config);
        if (floor !== undefined && start < earliestMs(floor)) throw invalidParameter('start_timestamp', `${venueName(v)} data is served from ${floor} on`);
        const interval = qs.interval ?? INTERVAL_DEFAULT;
        if ((end - start) / (interval * 1000) >= SNAPSHOTS_MAX) throw invalidParameter('interval', `more than ${SNAPSHOTS_MAX} snapshots: use a longer interval or a shorter window`);
        const depthN = qs.depth ?? DEPTH_DEFAULT;
        const format = qs.format ?? 'json';
        const key = await seriesKey(qs);
        const instants = snapshotInstants(start, end, interval * 1000);
        const finalised = isFinalised(end, Date.now(), config.caching.finalisedAfterMs);
        // The records are opened before the status line (a store that fails gets a 503) and
        // read as the snapshots are written. None when the window holds no instant.
        const history =
          instants.length === 0
            ? null
            : await guard('ClickHouse', () => books.source(key, instants[0]!, instants[instants.length - 1]!, finalised));
        // The data's version: where the series starts and how many records decide it
        // (records are only ever added: a late one changes the count, the snapshot or the checkpoint).
        const version = history === null ? 'empty' : history.version;
        const etag = finalised ? etagOf('book-snapshots', v.venue, key.market, key.asset, start, end, interval, depthN, format, version) : null;
        if (cacheHeaders(req, reply, etag, config.caching)) {
          await history?.close();
          return reply.send(undefined as never);
        }
        const head =
          format === 'json'
            ? `{${JSON.stringify(v.asset ? v.asset.param : v.marketParam)}:${JSON.stringify(key.asset)},"start_timestamp":${start},"end_timestamp":${end},"interval_seconds":${interval},"depth":${depthN},"data":[`
            : format === 'csv'
              ? 'timestamp,as_of_ms,is_known,side,level,price,size\n'
              : '';
        const write = snapshotWriter(format, firstName, secondName, a ? ['bid', 'ask'] : ['yes', 'no']);
        async function* body(): AsyncGenerator<Buffer> {
          yield Buffer.from(head, 'utf8');
          let parts: string[] = [];
          let n = 0;
          if (history !== null) for await (const b of booksAt(v.venue, history, instants, depthN)) {
            parts.push(write(b, n++));
            if (parts.length >= 256) {
              yield Buffer.from(parts.join(''), 'utf8');
              parts = [];
            }
          }
          if (format === 'json') parts.push(']}');
          if (parts.length > 0) yield Buffer.from(parts.join(''), 'utf8');
        }
        const stream = Readable.from(body(), { objectMode: false });
        // The store session goes back on every path, also when the client leaves before the
        // body generator ran (destroying it then never enters booksAt's finally).
        stream.once('close', () => void history?.close());
        stream.on('error', (err) => reply.log.error({ err }, 'book snapshots stream failed after the status line was sent'));
        return reply.type(CONTENT_TYPES[format]).send(stream as never);
      },
    );
  }
};

/** One snapshot in the answer's format (`n`: snapshots written before it). */
function snapshotWriter(format: Format, firstName: string, secondName: string, sides: [string, string]): (b: BookAt, n: number) => string {
  if (format === 'csv') {
    return (b) => {
      const row = (side: string, level: number | null, price: string, size: string) => `${b.atMs},${b.asOfMs ?? ''},${b.known},${side},${level ?? ''},${csvField(price)},${csvField(size)}\n`;
      const rows = [...b.sides[0].map((l, i) => row(sides[0], i, l.price, l.size)), ...b.sides[1].map((l, i) => row(sides[1], i, l.price, l.size))];
      return rows.length > 0 ? rows.join('') : row('', null, '', '');
    };
  }
  const json = (b: BookAt) => JSON.stringify({ timestamp: b.atMs, as_of_ms: b.asOfMs, is_known: b.known, [firstName]: b.sides[0], [secondName]: b.sides[1] });
  return format === 'ndjson' ? (b) => `${json(b)}\n` : (b, n) => (n > 0 ? ',' : '') + json(b);
}
