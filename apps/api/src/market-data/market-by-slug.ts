import type { preValidationHookHandler } from 'fastify';
import type { z } from 'zod';
import type { CatalogueMarket } from '@booktape/storage';
import { ApiError, invalidParameter } from '../http/errors.ts';
import type { AnswerHeader } from '../http/openapi.ts';
import { MISSING, optionalField, parseConditionId, parseText, show } from '../http/params.ts';
import type { SlugLookupResult, SlugLookupService } from '../lookup/lookup.service.ts';
import { parseSlugInput, SLUG_LIMITS, type SlugQuery } from '../lookup/slug.ts';
import type { VenueApi } from './venues.ts';

/**
 * A market's slug and an outcome's name in place of its condition id and asset id (issue
 * 26, point 8): `?slug=will-x-happen&outcome=Yes` wherever `condition_id` and `asset_id`
 * are taken. A hook before validation resolves them through the slug lookup (the market
 * catalogue, then the live metadata API on a miss) and puts the ids into the query, so the
 * route, its cache tags, its billing and its request log see exactly the request the ids
 * would have made; the answer says which ids it used in X-Resolved-Condition-Id and
 * X-Resolved-Asset-Id. The rules (docs/api.md, "Slug and outcome"):
 * - slug together with condition_id, or outcome together with asset_id: 400;
 * - a slug nothing matches: 404; one naming an event of several markets: 400 listing their slugs;
 * - a slug whose existence cannot be told now (the metadata API failed, timed out or is busy):
 *   503 `lookup_unavailable` with Retry-After, never a 404 (the lookup service decides);
 * - outcome matched without regard to case or surrounding spaces; none matching: 400
 *   naming the outcomes there are; two matching (outcomes differing only in case): the
 *   exact spelling wins, else 400.
 */

/** How a route uses the outcome token: needs one, may take one, or serves every token of the market. */
export type OutcomeUse = 'required' | 'optional' | 'none';

export const RESOLVED_CONDITION_HEADER = 'x-resolved-condition-id';
export const RESOLVED_ASSET_HEADER = 'x-resolved-asset-id';

/** Outcome names are short labels; anything longer is no outcome. */
const OUTCOME_MAX = 200;
/** Market slugs listed in the answer to an ambiguous event slug. */
const LISTED_MAX = 20;
export interface SlugRoute {
  /** Query fields to spread after the route's own ids: the ids become optional, slug and outcome appear. */
  fields: Record<string, z.ZodType>;
  /** Route options: the resolving hook (none for a venue without slugs). */
  options: { preValidation?: preValidationHookHandler };
  /** Answer fields the route may add (OpenAPI). */
  answerHeaders: AnswerHeader[];
}

/**
 * What a route needs to take a slug (and outcome) for `v`'s ids. `marketRequired`: the route
 * cannot do without the market (the book finds it from the token when left out).
 */
export function slugRoute(v: VenueApi, lookup: Pick<SlugLookupService, 'lookup'>, opts: { marketRequired: boolean; outcome: OutcomeUse }): SlugRoute {
  if (!v.slugs) return { fields: {}, options: {}, answerHeaders: [] };
  const { marketParam } = v;
  const assetParam = opts.outcome !== 'none' ? v.asset?.param : undefined;
  const fields: Record<string, z.ZodType> = {
    [marketParam]: optionalField(
      parseConditionId,
      opts.marketRequired ? 'Market condition id, hex, with or without 0x, any case. Required unless `slug` names the market.' : 'Market condition id of the token; found from the rollups (or from `slug`) when left out.',
      { example: '0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1' },
    ),
    ...(assetParam && opts.outcome === 'required' ? { [assetParam]: optionalField(parseText(128), `${v.asset!.description} Required unless \`outcome\` (with \`slug\`) names it.`) } : {}),
    slug: optionalField(
      parseSlugInput,
      `Instead of ${marketParam}: the market's slug, or its URL at the venue (as GET /lookup/slug takes it). A slug naming an event of several markets is refused with their slugs. The ids used are in X-Resolved-Condition-Id${assetParam ? ' and X-Resolved-Asset-Id' : ''}.`,
      { example: 'will-btc-hit-100k' },
    ),
    ...(assetParam
      ? { outcome: optionalField(parseText(OUTCOME_MAX), `With \`slug\`, instead of ${assetParam}: the outcome's name (\`Yes\`, \`No\`, a team…), any case.`, { example: 'Yes' }) }
      : {}),
  };

  const preValidation: preValidationHookHandler = async (req, reply) => {
    const qs = { ...(req.query as Record<string, unknown>) };
    const once = (name: string): string | undefined => {
      const raw = qs[name];
      if (raw === undefined) return undefined;
      if (typeof raw !== 'string') throw invalidParameter(name, `${name} must be given once, as a string`);
      return raw;
    };
    const slugRaw = once('slug');
    const outcomeRaw = assetParam ? once('outcome') : undefined;
    if (!assetParam && qs.outcome !== undefined) {
      throw invalidParameter('outcome', `this route serves every outcome of the market: leave outcome out`);
    }
    if (slugRaw === undefined) {
      if (outcomeRaw !== undefined) throw invalidParameter('outcome', `outcome names an outcome of the market slug names: give slug too, or ${assetParam} instead`);
      if (opts.marketRequired && qs[marketParam] === undefined) throw new ApiError(400, 'missing_parameter', `${marketParam} ${MISSING} (or slug, the market's slug)`, marketParam);
      if (opts.outcome === 'required' && assetParam && qs[assetParam] === undefined) throw new ApiError(400, 'missing_parameter', `${assetParam} ${MISSING} (or slug and outcome)`, assetParam);
      return;
    }
    if (qs[marketParam] !== undefined) throw invalidParameter('slug', `give either slug or ${marketParam}, not both`);
    if (assetParam && outcomeRaw !== undefined && qs[assetParam] !== undefined) throw invalidParameter('outcome', `give either outcome or ${assetParam}, not both`);
    if (assetParam && outcomeRaw === undefined && qs[assetParam] !== undefined) throw invalidParameter(assetParam, `with slug, name the outcome token by outcome (its name), not by ${assetParam}`);
    if (opts.outcome === 'required' && outcomeRaw === undefined) throw new ApiError(400, 'missing_parameter', `outcome ${MISSING} with slug: the outcome's name (Yes, No, …)`, 'outcome');
    const slug = parseSlugInput(slugRaw);
    if (!slug.ok) throw invalidParameter('slug', `slug ${slug.message}`);
    let outcome: string | undefined;
    if (outcomeRaw !== undefined) {
      const o = parseText(OUTCOME_MAX)(outcomeRaw);
      if (!o.ok) throw invalidParameter('outcome', `outcome ${o.message}`);
      outcome = o.value;
    }

    const market = pickMarket(slug.value, await lookup.lookup(slug.value));
    delete qs.slug;
    delete qs.outcome;
    qs[marketParam] = market.conditionId;
    reply.header(RESOLVED_CONDITION_HEADER, market.conditionId);
    if (outcome !== undefined && assetParam) {
      const token = pickOutcome(market, outcome);
      qs[assetParam] = token;
      reply.header(RESOLVED_ASSET_HEADER, token);
    }
    req.query = qs;
  };

  return { fields, options: { preValidation }, answerHeaders: assetParam ? ['X-Resolved-Condition-Id', 'X-Resolved-Asset-Id'] : ['X-Resolved-Condition-Id'] };
}

const named = (q: SlugQuery): string => (q.form === 'slug' ? q.slug : q.form === 'market' ? q.market : q.form === 'event' ? q.event : `${q.event}/${q.market}`);

/** The one market a slug names: a 404 when none, a 400 listing them when an event of several. */
export function pickMarket(q: SlugQuery, found: SlugLookupResult | null): CatalogueMarket {
  if (found === null || found.markets.length === 0) throw new ApiError(404, 'not_found', `no market matches slug ${show(named(q), 80)}`, 'slug');
  if (found.markets.length === 1) return found.markets[0]!;
  const slugs = found.markets.map((m) => m.slug);
  const listed = slugs.slice(0, LISTED_MAX).map((s) => show(s, SLUG_LIMITS.inputMax)).join(', ');
  throw invalidParameter('slug', `slug ${show(named(q), 80)} names an event of ${slugs.length} markets: give one market's slug: ${listed}${slugs.length > LISTED_MAX ? ', …' : ''}`);
}

/** The token of the outcome named (any case, spaces around ignored); 400 naming the outcomes there are. */
export function pickOutcome(m: CatalogueMarket, outcome: string): string {
  const want = outcome.trim();
  const fold = (s: string) => s.trim().normalize('NFC').toLowerCase();
  const n = Math.min(m.outcomes.length, m.tokenIds.length);
  if (n === 0) throw new ApiError(404, 'not_found', `the market catalogue knows no outcome tokens of ${m.slug} (${m.conditionId}): pass asset_id`, 'outcome');
  const candidates = [...Array(n).keys()].filter((i) => fold(m.outcomes[i]!) === fold(want));
  const exact = candidates.filter((i) => m.outcomes[i]!.trim() === want);
  const pick = candidates.length === 1 ? candidates[0] : exact.length === 1 ? exact[0] : undefined;
  if (pick !== undefined) return m.tokenIds[pick]!;
  const there = m.outcomes.slice(0, n).map((o) => show(o, OUTCOME_MAX)).join(', ');
  if (candidates.length > 1) throw invalidParameter('outcome', `outcome ${show(want)} matches several outcomes of ${m.slug} without regard to case: spell it exactly, one of ${there}`);
  throw invalidParameter('outcome', `${m.slug} has no outcome ${show(want)}: its outcomes are ${there}`);
}
