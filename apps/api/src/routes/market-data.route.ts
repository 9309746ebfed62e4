import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Venue } from '@booktape/domain';
import { rawKeyLength } from '@booktape/storage';
import { ApiError, guard, invalidParameter } from '../errors.ts';
import { CursorError, decodeCursor, encodeCursor } from '../cursor.ts';
import { earliestMs, q } from '../params.ts';
import { RawRowsToJson } from '../raw-rows.ts';
import { TtlMap } from '../result-cache.ts';
import { errors, exchangeADatePage, exchangeARangePage, exchangeBDatePage, exchangeBRangePage } from '../schemas.ts';
import type { Services } from '../services.ts';
import { closeRows, openRows, sendRawPage, type OpenRows } from './raw-page.ts';

/** Raw data by UTC date (offset pages) and by time range (cursor pages), both venues. */
export const marketDataRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { data, config, requireKey, cache } = services;
  const earliest = earliestMs(config.exchangeAEarliestDate);
  const security = [{ bearerAuth: [] }];
  /**
   * Where an offset page ended: (venue, market, date, offset + count) → key of its last
   * record. A client walking a date asks next for exactly that offset, and the read then
   * continues after the key instead of skipping `offset` records again (which costs more
   * the deeper the page). Kept briefly, like the total it goes with.
   */
  const pageEnds = new TtlMap<string[]>(config.offsetContinuationMs);
  const pageEndKey = (venue: Venue, market: string, date: string, offset: number) => `${venue}\u0000${market}\u0000${date}\u0000${offset}`;

  function checkEarliestDate(venue: Venue, date: string): void {
    if (venue === 'exchange-a' && date < config.exchangeAEarliestDate) {
      throw invalidParameter('date', `date must not be before ${config.exchangeAEarliestDate}: exchange A data is served from that date on`);
    }
  }

  async function datePage(venue: Venue, marketField: string, market: string, date: string, offset: number, limit: number, reply: Parameters<typeof sendRawPage>[0]) {
    checkEarliestDate(venue, date);
    const after = offset > 0 ? (pageEnds.get(pageEndKey(venue, market, date, offset)) ?? null) : null;
    // The count and the page are independent reads: run them side by side.
    const rowsP = openRows(data.streamByDate(venue, market, date, offset, limit, after));
    let total: number;
    let rows: OpenRows;
    try {
      // The total is reused for a moment (like availability): a client walking a date's pages
      // asks for it with every page.
      const countP = cache.get(`${venue}\u0000count\u0000${market}\u0000${date}`, () => guard('ClickHouse', () => data.countByDate(venue, market, date)));
      [total, rows] = await Promise.all([countP, rowsP]);
    } catch (e) {
      rowsP.then(closeRows, () => undefined);
      throw e;
    }
    const conv = new RawRowsToJson(limit);
    const head = `{${JSON.stringify(marketField)}:${JSON.stringify(market)},"date":${JSON.stringify(date)},"data":[`;
    return sendRawPage(
      reply,
      rows,
      conv,
      head,
      () => {
        const last = conv.count > 0 ? conv.lastPosition() : null;
        if (last) pageEnds.set(pageEndKey(venue, market, date, offset + conv.count), last);
        const pagination = { offset, limit, total_count: total, has_more: offset + conv.count < total };
        return `],"data_count":${conv.count},"pagination":${JSON.stringify(pagination)}}`;
      },
    );
  }

  async function rangePage(
    venue: Venue,
    marketField: string,
    market: string,
    start: number,
    end: number,
    cursor: string | undefined,
    limit: number,
    reply: Parameters<typeof sendRawPage>[0],
  ) {
    if (start > end) throw invalidParameter('start_timestamp', 'start_timestamp must not be after end_timestamp');
    if (venue === 'exchange-a' && start < earliest) {
      throw invalidParameter('start_timestamp', `start_timestamp must not be before ${config.exchangeAEarliestDate}T00:00:00Z (${earliest}): exchange A data is served from then on`);
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
    // One row beyond the page tells whether there is a next one.
    const rows = await openRows(data.streamByRange(venue, market, start, end, after, limit + 1));
    const conv = new RawRowsToJson(limit);
    const head = `{${JSON.stringify(marketField)}:${JSON.stringify(market)},"start_timestamp":${start},"end_timestamp":${end},"data":[`;
    return sendRawPage(
      reply,
      rows,
      conv,
      head,
      () => {
        const last = conv.more ? conv.lastPosition() : null;
        const pagination = { limit, has_more: conv.more, next_cursor: last ? encodeCursor(config.cursorSecret, scope, last) : null };
        return `],"data_count":${conv.count},"pagination":${JSON.stringify(pagination)}}`;
      },
    );
  }

  // ---- exchange A ---------------------------------------------------------------------
  const aDate = (summary: string) => ({
    schema: {
      summary,
      tags: ['exchange-a'],
      security,
      querystring: z.object({ condition_id: q.conditionId(), date: q.date(), offset: q.offset(), limit: q.rawLimit() }),
      response: { 200: exchangeADatePage, ...errors },
    },
    onRequest: requireKey,
  });
  const aDateSummary = 'Exchange A raw events of one market on one UTC date';
  for (const [url, summary] of [['/exchange-a/market/data', aDateSummary], ['/market/data', `${aDateSummary} (legacy alias)`]] as const) {
    app.get(url, aDate(summary), (req, reply) =>
      datePage('exchange-a', 'market_condition_id', req.query.condition_id, req.query.date, req.query.offset, req.query.limit, reply),
    );
  }

  const aRange = (summary: string) => ({
    schema: {
      summary,
      tags: ['exchange-a'],
      security,
      querystring: z.object({
        condition_id: q.conditionId(),
        start_timestamp: q.timestamp('Range start'),
        end_timestamp: q.timestamp('Range end'),
        cursor: q.cursor(),
        limit: q.rawLimit(),
      }),
      response: { 200: exchangeARangePage, ...errors },
    },
    onRequest: requireKey,
  });
  const aRangeSummary = 'Exchange A raw events of one market in an inclusive time range';
  for (const [url, summary] of [['/exchange-a/market/data/range', aRangeSummary], ['/market/data/range', `${aRangeSummary} (legacy alias)`]] as const) {
    app.get(url, aRange(summary), (req, reply) =>
      rangePage('exchange-a', 'market_condition_id', req.query.condition_id, req.query.start_timestamp, req.query.end_timestamp, req.query.cursor, req.query.limit, reply),
    );
  }

  // ---- exchange B ---------------------------------------------------------------------
  app.get(
    '/exchange-b/market/data',
    {
      schema: {
        summary: 'Exchange B raw records of one market on one UTC date',
        tags: ['exchange-b'],
        security,
        querystring: z.object({ ticker: q.ticker(), date: q.date(), offset: q.offset(), limit: q.rawLimit() }),
        response: { 200: exchangeBDatePage, ...errors },
      },
      onRequest: requireKey,
    },
    (req, reply) => datePage('exchange-b', 'market_ticker', req.query.ticker, req.query.date, req.query.offset, req.query.limit, reply),
  );

  app.get(
    '/exchange-b/market/data/range',
    {
      schema: {
        summary: 'Exchange B raw records of one market in an inclusive time range',
        tags: ['exchange-b'],
        security,
        querystring: z.object({
          ticker: q.ticker(),
          start_timestamp: q.timestamp('Range start'),
          end_timestamp: q.timestamp('Range end'),
          cursor: q.cursor(),
          limit: q.rawLimit(),
        }),
        response: { 200: exchangeBRangePage, ...errors },
      },
      onRequest: requireKey,
    },
    (req, reply) => rangePage('exchange-b', 'market_ticker', req.query.ticker, req.query.start_timestamp, req.query.end_timestamp, req.query.cursor, req.query.limit, reply),
  );
};
