import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { RawMessage } from '@booktape/domain';
import { CaptureGapsRepository, SummariesRepository } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * The coverage map and declared outages against a real embedded ClickHouse and Redis: each
 * gap kind from its real source (capture_gaps rows, the rollup's stored checks, declared
 * outages), the status values, the range rules, auth without billing, the OpenAPI document,
 * and the outage routes with the admin token and on the status page.
 */

const MA = conditionId(7);
const OTHER = conditionId(8);
const T1 = '71321045679252212594626385532706912750332728571942532289631379312455583992563';
const T2 = '11235813213455891442333776109871597258441816765109461771128657463681';
const TB = 'KXCOVER-26MAR01-T1';
const D1 = Date.UTC(2026, 2, 1); // 2026-03-01
const D2 = D1 + 86_400_000;
const D3 = D2 + 86_400_000;
const ADMIN = 'admin-token-for-coverage-tests';

let t: TestApi;
let key: string;
let admin: Awaited<ReturnType<TestApi['another']>>;

/** A stored ChecksState as the rollup writes it (libs/book checks.ts). */
function checksState(o: { events: number; spells?: Array<{ kind: string; start_ms: number; end_ms: number; detail: string }>; mismatches?: number; firstMismatch?: number | null; crossed?: number; unknownMs?: number }) {
  return JSON.stringify({
    v: 1,
    checks: {
      book_events: o.events,
      venue_best_checked: o.events,
      venue_best_mismatches: o.mismatches ?? 0,
      first_mismatch_ms: o.firstMismatch ?? null,
      first_mismatch: o.firstMismatch ? 'claimed best_bid 0.49, rebuilt 0.48' : null,
      crossed_observations: o.crossed ?? 0,
      first_crossed_ms: null,
      unknown_book_ms: o.unknownMs ?? 0,
      sequence_gaps: 0,
      spells: o.spells ?? [],
      spells_dropped: 0,
    },
    open: null,
  });
}

async function summaryDay(venue: string, market: string, asset: string, day: number, checks: string, complete = true) {
  await t.ch.client.insert({
    table: t.ch.table('summary_days'),
    format: 'JSONEachRow',
    values: [
      {
        venue,
        market,
        asset,
        event_date: new Date(day).toISOString().slice(0, 10),
        version: 1,
        base_version: 1,
        engine_version: 2,
        covered_until: complete ? day + 86_400_000 : day + 3_600_000,
        complete: complete ? 1 : 0,
        events: 1,
        start_state_hash: '',
        state: '{}',
        last_obs: '',
        computed_at: Date.now(),
        checks,
      },
    ],
  });
}

beforeAll(async () => {
  t = await startTestApi();
  admin = await t.another({ adminToken: ADMIN });
  // exchange A: day 1 two tokens (one event re-sent: counted once), day 2 one token, day 3 nothing.
  const a1 = [
    aMessage({ market: MA, ts: D1 + 1000, hash: '0xa1', asset: T1, kind: 'book' }),
    aMessage({ market: MA, ts: D1 + 2000, hash: '0xa2', asset: T1 }),
    aMessage({ market: MA, ts: D1 + 3000, hash: '0xa3', asset: T2, kind: 'book' }),
    aMessage({ market: MA, ts: D1 + 86_000_000, hash: '0xa4', asset: T2, kind: 'tick_size_change' }),
  ];
  await t.filler.insert('exchange-a', a1);
  await t.filler.insert('exchange-a', [a1[1]!, aMessage({ market: MA, ts: D2 + 500, hash: '0xa5', asset: T1, kind: 'book' }), aMessage({ market: OTHER, ts: D1 + 5, hash: '0xo1' })]);
  // exchange B: day 1 and day 2.
  await t.filler.insert('exchange-b', [bMessage({ ticker: TB, ms: D1 + 100, seq: 1, kind: 'snapshot' }), bMessage({ ticker: TB, ms: D1 + 200, seq: 2 }), bMessage({ ticker: TB, ms: D2 + 300, seq: 3, kind: 'snapshot' })]);

  const gaps = new CaptureGapsRepository(t.ch);
  await gaps.insert([
    // A connection that carried T1 (named by token) dropped over midnight 1→2.
    { venue: 'exchange-a', connection_id: 'a-0#1', started_at: new Date(D2 - 60_000).toISOString(), ended_at: new Date(D2 + 30_000).toISOString(), reason: 'closed 1006', markets: [T1] },
    // Another market's connection: not this market's gap.
    { venue: 'exchange-a', connection_id: 'a-1#1', started_at: new Date(D1 + 10_000).toISOString(), ended_at: new Date(D1 + 20_000).toISOString(), reason: 'idle timeout', markets: [OTHER] },
    // exchange B: a venue sequence gap on the subscription carrying the ticker.
    { venue: 'exchange-b', connection_id: 'b-0#1', started_at: new Date(D1 + 150).toISOString(), ended_at: new Date(D1 + 180).toISOString(), reason: 'seq gap', markets: [TB] },
  ]);

  // The rollup's checks: T1 day 1 had an unknown-book spell; B day 1 a sequence_gap spell.
  await summaryDay('exchange-a', MA, T1, D1, checksState({ events: 2, spells: [{ kind: 'unknown_book', start_ms: D1 + 1500, end_ms: D1 + 1800, detail: 'price_change on an unknown book' }], unknownMs: 300 }));
  await summaryDay('exchange-a', MA, T2, D1, checksState({ events: 1, mismatches: 1, firstMismatch: D1 + 3000 }));
  await summaryDay('exchange-a', MA, T1, D2, checksState({ events: 1 }));
  await summaryDay('exchange-b', TB, TB, D1, checksState({ events: 2, spells: [{ kind: 'sequence_gap', start_ms: D1 + 150, end_ms: D1 + 200, detail: 'seq 2 expected, 4 arrived' }], unknownMs: 50 }));
  await summaryDay('exchange-b', TB, TB, D2, checksState({ events: 1 }), false);
  key = await t.newKey('cov-user');
});
afterAll(async () => t?.close());

async function req(method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string> = bearer(key), body?: unknown, app = t.app) {
  const res = await app.inject({ method, url: `/api/v1${url}`, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });
  return { status: res.statusCode, body: String(res.headers['content-type'] ?? '').includes('json') ? (res.json() as Record<string, any>) : ({} as Record<string, any>), text: res.body };
}

describe('coverage map', () => {
  it('exchange A: events over all tokens (duplicates once), disconnect from capture_gaps, unknown_book spells, summed checks, missing days', async () => {
    const r = await req('GET', `/exchange-a/market/coverage?condition_id=${MA.toUpperCase().replace('0X', '')}&start_date=2026-03-01&end_date=2026-03-03`);
    expect(r.status).toBe(200);
    expect(r.body.market_condition_id).toBe(MA);
    const [d1, d2, d3] = r.body.data as Array<Record<string, any>>;
    expect(d1).toMatchObject({ date: '2026-03-01', status: 'partial', events: 4, first_event_ms: D1 + 1000, last_event_ms: D1 + 86_000_000, checks_complete: true });
    expect(d1!.checks).toEqual({ book_events: 3, venue_best_checked: 3, venue_best_mismatches: 1, first_mismatch_ms: D1 + 3000, crossed_observations: 0, unknown_book_ms: 300 });
    expect(d1!.gaps).toEqual([
      { kind: 'unknown_book', start_ms: D1 + 1500, end_ms: D1 + 1800, detail: `asset ${T1}: price_change on an unknown book` },
      { kind: 'disconnect', start_ms: D2 - 60_000, end_ms: D2, detail: 'capture: closed 1006 on connection a-0#1' },
    ]);
    expect(d2).toMatchObject({ date: '2026-03-02', status: 'partial', events: 1, gaps: [{ kind: 'disconnect', start_ms: D2, end_ms: D2 + 30_000 }] });
    expect(d3).toEqual({
      date: '2026-03-03',
      status: 'missing',
      events: 0,
      first_event_ms: null,
      last_event_ms: null,
      gaps: [],
      checks: { book_events: 0, venue_best_checked: 0, venue_best_mismatches: 0, first_mismatch_ms: null, crossed_observations: 0, unknown_book_ms: 0 },
      checks_complete: true,
      // Provenance (issue 24): no record, so no source.
      sources: [],
      imported_only: false,
    });
  });

  it('exchange B: sequence_gap from capture and from the stored gap markers; an open day is complete but not checks_complete', async () => {
    const r = await req('GET', `/exchange-b/market/coverage?ticker=${TB.toLowerCase()}&start_date=2026-03-01&end_date=2026-03-02`);
    expect(r.status).toBe(200);
    expect(r.body.market_ticker).toBe(TB);
    const [d1, d2] = r.body.data as Array<Record<string, any>>;
    expect(d1).toMatchObject({ status: 'partial', events: 2, checks: { book_events: 2, unknown_book_ms: 50 } });
    expect(d1!.gaps).toEqual([
      { kind: 'sequence_gap', start_ms: D1 + 150, end_ms: D1 + 180, detail: 'capture: seq gap on connection b-0#1' },
      { kind: 'sequence_gap', start_ms: D1 + 150, end_ms: D1 + 200, detail: 'seq 2 expected, 4 arrived' },
    ]);
    expect(d2).toMatchObject({ status: 'complete', events: 1, gaps: [], checks_complete: false });
  });

  it('end to end with the real rollup: unknown_book and sequence_gap spells from stored records', async () => {
    const market = conditionId(9);
    const ticker = 'KXCOVER-E2E';
    const day = Date.UTC(2026, 2, 5);
    const asset = '4242';
    // Exchange A: a change before any book (unknown until the book at +5 s).
    await t.filler.insert('exchange-a', [
      aMessage({ market, asset, ts: day + 1000, hash: '0xe1' }),
      aMessage({ market, asset, ts: day + 5000, hash: '0xe2', kind: 'book' }),
    ]);
    // Exchange B: snapshot, a gap marker (seq 3 expected, 6 arrived), the next snapshot at +9 s.
    const snap = bMessage({ ticker, ms: day + 1000, seq: 1, kind: 'snapshot' });
    const gap: RawMessage = { ...snap, ingest_seq: String(BigInt(snap.ingest_seq) + 4n * 2n ** 23n * 1000n), dedup_id: 'b:gap:e2e', record: { type: 'gap', ticker, timestamp: new Date(day + 4000).toISOString(), epoch_ms: day + 4000, sid: 11, seq: 6, expected_seq: 3 } };
    await t.filler.insert('exchange-b', [snap, gap, bMessage({ ticker, ms: day + 9000, seq: 7, kind: 'snapshot' })]);
    const roller = new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs: 0 });
    await roller.rollFrom({ venue: 'exchange-a', market, asset }, '2026-03-05');
    await roller.rollFrom({ venue: 'exchange-b', market: ticker, asset: ticker }, '2026-03-05');

    const a = (await req('GET', `/exchange-a/market/coverage?condition_id=${market}&start_date=2026-03-05&end_date=2026-03-05`)).body.data[0];
    expect(a).toMatchObject({ status: 'partial', events: 2, checks_complete: true, checks: { book_events: 2, unknown_book_ms: 4000 } });
    expect(a.gaps).toEqual([{ kind: 'unknown_book', start_ms: day + 1000, end_ms: day + 5000, detail: expect.stringMatching(new RegExp(`^asset ${asset}: `)) }]);
    const b = (await req('GET', `/exchange-b/market/coverage?ticker=${ticker}&start_date=2026-03-05&end_date=2026-03-05`)).body.data[0];
    expect(b).toMatchObject({ status: 'partial', events: 3, checks_complete: true, checks: { unknown_book_ms: 5000 } });
    expect(b.gaps).toEqual([{ kind: 'sequence_gap', start_ms: day + 4000, end_ms: day + 9000, detail: expect.stringContaining('expected 3') }]);
  });

  it('declared outages appear as kind outage, clipped to each day, and go when removed', async () => {
    const add = await req('POST', '/outages', { 'x-admin-token': ADMIN }, { venue: 'exchange-a', from: '2026-03-02T23:00:00Z', to: '2026-03-03T01:00:00Z', reason: 'venue incident 42' }, admin);
    expect(add.status).toBe(200);
    const id = add.body.data.id as string;
    const r = await req('GET', `/exchange-a/market/coverage?condition_id=${MA}&start_date=2026-03-02&end_date=2026-03-03`);
    const [d2, d3] = r.body.data as Array<Record<string, any>>;
    expect(d2!.gaps.at(-1)).toEqual({ kind: 'outage', start_ms: D3 - 3_600_000, end_ms: D3, detail: `declared outage ${id}: venue incident 42` });
    expect(d3).toMatchObject({ status: 'missing', gaps: [{ kind: 'outage', start_ms: D3, end_ms: D3 + 3_600_000 }] });
    // exchange B is not affected.
    const b = await req('GET', `/exchange-b/market/coverage?ticker=${TB}&start_date=2026-03-02&end_date=2026-03-03`);
    expect(b.body.data.flatMap((d: any) => d.gaps)).toEqual([]);
    expect((await req('DELETE', `/outages/${id}`, { 'x-admin-token': ADMIN }, undefined, admin)).status).toBe(200);
    const after = await req('GET', `/exchange-a/market/coverage?condition_id=${MA}&start_date=2026-03-03&end_date=2026-03-03`);
    expect(after.body.data[0].gaps).toEqual([]);
  });

  it('at most 31 days; end before start and bad ids refused with the usual error shape', async () => {
    const base = `/exchange-b/market/coverage?ticker=${TB}`;
    const ok = await req('GET', `${base}&start_date=2026-03-01&end_date=2026-03-31`);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toHaveLength(31);
    const long = await req('GET', `${base}&start_date=2026-03-01&end_date=2026-04-01`);
    expect(long.status).toBe(400);
    expect(long.body.error).toMatchObject({ code: 'invalid_parameter', param: 'end_date' });
    expect(long.body.error.message).toContain('31 days');
    const back = await req('GET', `${base}&start_date=2026-03-02&end_date=2026-03-01`);
    expect(back.body.error).toMatchObject({ code: 'invalid_parameter', param: 'end_date' });
    expect((await req('GET', `/exchange-b/market/coverage?start_date=2026-03-01&end_date=2026-03-01`)).body.error).toMatchObject({ code: 'missing_parameter', param: 'ticker' });
    expect((await req('GET', `/exchange-a/market/coverage?condition_id=zz&start_date=2026-03-01&end_date=2026-03-01`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'condition_id' });
    expect((await req('GET', `${base}&start_date=2026-02-30&end_date=2026-03-01`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'start_date' });
    expect((await req('GET', `/exchange-a/market/coverage?condition_id=${MA}&start_date=2026-01-01&end_date=2026-01-02`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'start_date' });
  });

  it('needs a key but is not billed: the quota count does not move', async () => {
    expect((await req('GET', `/exchange-b/market/coverage?ticker=${TB}&start_date=2026-03-01&end_date=2026-03-01`, {})).status).toBe(401);
    const user = 'cov-billing';
    const k = await t.newKey(user);
    const usage = async () => (await req('GET', `/usage?user_id=${user}`, bearer(k))).body.calls_this_period as number;
    expect(await usage()).toBe(0);
    // A billable call moves the count…
    expect((await req('GET', `/exchange-b/market/data?ticker=${TB}&date=2026-03-01`, bearer(k))).status).toBe(200);
    // …coverage calls do not.
    for (let i = 0; i < 4; i++) {
      expect((await req('GET', `/exchange-b/market/coverage?ticker=${TB}&start_date=2026-03-01&end_date=2026-03-02`, bearer(k))).status).toBe(200);
      expect((await req('GET', `/exchange-a/market/coverage?condition_id=${MA}&start_date=2026-03-01&end_date=2026-03-02`, bearer(k))).status).toBe(200);
    }
    expect(await usage()).toBe(1);
    await new Promise((r) => setTimeout(r, 500)); // the request log flushes every 200 ms
    const rs = await t.ch.client.query({ query: `SELECT endpoint FROM ${t.ch.table('request_log')} WHERE user_id = {u:String}`, query_params: { u: user }, format: 'JSONEachRow' });
    expect((await rs.json<{ endpoint: string }>()).map((r) => r.endpoint)).toEqual(['/exchange-b/market/data']);
  });

  it('the OpenAPI document has the coverage and outage routes and the exchange B gap marker', async () => {
    const doc = (await req('GET', '/openapi.json', {})).body;
    for (const p of ['/api/v1/exchange-a/market/coverage', '/api/v1/exchange-b/market/coverage', '/api/v1/outages', '/api/v1/outages/{id}']) expect(doc.paths[p], p).toBeDefined();
    expect(doc.paths['/api/v1/exchange-a/market/coverage'].get.responses['429']).toBeUndefined();
    const b = doc.components.schemas.ExchangeBRawRecord;
    expect(b.properties.type.enum).toEqual(['snapshot', 'delta', 'gap', 'ticker', 'trade']);
    expect(b.properties.expected_seq).toBeDefined();
    expect(doc.components.schemas.CoverageGap.properties.kind.enum).toEqual(['disconnect', 'sequence_gap', 'unknown_book', 'outage']);
  });
});

describe('declared outages', () => {
  it('POST/DELETE need the admin token when one is set; GET is public; bad input is a 400 naming the field', async () => {
    const body = { venue: 'b', from: 1772323200, to: '2026-03-01T06:00:00Z', reason: 'kalshi maintenance' };
    expect((await req('POST', '/outages', {}, body, admin)).status).toBe(401);
    expect((await req('POST', '/outages', { 'x-admin-token': 'wrong-wrong-wrong-wrong' }, body, admin)).status).toBe(401);
    const made = await req('POST', '/outages', { 'x-admin-token': ADMIN }, body, admin);
    expect(made.status).toBe(200);
    expect(made.body.data).toMatchObject({ venue: 'exchange-b', start_ms: D1, end_ms: D1 + 6 * 3_600_000, start: '2026-03-01T00:00:00.000Z', reason: 'kalshi maintenance' });
    const id = made.body.data.id as string;
    const listed = await req('GET', '/outages?venue=exchange-b', {}, undefined, admin);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((o: any) => o.id)).toContain(id);
    expect((await req('GET', '/outages?venue=a', {}, undefined, admin)).body.data.map((o: any) => o.id)).not.toContain(id);
    expect((await req('GET', '/outages?venue=c', {}, undefined, admin)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'venue' });
    for (const [bad, param] of [
      [{ ...body, venue: 'exchange-c' }, 'venue'],
      [{ ...body, to: '2026-02-28' }, 'to'],
      [{ ...body, from: 'soon' }, 'from'],
      [{ ...body, reason: ' ' }, 'reason'],
      [{ venue: 'a', from: 1, to: 2 }, 'reason'],
      [{ ...body, from: { x: 1 } }, 'from'],
    ] as const) {
      const r = await req('POST', '/outages', { 'x-admin-token': ADMIN }, bad, admin);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
    expect((await req('DELETE', `/outages/${id}`, {}, undefined, admin)).status).toBe(401);
    expect((await req('DELETE', '/outages/nope', { 'x-admin-token': ADMIN }, undefined, admin)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'id' });
    expect((await req('DELETE', `/outages/${id}`, { 'x-admin-token': ADMIN }, undefined, admin)).status).toBe(200);
    expect((await req('DELETE', `/outages/${id}`, { 'x-admin-token': ADMIN }, undefined, admin)).status).toBe(404);
    expect((await req('GET', '/outages', {}, undefined, admin)).body.data.map((o: any) => o.id)).not.toContain(id);
  });

  it('an active outage shows in /monitoring/status and on the /status page, an ended one as ended', async () => {
    const now = Date.now();
    const active = await req('POST', '/outages', {}, { venue: 'a', from: now - 60_000, to: now + 3_600_000, reason: 'polymarket <ws> incident' });
    const ended = await req('POST', '/outages', {}, { venue: 'b', from: now - 7_200_000, to: now - 3_600_000, reason: 'earlier incident' });
    expect([active.status, ended.status]).toEqual([200, 200]);
    const app = await t.another(); // a fresh monitor (the status is cached for a second)
    const s = (await app.inject({ method: 'GET', url: '/api/v1/monitoring/status' })).json() as Record<string, any>;
    const byId = new Map((s.outages as any[]).map((o) => [o.id, o]));
    expect(byId.get(active.body.data.id)).toMatchObject({ venue: 'exchange-a', state: 'active', reason: 'polymarket <ws> incident' });
    expect(byId.get(ended.body.data.id)).toMatchObject({ venue: 'exchange-b', state: 'ended' });
    expect(s.reasons.some((r: string) => r.includes('declared outage') && r.includes('polymarket <ws> incident'))).toBe(true);
    const html = (await app.inject({ method: 'GET', url: '/status' })).body;
    expect(html).toContain(`data-outage="${active.body.data.id}" data-state="active"`);
    expect(html).toContain('polymarket &lt;ws&gt; incident');
    expect(html).not.toContain('polymarket <ws> incident');
  });
});
