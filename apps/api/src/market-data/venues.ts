import type { z } from 'zod';
import type { Venue } from '@booktape/domain';
import { venueModules, type AnyVenueModule } from '@booktape/venues';
import type { ApiConfig } from '../config.ts';
import { q } from '../http/params.ts';
import { API_PREFIX } from '../http/prefix.ts';
import { exchangeARecord, exchangeBRecord } from './schemas.ts';

/**
 * How each venue shows in the API. Every per-venue route (raw data, ranges, availability,
 * market lists, summaries, coverage) is registered once per entry of VENUES, so a third
 * venue is one more entry in the venue registry (libs/venues/src/registry.ts) and its parsers
 * and record schema in PARSERS below.
 */
export interface VenueApi {
  /** Also the path segment (`/exchange-a/market/…`) and the OpenAPI tag. */
  venue: Venue;
  /**
   * The venue's own name, accepted in place of `venue` as the path segment of every route
   * (`/polymarket/market/data` is `/exchange-a/market/data`): the URL is rewritten before
   * routing (venueAliasRewrite), so the answer, cursors, billing and logs are the canonical route's.
   */
  pathAlias: string;
  /** Markets can be named by slug (and outcome tokens by outcome name) through the market catalogue (market-by-slug.ts). */
  slugs: boolean;
  /** In titles, as `Exchange A`; in sentences lower-cased (`exchange A`). */
  label: string;
  /** The query parameter naming a market, and its parser (which normalises the id). */
  marketParam: string;
  market: () => z.ZodType<string, string>;
  marketPrefix: () => z.ZodType<string | undefined, string | undefined>;
  /** The answer field naming the market, and the list answer's field of many. */
  marketField: string;
  marketListField: string;
  /** A raw record (OpenAPI) and what the venue's records are called. */
  record: z.ZodType;
  recordNoun: string;
  /** Data, range and summary routes are also served under `/market/…` (the interface's first paths). */
  legacyAliases: boolean;
  /** Market lists also carry the outcome tokens the market catalogue knows. */
  listsOutcomeTokens: boolean;
  /**
   * A market of this venue holds one book per outcome token (asset), named by this query
   * and answer field; undefined: the market is one book.
   */
  asset?: { param: string; description: string };
  summaryTitle: string;
}

/** The API's part of a venue's registry entry (libs/venues): its names, OpenAPI texts, and whether it has outcome tokens. */
const fromRegistry = (m: AnyVenueModule) => ({
  venue: m.venue,
  pathAlias: m.ownName,
  label: m.label.charAt(0).toUpperCase() + m.label.slice(1),
  listsOutcomeTokens: m.tokens,
  ...m.api,
});

/** Each venue's parsers and record schema (the API's own), keyed by venue. */
const PARSERS: { readonly [V in Venue]: Pick<VenueApi, 'market' | 'marketPrefix' | 'record'> } = {
  'exchange-a': { market: q.conditionId, marketPrefix: q.conditionIdPrefix, record: exchangeARecord },
  'exchange-b': { market: q.ticker, marketPrefix: q.tickerPrefix, record: exchangeBRecord },
};

export const VENUES: readonly VenueApi[] = venueModules().map((m) => ({ ...fromRegistry(m), ...PARSERS[m.venue] }));

/** The first UTC date served (earlier data is refused; EXCHANGE_*_DATA_FLOOR); undefined: no floor. */
export const dataFloor = (v: VenueApi, config: ApiConfig): string | undefined => config.dataFloors[v.venue] ?? undefined;

/** `exchange A`: the label inside a sentence. */
export const venueName = (v: VenueApi) => v.label.charAt(0).toLowerCase() + v.label.slice(1);

/** The route's path and, when the venue has them, its legacy alias under `/market/…`. */
export function venuePaths(v: VenueApi, path: string): Array<{ url: string; alias: boolean }> {
  return [{ url: `/${v.venue}/market/${path}`, alias: false }, ...(v.legacyAliases ? [{ url: `/market/${path}`, alias: true }] : [])];
}

/** The market a validated query names (the schema normalised it). */
export const marketOf = (v: VenueApi, query: unknown): string => (query as Record<string, string>)[v.marketParam]!;

/** `/api/v1/polymarket/` → `/api/v1/exchange-a/`: each venue's path alias as a prefix, with its canonical one. */
const ALIAS_PREFIXES: ReadonlyArray<[string, string]> = VENUES.map((v) => [`${API_PREFIX}/${v.pathAlias}/`, `${API_PREFIX}/${v.venue}/`]);

/**
 * The URL routed for a request's URL: a venue's path alias replaced by the venue (exact
 * case, as every path here). Rewriting rather than registering every route twice keeps one
 * route per operation, so the two spellings cannot drift apart in answer, cursor scope,
 * cache tag, billing or metrics; the OpenAPI document says so once (docs/api.md, "Venue names").
 */
export function venueAliasRewrite(url: string): string {
  for (const [alias, canonical] of ALIAS_PREFIXES) if (url.startsWith(alias)) return canonical + url.slice(alias.length);
  return url;
}
