import type { CatalogueMarket } from '@booktape/domain';

/**
 * Client of exchange A's (Polymarket's) metadata API, "gamma": the one place that knows
 * its URLs and shapes. Used by capture (which markets to subscribe), the ingestor's market
 * catalogue and the API's slug lookup.
 *
 * Venue quirks: `outcomes`, `outcomePrices` and `clobTokenIds` are JSON-encoded strings
 * inside the JSON (`"[\"Yes\", \"No\"]"`); booleans occasionally arrive as strings; events
 * embed their markets (without an `events` back-reference), while markets embed their
 * events (`events: [{ id, slug, title, … }]`).
 *
 * Errors are thrown as MarketDiscoveryError with the URL and cause; callers log and retry
 * (nothing here retries or exits).
 */

export interface GammaRequestOptions {
  /** e.g. https://gamma-api.polymarket.com */
  gammaUrl: string;
  /** Per request. Default 10 s. */
  timeoutMs?: number;
  /** Cancels the request (on top of the timeout), e.g. when the caller stops. */
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

export class MarketDiscoveryError extends Error {
  constructor(
    message: string,
    readonly url: string,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'MarketDiscoveryError';
  }
}

/** What capture needs of a market. */
export interface DiscoveredMarket {
  conditionId: string;
  slug: string | null;
  question: string | null;
  /** In outcome order (YES first for binary markets). */
  tokenIds: string[];
  outcomes: string[];
  eventSlug: string | null;
  negRisk: boolean;
  enableOrderBook: boolean;
  active: boolean;
  closed: boolean;
}

export interface GammaEvent {
  id: string | null;
  slug: string;
  title: string;
  markets: CatalogueMarket[];
}

/** A JSON-encoded list string (`"[\"a\", \"b\"]"`) or an actual list → strings; else []. */
export function parseEncodedList(value: unknown): string[] {
  let v = value;
  if (typeof v === 'string') {
    const s = v.trim();
    if (s === '') return [];
    try {
      v = JSON.parse(s);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(v)) return [];
  return v.filter((x) => typeof x === 'string' || typeof x === 'number').map((x) => String(x));
}

function bool(v: unknown, fallback: boolean): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  return fallback;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Ids arrive as strings or numbers. */
function id(v: unknown): string | null {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return str(v);
}

function record(v: unknown): Record<string, unknown> | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

const CONDITION_ID = /^(0x)?[0-9a-fA-F]{1,128}$/;

/** One gamma market object → DiscoveredMarket, or null when it has no condition id or tokens. */
export function parseGammaMarket(raw: unknown): DiscoveredMarket | null {
  const m = record(raw);
  if (!m) return null;
  const conditionId = str(m.conditionId ?? m.condition_id);
  const tokenIds = parseEncodedList(m.clobTokenIds ?? m.clob_token_ids);
  if (conditionId === null || tokenIds.length === 0) return null;
  const events = Array.isArray(m.events) ? (m.events as Array<Record<string, unknown>>) : [];
  return {
    conditionId: conditionId.toLowerCase(),
    slug: str(m.slug),
    question: str(m.question),
    tokenIds,
    outcomes: parseEncodedList(m.outcomes),
    eventSlug: str(events[0]?.slug),
    negRisk: bool(m.negRisk, false),
    // Markets without the flag predate it and trade on the order book.
    enableOrderBook: bool(m.enableOrderBook, true),
    active: bool(m.active, true),
    closed: bool(m.closed, false),
  };
}

/**
 * One gamma market object → a catalogue entry, or null without a usable condition id.
 * `event` is the event it was embedded in (event listings); otherwise the market's own
 * first `events` entry is used.
 */
export function parseGammaCatalogueMarket(raw: unknown, event?: { id: string | null; slug: string; title: string }): CatalogueMarket | null {
  const m = record(raw);
  if (!m) return null;
  const conditionId = str(m.conditionId ?? m.condition_id)?.trim() ?? null;
  if (conditionId === null || !CONDITION_ID.test(conditionId)) return null;
  const hex = conditionId.toLowerCase().replace(/^0x/, '');
  const own = Array.isArray(m.events) ? record(m.events[0]) : null;
  return {
    conditionId: `0x${hex}`,
    marketId: id(m.id),
    slug: str(m.slug) ?? '',
    question: str(m.question) ?? '',
    active: bool(m.active, true),
    closed: bool(m.closed, false),
    tokenIds: parseEncodedList(m.clobTokenIds ?? m.clob_token_ids),
    outcomes: parseEncodedList(m.outcomes),
    eventId: event ? event.id : id(own?.id),
    eventSlug: event ? event.slug : str(own?.slug),
    eventTitle: event ? event.title : str(own?.title),
  };
}

/** One gamma event object (with its embedded markets) → GammaEvent, or null without a slug. */
export function parseGammaEvent(raw: unknown): GammaEvent | null {
  const e = record(raw);
  if (!e) return null;
  const slug = str(e.slug);
  if (slug === null) return null;
  const head = { id: id(e.id), slug, title: str(e.title) ?? str(e.ticker) ?? slug };
  const markets = (Array.isArray(e.markets) ? e.markets : [])
    .map((m) => parseGammaCatalogueMarket(m, head))
    .filter((m): m is CatalogueMarket => m !== null);
  return { ...head, markets };
}

/** GET a gamma URL and parse its JSON; failures become MarketDiscoveryError. */
export async function gammaGet(url: string, opts: GammaRequestOptions): Promise<unknown> {
  const doFetch = opts.fetch ?? fetch;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  let res: Response;
  try {
    res = await doFetch(url, { headers: { accept: 'application/json' }, signal });
  } catch (err) {
    const cause = err as Error;
    const why = cause.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : cause.message;
    throw new MarketDiscoveryError(`market metadata API unreachable (${url}): ${why}`, url, err);
  }
  if (!res.ok) {
    const body = await res.text().catch(() => '');
    throw new MarketDiscoveryError(`market metadata API answered HTTP ${res.status} for ${url}: ${body.slice(0, 200)}`, url);
  }
  try {
    return await res.json();
  } catch (err) {
    throw new MarketDiscoveryError(`market metadata API answered something that is not JSON for ${url}`, url, err);
  }
}

/** `<gammaUrl>/<path>?<params>`; a gamma URL with a path keeps it. */
export function gammaEndpoint(gammaUrl: string, path: string, params: Array<[string, string]>): string {
  const url = new URL(path, gammaUrl.endsWith('/') ? gammaUrl : `${gammaUrl}/`);
  for (const [k, v] of params) url.searchParams.append(k, v);
  return url.toString();
}

async function getList(path: string, params: Array<[string, string]>, opts: GammaRequestOptions): Promise<unknown[]> {
  const url = gammaEndpoint(opts.gammaUrl, path, params);
  const page = await gammaGet(url, opts);
  if (!Array.isArray(page)) throw new MarketDiscoveryError(`market metadata API: expected a list from ${url}`, url);
  return page;
}

/** The event with exactly this slug (its markets embedded), or null. */
export async function fetchGammaEventBySlug(slug: string, opts: GammaRequestOptions): Promise<GammaEvent | null> {
  const page = await getList('events', [['slug', slug]], opts);
  for (const raw of page) {
    const e = parseGammaEvent(raw);
    if (e && e.slug === slug) return e;
  }
  return null;
}

/** The markets with exactly this slug (normally one), each with its event. */
export async function fetchGammaMarketsBySlug(slug: string, opts: GammaRequestOptions): Promise<CatalogueMarket[]> {
  const page = await getList('markets', [['slug', slug]], opts);
  return page.map((raw) => parseGammaCatalogueMarket(raw)).filter((m): m is CatalogueMarket => m !== null && m.slug === slug);
}

/** Markets by condition id (as many as the API returns of them; batches of at most 50). */
export async function fetchGammaMarketsByConditionIds(conditionIds: string[], opts: GammaRequestOptions): Promise<CatalogueMarket[]> {
  const out: CatalogueMarket[] = [];
  for (let i = 0; i < conditionIds.length; i += 50) {
    const batch = conditionIds.slice(i, i + 50);
    const page = await getList('markets', [...batch.map((c): [string, string] => ['condition_ids', c]), ['limit', String(batch.length)]], opts);
    for (const raw of page) {
      const m = parseGammaCatalogueMarket(raw);
      if (m && batch.includes(m.conditionId)) out.push(m);
    }
  }
  return out;
}

/** One page of the event list (markets embedded), in the API's order. */
export async function fetchGammaEventsPage(
  filter: { active?: boolean; closed?: boolean; limit: number; offset: number },
  opts: GammaRequestOptions,
): Promise<{ events: GammaEvent[]; size: number }> {
  const params: Array<[string, string]> = [];
  if (filter.active !== undefined) params.push(['active', String(filter.active)]);
  if (filter.closed !== undefined) params.push(['closed', String(filter.closed)]);
  params.push(['limit', String(filter.limit)], ['offset', String(filter.offset)]);
  const page = await getList('events', params, opts);
  return { events: page.map(parseGammaEvent).filter((e): e is GammaEvent => e !== null), size: page.length };
}
