import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimEventA, SimMarketA, World } from './world.ts';

/**
 * Polymarket metadata (gamma) routes over the simulated exchange A markets. As on the real
 * API, `outcomes`, `outcomePrices` and `clobTokenIds` are JSON-encoded strings inside the JSON.
 *
 *   GET /markets?slug=&id=&condition_ids=&clob_token_ids=&active=&closed=&limit=&offset=
 *   GET /markets/slug/<slug>, /markets/<id>
 *   GET /events?slug=&id=&active=&closed=&limit=&offset=
 *   GET /events/slug/<slug>, /events/<id>
 */

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;

/** `["a", "b"]` with the venue's `", "` separator. */
function encodedList(items: string[]): string {
  return `[${items.map((s) => JSON.stringify(s)).join(', ')}]`;
}

function outcomePrices(m: SimMarketA): string[] {
  const [bid, ask] = m.book.yesTop();
  const yes = bid > 0 && ask < 1000 ? (bid + ask) / 2 : m.lastTrade;
  const fmt = (u: number): string => String(Number((u / 1000).toFixed(4)));
  return [fmt(yes), fmt(1000 - yes)];
}

function marketJson(m: SimMarketA, withEvent: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: m.id,
    question: m.question,
    conditionId: m.conditionId,
    slug: m.slug,
    endDate: '2026-12-31T12:00:00Z',
    active: m.active,
    closed: m.closed,
    archived: false,
    outcomes: encodedList(['Yes', 'No']),
    outcomePrices: encodedList(outcomePrices(m)),
    clobTokenIds: encodedList(m.tokenIds),
    enableOrderBook: m.enableOrderBook,
    negRisk: m.negRisk,
    orderPriceMinTickSize: Number(m.tickSize),
    orderMinSize: 5,
  };
  if (withEvent) out.events = [{ id: m.event.id, slug: m.event.slug, title: m.event.title }];
  return out;
}

/** An event is active while any of its markets is, closed once all of them are. */
const eventActive = (e: SimEventA) => e.markets.some((m) => m.active);
const eventClosed = (e: SimEventA) => e.markets.every((m) => m.closed);

function eventJson(e: SimEventA): Record<string, unknown> {
  return {
    id: e.id,
    ticker: e.slug,
    slug: e.slug,
    title: e.title,
    active: eventActive(e),
    closed: eventClosed(e),
    markets: e.markets.map((m) => marketJson(m, false)),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function bool(q: URLSearchParams, name: string): boolean | undefined {
  const v = q.get(name);
  return v === null ? undefined : v === 'true';
}

/** Multi-valued parameter: repeated (`a=1&a=2`) or comma-separated (`a=1,2`). */
function list(q: URLSearchParams, name: string): string[] {
  return q.getAll(name).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}

function page<T>(items: T[], q: URLSearchParams): T[] | string {
  const limitRaw = q.get('limit');
  const offsetRaw = q.get('offset');
  const limit = limitRaw === null ? DEFAULT_LIMIT : Number(limitRaw);
  const offset = offsetRaw === null ? 0 : Number(offsetRaw);
  if (!Number.isInteger(limit) || limit < 0) return 'invalid limit';
  if (!Number.isInteger(offset) || offset < 0) return 'invalid offset';
  return items.slice(offset, offset + Math.min(limit, MAX_LIMIT));
}

/** The `/markets?…` list filter. */
function marketFilter(q: URLSearchParams): (m: SimMarketA) => boolean {
  const slugs = list(q, 'slug');
  const ids = list(q, 'id');
  const conditions = list(q, 'condition_ids').map((c) => c.toLowerCase());
  const tokens = list(q, 'clob_token_ids');
  const active = bool(q, 'active');
  const closed = bool(q, 'closed');
  return (m) =>
    (slugs.length === 0 || slugs.includes(m.slug)) &&
    (ids.length === 0 || ids.includes(m.id)) &&
    (conditions.length === 0 || conditions.includes(m.conditionId)) &&
    (tokens.length === 0 || m.tokenIds.some((t) => tokens.includes(t))) &&
    (active === undefined || m.active === active) &&
    (closed === undefined || m.closed === closed);
}

/** The `/events?…` list filter. */
function eventFilter(q: URLSearchParams): (e: SimEventA) => boolean {
  const slugs = list(q, 'slug');
  const ids = list(q, 'id');
  const active = bool(q, 'active');
  const closed = bool(q, 'closed');
  return (e) =>
    (slugs.length === 0 || slugs.includes(e.slug)) &&
    (ids.length === 0 || ids.includes(e.id)) &&
    (active === undefined || eventActive(e) === active) &&
    (closed === undefined || eventClosed(e) === closed);
}

/**
 * One gamma collection: `/<root>/slug/<slug>` and `/<root>/<id>` answer one item, `/<root>?…`
 * a page of the items the filter keeps.
 */
function serveCollection<T extends { id: string; slug: string }>(
  res: ServerResponse,
  parts: string[],
  q: URLSearchParams,
  items: readonly T[],
  filter: (q: URLSearchParams) => (item: T) => boolean,
  json: (item: T) => Record<string, unknown>,
): void {
  if (parts.length === 2 || (parts.length === 3 && parts[1] === 'slug')) {
    const item = parts.length === 3 ? items.find((x) => x.slug === parts[2]) : items.find((x) => x.id === parts[1]);
    send(res, item ? 200 : 404, item ? json(item) : { error: 'not found' });
    return;
  }
  if (parts.length !== 1) {
    send(res, 404, { error: 'not found' });
    return;
  }
  const paged = page(items.filter(filter(q)), q);
  if (typeof paged === 'string') send(res, 422, { error: paged });
  else send(res, 200, paged.map(json));
}

/** Handles a gamma request; returns false when the path is not a gamma route. */
export function handleGamma(world: World, req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? '/', 'http://simulator');
  const parts = url.pathname.split('/').filter((p) => p !== '').map(decodeURIComponent);
  const root = parts[0];
  if (root !== 'markets' && root !== 'events') return false;
  if (req.method !== 'GET') {
    send(res, 405, { error: 'method not allowed' });
    return true;
  }
  if (root === 'markets') serveCollection(res, parts, url.searchParams, world.a, marketFilter, (m) => marketJson(m, true));
  else serveCollection(res, parts, url.searchParams, world.events, eventFilter, eventJson);
  return true;
}
