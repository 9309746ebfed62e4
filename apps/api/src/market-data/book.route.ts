import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { bookAt } from '@booktape/summaries';
import { cacheHeaders, etagOf, isFinalised } from '../http/caching.ts';
import { ApiError, errors, guard, invalidParameter } from '../http/errors.ts';
import { earliestMs, optionalField, parseConditionId, parseInteger, q } from '../http/params.ts';
import type { Services } from '../services.ts';
import { dataFloor, VENUES, venueName } from './venues.ts';

const DEPTH_DEFAULT = 10;
const DEPTH_MAX = 500;

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
  const { config, requireKey, bookEvents, assetMarkets } = services;
  const security = [{ bearerAuth: [] }];
  const depth = () =>
    optionalField((r) => parseInteger(r, 1, DEPTH_MAX), `Levels per side, 1 to ${DEPTH_MAX}. Default ${DEPTH_DEFAULT}.`, { type: 'integer', minimum: 1, maximum: DEPTH_MAX });
  const timestamp = () => q.timestamp('The instant');

  for (const v of VENUES) {
    const a = v.venue === 'exchange-a';
    const query = a
      ? z.object({
          asset_id: q.text('Outcome token (CLOB token) id.', 128),
          condition_id: optionalField(parseConditionId, 'Market condition id of the token; found from the rollups when left out.'),
          timestamp: timestamp(),
          depth: depth(),
        })
      : z.object({ ticker: v.market(), timestamp: timestamp(), depth: depth() });
    const answer = a
      ? z.object({ asset_id: z.string(), ...common, bids: levels('Bids, highest first.'), asks: levels('Asks, lowest first.') })
      : z.object({ ticker: z.string(), ...common, yes: levels('YES bids, highest first.'), no: levels('NO bids, highest first.') });
    app.get(
      `/${v.venue}/market/book`,
      {
        schema: { summary: `${v.label} full order book at an instant`, tags: [v.venue], security, querystring: query, response: { 200: answer, ...errors } },
        onRequest: requireKey,
      },
      async (req, reply) => {
        const qs = req.query as { asset_id?: string; condition_id?: string; ticker?: string; timestamp: number; depth?: number };
        const floor = dataFloor(v, config);
        if (floor !== undefined && qs.timestamp < earliestMs(floor)) throw invalidParameter('timestamp', `${venueName(v)} data is served from ${floor} on`);
        let market = a ? qs.condition_id : qs.ticker!;
        if (market === undefined) {
          market = (await guard('ClickHouse', () => assetMarkets.marketOfAsset(qs.asset_id!))) ?? undefined;
          if (market === undefined) throw new ApiError(404, 'not_found', `no rolled-up data for asset_id ${qs.asset_id}: pass its condition_id`, 'asset_id');
        }
        const key = { venue: v.venue, market, asset: a ? qs.asset_id! : market };
        const book = await guard('ClickHouse', () => bookAt(bookEvents, key, qs.timestamp, qs.depth ?? DEPTH_DEFAULT));
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
  }
};
