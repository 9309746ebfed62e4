/**
 * The SDK against the real API over real HTTP: the integration suite's app (embedded
 * ClickHouse, the project's Redis) listening on a port, records stored the way the sink
 * stores them, and the client pointed at it. Every method, page walks over several small
 * pages, a real 429 retried, errors with their codes, and compression on the wire.
 */
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, bMessage, conditionId, type TestApi, startTestApi } from '@booktape/api/testing';
import { MarketCatalogueRepository } from '@booktape/storage';
import { uniqueId, waitFor } from '@booktape/testkit';
import { BooktapeClient, BooktapeError, SUMMARY_COLUMNS, bookTop, collect, coverageBrief, summaryRows, toCsv, type FetchLike } from './index.ts';

const DAY1 = Date.UTC(2026, 2, 1);
const DAY2 = DAY1 + 86_400_000;
const MARKET = conditionId(0x51);
const ASSET = '4242';
const TICKER = 'KXSDK-26MAR01';
const OTHER_MARKETS = [0x52, 0x53, 0x54, 0x55].map(conditionId);
const OTHER_TICKERS = ['KXSDK-A', 'KXSDK-B', 'KXSDK-C'];

let t: TestApi;
let baseUrl: string;
let key: string;
const USER = 'sdk-user';

/** The global fetch, with every request's URL and answer status noted. */
function recordingFetch() {
  const calls: Array<{ url: URL; status: number; encoding: string | null }> = [];
  const fetch: FetchLike = async (input, init) => {
    const res = await globalThis.fetch(input, init);
    calls.push({ url: new URL(input), status: res.status, encoding: res.headers.get('content-encoding') });
    return res;
  };
  return { fetch, calls };
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  t = await startTestApi({ dataFloors: { 'exchange-a': '2026-02-08', 'exchange-b': null } });
  baseUrl = await listen(t.app);
  key = await t.newKey(USER);
  // Exchange A: a book at 01:00, then a change a minute for 40 minutes, three changes on day 2.
  const a = [aMessage({ market: MARKET, asset: ASSET, ts: DAY1 + 3_600_000, hash: 'a-book', kind: 'book' })];
  for (let i = 1; i <= 40; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY1 + 3_600_000 + i * 60_000, hash: `a-pc-${i}` }));
  for (let i = 0; i < 3; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY2 + 600_000 + i * 1000, hash: `a-d2-${i}` }));
  a.push(...OTHER_MARKETS.map((m, i) => aMessage({ market: m, ts: DAY1 + i, hash: `a-other-${i}` })));
  await t.filler.insert('exchange-a', a);
  // Exchange B: a snapshot at 02:00 and a delta a minute for 30 minutes.
  const b = [bMessage({ ticker: TICKER, ms: DAY1 + 7_200_000, seq: 1, kind: 'snapshot' })];
  for (let i = 2; i <= 31; i++) b.push(bMessage({ ticker: TICKER, ms: DAY1 + 7_200_000 + i * 60_000, seq: i }));
  b.push(...OTHER_TICKERS.map((tk, i) => bMessage({ ticker: tk, ms: DAY1 + i, seq: 1, kind: 'snapshot' })));
  await t.filler.insert('exchange-b', b);
});
afterAll(async () => t?.close());

/** What a call threw. */
const caught = (p: Promise<unknown>) => p.then(() => expect.unreachable('resolved'), (e: unknown) => e as BooktapeError);

const client = (extra: Partial<ConstructorParameters<typeof BooktapeClient>[0]> = {}) => new BooktapeClient({ baseUrl, apiKey: key, ...extra });

describe('merged replay stream', () => {
  it('replayStream() yields the stream of both venues in time order as it arrives; the markets go as repeated parameters', async () => {
    const rec = recordingFetch();
    const c = client({ fetch: rec.fetch });
    const markets = [`exchange-b:${TICKER}`, `exchange-a:${ASSET}`];
    const got = await collect(c.replayStream({ markets, from: DAY1, to: new Date(DAY1 + 86_399_999), snapshotInterval: '1h', depth: 1 }));
    const url = rec.calls[0]!.url;
    expect(url.pathname).toBe('/api/v1/replay/stream');
    expect(url.searchParams.getAll('markets')).toEqual(markets);
    expect([url.searchParams.get('from'), url.searchParams.get('to'), url.searchParams.get('snapshot_interval'), url.searchParams.get('depth')]).toEqual([String(DAY1), new Date(DAY1 + 86_399_999).toISOString(), '1h', '1']);
    expect(got[0]).toMatchObject({ type: 'start', markets, unknown_markets: [] });
    expect(got.at(-1)).toEqual({ type: 'end', ts: DAY1 + 86_399_999, messages: got.length - 2 });
    // The stored records of both, by event time (none share a millisecond here).
    const stored = [
      ...t.filler.expected('exchange-a', MARKET, (ts) => ts < DAY2).map((r) => ({ ts: Number(r.timestamp), type: r.event_type === 'book' ? 'book' : 'book_change' })),
      ...t.filler.expected('exchange-b', TICKER, (ts) => ts < DAY2).map((r) => ({ ts: r.epoch_ms as number, type: r.type === 'snapshot' ? 'book' : 'book_change' })),
    ].sort((x, y) => x.ts - y.ts);
    const records = got.filter((m) => 'ingest_seq' in m && m.ingest_seq !== null).map((m) => ({ ts: (m as { ts: number }).ts, type: m.type }));
    expect(records).toEqual(stored);
    // Hourly top-of-book snapshots of both, 24 instants.
    expect(got.filter((m) => m.type === 'snapshot')).toHaveLength(48);
  });

  it('replayStream() throws the API error for bad input, and stops the request when the loop stops', async () => {
    const e = await caught(collect(client().replayStream({ markets: ['exchange-z:1'], from: DAY1, to: DAY2 })));
    expect(e).toBeInstanceOf(BooktapeError);
    expect([e.status, e.code, e.parameter]).toEqual([400, 'invalid_parameter', 'markets']);
    let n = 0;
    for await (const m of client().replayStream({ markets: [`exchange-a:${ASSET}`], from: DAY1, to: DAY2 })) {
      expect(m.type).toBe('start');
      if (++n === 1) break;
    }
    expect(n).toBe(1);
  });
});

describe('raw data', () => {
  it('raw() walks the cursor pages of a window and yields every record in serving order', async () => {
    const rec = recordingFetch();
    const c = client({ fetch: rec.fetch });
    const from = DAY1;
    const to = new Date(DAY2 + 86_399_999);
    const got = await collect(c.exchangeA.raw({ conditionId: MARKET, from, to, pageSize: 7 }));
    expect(got).toEqual(t.filler.expected('exchange-a', MARKET));
    expect(got).toHaveLength(44);
    // 44 records, 7 a page: 7 requests, each after the first carrying the previous cursor.
    expect(rec.calls).toHaveLength(7);
    expect(rec.calls[0]!.url.searchParams.get('cursor')).toBeNull();
    expect(rec.calls.slice(1).every((x) => x.url.searchParams.get('cursor')?.startsWith('v1.'))).toBe(true);
    expect(rec.calls[0]!.url.searchParams.get('start_timestamp')).toBe(String(DAY1));
    expect(rec.calls[0]!.url.searchParams.get('end_timestamp')).toBe(String(to.getTime()));

    const b = await collect(c.exchangeB.raw({ ticker: TICKER.toLowerCase(), from: DAY1 / 1000, to: DAY2 / 1000, pageSize: 4 }));
    expect(b).toEqual(t.filler.expected('exchange-b', TICKER));
  });

  it('rawByDate() walks the offset pages of one date', async () => {
    const rec = recordingFetch();
    const got = await collect(client({ fetch: rec.fetch }).exchangeA.rawByDate({ conditionId: MARKET, date: '2026-03-01', pageSize: 10 }));
    expect(got).toEqual(t.filler.expected('exchange-a', MARKET, (ts) => ts < DAY2));
    expect(rec.calls.map((x) => x.url.searchParams.get('offset'))).toEqual(['0', '10', '20', '30', '40']);
    const b = await collect(client().exchangeB.rawByDate({ ticker: TICKER, date: new Date(DAY1 + 5), pageSize: 8 }));
    expect(b).toEqual(t.filler.expected('exchange-b', TICKER));
  });

  it('dataPage() and rangePage() are one request each, with the envelope as the API answers it', async () => {
    const c = client();
    const p = await c.exchangeA.dataPage({ conditionId: MARKET.slice(2).toUpperCase(), date: '2026-03-01', offset: 5, limit: 3 });
    expect(p).toMatchObject({ market_condition_id: MARKET, date: '2026-03-01', data_count: 3, pagination: { offset: 5, limit: 3, total_count: 41, has_more: true } });
    expect(p.data).toEqual(t.filler.expected('exchange-a', MARKET).slice(5, 8));
    const r1 = await c.exchangeB.rangePage({ ticker: TICKER, from: DAY1, to: DAY2, limit: 20 });
    expect(r1.pagination.has_more).toBe(true);
    const r2 = await c.exchangeB.rangePage({ ticker: TICKER, from: DAY1, to: DAY2, limit: 20, cursor: r1.pagination.next_cursor! });
    expect(r2.pagination).toEqual({ limit: 20, has_more: false, next_cursor: null });
    expect([...r1.data, ...r2.data]).toEqual(t.filler.expected('exchange-b', TICKER));
  });

  it('rawCsv() follows the Link header: the header once, then every page, equal to one big page', async () => {
    const rec = recordingFetch();
    const c = client({ fetch: rec.fetch });
    const paged = (await collect(c.exchangeA.rawCsv({ conditionId: MARKET, from: DAY1, to: DAY2 + 86_399_999, pageSize: 9 }))).join('');
    const whole = (await collect(c.exchangeA.rawCsv({ conditionId: MARKET, from: DAY1, to: DAY2 + 86_399_999, pageSize: 1000 }))).join('');
    expect(rec.calls.length).toBe(5 + 1);
    expect(paged).toBe(whole);
    expect(paged.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at');
    expect(paged.match(/^timestamp,/gm)).toHaveLength(1);
    const byDate = (await collect(c.exchangeB.rawCsv({ ticker: TICKER, date: '2026-03-01', pageSize: 8 }))).join('');
    expect(byDate.split('\n').filter((l) => l.includes(`,${TICKER},delta,`)).length).toBe(30);
  });

  it('asks for gzip or br in Node and reads the compressed answer', async () => {
    const rec = recordingFetch();
    const page = await client({ fetch: rec.fetch }).exchangeA.dataPage({ conditionId: MARKET, date: '2026-03-01' });
    expect(page.data_count).toBe(41);
    expect(['gzip', 'br']).toContain(rec.calls[0]!.encoding);
  });
});

describe('markets and availability', () => {
  it('markets() walks the list pages; marketsPage() filters by prefix', async () => {
    const rec = recordingFetch();
    const a = await collect(client({ fetch: rec.fetch }).exchangeA.markets({ pageSize: 2 }));
    expect(a).toEqual([MARKET, ...OTHER_MARKETS].sort());
    expect(rec.calls).toHaveLength(3);
    expect(await collect(client().exchangeB.markets({ prefix: 'kxsdk-', pageSize: 1 }))).toEqual([...OTHER_TICKERS, TICKER].sort());
    const p = await client().exchangeB.marketsPage({ prefix: 'KXSDK-2', limit: 5 });
    expect(p).toMatchObject({ market_tickers: [TICKER], filter_prefix: 'KXSDK-2', pagination: { total_count: 1, has_more: false } });
  });

  it('dateRange() tells the stored dates', async () => {
    expect(await client().exchangeA.dateRange({ conditionId: MARKET })).toEqual({ market_condition_id: MARKET, has_data: true, start_date: '2026-03-01', end_date: '2026-03-02', available_date_count: 2 });
    expect(await client().exchangeB.dateRange({ ticker: 'KXNONE' })).toMatchObject({ has_data: false, start_date: null, available_date_count: 0 });
  });
});

describe('summaries, books, coverage, export', () => {
  it('summary() buckets; summaryRows() flattens them into exactly the API CSV', async () => {
    const c = client();
    const s = await c.exchangeA.summary({ conditionId: MARKET, assetId: ASSET, date: '2026-03-01', resolution: 600 });
    expect(s).toMatchObject({ market_condition_id: MARKET, asset_id: ASSET, resolution_seconds: 600 });
    // From the first book on (none before 01:00), to the day's end.
    expect(s.data[0]!.timestamp).toBe(DAY1 + 3_600_000);
    expect(s.data).toHaveLength(138);
    expect(s.data.filter((b) => b.quote_count > 0).length).toBeGreaterThan(3);
    const csv = await c.exchangeA.summaryCsv({ conditionId: MARKET, assetId: ASSET, date: '2026-03-01', resolution: 600 });
    expect(toCsv(summaryRows(s.data), SUMMARY_COLUMNS).replace(/\r\n/g, '\n')).toBe(csv.replace(/\r\n/g, '\n'));
    const w = await c.exchangeB.summary({ ticker: TICKER, from: DAY1 + 7_200_000, to: DAY1 + 10_800_000 - 1, resolution: 60 });
    expect(w.data).toHaveLength(60);
    expect(w.data[0]).toMatchObject({ best_bid: 0.42, quote_count: 1 });
  });

  it('book() at an instant, with bookTop(); bookSnapshots() over a window', async () => {
    const c = client();
    const a = await c.exchangeA.book({ assetId: ASSET, conditionId: MARKET, at: new Date(DAY1 + 3_600_000), depth: 5 });
    expect(a).toMatchObject({ asset_id: ASSET, is_known: true, as_of_ms: DAY1 + 3_600_000 });
    expect(bookTop(a)).toMatchObject({ bestBid: 0.48, bestAsk: 0.52, mid: 0.5, spread: 0.04 });
    const b = await c.exchangeB.book({ ticker: TICKER, at: DAY1 + 7_200_000 });
    expect(b.yes[0]).toEqual({ price: '0.42', size: '15' });
    expect(bookTop(b)).toMatchObject({ bestBid: 0.42, bestAsk: 0.45, spread: 0.03 });
    const snaps = await c.exchangeB.bookSnapshots({ ticker: TICKER, from: DAY1 + 7_200_000, to: DAY1 + 7_800_000, interval: 120, depth: 2 });
    expect(snaps.data.map((x) => x.timestamp)).toEqual([0, 1, 2, 3, 4, 5].map((i) => DAY1 + 7_200_000 + i * 120_000));
    expect(snaps.data.every((x) => x.is_known)).toBe(true);
    const aSnaps = await c.exchangeA.bookSnapshots({ assetId: ASSET, conditionId: MARKET, from: DAY1, to: DAY1 + 3_600_000, interval: 1800 });
    expect(aSnaps.data.map((x) => x.is_known)).toEqual([false, false, true]);
  });

  it('coverage() per day, coverageBrief() sorts the days', async () => {
    const cov = await client().exchangeA.coverage({ conditionId: MARKET, startDate: '2026-03-01', endDate: new Date(DAY2 + 86_400_000) });
    expect(cov.data.map((d) => [d.date, d.events])).toEqual([['2026-03-01', 41], ['2026-03-02', 3], ['2026-03-03', 0]]);
    expect(coverageBrief(cov.data)).toMatchObject({ missing: ['2026-03-03'], trustworthy: false });
    const b = await client().exchangeB.coverage({ ticker: TICKER, startDate: '2026-03-01', endDate: '2026-03-01' });
    expect(b.data[0]).toMatchObject({ date: '2026-03-01', events: 31 });
  });

  it('export() hands back the file unread: a gzipped long CSV with its name and days', async () => {
    const f = await client().exchangeA.export({ conditionId: MARKET, startDate: '2026-03-01', endDate: '2026-03-02' });
    expect(f).toMatchObject({ contentType: 'application/gzip', days: 2 });
    expect(f.filename).toMatch(/^0x0051c0ffee.*_2026-03-01_2026-03-02_raw\.csv\.gz$/);
    const text = gunzipSync(await f.bytes()).toString('utf8');
    expect(text.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at');
    const pq = await client().exchangeB.export({ ticker: TICKER, startDate: '2026-03-01', endDate: '2026-03-01', kind: 'summary', resolution: 3600, format: 'parquet' });
    const bytes = await pq.bytes();
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('PAR1');
  });
});

describe('public endpoints and usage', () => {
  it('health(), outages() and lookupSlug() need no key', async () => {
    const anon = new BooktapeClient({ baseUrl });
    expect(await anon.health()).toMatchObject({ status: 'ok', checks: { clickhouse: true, redis: true } });
    expect(await anon.outages({ venue: 'exchange-b' })).toEqual({ data: [], total: 0 });
    await new MarketCatalogueRepository(t.ch).upsert([
      { conditionId: MARKET, marketId: '901', slug: 'sdk-test-market', question: 'Will the SDK work?', active: true, closed: false, tokenIds: [ASSET, '4343'], outcomes: ['Yes', 'No'], eventId: null, eventSlug: null, eventTitle: null },
    ]);
    const hit = await anon.exchangeA.lookupSlug({ slug: 'https://polymarket.com/market/sdk-test-market' });
    expect(hit.markets.map((m) => m.conditionId)).toEqual([MARKET]);
    const miss = await anon.exchangeA.lookupSlug({ slug: 'no-such-slug' }).catch((e: unknown) => e);
    expect(miss).toBeInstanceOf(BooktapeError);
    expect(miss).toMatchObject({ status: 404, code: 'not_found', parameter: 'slug' });
  });

  it('monitoringStatus() needs no key; keys.create(), list() and revoke() go to the operator routes with the admin token', async () => {
    const anon = new BooktapeClient({ baseUrl });
    expect((await anon.monitoringStatus()).status).toMatch(/^(ok|degraded|down)$/);
    const admin = 'admin-token-for-sdk-keys-tests';
    const app = await t.another({ adminToken: admin });
    const url = await listen(app);
    const op = new BooktapeClient({ baseUrl: url, headers: { 'x-admin-token': admin } });
    const made = await op.keys.create({ userId: 'sdk-keys', name: 'laptop' });
    expect(made.data).toMatchObject({ user_id: 'sdk-keys', name: 'laptop', key_id: expect.stringMatching(/^key_[0-9a-f]{24}$/) });
    // The new key works at once.
    expect(await new BooktapeClient({ baseUrl: url, apiKey: made.data.api_key }).exchangeA.dateRange({ conditionId: MARKET })).toMatchObject({ available_date_count: 2 });
    expect((await op.keys.list({ userId: 'sdk-keys' })).api_keys.map((k) => k.id)).toEqual([made.data.key_id]);
    expect((await op.keys.revoke({ userId: 'sdk-keys', keyId: made.data.key_id })).data).toMatchObject({ key_id: made.data.key_id, status: 'revoked' });
    expect((await op.keys.list({ userId: 'sdk-keys' })).api_keys).toEqual([]);
    // Without the token: the API's 401, thrown.
    expect(await caught(new BooktapeClient({ baseUrl: url }).keys.list({ userId: 'sdk-keys' }))).toMatchObject({ status: 401 });
  });

  it('usage: the plan and count, the request history counted, by day, and walked newest first', async () => {
    // A user of its own, so the numbers are this test's whatever ran before.
    const c = client({ apiKey: await t.newKey('sdk-usage') });
    for (let i = 0; i < 5; i++) await c.exchangeA.dataPage({ conditionId: MARKET, date: '2026-03-01', limit: 1 });
    const u = await c.usage.get({ userId: 'sdk-usage' });
    expect(u).toMatchObject({ user_id: 'sdk-usage', tier: 'free', unlimited: true, calls_this_period: 5 });
    const count = (await waitFor('the request log flushed', async () => {
      const r = await c.usage.requestCount('sdk-usage', { endpoint: '/exchange-a/market/data', status: '2xx' });
      return r.count === 5 ? r : undefined;
    }))!;
    expect(count).toMatchObject({ user_id: 'sdk-usage', endpoint: '/exchange-a/market/data', successful: 5, failed: 0 });
    const tf = await c.usage.requestTimeframe('sdk-usage', { interval: 'day', from: new Date(Date.now() - 86_400_000).toISOString() });
    expect(tf.data.reduce((s, p) => s + p.requests, 0)).toBe(5);
    const rec = recordingFetch();
    const recent = await collect(client({ apiKey: await t.newKey('sdk-usage'), fetch: rec.fetch }).usage.recentRequests('sdk-usage', { pageSize: 2 }));
    expect(recent).toHaveLength(5);
    expect(rec.calls).toHaveLength(3);
    expect(recent.map((r) => r.time)).toEqual([...recent.map((r) => r.time)].sort().reverse());
    expect((await c.usage.recentRequestsPage('sdk-usage', { limit: 1 })).data).toHaveLength(1);
  });
});

describe('errors', () => {
  it('bad parameters: a BooktapeError with the status, the API code and the parameter', async () => {
    const e = await caught(client().exchangeA.dataPage({ conditionId: MARKET, date: '2026-03-01', limit: 100_001 }));
    expect(e).toBeInstanceOf(BooktapeError);
    expect(e).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'limit' });
    expect(e.message).toMatch(/limit/);
    expect(e.body).toEqual({ error: { code: 'invalid_parameter', message: e.message, param: 'limit' } });
    expect(await caught(client().exchangeA.dataPage({ conditionId: MARKET } as never))).toMatchObject({ status: 400, code: 'missing_parameter', parameter: 'date' });
    expect(await caught(collect(client().exchangeB.raw({ ticker: TICKER, from: DAY2, to: DAY1 })))).toMatchObject({ code: 'invalid_parameter', parameter: 'start_timestamp' });
    expect(await caught(client().exchangeB.rangePage({ ticker: TICKER, from: DAY1, to: DAY2, cursor: 'v1.forged.cursor' }))).toMatchObject({ code: 'invalid_cursor', parameter: 'cursor' });
    expect(await caught(client().exchangeA.rawByDate({ conditionId: MARKET, date: '2026-01-01' }).next())).toMatchObject({ code: 'invalid_parameter', parameter: 'date' });
  });

  it('an unknown key is a 401 unauthorized, a revoked one a 403 forbidden, and neither is retried', async () => {
    const rec = recordingFetch();
    const e = await caught(new BooktapeClient({ baseUrl, apiKey: 'bt_live_not-a-real-key', fetch: rec.fetch }).exchangeA.markets().next());
    expect(e).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(rec.calls).toHaveLength(1);
    const revoked = await t.newKey('sdk-revoked');
    const keys = (await t.app.inject({ url: '/api/v1/keys?user_id=sdk-revoked' })).json() as { api_keys: Array<{ id: string }> };
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/keys/${keys.api_keys[0]!.id}?user_id=sdk-revoked` })).statusCode).toBe(200);
    expect(await caught(new BooktapeClient({ baseUrl, apiKey: revoked }).exchangeB.dateRange({ ticker: TICKER }))).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('a signal aborts the call', async () => {
    const c = new AbortController();
    c.abort(new Error('caller gave up'));
    await expect(client({ signal: c.signal }).exchangeA.dateRange({ conditionId: MARKET })).rejects.toThrow('caller gave up');
  });
});

describe('429: the burst limit, retried as Retry-After says', () => {
  let limited: FastifyInstance;
  let limitedUrl: string;
  beforeAll(async () => {
    const plans = { free: { monthly: null, perSecond: 1 }, starter: { monthly: null, perSecond: null }, pro: { monthly: null, perSecond: null } };
    limited = await t.another({ plans, redisKeyPrefix: `${uniqueId('bt-sdk-burst')}:` });
    limitedUrl = await listen(limited);
  });

  // Three calls at once at 1/s: however they fall across a second's boundary, two share a
  // window, so at least one is refused (two would not be enough under a loaded machine).
  it('three calls at once at 1/s: those refused with 429 wait the second out, and all succeed', async () => {
    const k = await t.newKey('sdk-burst');
    const rec = recordingFetch();
    const c = new BooktapeClient({ baseUrl: limitedUrl, apiKey: k, fetch: rec.fetch });
    await c.exchangeB.dateRange({ ticker: TICKER }); // warm: plan and key cached
    await waitFor('the start of a second', () => Date.now() % 1000 < 100, 3000, 5);
    const started = Date.now();
    const answers = await Promise.all([1, 2, 3].map(() => c.exchangeB.dateRange({ ticker: TICKER })));
    expect(answers.every((a) => a.has_data)).toBe(true);
    const statuses = rec.calls.slice(1).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('without retries left the 429 is thrown with its quota and Retry-After', async () => {
    const k = await t.newKey('sdk-burst-2');
    const c = new BooktapeClient({ baseUrl: limitedUrl, apiKey: k, maxRetries: 0 });
    await c.exchangeB.dateRange({ ticker: TICKER });
    await waitFor('the start of a second', () => Date.now() % 1000 < 100, 3000, 5);
    const results = await Promise.allSettled([1, 2, 3].map(() => c.exchangeB.dateRange({ ticker: TICKER })));
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(BooktapeError);
    expect(refused.reason).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: 1000 });
    expect((refused.reason as BooktapeError).quota).toMatchObject({ limit: 'per_second', allowed: 1, retry_after_seconds: 1 });
  });

  it('a monthly quota used up is not waited for (Retry-After beyond the cap): thrown at once', async () => {
    const plans = { free: { monthly: 1, perSecond: null }, starter: { monthly: null, perSecond: null }, pro: { monthly: null, perSecond: null } };
    const app = await t.another({ plans, redisKeyPrefix: `${uniqueId('bt-sdk-month')}:` });
    const url = await listen(app);
    const c = new BooktapeClient({ baseUrl: url, apiKey: await t.newKey('sdk-month') });
    await c.exchangeA.dateRange({ conditionId: MARKET });
    const started = Date.now();
    const e = await caught(c.exchangeA.dateRange({ conditionId: MARKET }));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(e).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(e.retryAfterMs).toBeGreaterThan(60_000);
    expect(e.quota).toMatchObject({ limit: 'monthly', allowed: 1 });
  });
});

describe('this file', () => {
  it('calls every public method of the client', async () => {
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(new URL(import.meta.url), 'utf8');
    const c = client();
    const methods = (o: object) => Object.getOwnPropertyNames(Object.getPrototypeOf(o)).filter((n) => n !== 'constructor' && typeof (o as Record<string, unknown>)[n] === 'function');
    const all = new Set([...methods(c), ...methods(c.exchangeA), ...methods(Object.getPrototypeOf(c.exchangeA)), ...methods(c.exchangeB), ...methods(c.usage), ...methods(c.keys)]);
    const protectedOnes = new Set(['path', 'get', 'fetchJson', 'userPath']);
    const missing = [...all].filter((m) => !protectedOnes.has(m) && !text.includes(`.${m}(`));
    expect(missing).toEqual([]);
  });
});
