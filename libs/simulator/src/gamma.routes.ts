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

function eventJson(e: SimEventA): Record<string, unknown> {
  return {
    id: e.id,
    ticker: e.slug,
    slug: e.slug,
    title: e.title,
    active: e.markets.some((m) => m.active),
    closed: e.markets.every((m) => m.closed),
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
  const q = url.searchParams;

  if (root === 'markets') {
    if (parts.length === 3 && parts[1] === 'slug') {
      const m = world.a.find((x) => x.slug === parts[2]);
      send(res, m ? 200 : 404, m ? marketJson(m, true) : { error: 'not found' });
      return true;
    }
    if (parts.length === 2) {
      const m = world.a.find((x) => x.id === parts[1]);
      send(res, m ? 200 : 404, m ? marketJson(m, true) : { error: 'not found' });
      return true;
    }
    if (parts.length !== 1) {
      send(res, 404, { error: 'not found' });
      return true;
    }
    const slugs = list(q, 'slug');
    const ids = list(q, 'id');
    const conditions = list(q, 'condition_ids').map((c) => c.toLowerCase());
    const tokens = list(q, 'clob_token_ids');
    const active = bool(q, 'active');
    const closed = bool(q, 'closed');
    const found = world.a.filter(
      (m) =>
        (slugs.length === 0 || slugs.includes(m.slug)) &&
        (ids.length === 0 || ids.includes(m.id)) &&
        (conditions.length === 0 || conditions.includes(m.conditionId)) &&
        (tokens.length === 0 || m.tokenIds.some((t) => tokens.includes(t))) &&
        (active === undefined || m.active === active) &&
        (closed === undefined || m.closed === closed),
    );
    const paged = page(found, q);
    if (typeof paged === 'string') send(res, 422, { error: paged });
    else send(res, 200, paged.map((m) => marketJson(m, true)));
    return true;
  }

  if (parts.length === 3 && parts[1] === 'slug') {
    const e = world.events.find((x) => x.slug === parts[2]);
    send(res, e ? 200 : 404, e ? eventJson(e) : { error: 'not found' });
    return true;
  }
  if (parts.length === 2) {
    const e = world.events.find((x) => x.id === parts[1]);
    send(res, e ? 200 : 404, e ? eventJson(e) : { error: 'not found' });
    return true;
  }
  if (parts.length !== 1) {
    send(res, 404, { error: 'not found' });
    return true;
  }
  const slugs = list(q, 'slug');
  const ids = list(q, 'id');
  const active = bool(q, 'active');
  const closed = bool(q, 'closed');
  const found = world.events
    .map((e) => ({ e, j: eventJson(e) }))
    .filter(
      ({ e, j }) =>
        (slugs.length === 0 || slugs.includes(e.slug)) &&
        (ids.length === 0 || ids.includes(e.id)) &&
        (active === undefined || j.active === active) &&
        (closed === undefined || j.closed === closed),
    );
  const paged = page(found, q);
  if (typeof paged === 'string') send(res, 422, { error: paged });
  else send(res, 200, paged.map(({ j }) => j));
  return true;
}
