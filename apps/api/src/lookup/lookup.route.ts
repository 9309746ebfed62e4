import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PUBLIC_SECURITY } from '../http/auth.ts';
import { errorBody, errorSchema, ERROR_CODES } from '../http/errors.ts';
import { requiredField, show } from '../http/params.ts';
import type { Services } from '../services.ts';
import { parseSlugInput, SLUG_LIMITS } from './slug.ts';

/** Interface §2.6, plus the market's outcome token ids and outcomes (in outcome order). */
const lookupMarket = z
  .object({
    conditionId: z.string().describe('Market condition id, 0x + lower case.'),
    question: z.string(),
    slug: z.string(),
    active: z.boolean(),
    closed: z.boolean(),
    clobTokenIds: z.array(z.string()).describe('Outcome (CLOB) token ids, the asset_id values of the raw data, in outcome order.'),
    outcomes: z.array(z.string()).describe('Outcome names, in the order of clobTokenIds.'),
  })
  .meta({ id: 'SlugLookupMarket' });

const lookupFound = z
  .object({
    success: z.literal(true),
    type: z.enum(['event', 'market']).describe('event: an event with several markets; market: a single market.'),
    event_title: z.string().describe('The event title (type event) or the market question (type market).'),
    event_slug: z.string().nullable().describe('Slug of the event the markets belong to, when known.'),
    markets: z.array(lookupMarket),
  })
  .meta({ id: 'SlugLookup', description: 'The event or market the slug names, with its markets.' });

const lookupMiss = z
  .object({
    success: z.literal(false),
    markets: z.array(lookupMarket).max(0),
    error: z.object({ code: z.enum(ERROR_CODES), message: z.string(), param: z.string().optional() }),
  })
  .describe('No event or market matches the slug.')
  .meta({ id: 'SlugLookupMiss' });

const slugParam = requiredField(
  parseSlugInput,
  `An event slug, a market slug, or a full URL (https://polymarket.com/event/<event>[/<market>], /market/<market>, sports pages; query string and fragment are ignored). At most ${SLUG_LIMITS.inputMax} characters.`,
  'https://polymarket.com/event/fed-decision-in-march',
);

/** `GET /lookup/slug` and its alias `GET /exchange-a/lookup/slug`: public, no key. */
export const lookupRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { lookup } = services;
  const schema = (summary: string) => ({
    summary,
    description:
      'Resolves an exchange A slug or URL into condition ids. No authentication. An unmatched slug (the metadata API said so) is a 404 with success: false and markets: []. A slug the market catalogue does not know while the metadata API is down, slow or busy is a 503 `lookup_unavailable` with Retry-After: whether it exists cannot be told.',
    tags: ['lookup'],
    security: PUBLIC_SECURITY,
    querystring: z.object({ slug: slugParam }),
    response: { 200: lookupFound, 400: errorSchema, 404: lookupMiss, 503: errorSchema },
  });

  for (const [path, summary] of [
    ['/lookup/slug', 'Resolve an exchange A slug or URL into condition ids'],
    ['/exchange-a/lookup/slug', 'Resolve an exchange A slug or URL (alias of GET /lookup/slug)'],
  ] as const) {
    app.get(path, { schema: schema(summary) }, async (req, reply) => {
      const found = await lookup.lookup(req.query.slug);
      if (!found) {
        const named = req.query.slug;
        const what = named.form === 'slug' ? named.slug : named.form === 'market' ? named.market : named.form === 'event' ? named.event : `${named.event}/${named.market}`;
        return reply.status(404).send({ success: false as const, markets: [], ...errorBody('not_found', `no event or market matches ${show(what, 80)}`, 'slug') });
      }
      return {
        success: true as const,
        type: found.type,
        event_title: found.eventTitle,
        event_slug: found.eventSlug,
        markets: found.markets.map((m) => ({
          conditionId: m.conditionId,
          question: m.question,
          slug: m.slug,
          active: m.active,
          closed: m.closed,
          clobTokenIds: m.tokenIds,
          outcomes: m.outcomes,
        })),
      };
    });
  }
};
