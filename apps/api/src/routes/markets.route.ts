import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Venue } from '@booktape/domain';
import type { CatalogueMarket } from '@booktape/storage';
import { guard } from '../errors.ts';
import { q } from '../params.ts';
import { errors, exchangeADateRange, exchangeAList, exchangeBDateRange, exchangeBList } from '../schemas.ts';
import type { Services } from '../services.ts';

/**
 * Optional on the exchange A list: the outcome token ids (`asset_id` values) of the listed
 * markets the market catalogue knows, in outcome order. Omitted when it knows none of them
 * (or cannot be read: the list never fails because of the catalogue).
 */
const exchangeAListWithAssets = exchangeAList.extend({
  market_asset_ids: z
    .record(z.string(), z.array(z.object({ asset_id: z.string(), outcome: z.string().nullable() })))
    .optional()
    .describe('condition id → its outcome tokens (asset_id, outcome), for the listed markets the market catalogue knows.'),
});

/** Availability (stored UTC dates of a market) and market lists, both venues. */
export const marketsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { data, cache, requireKey, config, catalogue } = services;
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
        response: { 200: exchangeAListWithAssets, ...errors },
      },
      onRequest: requireKey,
    },
    async (req) => {
      const { prefix, offset, limit } = req.query;
      const r = await list('exchange-a', prefix ?? '', offset, limit);
      const known = await cache
        .get(`exchange-a\u0000assets\u0000${prefix ?? ''}\u0000${offset}\u0000${limit}`, () => catalogue.findByConditionIds(r.markets))
        .catch((err: Error) => {
          req.log.warn({ err: err.message }, 'market catalogue unreadable: list answered without asset ids');
          return new Map<string, CatalogueMarket>();
        });
      const assets: Record<string, Array<{ asset_id: string; outcome: string | null }>> = {};
      for (const m of r.markets) {
        const k = known.get(m);
        if (k && k.tokenIds.length > 0) assets[m] = k.tokenIds.map((t, i) => ({ asset_id: t, outcome: k.outcomes[i] ?? null }));
      }
      return {
        total_markets: r.total,
        returned_count: r.markets.length,
        filter_prefix: prefix ?? null,
        market_condition_ids: r.markets,
        pagination: page(r.total, r.markets.length, offset, limit),
        ...(Object.keys(assets).length > 0 ? { market_asset_ids: assets } : {}),
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
