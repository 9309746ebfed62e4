import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseEnv, silentLogger } from '@booktape/config';
import { MarketCatalogueRepository, type CatalogueMarket, type ClickHouse } from '@booktape/storage';
import { apiConfigFromEnv, apiEnvSchema } from '../config.ts';
import { UnavailableError } from '../http/errors.ts';
import { SlugLookupService } from './lookup.service.ts';
import { aMessage, bearer, startTestApi, type TestApi } from '../testing.ts';

/**
 * Slug lookup (interface §4.6) against the real store and a local fake of the metadata
 * API (gamma): answers from the catalogue, every URL form, misses, the live fallback and
 * its write-back, a metadata API that is down or silent, hostile input, and the asset ids
 * the exchange A market list gains from the catalogue.
 */

// ---------------------------------------------------------------- a fake metadata API

interface FakeMarket {
  id: string;
  question: string;
  conditionId: string;
  slug: string;
  active: boolean;
  closed: boolean;
  outcomes: string[];
  clobTokenIds: string[];
}
interface FakeEvent {
  id: string;
  slug: string;
  title: string;
  markets: FakeMarket[];
}

class FakeGamma {
  events: FakeEvent[] = [];
  /** hold: requests wait, unanswered, until release() answers them as `up` would. */
  mode: 'up' | 'down' | 'silent' | 'garbage' | 'events-down' | 'hold' = 'up';
  requests: string[] = [];
  private held: Array<() => void> = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** As the venue does: outcomes and clobTokenIds are JSON strings inside the JSON. */
  private market(m: FakeMarket, e: FakeEvent | null): Record<string, unknown> {
    return {
      id: m.id,
      question: m.question,
      conditionId: m.conditionId,
      slug: m.slug,
      active: m.active,
      closed: m.closed,
      outcomes: JSON.stringify(m.outcomes),
      outcomePrices: JSON.stringify(m.outcomes.map(() => '0.5')),
      clobTokenIds: JSON.stringify(m.clobTokenIds),
      enableOrderBook: true,
      ...(e ? { events: [{ id: e.id, slug: e.slug, title: e.title, ticker: e.slug }] } : {}),
    };
  }

  /** Answers the held requests (as `up`), and answers every later one so too. */
  release(): void {
    this.mode = 'up';
    for (const answer of this.held.splice(0)) answer();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.requests.push(req.url ?? '');
    if (this.mode === 'silent') return; // never answers
    if (this.mode === 'hold') {
      this.held.push(() => this.answer(req, res));
      return;
    }
    this.answer(req, res);
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    if (this.mode === 'down' || (this.mode === 'events-down' && req.url?.startsWith('/events'))) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('upstream unavailable');
      return;
    }
    if (this.mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>not json');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    const slug = url.searchParams.get('slug');
    let body: unknown;
    if (url.pathname === '/events') {
      body = this.events.filter((e) => e.slug === slug).map((e) => ({ id: e.id, ticker: e.slug, slug: e.slug, title: e.title, active: true, closed: false, markets: e.markets.map((m) => this.market(m, null)) }));
    } else if (url.pathname === '/markets') {
      body = this.events.flatMap((e) => e.markets.filter((m) => m.slug === slug).map((m) => this.market(m, e)));
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not found"}');
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }
}

// ---------------------------------------------------------------- fixtures

const cid = (n: number) => `0x${n.toString(16).padStart(4, '0')}${'5eed'.repeat(15)}`;
const tok = (n: number, k: number) => `${n}${k}${'7'.repeat(70)}`;

function entry(n: number, over: Partial<CatalogueMarket> = {}): CatalogueMarket {
  return {
    conditionId: cid(n),
    marketId: String(600 + n),
    slug: `market-${n}`,
    question: `Will ${n} happen?`,
    active: true,
    closed: false,
    tokenIds: [tok(n, 1), tok(n, 2)],
    outcomes: ['Yes', 'No'],
    eventId: null,
    eventSlug: null,
    eventTitle: null,
    ...over,
  };
}

const FED = { eventId: '71', eventSlug: 'fed-decision-in-march', eventTitle: 'Fed decision in March?' };
const CATALOGUE: CatalogueMarket[] = [
  entry(3, { ...FED, slug: 'fed-cuts-50-bps', question: 'Will the Fed cut 50 bps?', marketId: '603' }),
  entry(1, { ...FED, slug: 'fed-cuts-25-bps', question: 'Will the Fed cut 25 bps?', marketId: '601' }),
  entry(2, { ...FED, slug: 'fed-holds', question: 'Will the Fed hold?', marketId: '602', closed: true, active: false }),
  // A single-market event: its event and market share the slug, as at the venue.
  entry(4, { eventId: '72', eventSlug: 'will-btc-hit-100k', eventTitle: 'Will BTC hit 100k?', slug: 'will-btc-hit-100k', question: 'Will BTC hit 100k in 2026?' }),
  // A sports event with three outcomes.
  entry(5, { eventId: '73', eventSlug: 'nba-lal-bos-2026-03-01', eventTitle: 'Lakers vs. Celtics', slug: 'nba-lal-bos-2026-03-01-lal', question: 'Lakers win?' }),
  entry(6, { eventId: '73', eventSlug: 'nba-lal-bos-2026-03-01', eventTitle: 'Lakers vs. Celtics', slug: 'nba-lal-bos-2026-03-01-bos', question: 'Celtics win?' }),
];

const item = (m: CatalogueMarket) => ({ conditionId: m.conditionId, question: m.question, slug: m.slug, active: m.active, closed: m.closed, clobTokenIds: m.tokenIds, outcomes: m.outcomes });
const byId = (n: number) => CATALOGUE.find((m) => m.conditionId === cid(n))!;

const FED_ANSWER = { success: true, type: 'event', event_title: 'Fed decision in March?', event_slug: 'fed-decision-in-march', markets: [item(byId(1)), item(byId(2)), item(byId(3))] };
const CUT25_ANSWER = { success: true, type: 'market', event_title: 'Will the Fed cut 25 bps?', event_slug: 'fed-decision-in-march', markets: [item(byId(1))] };
const BTC_ANSWER = { success: true, type: 'market', event_title: 'Will BTC hit 100k in 2026?', event_slug: 'will-btc-hit-100k', markets: [item(byId(4))] };
const NBA_ANSWER = { success: true, type: 'event', event_title: 'Lakers vs. Celtics', event_slug: 'nba-lal-bos-2026-03-01', markets: [item(byId(5)), item(byId(6))] };

const GAMMA_TIMEOUT_MS = 5_000;
let t: TestApi;
let gamma: FakeGamma;
let repo: MarketCatalogueRepository;

beforeAll(async () => {
  gamma = new FakeGamma();
  await gamma.start();
  // Long enough that a busy machine does not turn a slow local answer into a timeout (a 503).
  t = await startTestApi({ slugLookup: { gammaUrl: gamma.url, timeoutMs: GAMMA_TIMEOUT_MS, missCacheMs: 60_000 } });
  repo = new MarketCatalogueRepository(t.ch);
  await repo.upsert(CATALOGUE);
});
afterAll(async () => {
  await t?.close();
  await gamma?.close();
});
beforeEach(() => {
  gamma.mode = 'up';
  gamma.requests = [];
});

const PATHS = ['/lookup/slug', '/exchange-a/lookup/slug'] as const;

async function lookup(slug: string | null, path: (typeof PATHS)[number] = '/lookup/slug', headers: Record<string, string> = {}) {
  const qs = slug === null ? '' : `?slug=${encodeURIComponent(slug)}`;
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${path}${qs}`, headers });
  return { status: res.statusCode, body: res.json() as Record<string, any>, retryAfter: res.headers['retry-after'] };
}

/** "Cannot tell now": 503 lookup_unavailable naming the slug, with a Retry-After. */
const cannotTell = (retryAfter: string) => ({ status: 503, retryAfter, body: { error: { code: 'lookup_unavailable', message: expect.stringMatching(/retry/), param: 'slug' } } });

// ---------------------------------------------------------------- tests

describe('answers from the catalogue', () => {
  it.each(PATHS)('%s: an event slug answers the event with all its markets, in the venue’s id order', async (path) => {
    const r = await lookup('fed-decision-in-march', path);
    expect(r).toEqual({ status: 200, body: FED_ANSWER });
    expect(gamma.requests).toEqual([]); // no live call on a catalogue hit
  });

  it.each(PATHS)('%s: a market slug answers that market, its question as the title', async (path) => {
    expect(await lookup('fed-cuts-25-bps', path)).toEqual({ status: 200, body: CUT25_ANSWER });
  });

  it('an event with a single market answers type market', async () => {
    expect(await lookup('will-btc-hit-100k')).toEqual({ status: 200, body: BTC_ANSWER });
  });

  it('needs no API key, and ignores one that is invalid', async () => {
    expect((await lookup('fed-holds', '/lookup/slug', bearer('bt_live_not-a-key'))).status).toBe(200);
    expect((await lookup('fed-holds', '/exchange-a/lookup/slug', { authorization: 'garbage' })).status).toBe(200);
  });
});

describe('every URL form', () => {
  it.each<[string, object]>([
    ['https://polymarket.com/event/fed-decision-in-march', FED_ANSWER],
    ['https://polymarket.com/event/fed-decision-in-march/', FED_ANSWER],
    ['https://polymarket.com/event/fed-decision-in-march?tid=1771234567#comments', FED_ANSWER],
    ['http://www.polymarket.com/event/fed-decision-in-march', FED_ANSWER],
    ['polymarket.com/event/fed-decision-in-march', FED_ANSWER],
    ['/event/fed-decision-in-march', FED_ANSWER],
    ['https://polymarket.com/es/event/fed-decision-in-march', FED_ANSWER],
    ['fed-decision-in-march?tid=1', FED_ANSWER],
    ['https://polymarket.com/event/fed-decision-in-march/fed-cuts-25-bps', CUT25_ANSWER],
    ['https://polymarket.com/event/fed-decision-in-march/fed-cuts-25-bps?tid=9#x', CUT25_ANSWER],
    // A market slug the catalogue does not know under an event it knows: the event.
    ['https://polymarket.com/event/fed-decision-in-march/no-such-market', FED_ANSWER],
    ['https://polymarket.com/market/fed-cuts-25-bps', CUT25_ANSWER],
    ['https://polymarket.com/market/fed-cuts-25-bps?tid=3', CUT25_ANSWER],
    // A legacy market URL of a single-market event (slug shared by both).
    ['https://polymarket.com/market/will-btc-hit-100k', BTC_ANSWER],
    ['https://polymarket.com/event/will-btc-hit-100k', BTC_ANSWER],
    // Sports pages: the last segment.
    ['https://polymarket.com/sports/nba/games/week/18/nba-lal-bos-2026-03-01', NBA_ANSWER],
    ['https://polymarket.com/sports/nba/nba-lal-bos-2026-03-01?tab=props', NBA_ANSWER],
    ['https://polymarket.com/sports/nba/nba-lal-bos-2026-03-01/nba-lal-bos-2026-03-01-bos', { success: true, type: 'market', event_title: 'Celtics win?', event_slug: 'nba-lal-bos-2026-03-01', markets: [item(byId(6))] }],
  ])('%s', async (url, expected) => {
    for (const path of PATHS) expect(await lookup(url, path)).toEqual({ status: 200, body: expected });
  });
});

describe('misses', () => {
  it.each(PATHS)('%s: an unknown slug is a 404 with success false, no markets and the error body', async (path) => {
    const slug = `nobody-knows-this-${path.length}`;
    const r = await lookup(slug, path);
    expect(r).toEqual({ status: 404, retryAfter: undefined, body: { success: false, markets: [], error: { code: 'not_found', message: `no event or market matches "${slug}"`, param: 'slug' } } });
    // The live API was asked, as an event and as a market.
    expect(gamma.requests.map((u) => u.split('?')[0]).sort()).toEqual(['/events', '/markets']);
  });

  it('a miss is not asked of the live API again for a while, whatever its URL form', async () => {
    expect((await lookup('still-unknown-slug')).status).toBe(404);
    const asked = gamma.requests.length;
    expect(asked).toBe(2);
    expect((await lookup('https://polymarket.com/event/still-unknown-slug?x=1')).status).toBe(404);
    expect((await lookup('still-unknown-slug')).status).toBe(404);
    expect(gamma.requests.length).toBe(asked);
  });

  it('concurrent identical misses share one live call', async () => {
    const rs = await Promise.all(Array.from({ length: 20 }, () => lookup('flood-of-the-same-unknown')));
    expect(rs.every((r) => r.status === 404)).toBe(true);
    expect(gamma.requests.length).toBe(2);
  });
});

describe('live fallback', () => {
  it('an event only the metadata API knows is answered from it and written to the catalogue', async () => {
    gamma.events.push({
      id: '81',
      slug: 'new-event-live',
      title: 'A brand new event',
      markets: [
        { id: '902', question: 'Option B?', conditionId: cid(0x902).toUpperCase().replace('0X', '0x'), slug: 'new-event-live-b', active: true, closed: false, outcomes: ['Yes', 'No'], clobTokenIds: [tok(902, 1), tok(902, 2)] },
        { id: '901', question: 'Option A?', conditionId: cid(0x901), slug: 'new-event-live-a', active: true, closed: false, outcomes: ['Yes', 'No'], clobTokenIds: [tok(901, 1), tok(901, 2)] },
      ],
    });
    const expected = {
      success: true,
      type: 'event',
      event_title: 'A brand new event',
      event_slug: 'new-event-live',
      markets: [
        { conditionId: cid(0x901), question: 'Option A?', slug: 'new-event-live-a', active: true, closed: false, clobTokenIds: [tok(901, 1), tok(901, 2)], outcomes: ['Yes', 'No'] },
        { conditionId: cid(0x902), question: 'Option B?', slug: 'new-event-live-b', active: true, closed: false, clobTokenIds: [tok(902, 1), tok(902, 2)], outcomes: ['Yes', 'No'] },
      ],
    };
    expect(await lookup('https://polymarket.com/event/new-event-live')).toEqual({ status: 200, body: expected });
    expect(gamma.requests.length).toBeGreaterThan(0);

    // Written back: the catalogue has both markets with their event, and answers by itself now.
    const stored = await repo.findByEventSlug('new-event-live');
    expect(stored.map((m) => [m.conditionId, m.eventTitle, m.marketId])).toEqual([
      [cid(0x901), 'A brand new event', '901'],
      [cid(0x902), 'A brand new event', '902'],
    ]);
    gamma.mode = 'down';
    gamma.requests = [];
    expect(await lookup('new-event-live', '/exchange-a/lookup/slug')).toEqual({ status: 200, body: expected });
    expect(await lookup('new-event-live-b')).toMatchObject({ status: 200, body: { type: 'market', event_title: 'Option B?', event_slug: 'new-event-live' } });
    expect(gamma.requests).toEqual([]);
  });

  it('a market only the metadata API knows (legacy /market/ URL) is answered with its event', async () => {
    gamma.events.push({
      id: '82',
      slug: 'live-multi',
      title: 'Live multi',
      markets: [
        { id: '911', question: 'Live X?', conditionId: cid(0x911), slug: 'live-multi-x', active: true, closed: true, outcomes: ['Up', 'Down'], clobTokenIds: [tok(911, 1), tok(911, 2)] },
        { id: '912', question: 'Live Y?', conditionId: cid(0x912), slug: 'live-multi-y', active: true, closed: false, outcomes: ['Yes', 'No'], clobTokenIds: [tok(912, 1), tok(912, 2)] },
      ],
    });
    const r = await lookup('https://polymarket.com/market/live-multi-x?tid=5');
    expect(r).toEqual({
      status: 200,
      body: { success: true, type: 'market', event_title: 'Live X?', event_slug: 'live-multi', markets: [{ conditionId: cid(0x911), question: 'Live X?', slug: 'live-multi-x', active: true, closed: true, clobTokenIds: [tok(911, 1), tok(911, 2)], outcomes: ['Up', 'Down'] }] },
    });
    expect((await repo.findByMarketSlug('live-multi-x'))[0]).toMatchObject({ eventSlug: 'live-multi', eventTitle: 'Live multi', outcomes: ['Up', 'Down'] });
    // Written with its whole event, so the event answers complete from the catalogue alone.
    gamma.mode = 'down';
    expect(await lookup('live-multi')).toMatchObject({ status: 200, body: { type: 'event', event_title: 'Live multi', markets: [{ slug: 'live-multi-x' }, { slug: 'live-multi-y' }] } });
  });

  it('a live market whose event cannot be read is answered but not written (its event would look incomplete)', async () => {
    gamma.events.push({
      id: '84',
      slug: 'half-known',
      title: 'Half known',
      markets: [
        { id: '931', question: 'H1?', conditionId: cid(0x931), slug: 'half-known-1', active: true, closed: false, outcomes: ['Yes', 'No'], clobTokenIds: ['31', '32'] },
        { id: '932', question: 'H2?', conditionId: cid(0x932), slug: 'half-known-2', active: true, closed: false, outcomes: ['Yes', 'No'], clobTokenIds: ['33', '34'] },
      ],
    });
    gamma.mode = 'events-down';
    expect(await lookup('https://polymarket.com/market/half-known-1')).toMatchObject({ status: 200, body: { type: 'market', event_slug: 'half-known', markets: [{ conditionId: cid(0x931) }] } });
    expect(await repo.findByMarketSlug('half-known-1')).toEqual([]);
    gamma.mode = 'up';
    expect(await lookup('half-known')).toMatchObject({ status: 200, body: { type: 'event', markets: [{ slug: 'half-known-1' }, { slug: 'half-known-2' }] } });
  });

  it.each(['down', 'garbage', 'events-down'] as const)('a metadata API that is %s: catalogue hits still answer; a miss cannot be told, a 503 lookup_unavailable (not a 404, not remembered)', async (mode) => {
    gamma.mode = mode;
    expect((await lookup('fed-decision-in-march')).status).toBe(200);
    const slug = `arrives-later-${mode}`;
    for (const path of PATHS) expect(await lookup(slug, path)).toEqual(cannotTell('5'));
    // Once the API is back, the same slug is asked again and found.
    gamma.mode = 'up';
    gamma.events.push({ id: '83', slug, title: 'Later', markets: [{ id: '921', question: 'Later?', conditionId: cid(0x921 + mode.length), slug: `${slug}-m`, active: true, closed: false, outcomes: ['Yes', 'No'], clobTokenIds: ['1', '2'] }] });
    expect(await lookup(slug)).toMatchObject({ status: 200, body: { type: 'market', event_slug: slug } });
  });

  it('at most 16 live lookups run at once: a flood of distinct unknown slugs asks no more, the rest are a 503 to retry shortly', async () => {
    gamma.mode = 'hold';
    let answered = 0;
    const rs = Array.from({ length: 24 }, (_, i) => lookup(`flood-distinct-${i}`).finally(() => answered++));
    // 16 asked (as an event and as a market), held there; the other 8 answered without asking.
    await expect.poll(() => [gamma.requests.length, answered], { timeout: GAMMA_TIMEOUT_MS - 1_500 }).toEqual([32, 8]);
    gamma.release();
    const all = await Promise.all(rs);
    expect(gamma.requests.length).toBe(16 * 2);
    // The asked ones: the API said no such slug. The others: not known not to exist.
    expect(all.filter((r) => r.status === 404)).toHaveLength(16);
    expect(all.filter((r) => r.status !== 404)).toEqual(Array(8).fill(cannotTell('1')));
    // The 503s are not remembered: asked again, and answered.
    gamma.requests = [];
    const refused = all.map((r, i) => [r, i] as const).filter(([r]) => r.status === 503).map(([, i]) => i);
    for (const i of refused.slice(0, 2)) expect((await lookup(`flood-distinct-${i}`)).status).toBe(404);
    expect(gamma.requests.length).toBe(4);
  });

  it('a silent metadata API costs at most the timeout, then a 503 lookup_unavailable', async () => {
    gamma.mode = 'silent';
    const started = Date.now();
    const r = await lookup('nobody-answers-for-this');
    expect(r).toEqual(cannotTell('5'));
    expect(Date.now() - started).toBeLessThan(GAMMA_TIMEOUT_MS + 2_000);
  });

  it('the data routes by slug: 503 lookup_unavailable when the metadata API cannot tell, 404 only when it says no such market', async () => {
    const key = await t.newKey();
    const data = async (slug: string) => {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-a/market/data?slug=${encodeURIComponent(slug)}&date=2026-03-01`, headers: bearer(key) });
      return { status: res.statusCode, body: res.json() as Record<string, any>, retryAfter: res.headers['retry-after'] };
    };
    for (const mode of ['down', 'silent'] as const) {
      gamma.mode = mode;
      expect(await data(`data-route-unknown-${mode}`)).toEqual(cannotTell('5'));
    }
    gamma.mode = 'up';
    expect(await data('data-route-unknown-down')).toEqual({ status: 404, retryAfter: undefined, body: { error: { code: 'not_found', message: 'no market matches slug "data-route-unknown-down"', param: 'slug' } } });
    // The cap: with 16 live lookups running, a data request by an unknown slug is not told "no such market".
    gamma.mode = 'hold';
    gamma.requests = [];
    const flood = Promise.all(Array.from({ length: 16 }, (_, i) => lookup(`data-route-flood-${i}`)));
    await expect.poll(() => gamma.requests.length, { timeout: GAMMA_TIMEOUT_MS - 1_500 }).toBe(32);
    expect(await data('data-route-while-busy')).toEqual(cannotTell('1'));
    gamma.release();
    expect((await flood).map((r) => r.status)).toEqual(Array(16).fill(404));
  });

  it('a slug found is kept inside the lookup service: asked again in any spelling, the catalogue is not read', async () => {
    let reads = 0;
    const counting = new Proxy(repo, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (prop === 'findByEventSlug' || prop === 'findByMarketSlug') return (...a: unknown[]) => (reads++, (v as (...x: unknown[]) => unknown).apply(target, a));
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const svc = new SlugLookupService({ catalogue: counting, log: silentLogger(), gamma: { url: gamma.url, timeoutMs: 400 }, missCacheMs: 60_000 });
    expect(await svc.lookup({ form: 'slug', slug: 'fed-decision-in-march' })).toMatchObject({ type: 'event', source: 'catalogue' });
    const first = reads;
    expect(first).toBeGreaterThan(0);
    expect(await svc.lookup({ form: 'event', event: 'fed-decision-in-march' })).toMatchObject({ type: 'event' });
    expect(await svc.lookup({ form: 'slug', slug: 'fed-decision-in-march' })).toMatchObject({ type: 'event' });
    expect(reads).toBe(first);
    // Misses are not kept as hits: a slug unknown a moment ago is looked for again.
    gamma.mode = 'down';
    await expect(svc.lookup({ form: 'slug', slug: 'not-yet-listed' })).rejects.toMatchObject({ statusCode: 503, code: 'lookup_unavailable' });
    const before = reads;
    await expect(svc.lookup({ form: 'slug', slug: 'not-yet-listed' })).rejects.toMatchObject({ code: 'lookup_unavailable' });
    expect(reads).toBeGreaterThan(before);
    // Kept for hitCacheMs only; 0 keeps nothing.
    const uncached = new SlugLookupService({ catalogue: counting, log: silentLogger(), gamma: null, missCacheMs: 0, hitCacheMs: 0 });
    await uncached.lookup({ form: 'slug', slug: 'fed-holds' });
    const once = reads;
    await uncached.lookup({ form: 'slug', slug: 'fed-holds' });
    expect(reads).toBeGreaterThan(once);
  });
});

describe('when the catalogue cannot be read', () => {
  /** The same engine, pointed at a database that does not exist: every read fails for real. */
  function brokenCatalogue(ch: ClickHouse): MarketCatalogueRepository {
    return new MarketCatalogueRepository({ ...ch, table: (name: string) => `no_such_database_x.${name}` });
  }

  it('asks the metadata API; a 503 when that gives no answer either', async () => {
    const svc = new SlugLookupService({ catalogue: brokenCatalogue(t.ch), log: silentLogger(), gamma: { url: gamma.url, timeoutMs: 400 }, missCacheMs: 60_000 });
    gamma.mode = 'up';
    const hit = await svc.lookup({ form: 'slug', slug: 'live-multi' });
    expect(hit).toMatchObject({ type: 'event', source: 'live', eventTitle: 'Live multi' });
    expect(await svc.lookup({ form: 'slug', slug: 'unknown-while-broken' })).toBeNull();
    gamma.mode = 'down';
    await expect(svc.lookup({ form: 'slug', slug: 'something-else' })).rejects.toMatchObject({ statusCode: 503, code: 'lookup_unavailable', retryAfterS: 5 });
    const catalogueOnly = new SlugLookupService({ catalogue: brokenCatalogue(t.ch), log: silentLogger(), gamma: null, missCacheMs: 0 });
    await expect(catalogueOnly.lookup({ form: 'slug', slug: 'fed-holds' })).rejects.toBeInstanceOf(UnavailableError);
    await expect(catalogueOnly.lookup({ form: 'slug', slug: 'fed-holds' })).rejects.toMatchObject({ statusCode: 503, code: 'service_unavailable' });
  });
});

describe('hostile input: 400 or 404 with the documented body, never 5xx', () => {
  const HOSTILE = [
    '',
    ' ',
    'a'.repeat(5000),
    'a'.repeat(300),
    `https://polymarket.com/event/${'b'.repeat(3000)}`,
    '%',
    '%zz',
    '%E0%A4%A',
    'https://polymarket.com/event/%E0%A4%A',
    'https://polymarket.com/event/%zz/%',
    "' OR 1=1 --",
    "x'); DROP TABLE booktape_test.market_catalogue; --",
    '{v:String}',
    '\\N',
    'ﬁ𝔘𝔫𝔦𝔠𝔬𝔡𝔢\u202e',
    '日本語のスラッグ',
    'élection-présidentielle-2027',
    '🎲',
    '\r\nX-Injected: 1',
    'javascript:alert(1)',
    'ftp://polymarket.com/event/x',
    'https://polymarket.com/',
    'https://polymarket.com/event/',
    '../../etc/passwd',
    '__proto__',
    'constructor',
  ];

  it.each(HOSTILE.map((h) => [h.length > 60 ? `${h.slice(0, 60)}… (${h.length})` : h, h]))('%j', async (_label, value) => {
    for (const path of PATHS) {
      const r = await lookup(value, path);
      expect([400, 404]).toContain(r.status);
      if (r.status === 400) {
        expect(r.body).toEqual({ error: { code: 'invalid_parameter', message: expect.stringMatching(/^slug /), param: 'slug' } });
      } else {
        expect(r.body).toEqual({ success: false, markets: [], error: { code: 'not_found', message: expect.any(String), param: 'slug' } });
      }
    }
  });

  it('random bytes, percent-encoded as they come, never make a 5xx', async () => {
    const pct = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
    const raw = fc.oneof(
      fc.string({ maxLength: 40 }).map(pct),
      fc.string({ unit: 'binary', maxLength: 40 }).map(pct),
      fc.string({ unit: 'grapheme', maxLength: 30 }).map(encodeURIComponent),
      fc.webUrl({ withQueryParameters: true, withFragments: true }).map(encodeURIComponent),
      fc.string({ maxLength: 40 }), // sent as it is: `%` garbage and all
    );
    await fc.assert(
      fc.asyncProperty(raw, fc.constantFrom(...PATHS), async (q, path) => {
        const res = await t.app.inject({ method: 'GET', url: `/api/v1${path}?slug=${q}` });
        expect(res.statusCode).toBeLessThan(500);
        const body = res.json() as Record<string, any>;
        expect(body.error?.code ?? body.success).toBeDefined();
      }),
      { numRuns: 300 },
    );
  });

  it('a missing or repeated slug is a 400 naming it', async () => {
    expect(await lookup(null)).toEqual({ status: 400, body: { error: { code: 'missing_parameter', message: 'slug is required', param: 'slug' } } });
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/lookup/slug?slug=a&slug=b' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { code: 'invalid_parameter', param: 'slug' } });
  });

  it('the catalogue is intact afterwards', async () => {
    expect(await lookup('fed-decision-in-march')).toEqual({ status: 200, body: FED_ANSWER });
  });
});

describe('configuration', () => {
  const base = { CURSOR_SECRET: 'x'.repeat(32) };
  const config = (env: Record<string, string>) => apiConfigFromEnv(parseEnv(apiEnvSchema, { ...base, ...env }), { ...base, ...env }).slugLookup;

  it('defaults to the venue’s metadata API, 3 s, misses remembered 30 s; a timeout of 0 means catalogue only', () => {
    expect(config({})).toEqual({ gammaUrl: 'https://gamma-api.polymarket.com', timeoutMs: 3000, missCacheMs: 30_000 });
    expect(config({ EXCHANGE_A_GAMMA_URL: 'http://127.0.0.1:9/', SLUG_LOOKUP_TIMEOUT_MS: '250', SLUG_LOOKUP_MISS_CACHE_MS: '0' })).toEqual({ gammaUrl: 'http://127.0.0.1:9/', timeoutMs: 250, missCacheMs: 0 });
    expect(config({ SLUG_LOOKUP_TIMEOUT_MS: '0' })?.gammaUrl).toBeNull();
  });

  it('a malformed variable is named', () => {
    expect(() => config({ EXCHANGE_A_GAMMA_URL: 'ftp://x' })).toThrow(/EXCHANGE_A_GAMMA_URL/);
    expect(() => config({ SLUG_LOOKUP_TIMEOUT_MS: 'fast' })).toThrow(/SLUG_LOOKUP_TIMEOUT_MS/);
    expect(() => config({ SLUG_LOOKUP_MISS_CACHE_MS: '-1' })).toThrow(/SLUG_LOOKUP_MISS_CACHE_MS/);
  });
});

describe('documented', () => {
  it('both paths are in the OpenAPI document, public, with their query and answers', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as any;
    for (const path of PATHS) {
      const op = doc.paths[`/api/v1${path}`].get;
      expect(op.security).toEqual([]);
      expect(op.parameters.map((p: any) => [p.name, p.required])).toEqual([['slug', true]]);
      expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '404', '503']);
    }
    const market = doc.components.schemas.SlugLookupMarket;
    expect(Object.keys(market.properties)).toEqual(['conditionId', 'question', 'slug', 'active', 'closed', 'clobTokenIds', 'outcomes']);
    expect(Object.keys(doc.components.schemas.SlugLookup.properties)).toEqual(['success', 'type', 'event_title', 'event_slug', 'markets']);
  });
});

describe('exchange A market list: outcome token ids from the catalogue', () => {
  it('lists the asset ids of the markets the catalogue knows, and stays as it was for the others', async () => {
    const DAY = Date.UTC(2026, 2, 1);
    const unknown = `0xfeed${'0'.repeat(60)}`;
    await t.filler.insert('exchange-a', [aMessage({ market: cid(1), ts: DAY, hash: '0xl1' }), aMessage({ market: cid(5), ts: DAY, hash: '0xl5' }), aMessage({ market: unknown, ts: DAY, hash: '0xlu' })]);
    const key = await t.newKey();
    const get = async (qs: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/exchange-a/market/list${qs}`, headers: bearer(key) })).json() as Record<string, any>;
    const all = await get('');
    expect(all.market_condition_ids).toEqual([cid(1), cid(5), unknown]);
    expect(all.market_asset_ids).toEqual({
      [cid(1)]: [{ asset_id: tok(1, 1), outcome: 'Yes' }, { asset_id: tok(1, 2), outcome: 'No' }],
      [cid(5)]: [{ asset_id: tok(5, 1), outcome: 'Yes' }, { asset_id: tok(5, 2), outcome: 'No' }],
    });
    // Only markets the catalogue does not know: the answer has no such field at all.
    const other = await get('?prefix=0xfeed');
    expect(Object.keys(other).sort()).toEqual(['filter_prefix', 'market_condition_ids', 'pagination', 'returned_count', 'total_markets']);
  });
});
