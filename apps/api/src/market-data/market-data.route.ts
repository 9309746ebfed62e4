import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Venue } from '@booktape/domain';
import { rawKeyLength, type RawInclude } from '@booktape/storage';
import { CursorError, decodeCursor, encodeCursor } from '../http/cursor.ts';
import { ApiError, errors, guard, invalidParameter } from '../http/errors.ts';
import { earliestMs, q } from '../http/params.ts';
import { TtlMap } from '../http/result-cache.ts';
import type { Services } from '../services.ts';
import { KEY_SECURITY } from '../http/auth.ts';
import { cacheHeaders, etagOf, isFinalised, notModified } from '../http/caching.ts';
import { CONTENT_TYPES, FORMAT_MEDIA_TYPES, formatField, nextLink, type Format } from '../http/formats.ts';
import { bothOpen, closeRows, csvCutMarker, jsonCutMarker, ndjsonCutMarker, openRows, sendRawPage, type SlowReaderCut } from './raw-page.ts';
import { RawRowsToCsv, RawRowsToJson, type RawRows } from './raw-rows.ts';
import { datePage as datePageSchema, rangePage as rangePageSchema } from './schemas.ts';
import { includeField, includeOf, trailOf, type Include } from './include.ts';
import { slugRoute } from './market-by-slug.ts';
import { dataFloor, VENUES, marketOf, venueName, venuePaths, type VenueApi } from './venues.ts';

/** Raw data by UTC date (offset pages) and by time range (cursor pages), every venue. */
export const marketDataRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { data, config, requireKey, cache, lookup } = services;
  /**
   * Where an offset page ended: (venue, market, date, offset + count) → key of its last
   * record. A client walking a date asks next for exactly that offset, and the read then
   * continues after the key instead of skipping `offset` records again (which costs more
   * the deeper the page). Kept briefly, like the total it goes with.
   */
  const pageEnds = new TtlMap<string[]>(config.offsetContinuationMs);
  const pageEndKey = (venue: Venue, market: string, date: string, offset: number) => `${venue}\u0000${market}\u0000${date}\u0000${offset}`;

  /** A reader below the floor loses its store session: the page ends with an error marker in its format. */
  const slow = (format: Format): SlowReaderCut => ({ floor: config.streamFloor, marker: format === 'csv' ? csvCutMarker : format === 'ndjson' ? ndjsonCutMarker : jsonCutMarker });

  /** The page's records as the chosen format: the converter and the body's head and tail. */
  function converter(v: VenueApi, format: Format, limit: number, include: RawInclude): RawRows {
    if (format === 'csv') return new RawRowsToCsv(limit, v.venue, '', trailOf(include));
    return new RawRowsToJson(limit, format === 'ndjson');
  }
  /** Cache tags of an answer with included fields differ from the plain answer's (and the plain one's stay as they were). */
  const tagParts = (include: RawInclude): string[] => (include.source ? ['include=source'] : []);

  async function datePage(v: VenueApi, market: string, date: string, offset: number, limit: number, format: Format, include: RawInclude, req: FastifyRequest, reply: FastifyReply) {
    const { venue, marketField } = v;
    const first = dataFloor(v, config);
    if (first !== undefined && date < first) {
      throw invalidParameter('date', `date must not be before ${first}: ${venueName(v)} data is served from that date on`);
    }
    // The total is reused for a moment (like availability): a client walking a date's pages
    // asks for it with every page.
    const count = () => cache.get(`${venue}\u0000count\u0000${market}\u0000${date}`, () => guard('ClickHouse', () => data.countByDate(venue, market, date)));
    const finalised = isFinalised(earliestMs(date), Date.now(), config.caching.finalisedAfterMs);
    // A client revalidating its copy of a finalised page needs the count (the data's
    // version) before anything is read: a 304 then opens no stream.
    let known: number | undefined;
    if (finalised && req.headers['if-none-match'] !== undefined) {
      known = await count();
      if (cacheHeaders(req, reply, etagOf('raw-date', venue, market, date, offset, limit, format, ...tagParts(include), known), config.caching)) return reply.send();
    }
    const after = offset > 0 ? (pageEnds.get(pageEndKey(venue, market, date, offset)) ?? null) : null;
    // The count and the page are independent reads: run them side by side.
    const [total, rows] = await bothOpen(known !== undefined ? Promise.resolve(known) : count(), openRows(data.streamByDate(venue, market, date, offset, limit, after, undefined, req.apiKey?.key_id, include)), closeRows);
    if (known === undefined) cacheHeaders(req, reply, finalised ? etagOf('raw-date', venue, market, date, offset, limit, format, ...tagParts(include), total) : null, config.caching);
    reply.header('x-total-count', String(total));
    if (offset + limit < total) reply.header('link', nextLink(req, { offset: offset + limit }));
    const conv = converter(v, format, limit, include);
    const rememberEnd = () => {
      const last = conv.count > 0 ? conv.lastPosition() : null;
      if (last) pageEnds.set(pageEndKey(venue, market, date, offset + conv.count), last);
    };
    if (format !== 'json') {
      return sendRawPage(reply, rows, conv, format === 'csv' ? RawRowsToCsv.header(venue, [], trailOf(include)) : '', () => (rememberEnd(), ''), CONTENT_TYPES[format], slow(format));
    }
    const head = `{${JSON.stringify(marketField)}:${JSON.stringify(market)},"date":${JSON.stringify(date)},"data":[`;
    return sendRawPage(reply, rows, conv, head, () => {
      rememberEnd();
      const pagination = { offset, limit, total_count: total, has_more: offset + conv.count < total };
      return `],"data_count":${conv.count},"pagination":${JSON.stringify(pagination)}}`;
    }, undefined, slow(format));
  }

  async function rangePage(v: VenueApi, market: string, start: number, end: number, cursor: string | undefined, limit: number, format: Format, include: RawInclude, req: FastifyRequest, reply: FastifyReply) {
    const { venue, marketField } = v;
    if (start > end) throw invalidParameter('start_timestamp', 'start_timestamp must not be after end_timestamp');
    const first = dataFloor(v, config);
    if (first !== undefined && start < earliestMs(first)) {
      throw invalidParameter('start_timestamp', `start_timestamp must not be before ${first}T00:00:00Z (${earliestMs(first)}): ${venueName(v)} data is served from then on`);
    }
    const scope = { venue, market, start, end };
    let after: string[] | null = null;
    if (cursor !== undefined) {
      try {
        after = decodeCursor(config.cursorSecret, cursor, scope, rawKeyLength(venue));
      } catch (e) {
        if (e instanceof CursorError) throw new ApiError(400, 'invalid_cursor', e.message, 'cursor');
        throw e;
      }
    }
    // A finalised range's tag carries the data's version, its deduplicated row count: read
    // beside the page (first only for a client revalidating its copy, so a 304 opens nothing).
    const version = isFinalised(end, Date.now(), config.caching.finalisedAfterMs)
      ? () => cache.get(`${venue}\u0000range-count\u0000${market}\u0000${start}\u0000${end}`, () => guard('ClickHouse', () => data.countByRange(venue, market, start, end)))
      : null;
    const tag = (n: number | null) => (n === null ? null : etagOf('raw-range', venue, market, start, end, cursor ?? '', limit, format, ...tagParts(include), n));
    let known: number | null | undefined;
    if (version !== null && req.headers['if-none-match'] !== undefined) {
      known = await version();
      if (cacheHeaders(req, reply, tag(known), config.caching)) return reply.send();
    }
    const versionP: Promise<number | null> = known !== undefined ? Promise.resolve(known) : version !== null ? version() : Promise.resolve(null);
    const headers = (n: number | null) => {
      if (known === undefined) cacheHeaders(req, reply, tag(n), config.caching);
    };

    if (format !== 'json') {
      // The next cursor goes in a header, before the body: where this page ends is read
      // first (keys only), then the page up to and including that key. A record stored in
      // between, before that key, joins this page rather than being skipped by the next.
      const opened = (async () => {
        const pageEnd = await guard('ClickHouse', () => data.rangePageEnd(venue, market, start, end, after, limit));
        const rows = await openRows(
          pageEnd.last
            ? data.streamByRange(venue, market, start, end, after, Number.MAX_SAFE_INTEGER, undefined, pageEnd.last, req.apiKey?.key_id, include)
            : data.streamByRange(venue, market, start, end, after, limit, undefined, null, req.apiKey?.key_id, include),
        );
        return { pageEnd, rows };
      })();
      const [n, { pageEnd, rows }] = await bothOpen(versionP, opened, (o) => closeRows(o.rows));
      headers(n);
      if (pageEnd.last && pageEnd.more) reply.header('link', nextLink(req, { cursor: encodeCursor(config.cursorSecret, scope, pageEnd.last) }));
      const conv = converter(v, format, pageEnd.last ? Number.MAX_SAFE_INTEGER : limit, include);
      return sendRawPage(reply, rows, conv, format === 'csv' ? RawRowsToCsv.header(venue, [], trailOf(include)) : '', () => '', CONTENT_TYPES[format], slow(format));
    }
    // One row beyond the page tells whether there is a next one.
    const [n, rows] = await bothOpen(versionP, openRows(data.streamByRange(venue, market, start, end, after, limit + 1, undefined, null, req.apiKey?.key_id, include)), closeRows);
    headers(n);
    const conv = converter(v, format, limit, include);
    const head = `{${JSON.stringify(marketField)}:${JSON.stringify(market)},"start_timestamp":${start},"end_timestamp":${end},"data":[`;
    return sendRawPage(reply, rows, conv, head, () => {
      const last = conv.more ? conv.lastPosition() : null;
      const pagination = { limit, has_more: conv.more, next_cursor: last ? encodeCursor(config.cursorSecret, scope, last) : null };
      return `],"data_count":${conv.count},"pagination":${JSON.stringify(pagination)}}`;
    }, undefined, {
      ...slow(format),
      // A cut page says where to go on from: the cursor after its last row.
      marker: (code, message, count) => {
        const last = count > 0 ? conv.lastPosition() : null;
        const pagination = { limit, has_more: true, next_cursor: last ? encodeCursor(config.cursorSecret, scope, last) : (cursor ?? null) };
        return `],"data_count":${count},"pagination":${JSON.stringify(pagination)},"error":${JSON.stringify({ code, message })}}`;
      },
    });
  }

  for (const v of VENUES) {
    const tags = [v.venue];
    // Exchange A: the market by slug too (market-by-slug.ts); every token of it either way.
    const bySlug = slugRoute(v, lookup, { marketRequired: true, outcome: 'none' });
    const title = (what: string, alias: boolean) => `${v.label} raw ${v.recordNoun} of one market ${what}${alias ? ' (legacy alias)' : ''}`;
    for (const { url, alias } of venuePaths(v, 'data')) {
      app.get(
        url,
        {
          schema: {
            summary: title('on one UTC date', alias),
            tags,
            security: KEY_SECURITY,
            deprecated: alias,
            produces: FORMAT_MEDIA_TYPES,
            answerHeaders: ['X-Total-Count', 'Link', ...bySlug.answerHeaders],
            querystring: z.object({ [v.marketParam]: v.market(), ...bySlug.fields, date: q.date(), offset: q.offset(), limit: q.rawLimit(), format: formatField(), include: includeField() }),
            response: {
              200: datePageSchema(v.marketField, v.record).describe(`One page of the date's ${v.recordNoun} in serving order (offset pages; the total in X-Total-Count, the next page in Link).`),
              304: notModified,
              ...errors,
            },
          },
          onRequest: requireKey,
          ...bySlug.options,
        },
        (req, reply) => {
          const { date, offset, limit, format, include } = req.query as { date: string; offset: number; limit: number; format?: Format; include?: Include[] };
          return datePage(v, marketOf(v, req.query), date, offset, limit, format ?? 'json', includeOf(include), req, reply);
        },
      );
    }
    for (const { url, alias } of venuePaths(v, 'data/range')) {
      app.get(
        url,
        {
          schema: {
            summary: title('in an inclusive time range', alias),
            tags,
            security: KEY_SECURITY,
            deprecated: alias,
            produces: FORMAT_MEDIA_TYPES,
            answerHeaders: ['Link', ...bySlug.answerHeaders],
            querystring: z.object({
              [v.marketParam]: v.market(),
              ...bySlug.fields,
              start_timestamp: q.timestamp('Range start', 'start'),
              end_timestamp: q.timestamp('Range end', 'end'),
              cursor: q.cursor(),
              limit: q.rawLimit(),
              format: formatField(),
              include: includeField(),
            }),
            response: {
              200: rangePageSchema(v.marketField, v.record).describe(`One page of the range's ${v.recordNoun} in serving order (cursor pages: pagination.next_cursor, or the Link header for ndjson and csv).`),
              304: notModified,
              ...errors,
            },
          },
          onRequest: requireKey,
          ...bySlug.options,
        },
        (req, reply) => {
          const { start_timestamp, end_timestamp, cursor, limit, format, include } = req.query as { start_timestamp: number; end_timestamp: number; cursor?: string; limit: number; format?: Format; include?: Include[] };
          return rangePage(v, marketOf(v, req.query), start_timestamp, end_timestamp, cursor, limit, format ?? 'json', includeOf(include), req, reply);
        },
      );
    }
  }
};
