import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { gunzipSync } from 'node:zlib';
import { MarketCatalogueRepository, type CatalogueMarket } from '@booktape/storage';
import { uniqueId, waitFor } from '@booktape/testkit';
import { UNLIMITED_PLANS } from '../usage/limits.ts';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * Venue names and market slugs (issue 26, point 8) against the real store and Redis:
 * `/polymarket/…` and `/kalshi/…` answer byte for byte as `/exchange-a/…` and
 * `/exchange-b/…` (cursors cross between them, billing is the canonical route's), and
 * `slug` + `outcome` answer exactly as the condition id and asset id they resolve to.
 */

const M = conditionId(41);
const OTHER = conditionId(42);
const YES = '4141414141414141414141414141414141414141414141414141414141414141414141414141';
const NO = '4242424242424242424242424242424242424242424242424242424242424242424242424242';
const TB = 'KXFRIENDLY-26MAR01-T1';
const DAY = Date.UTC(2026, 2, 1);
const END = DAY + 86_400_000 - 1;

const market = (over: Partial<CatalogueMarket>): CatalogueMarket => ({
  conditionId: M,
  marketId: '9041',
  slug: 'will-friendly-names-ship',
  question: 'Will friendly names ship?',
  active: true,
  closed: false,
  tokenIds: [YES, NO],
  outcomes: ['Yes', 'No'],
  eventId: '941',
  eventSlug: 'will-friendly-names-ship',
  eventTitle: 'Will friendly names ship?',
  ...over,
});
const CATALOGUE: CatalogueMarket[] = [
  market({}),
  // An event of two markets: its slug alone is ambiguous.
  market({ conditionId: OTHER, marketId: '9042', slug: 'finals-home-wins', question: 'Home wins?', eventId: '942', eventSlug: 'finals', eventTitle: 'Finals', outcomes: ['Home', 'Away'] }),
  // A market the catalogue knows no outcome tokens of.
  market({ conditionId: conditionId(44), marketId: '9044', slug: 'no-tokens-known', eventId: null, eventSlug: null, eventTitle: null, tokenIds: [], outcomes: [] }),
  market({ conditionId: conditionId(43), marketId: '9043', slug: 'finals-away-wins', question: 'Away wins?', eventId: '942', eventSlug: 'finals', eventTitle: 'Finals', tokenIds: ['1', '2'], outcomes: ['yes', 'YES'] }),
];

let t: TestApi;
let key: string;

beforeAll(async () => {
  t = await startTestApi();
  await new MarketCatalogueRepository(t.ch).upsert(CATALOGUE);
  const a = Array.from({ length: 60 }, (_, i) =>
    aMessage({ market: M, ts: DAY + 1000 + i * 500, hash: `0xf${i.toString(16).padStart(6, '0')}`, asset: i % 2 ? NO : YES, kind: i % 10 === 0 ? 'book' : 'price_change', frame: i }),
  );
  await t.filler.insert('exchange-a', a);
  await t.filler.insert('exchange-b', Array.from({ length: 40 }, (_, i) => bMessage({ ticker: TB, ms: DAY + 2000 + i * 700, seq: 100 + i, kind: i % 10 === 0 ? 'snapshot' : 'delta' })));
  key = await t.newKey();
});
afterAll(async () => t?.close());

const get = (url: string, headers: Record<string, string> = bearer(key)) => t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });

/** What must be the same: status, body bytes and every answer field but those that differ per request. */
function sameness(r: LightMyRequestResponse) {
  const { date: _d, 'x-request-id': _id, 'ratelimit-limit': _l, 'ratelimit-remaining': _r, 'ratelimit-reset': _s, 'ratelimit-policy': _p, ...headers } = r.headers;
  return { status: r.statusCode, headers, body: r.rawPayload.toString('base64') };
}

const A_ROUTES = [
  `/market/data?condition_id=${M}&date=2026-03-01&limit=7`,
  `/market/data?condition_id=${M}&date=2026-03-01&limit=7&offset=7&format=csv`,
  `/market/data/range?condition_id=${M}&start_timestamp=${DAY}&end_timestamp=${END}&limit=9`,
  `/market/data/range?condition_id=${M}&start_timestamp=${DAY}&end_timestamp=${END}&limit=9&format=ndjson`,
  `/market/list`,
  `/market/orderbook-summary?condition_id=${M}&asset_id=${YES}&date=2026-03-01&resolution=3600`,
  `/market/book?condition_id=${M}&asset_id=${YES}&timestamp=${DAY + 20_000}`,
  `/market/book-snapshots?condition_id=${M}&asset_id=${NO}&start_timestamp=${DAY}&end_timestamp=${DAY + 60_000}&interval=10`,
  `/market/coverage?condition_id=${M}&start_date=2026-03-01&end_date=2026-03-02`,
  `/market/export?condition_id=${M}&start_date=2026-03-01&end_date=2026-03-01`,
  `/market/data?condition_id=nothex&date=2026-03-01`,
  `/lookup/slug?slug=will-friendly-names-ship`,
];
const B_ROUTES = [
  `/market/data?ticker=${TB}&date=2026-03-01&limit=5`,
  `/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${END}&limit=6&format=csv`,
  `/market/orderbook-summary?ticker=${TB}&date=2026-03-01&resolution=3600`,
  `/market/book?ticker=${TB}&timestamp=${DAY + 20_000}`,
  `/market/list`,
];

describe('polymarket and kalshi as path aliases', () => {
  for (const [alias, venue, routes] of [['polymarket', 'exchange-a', A_ROUTES], ['kalshi', 'exchange-b', B_ROUTES]] as const) {
    it(`/${alias}/… answers byte for byte as /${venue}/… (${routes.length} routes, errors too)`, async () => {
      for (const r of routes) {
        const canonical = await get(`/${venue}${r}`);
        const aliased = await get(`/${alias}${r}`);
        expect(sameness(aliased), `${alias}${r}`).toEqual(sameness(canonical));
        if (!r.includes('nothex')) expect(canonical.statusCode, `${venue}${r}: ${canonical.body.slice(0, 200)}`).toBe(200);
      }
    });
  }

  it('a cursor from one spelling continues on the other, to the same page', async () => {
    const range = `/market/data/range?condition_id=${M}&start_timestamp=${DAY}&end_timestamp=${END}&limit=11`;
    const first = (await get(`/polymarket${range}`)).json();
    const cursor = first.pagination.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    const onCanonical = await get(`/exchange-a${range}&cursor=${encodeURIComponent(cursor)}`);
    const onAlias = await get(`/polymarket${range}&cursor=${encodeURIComponent(cursor)}`);
    expect(onCanonical.statusCode).toBe(200);
    expect(sameness(onAlias)).toEqual(sameness(onCanonical));
    // And back: the canonical page's cursor on the alias.
    const back = (await get(`/exchange-a${range}`)).json().pagination.next_cursor as string;
    expect(back).toBe(cursor);
    // A csv page's Link points at the canonical path, under either spelling.
    const csv = await get(`/polymarket${range}&format=csv`);
    expect(csv.headers.link).toMatch(/^<\/api\/v1\/exchange-a\/market\/data\/range\?.*cursor=/);
  });

  it('only the exact alias segment is rewritten: other spellings stay 404', async () => {
    for (const url of ['/Polymarket/market/list', '/polymarketx/market/list', '/kalshi-b/market/list']) {
      const r = await get(url);
      expect(r.statusCode, url).toBe(404);
      expect(r.json().error.code).toBe('not_found');
    }
  });

  it('an alias request is billed and logged as the canonical route', async () => {
    const app = await t.another({ plans: { ...UNLIMITED_PLANS, free: { ...UNLIMITED_PLANS.free, monthly: 2 } }, redisKeyPrefix: `${uniqueId('bt-alias')}:`, requestLogFlushMs: 50 });
    const r = await app.inject({ method: 'POST', url: `/api/v1/keys?name=alias&user_id=alias-user` });
    const k = r.json().data.api_key as string;
    const url = (v: string) => `/api/v1/${v}/market/data?condition_id=${M}&date=2026-03-01&limit=1`;
    expect((await app.inject({ url: url('exchange-a'), headers: bearer(k) })).statusCode).toBe(200);
    expect((await app.inject({ url: url('polymarket'), headers: bearer(k) })).statusCode).toBe(200);
    expect((await app.inject({ url: url('polymarket'), headers: bearer(k) })).statusCode).toBe(429);
    const rows = await waitFor('three log rows', async () => {
      const rs = await t.ch.client.query({ query: `SELECT endpoint, venue, status FROM ${t.ch.table('request_log')} WHERE user_id = 'alias-user' ORDER BY ts, status`, format: 'JSONEachRow' });
      const got = await rs.json<{ endpoint: string; venue: string; status: number }>();
      return got.length === 3 ? got : null;
    }, 10_000);
    expect(rows).toEqual([
      { endpoint: '/exchange-a/market/data', venue: 'exchange-a', status: 200 },
      { endpoint: '/exchange-a/market/data', venue: 'exchange-a', status: 200 },
      { endpoint: '/exchange-a/market/data', venue: 'exchange-a', status: 429 },
    ]);
  });
});

describe('slug and outcome in place of condition_id and asset_id', () => {
  const S = 'slug=will-friendly-names-ship';
  const ID = `condition_id=${M}`;
  /** [by slug, by ids, the asset the outcome names or null] */
  const PAIRS: Array<[string, string, string | null]> = [
    [`/exchange-a/market/data?${S}&date=2026-03-01&limit=13`, `/exchange-a/market/data?${ID}&date=2026-03-01&limit=13`, null],
    [`/market/data?${S}&date=2026-03-01&format=csv`, `/market/data?${ID}&date=2026-03-01&format=csv`, null],
    [`/exchange-a/market/data/range?${S}&start_timestamp=${DAY}&end_timestamp=${END}&limit=10`, `/exchange-a/market/data/range?${ID}&start_timestamp=${DAY}&end_timestamp=${END}&limit=10`, null],
    [`/exchange-a/market/orderbook-summary?${S}&outcome=yes&date=2026-03-01&resolution=600`, `/exchange-a/market/orderbook-summary?${ID}&asset_id=${YES}&date=2026-03-01&resolution=600`, YES],
    [`/exchange-a/market/book?${S}&outcome=%20NO%20&timestamp=${DAY + 25_000}&depth=3`, `/exchange-a/market/book?${ID}&asset_id=${NO}&timestamp=${DAY + 25_000}&depth=3`, NO],
    [`/exchange-a/market/book-snapshots?${S}&outcome=Yes&start_timestamp=${DAY}&end_timestamp=${DAY + 40_000}&interval=5&format=ndjson`, `/exchange-a/market/book-snapshots?${ID}&asset_id=${YES}&start_timestamp=${DAY}&end_timestamp=${DAY + 40_000}&interval=5&format=ndjson`, YES],
    [`/exchange-a/market/coverage?${S}&start_date=2026-03-01&end_date=2026-03-01`, `/exchange-a/market/coverage?${ID}&start_date=2026-03-01&end_date=2026-03-01`, null],
    [`/exchange-a/market/export?${S}&start_date=2026-03-01&end_date=2026-03-01`, `/exchange-a/market/export?${ID}&start_date=2026-03-01&end_date=2026-03-01`, null],
    [`/exchange-a/market/export?${S}&outcome=No&kind=summary&start_date=2026-03-01&end_date=2026-03-01`, `/exchange-a/market/export?${ID}&asset_id=${NO}&kind=summary&start_date=2026-03-01&end_date=2026-03-01`, NO],
    // A venue URL works as the slug, and so does the alias path.
    [`/polymarket/market/data?slug=${encodeURIComponent('https://polymarket.com/event/will-friendly-names-ship')}&date=2026-03-01&limit=3`, `/exchange-a/market/data?${ID}&date=2026-03-01&limit=3`, null],
  ];

  it('answers exactly as the ids it resolved to, and says which', async () => {
    for (const [bySlug, byIds, asset] of PAIRS) {
      const s = await get(bySlug);
      const i = await get(byIds);
      expect(i.statusCode, `${byIds}: ${i.body.slice(0, 200)}`).toBe(200);
      // The next-page Link keeps the request's own parameters (slug and outcome): followed, it gives the id's next page.
      const { 'x-resolved-condition-id': cid, 'x-resolved-asset-id': aid, link: slugLink, ...rest } = sameness(s).headers;
      const { link: idLink, ...idRest } = sameness(i).headers;
      expect({ ...sameness(s), headers: rest }, bySlug).toEqual({ ...sameness(i), headers: idRest });
      expect(cid, bySlug).toBe(M);
      expect(aid ?? null, bySlug).toBe(asset);
      expect(slugLink === undefined, bySlug).toBe(idLink === undefined);
      if (typeof slugLink === 'string' && typeof idLink === 'string') {
        const follow = (link: string) => get(/^<\/api\/v1([^>]+)>/.exec(link)![1]!);
        const [ns, ni] = [sameness(await follow(slugLink)), sameness(await follow(idLink))];
        expect(ns.body, `next of ${bySlug}`).toBe(ni.body);
        expect(ns.body.length).toBeGreaterThan(0);
      }
    }
    // The answers have data (equal empty answers would prove little).
    expect((await get(PAIRS[0]![0])).json().data_count).toBe(13);
    expect(gunzipSync((await get(PAIRS[7]![0])).rawPayload).toString('utf8').split('\n').length).toBeGreaterThan(60);
  });

  const error = async (url: string) => {
    const r = await get(url);
    return { status: r.statusCode, body: r.json(), resolved: r.headers['x-resolved-condition-id'] };
  };

  it('refuses what cannot be resolved, with the error body', async () => {
    const base = '/exchange-a/market/orderbook-summary?date=2026-03-01';
    expect(await error(`${base}&slug=no-such-market&outcome=Yes`)).toEqual({ status: 404, resolved: undefined, body: { error: { code: 'not_found', message: 'no market matches slug "no-such-market"', param: 'slug' } } });
    expect(await error(`${base}&slug=will-friendly-names-ship&outcome=Maybe`)).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_parameter', message: 'will-friendly-names-ship has no outcome "Maybe": its outcomes are "Yes", "No"', param: 'outcome' } },
    });
    expect(await error(`${base}&slug=will-friendly-names-ship&${ID}&outcome=Yes`)).toMatchObject({ status: 400, body: { error: { code: 'invalid_parameter', param: 'slug' } } });
    expect(await error(`${base}&slug=will-friendly-names-ship&outcome=Yes&asset_id=${YES}`)).toMatchObject({ status: 400, body: { error: { param: 'outcome' } } });
    expect(await error(`${base}&slug=will-friendly-names-ship`)).toMatchObject({ status: 400, body: { error: { code: 'missing_parameter', param: 'outcome' } } });
    expect(await error(`${base}&outcome=Yes&${ID}`)).toMatchObject({ status: 400, body: { error: { param: 'outcome' } } });
    expect(await error(`/exchange-a/market/data?date=2026-03-01&slug=will-friendly-names-ship&outcome=Yes`)).toMatchObject({ status: 400, body: { error: { param: 'outcome' } } });
    expect(await error(`/exchange-a/market/data?date=2026-03-01&slug=a&slug=b`)).toMatchObject({ status: 400, body: { error: { code: 'invalid_parameter', param: 'slug' } } });
    expect(await error(`${base}&slug=no-tokens-known&outcome=Yes`)).toMatchObject({ status: 404, body: { error: { code: 'not_found', param: 'outcome' } } });
    // A raw export holds every token: an outcome is refused there as asset_id is.
    expect(await error(`/exchange-a/market/export?${S}&outcome=Yes&start_date=2026-03-01&end_date=2026-03-01`)).toMatchObject({ status: 400, body: { error: { code: 'invalid_parameter' } } });
    // Neither slug nor id: the missing id, as before.
    expect(await error(`/exchange-a/market/data?date=2026-03-01`)).toMatchObject({ status: 400, body: { error: { code: 'missing_parameter', param: 'condition_id' } } });
    expect(await error(`${base}&${ID}`)).toMatchObject({ status: 400, body: { error: { code: 'missing_parameter', param: 'asset_id' } } });
    // Exchange B has no slugs: the parameter is no shortcut there.
    expect(await error(`/exchange-b/market/data?date=2026-03-01&slug=will-friendly-names-ship`)).toMatchObject({ status: 400, body: { error: { code: 'missing_parameter', param: 'ticker' } } });
  });

  it('an event of several markets is ambiguous: refused with their slugs; case-twins need the exact spelling', async () => {
    const r = await error(`/exchange-a/market/data?date=2026-03-01&slug=finals`);
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'invalid_parameter', param: 'slug' } } });
    expect(r.body.error.message).toMatch(/^slug "finals" names an event of 2 markets: give one market's slug: /);
    expect(r.body.error.message).toContain('"finals-away-wins"');
    expect(r.body.error.message).toContain('"finals-home-wins"');
    const twins = '/exchange-a/market/book?timestamp=1772323200000&slug=finals-away-wins&outcome=';
    expect((await get(`${twins}YES`)).headers['x-resolved-asset-id']).toBe('2');
    expect((await get(`${twins}yes`)).headers['x-resolved-asset-id']).toBe('1');
    expect(await error(`${twins}Yes`)).toMatchObject({ status: 400, body: { error: { param: 'outcome' } } });
  });

  it('is not billed when the slug does not resolve', async () => {
    const app = await t.another({ plans: { ...UNLIMITED_PLANS, free: { ...UNLIMITED_PLANS.free, monthly: 1 } }, redisKeyPrefix: `${uniqueId('bt-slug')}:` });
    const k = (await app.inject({ method: 'POST', url: `/api/v1/keys?name=slug&user_id=slug-user` })).json().data.api_key as string;
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/api/v1/exchange-a/market/data?date=2026-03-01&slug=nothing-here', headers: bearer(k) })).statusCode).toBe(404);
    expect((await app.inject({ url: `/api/v1/exchange-a/market/data?date=2026-03-01&${S}`, headers: bearer(k) })).statusCode).toBe(200);
  });
});
