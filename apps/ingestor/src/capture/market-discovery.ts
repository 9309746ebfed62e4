/**
 * Which exchange A (Polymarket) tokens to capture: explicit token ids, the tokens of explicit
 * condition ids, or markets discovered from the metadata (gamma) API. The API answers
 * `outcomes`, `outcomePrices` and `clobTokenIds` as JSON-encoded strings inside the JSON.
 *
 * Errors are thrown as MarketDiscoveryError with the URL and cause; the caller logs and retries
 * (nothing here retries or exits). The HTTP client and the parsing of the API's shapes live
 * in `@booktape/venues` (gamma.client.ts), shared with the market catalogue and slug lookup.
 */

import {
  MarketDiscoveryError,
  gammaEndpoint,
  gammaGet,
  parseGammaMarket,
  type DiscoveredMarket,
  type GammaRequestOptions,
} from '@booktape/venues';

export { MarketDiscoveryError, parseEncodedList, parseGammaMarket, type DiscoveredMarket } from '@booktape/venues';

export interface ExchangeASelection {
  source: 'tokens' | 'conditions' | 'discovery';
  /** Token ids to subscribe, deduplicated, each market's tokens adjacent. */
  tokenIds: string[];
  markets: DiscoveredMarket[];
  /** Condition ids asked for that the API did not return (source 'conditions'). */
  missing: string[];
  /** token id → condition id for the markets resolved through the API (for gap records). */
  tokenMarkets: Map<string, string>;
}

export interface ResolveExchangeAOptions extends GammaRequestOptions {
  /** Explicit token ids: used as they are, no API call. */
  tokenIds?: string[];
  /** Explicit condition ids: their tokens are looked up. */
  conditionIds?: string[];
  /** Discovery: at most this many markets (order book enabled, active, not closed). Default 100. */
  maxMarkets?: number;
  /** Discovery page size. Default 100. */
  pageSize?: number;
}

export function tokenMarketMap(markets: DiscoveredMarket[]): Map<string, string> {
  return new Map(markets.flatMap((m) => m.tokenIds.map((t): [string, string] => [t, m.conditionId])));
}

function tokensOf(markets: DiscoveredMarket[]): string[] {
  return [...new Set(markets.flatMap((m) => m.tokenIds))];
}

/** Active, open, order-book markets from the paged `/markets` list, up to maxMarkets. */
export async function discoverExchangeAMarkets(opts: ResolveExchangeAOptions): Promise<DiscoveredMarket[]> {
  const max = opts.maxMarkets ?? 100;
  const pageSize = Math.max(1, Math.min(opts.pageSize ?? 100, 500));
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxMarkets must be a positive integer, got ${max}`);
  const out: DiscoveredMarket[] = [];
  const seen = new Set<string>();
  // A cap on pages so that an API that ignores `offset` cannot loop forever.
  for (let offset = 0, pages = 0; out.length < max && pages < 10_000; offset += pageSize, pages++) {
    const url = gammaEndpoint(opts.gammaUrl, 'markets', [
      ['active', 'true'],
      ['closed', 'false'],
      ['limit', String(pageSize)],
      ['offset', String(offset)],
    ]);
    const page = await gammaGet(url, opts);
    if (!Array.isArray(page)) throw new MarketDiscoveryError(`market metadata API: expected a list from ${url}`, url);
    let fresh = 0;
    for (const raw of page) {
      const m = parseGammaMarket(raw);
      if (!m || seen.has(m.conditionId)) continue;
      seen.add(m.conditionId);
      fresh++;
      if (!m.enableOrderBook || !m.active || m.closed) continue;
      out.push(m);
      if (out.length >= max) break;
    }
    if (page.length < pageSize || fresh === 0) break;
  }
  return out;
}

/** Tokens for explicit condition ids (looked up in batches). */
export async function marketsForConditions(conditionIds: string[], opts: ResolveExchangeAOptions): Promise<{ markets: DiscoveredMarket[]; missing: string[] }> {
  const wanted = [...new Set(conditionIds.map((c) => (c.startsWith('0x') || c.startsWith('0X') ? c : `0x${c}`).toLowerCase()))];
  const found = new Map<string, DiscoveredMarket>();
  for (let i = 0; i < wanted.length; i += 50) {
    const batch = wanted.slice(i, i + 50);
    const url = gammaEndpoint(opts.gammaUrl, 'markets', [...batch.map((c): [string, string] => ['condition_ids', c]), ['limit', String(batch.length)]]);
    const page = await gammaGet(url, opts);
    if (!Array.isArray(page)) throw new MarketDiscoveryError(`market metadata API: expected a list from ${url}`, url);
    for (const raw of page) {
      const m = parseGammaMarket(raw);
      if (m && batch.includes(m.conditionId)) found.set(m.conditionId, m);
    }
  }
  const markets = wanted.map((c) => found.get(c)).filter((m): m is DiscoveredMarket => m !== undefined);
  return { markets, missing: wanted.filter((c) => !found.has(c)) };
}

/** Resolves the exchange A tokens to capture from configuration, else by discovery. */
export async function resolveExchangeATokens(opts: ResolveExchangeAOptions): Promise<ExchangeASelection> {
  const explicit = (opts.tokenIds ?? []).map((t) => t.trim()).filter((t) => t !== '');
  const conditions = (opts.conditionIds ?? []).map((c) => c.trim()).filter((c) => c !== '');
  if (explicit.length > 0 || conditions.length > 0) {
    let markets: DiscoveredMarket[] = [];
    let missing: string[] = [];
    if (conditions.length > 0) ({ markets, missing } = await marketsForConditions(conditions, opts));
    return {
      source: conditions.length > 0 ? 'conditions' : 'tokens',
      tokenIds: [...new Set([...explicit, ...tokensOf(markets)])],
      markets,
      missing,
      tokenMarkets: tokenMarketMap(markets),
    };
  }
  const markets = await discoverExchangeAMarkets(opts);
  return { source: 'discovery', tokenIds: tokensOf(markets), markets, missing: [], tokenMarkets: tokenMarketMap(markets) };
}
