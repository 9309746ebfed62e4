import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Venue } from '@booktape/domain';
import { guard } from '../errors.ts';
import { q } from '../params.ts';
import { errors, exchangeADateRange, exchangeAList, exchangeBDateRange, exchangeBList } from '../schemas.ts';
import type { Services } from '../services.ts';

/** Availability (stored UTC dates of a market) and market lists, both venues. */
export const marketsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { data, cache, requireKey, config } = services;
  const security = [{ bearerAuth: [] }];
  // Exchange A data before the earliest date is not served, so it does not count as available.
  const minDate = (venue: Venue) => (venue === 'exchange-a' ? config.exchangeAEarliestDate : '1970-01-01');

  const availability = (venue: Venue, market: string) =>
    cache.get(`${venue}\u0000avail\u0000${market}`, () => guard('ClickHouse', () => data.availability(venue, market, minDate(venue))));

  const list = (venue: Venue, prefix: string, offset: number, limit: number) =>
    cache.get(`${venue}\u0000list\u0000${prefix}\u0000${offset}\u0000${limit}`, () => guard('ClickHouse', () => data.listMarkets(venue, prefix, offset, limit, minDate(venue))));

  const answer = (a: { dateCount: number; firstDate: string | null; lastDate: string | null }) => ({
    has_data: a.dateCount > 0,
    start_date: a.firstDate,
    end_date: a.lastDate,
    available_date_count: a.dateCount,
  });

  const page = (total: number, returned: number, offset: number, limit: number) => ({
    offset,
    limit,
    total_count: total,
    has_more: offset + returned < total,
  });

  app.get(
    '/exchange-a/market/date-range',
    {
      schema: {
        summary: 'Stored UTC dates of an exchange A market',
        tags: ['exchange-a'],
        security,
        querystring: z.object({ condition_id: q.conditionId() }),
        response: { 200: exchangeADateRange, ...errors },
      },
      onRequest: requireKey,
    },
    async (req) => ({ market_condition_id: req.query.condition_id, ...answer(await availability('exchange-a', req.query.condition_id)) }),
  );

  app.get(
    '/exchange-b/market/date-range',
    {
      schema: {
        summary: 'Stored UTC dates of an exchange B market',
        tags: ['exchange-b'],
        security,
        querystring: z.object({ ticker: q.ticker() }),
        response: { 200: exchangeBDateRange, ...errors },
      },
      onRequest: requireKey,
    },
    async (req) => ({ market_ticker: req.query.ticker, ...answer(await availability('exchange-b', req.query.ticker)) }),
  );

  app.get(
    '/exchange-a/market/list',
    {
      schema: {
        summary: 'Exchange A markets with stored data',
        tags: ['exchange-a'],
        security,
        querystring: z.object({ prefix: q.conditionIdPrefix(), offset: q.offset(), limit: q.listLimit() }),
        response: { 200: exchangeAList, ...errors },
      },
      onRequest: requireKey,
    },
    async (req) => {
      const { prefix, offset, limit } = req.query;
      const r = await list('exchange-a', prefix ?? '', offset, limit);
      return {
        total_markets: r.total,
        returned_count: r.markets.length,
        filter_prefix: prefix ?? null,
        market_condition_ids: r.markets,
        pagination: page(r.total, r.markets.length, offset, limit),
      };
    },
  );

  app.get(
    '/exchange-b/market/list',
    {
      schema: {
        summary: 'Exchange B markets with stored data',
        tags: ['exchange-b'],
        security,
        querystring: z.object({ prefix: q.tickerPrefix(), offset: q.offset(), limit: q.listLimit() }),
        response: { 200: exchangeBList, ...errors },
      },
      onRequest: requireKey,
    },
    async (req) => {
      const { prefix, offset, limit } = req.query;
      const r = await list('exchange-b', prefix ?? '', offset, limit);
      return {
        total_markets: r.total,
        returned_count: r.markets.length,
        filter_prefix: prefix ?? null,
        market_tickers: r.markets,
        pagination: page(r.total, r.markets.length, offset, limit),
      };
    },
  );
};
