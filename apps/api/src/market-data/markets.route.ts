import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { CatalogueMarket } from '@booktape/storage';
import { KEY_SECURITY } from '../http/auth.ts';
import { errors, guard } from '../http/errors.ts';
import { q } from '../http/params.ts';
import type { Services } from '../services.ts';
import { dateRange, marketList } from './schemas.ts';
import { dataFloor, VENUES, marketOf, venueName, type VenueApi } from './venues.ts';

/**
 * Optional on the lists of a venue with a market catalogue (exchange A): the outcome token
 * ids (`asset_id` values) of the listed markets the catalogue knows, in outcome order.
 * Omitted when it knows none of them (or cannot be read: the list never fails because of
 * the catalogue).
 */
const outcomeTokens = {
  market_asset_ids: z
    .record(z.string(), z.array(z.object({ asset_id: z.string(), outcome: z.string().nullable() })))
    .optional()
    .describe('condition id → its outcome tokens (asset_id, outcome), for the listed markets the market catalogue knows.'),
};

/** Availability (stored UTC dates of a market) and market lists, every venue. */
export const marketsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { data, cache, requireKey, config, catalogue } = services;
  // Data before a venue's data floor is not served, so it does not count as available.
  const minDate = (v: VenueApi) => dataFloor(v, config) ?? '1970-01-01';

  const availability = (v: VenueApi, market: string) =>
    cache.get(`${v.venue}\u0000avail\u0000${market}`, () => guard('ClickHouse', () => data.availability(v.venue, market, minDate(v))));

  const list = (v: VenueApi, prefix: string, offset: number, limit: number) =>
    cache.get(`${v.venue}\u0000list\u0000${prefix}\u0000${offset}\u0000${limit}`, () => guard('ClickHouse', () => data.listMarkets(v.venue, prefix, offset, limit, minDate(v))));

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

  /** The catalogue's outcome tokens of the listed markets it knows; never fails the list. */
  async function outcomeTokensOf(req: FastifyRequest, markets: string[], cacheKey: string) {
    const known = await cache.get(cacheKey, () => catalogue.findByConditionIds(markets)).catch((err: Error) => {
      req.log.warn({ err: err.message }, 'market catalogue unreadable: list answered without asset ids');
      return new Map<string, CatalogueMarket>();
    });
    const assets: Record<string, Array<{ asset_id: string; outcome: string | null }>> = {};
    for (const m of markets) {
      const k = known.get(m);
      if (k && k.tokenIds.length > 0) assets[m] = k.tokenIds.map((t, i) => ({ asset_id: t, outcome: k.outcomes[i] ?? null }));
    }
    return Object.keys(assets).length > 0 ? { market_asset_ids: assets } : {};
  }

  for (const v of VENUES) {
    app.get(
      `/${v.venue}/market/date-range`,
      {
        schema: {
          summary: `Stored UTC dates of an ${venueName(v)} market`,
          tags: [v.venue],
          security: KEY_SECURITY,
          querystring: z.object({ [v.marketParam]: v.market() }),
          response: { 200: dateRange(v.marketField).describe('The first and last stored UTC dates of the market and how many dates hold data (has_data false: none).'), ...errors },
        },
        onRequest: requireKey,
      },
      async (req) => {
        const market = marketOf(v, req.query);
        return { [v.marketField]: market, ...answer(await availability(v, market)) };
      },
    );

    const listSchema = marketList(v.marketListField);
    // Typed loosely: the answer's fields are named by the table, not known to the compiler.
    const listAnswer: z.ZodType = (v.listsOutcomeTokens ? listSchema.extend(outcomeTokens) : listSchema).describe('One page of the markets with stored data, in id order.');
    app.get(
      `/${v.venue}/market/list`,
      {
        schema: {
          summary: `${v.label} markets with stored data`,
          tags: [v.venue],
          security: KEY_SECURITY,
          querystring: z.object({ prefix: v.marketPrefix(), offset: q.offset(), limit: q.listLimit() }),
          response: { 200: listAnswer, ...errors },
        },
        onRequest: requireKey,
      },
      async (req) => {
        const { prefix, offset, limit } = req.query;
        const r = await list(v, prefix ?? '', offset, limit);
        return {
          total_markets: r.total,
          returned_count: r.markets.length,
          filter_prefix: prefix ?? null,
          [v.marketListField]: r.markets,
          pagination: page(r.total, r.markets.length, offset, limit),
          ...(v.listsOutcomeTokens ? await outcomeTokensOf(req, r.markets, `${v.venue}\u0000assets\u0000${prefix ?? ''}\u0000${offset}\u0000${limit}`) : {}),
        };
      },
    );
  }
};
