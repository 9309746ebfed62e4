import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { RawMessage } from '@booktape/domain';
import { MAX_TIMESTAMP_MS } from '../http/params.ts';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * Raw data endpoints against a real embedded ClickHouse and the real Redis: shapes and
 * values of every endpoint and alias, the parameter rules, and pagination walks (offset
 * and cursor) that must yield every record once, in order, for any page size, with many
 * records sharing one millisecond.
 */

const MA = conditionId(1);
const MA2 = conditionId(2);
const TB = 'KXBTCD-26MAR01-T84999.99';
const DAY = Date.UTC(2026, 2, 1); // 2026-03-01
const NEXT = Date.UTC(2026, 2, 2);
const EARLY = Date.UTC(2026, 1, 1); // before exchange A's earliest date
const ASSETS = ['7132104567925221259462638553270691275033272857194253228963137931245558399256', '1123581321345589144233377610987159725844181676510946177112865746368'];

let t: TestApi;
let key: string;

function aDay(start: number, n: number, perMs: number, tag: string): RawMessage[] {
  const out: RawMessage[] = [];
  for (let i = 0; i < n; i++) {
    const ms = start + Math.floor(i / perMs);
    const k = i % perMs;
    // Hashes deliberately out of ingest order, two assets, and pairs sharing ingest_seq.
    out.push(
      aMessage({
        market: MA,
        ts: ms,
        hash: `0x${tag}${((perMs - k) * 7919 + i).toString(16).padStart(8, '0')}`,
        asset: ASSETS[k % 2],
        kind: k === 0 ? 'book' : k === 5 ? 'tick_size_change' : 'price_change',
        receivedMs: ms + 3,
        frame: Math.floor(k / 2),
        record: k === 3 ? 0 : k % 2,
      }),
    );
  }
  return out;
}

function bDay(start: number, n: number, perMs: number, ticker: string, seq0: number): RawMessage[] {
  return Array.from({ length: n }, (_, i) => bMessage({ ticker, ms: start + Math.floor(i / perMs), seq: seq0 + i, kind: i % 25 === 0 ? 'snapshot' : 'delta', frame: i % perMs }));
}

beforeAll(async () => {
  t = await startTestApi();
  const a1 = aDay(DAY, 240, 8, 'a');
  await t.filler.insert('exchange-a', a1.slice(0, 150));
  await t.filler.insert('exchange-a', a1.slice(150));
  await t.filler.insert('exchange-a', aDay(NEXT + 5000, 40, 4, 'b'));
  await t.filler.insert('exchange-a', aDay(EARLY, 5, 1, 'c'));
  await t.filler.insert('exchange-a', [aMessage({ market: MA2, ts: DAY + 1, hash: '0xother' })]);
  // A replay and a reconnect re-send: the same events later, with later ingest_seq.
  const again = a1.slice(100, 130).map((m) => (m.venue === 'exchange-a' ? { ...m, received_at: new Date(Date.parse(m.received_at) + 60_000).toISOString(), ingest_seq: (BigInt(m.ingest_seq) + 2n ** 40n).toString() } : m));
  await t.filler.insert('exchange-a', again);

  const b1 = bDay(DAY + 100, 150, 5, TB, 1000);
  await t.filler.insert('exchange-b', b1);
  await t.filler.insert('exchange-b', bDay(NEXT, 20, 2, TB, 2000));
  await t.filler.insert('exchange-b', bDay(EARLY, 3, 1, TB, 3000));
  await t.filler.insert('exchange-b', b1.slice(0, 20));
  key = await t.newKey();
});
afterAll(async () => t?.close());

async function get(url: string, headers: Record<string, string> = bearer(key)) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });
  return { status: res.statusCode, body: res.json() as Record<string, any>, headers: res.headers };
}

const dateOf = (ts: number) => new Date(ts).toISOString().slice(0, 10);

function expectARecordTypes(r: Record<string, unknown>) {
  expect(typeof r.market).toBe('string');
  expect(typeof r.asset_id).toBe('string');
  expect(r.timestamp).toMatch(/^\d{13}$/);
  expect(typeof r.hash).toBe('string');
  expect(typeof r.event_type).toBe('string');
  for (const side of ['bids', 'asks'] as const) {
    if (r[side] !== undefined) for (const l of r[side] as Array<Record<string, unknown>>) expect([typeof l.price, typeof l.size]).toEqual(['string', 'string']);
  }
  if (r.changes !== undefined) for (const c of r.changes as Array<Record<string, unknown>>) expect([typeof c.price, typeof c.side, typeof c.size]).toEqual(['string', 'string', 'string']);
  expect(r.received_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  expect(Number.isInteger(r.worker_id)).toBe(true);
}

function expectBRecordTypes(r: Record<string, unknown>) {
  expect(typeof r.type).toBe('string');
  expect(typeof r.ticker).toBe('string');
  expect(new Date(r.timestamp as string).toISOString()).toBe(r.timestamp);
  expect(Number.isInteger(r.epoch_ms)).toBe(true);
  expect(r.seq === null || Number.isInteger(r.seq)).toBe(true);
  for (const side of ['yes', 'no'] as const) {
    if (r[side] !== undefined && r[side] !== null) for (const p of r[side] as unknown[]) expect(p).toEqual([expect.any(String), expect.any(String)]);
  }
  expect(r.received_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  expect(Number.isInteger(r.worker_id)).toBe(true);
}

function expectOffsetPagination(p: Record<string, unknown>, offset: number, limit: number, total: number, returned: number) {
  expect(p).toEqual({ offset, limit, total_count: total, has_more: offset + returned < total });
}

describe('exchange A raw data by date', () => {
  it('answers the interface fields with their types and the stored values, in serving order', async () => {
    const expected = t.filler.expected('exchange-a', MA, (ts) => dateOf(ts) === '2026-03-01');
    expect(expected).toHaveLength(240);
    const { status, body, headers } = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01`);
    expect(status).toBe(200);
    expect(headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(body).sort()).toEqual(['data', 'data_count', 'date', 'market_condition_id', 'pagination']);
    expect(body.market_condition_id).toBe(MA);
    expect(body.date).toBe('2026-03-01');
    expect(body.data_count).toBe(240);
    expectOffsetPagination(body.pagination, 0, 10_000, 240, 240);
    for (const r of body.data) expectARecordTypes(r);
    expect(body.data).toEqual(expected);
    // The replayed copies did not replace the first ones.
    expect(body.data.filter((r: any) => r.received_at > '2026-03-01T00:01')).toEqual([]);
    // Venue extras are flattened in (book: tick_size; price_change: best_bid/best_ask).
    expect(body.data[0]).toMatchObject({ event_type: 'book', tick_size: '0.01' });
  });

  it('the legacy alias /market/data answers the same', async () => {
    const a = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&offset=17&limit=33`);
    const b = await get(`/market/data?condition_id=${MA}&date=2026-03-01&offset=17&limit=33`);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.body).toEqual(a.body);
    expect(a.body.data_count).toBe(33);
    expectOffsetPagination(a.body.pagination, 17, 33, 240, 33);
  });

  it('accepts the condition id without 0x and in any case, and answers it normalised', async () => {
    const upper = MA.slice(2).toUpperCase();
    const a = await get(`/exchange-a/market/data?condition_id=${upper}&date=2026-03-01&limit=5`);
    const b = await get(`/exchange-a/market/data?condition_id=0X${upper}&date=2026-03-01&limit=5`);
    expect(a.body.market_condition_id).toBe(MA);
    expect(b.body).toEqual(a.body);
    expect(a.body.data).toEqual(t.filler.expected('exchange-a', MA, (ts) => dateOf(ts) === '2026-03-01').slice(0, 5));
  });

  it('an offset past the end and a market without data answer 200 with no records', async () => {
    const past = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01&offset=240`);
    expect(past.status).toBe(200);
    expect(past.body.data).toEqual([]);
    expectOffsetPagination(past.body.pagination, 240, 10_000, 240, 0);
    const none = await get(`/exchange-a/market/data?condition_id=0x${'9'.repeat(64)}&date=2026-03-01`);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ market_condition_id: `0x${'9'.repeat(64)}`, date: '2026-03-01', data: [], data_count: 0, pagination: { offset: 0, limit: 10_000, total_count: 0, has_more: false } });
  });

  it('refuses dates before the earliest date (400, param date), also on the alias', async () => {
    for (const url of ['/exchange-a/market/data', '/market/data']) {
      const r = await get(`${url}?condition_id=${MA}&date=2026-02-01`);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_parameter', param: 'date' });
      expect(r.body.error.message).toContain('2026-02-08');
    }
    const first = await get(`/exchange-a/market/data?condition_id=${MA}&date=2026-02-08`);
    expect(first.status).toBe(200);
  });

  it('streams the body (chunked, no content-length) over a real socket', async () => {
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const res = await fetch(`${address}/api/v1/exchange-a/market/data?condition_id=${MA}&date=2026-03-01`, { headers: bearer(key) });
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('content-length')).toBeNull();
    expect(((await res.json()) as any).data).toHaveLength(240);
  });
});

describe('exchange B raw data by date', () => {
  it('answers the interface fields with their types and the stored values', async () => {
    const expected = t.filler.expected('exchange-b', TB, (ts) => dateOf(ts) === '2026-03-01');
    expect(expected).toHaveLength(150);
    const { status, body } = await get(`/exchange-b/market/data?ticker=${TB.toLowerCase()}&date=2026-03-01&limit=100`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['data', 'data_count', 'date', 'market_ticker', 'pagination']);
    expect(body.market_ticker).toBe(TB);
    expect(body.data_count).toBe(100);
    expectOffsetPagination(body.pagination, 0, 100, 150, 100);
    for (const r of body.data) expectBRecordTypes(r);
    expect(body.data).toEqual(expected.slice(0, 100));
    expect(body.data[0]).toMatchObject({ type: 'snapshot', yes: [['0.4100', '120.00'], ['0.4200', '15.00']] });
  });

  it('serves dates before exchange A’s earliest date (the rule is exchange A’s only)', async () => {
    const r = await get(`/exchange-b/market/data?ticker=${TB}&date=2026-02-01`);
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(3);
  });
});

describe('raw data by range', () => {
  it('exchange A: inclusive bounds, seconds or milliseconds, answered in milliseconds', async () => {
    const start = DAY + 3;
    const end = DAY + 10;
    const expected = t.filler.expected('exchange-a', MA, (ts) => ts >= start && ts <= end);
    expect(expected.length).toBe(64);
    const { status, body } = await get(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${start}&end_timestamp=${end}`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['data', 'data_count', 'end_timestamp', 'market_condition_id', 'pagination', 'start_timestamp']);
    expect(body).toMatchObject({ market_condition_id: MA, start_timestamp: start, end_timestamp: end, data_count: 64 });
    expect(body.pagination).toEqual({ limit: 10_000, has_more: false, next_cursor: null });
    for (const r of body.data) expectARecordTypes(r);
    expect(body.data).toEqual(expected);

    // Whole seconds: 2026-03-01T00:00:00.000Z .. 2026-03-02T00:00:00.999Z (an end in seconds covers its second).
    const s = await get(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${DAY / 1000}&end_timestamp=${NEXT / 1000}`);
    expect(s.body.start_timestamp).toBe(DAY);
    expect(s.body.end_timestamp).toBe(NEXT + 999);
    expect(s.body.data).toEqual(t.filler.expected('exchange-a', MA, (ts) => ts >= DAY && ts <= NEXT + 999));
    // The same window in ISO 8601, in another zone: the same answer.
    const iso = await get(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=2026-02-28T19:00:00-05:00&end_timestamp=2026-03-02T01:00:00%2B01:00`);
    expect(iso.body).toEqual(s.body);
    expect((await get(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=2026-03-01T00:00:00&end_timestamp=${NEXT}`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'start_timestamp' });
  });

  it('the legacy alias /market/data/range answers the same, cursors included', async () => {
    const q = `condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${NEXT + 86_400_000}&limit=50`;
    const a = await get(`/exchange-a/market/data/range?${q}`);
    const b = await get(`/market/data/range?${q}`);
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    expect(a.body.pagination).toMatchObject({ limit: 50, has_more: true, next_cursor: expect.any(String) });
    const a2 = await get(`/exchange-a/market/data/range?${q}&cursor=${a.body.pagination.next_cursor}`);
    const b2 = await get(`/market/data/range?${q}&cursor=${encodeURIComponent(b.body.pagination.next_cursor)}`);
    expect(b2.body).toEqual(a2.body);
    expect(a2.body.data).toEqual(t.filler.expected('exchange-a', MA, (ts) => ts >= DAY).slice(50, 100));
  });

  it('exchange B: same parameters with ticker, answered with market_ticker', async () => {
    const start = DAY + 100;
    const end = DAY + 110;
    const { status, body } = await get(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${start}&end_timestamp=${end}&limit=20`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['data', 'data_count', 'end_timestamp', 'market_ticker', 'pagination', 'start_timestamp']);
    expect(body).toMatchObject({ market_ticker: TB, start_timestamp: start, end_timestamp: end, data_count: 20 });
    expect(body.pagination).toEqual({ limit: 20, has_more: true, next_cursor: expect.any(String) });
    for (const r of body.data) expectBRecordTypes(r);
    expect(body.data).toEqual(t.filler.expected('exchange-b', TB, (ts) => ts >= start && ts <= end).slice(0, 20));
  });

  it('the widest range the store can hold returns everything; beyond it is a 400', async () => {
    const r = await get(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=0&end_timestamp=${MAX_TIMESTAMP_MS}`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual(t.filler.expected('exchange-b', TB));
    const past = await get(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=0&end_timestamp=${MAX_TIMESTAMP_MS + 1}`);
    expect(past.body.error).toMatchObject({ code: 'invalid_parameter', param: 'end_timestamp' });
    const date = await get(`/exchange-b/market/data?ticker=${TB}&date=2149-06-07`);
    expect(date.body.error).toMatchObject({ code: 'invalid_parameter', param: 'date' });
  });

  it('a range without data answers 200, empty, without a cursor', async () => {
    const r = await get(`/exchange-b/market/data/range?ticker=NOPE-1&start_timestamp=${DAY}&end_timestamp=${NEXT}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ market_ticker: 'NOPE-1', start_timestamp: DAY, end_timestamp: NEXT, data: [], data_count: 0, pagination: { limit: 10_000, has_more: false, next_cursor: null } });
  });

  it('refuses start after end, and exchange A ranges before the earliest date', async () => {
    const r1 = await get(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${DAY + 1}&end_timestamp=${DAY}`);
    expect(r1.status).toBe(400);
    expect(r1.body.error).toMatchObject({ code: 'invalid_parameter', param: 'start_timestamp' });
    const r2 = await get(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY + 1}&end_timestamp=${DAY}`);
    expect(r2.status).toBe(400);
    for (const url of ['/exchange-a/market/data/range', '/market/data/range']) {
      const r3 = await get(`${url}?condition_id=${MA}&start_timestamp=${Date.UTC(2026, 1, 8) - 1}&end_timestamp=${DAY}`);
      expect(r3.status).toBe(400);
      expect(r3.body.error).toMatchObject({ code: 'invalid_parameter', param: 'start_timestamp' });
    }
    const ok = await get(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${Date.UTC(2026, 1, 8) / 1000}&end_timestamp=${DAY}`);
    expect(ok.status).toBe(200);
    const b = await get(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${EARLY}&end_timestamp=${EARLY + 10}`);
    expect(b.status).toBe(200);
    expect(b.body.data).toHaveLength(3);
  });

  it('refuses altered cursors and cursors used with other parameters (400 invalid_cursor)', async () => {
    const q = `condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${NEXT}&limit=10`;
    const first = await get(`/exchange-a/market/data/range?${q}`);
    const cursor: string = first.body.pagination.next_cursor;
    const flip = (c: string, i: number) => c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
    const bad = [
      flip(cursor, 5),
      flip(cursor, cursor.length - 2),
      cursor.slice(0, -3),
      `${cursor}x`,
      'v1.e30.AAAA',
      'not-a-cursor',
    ];
    for (const c of bad) {
      const r = await get(`/exchange-a/market/data/range?${q}&cursor=${encodeURIComponent(c)}`);
      expect(r.status, c).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_cursor', param: 'cursor' });
    }
    const foreign = [
      `condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${NEXT + 1}&limit=10`,
      `condition_id=${MA}&start_timestamp=${DAY + 1}&end_timestamp=${NEXT}&limit=10`,
      `condition_id=${MA2}&start_timestamp=${DAY}&end_timestamp=${NEXT}&limit=10`,
    ];
    for (const fq of foreign) {
      const r = await get(`/exchange-a/market/data/range?${fq}&cursor=${cursor}`);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_cursor');
    }
    // Another venue.
    const rb = await get(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${NEXT}&limit=10&cursor=${cursor}`);
    expect(rb.body.error.code).toBe('invalid_cursor');
    // Only the limit may change between pages. A cursor issued for an end at a second's
    // .000 (as an end in seconds read before the one time model) continues with the end given
    // in seconds, which now covers the whole second: a superset, nothing repeated or skipped.
    const ok = await get(`/exchange-a/market/data/range?condition_id=${MA.toUpperCase().replace('0X', '')}&start_timestamp=${DAY / 1000}&end_timestamp=${NEXT / 1000}&limit=7&cursor=${cursor}`);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual(t.filler.expected('exchange-a', MA, (ts) => ts >= DAY && ts <= NEXT).slice(10, 17));
  });
});

describe('pagination walks (properties)', () => {
  async function walkOffset(path: string, limit: number) {
    const out: unknown[] = [];
    for (let offset = 0, pages = 0; ; pages++) {
      const r = await get(`${path}&offset=${offset}&limit=${limit}`);
      expect(r.status).toBe(200);
      expect(r.body.data_count).toBe(r.body.data.length);
      expect(r.body.data.length).toBeLessThanOrEqual(limit);
      out.push(...r.body.data);
      if (!r.body.pagination.has_more) {
        expect(r.body.pagination.total_count).toBe(out.length);
        return out;
      }
      expect(r.body.data.length).toBe(limit);
      offset += limit;
      if (pages > 500) throw new Error('offset walk does not end');
    }
  }

  async function walkCursor(path: string, limit: number) {
    const out: unknown[] = [];
    let cursor: string | null = null;
    for (let pages = 0; ; pages++) {
      const r = await get(`${path}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data_count).toBe(r.body.data.length);
      out.push(...r.body.data);
      if (!r.body.pagination.has_more) {
        expect(r.body.pagination.next_cursor).toBeNull();
        return out;
      }
      expect(r.body.data.length).toBe(limit);
      cursor = r.body.pagination.next_cursor;
      expect(typeof cursor).toBe('string');
      if (pages > 500) throw new Error('cursor walk does not end');
    }
  }

  const arbLimit = fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 10, max: 260 }));

  it('by offset: every record exactly once, in order, for any page size (both venues)', async () => {
    const a = t.filler.expected('exchange-a', MA, (ts) => dateOf(ts) === '2026-03-01');
    const b = t.filler.expected('exchange-b', TB, (ts) => dateOf(ts) === '2026-03-01');
    await fc.assert(
      fc.asyncProperty(arbLimit, fc.boolean(), async (limit, venueA) => {
        const got = venueA
          ? await walkOffset(`/exchange-a/market/data?condition_id=${MA}&date=2026-03-01`, limit)
          : await walkOffset(`/exchange-b/market/data?ticker=${TB}&date=2026-03-01`, limit);
        expect(got).toEqual(venueA ? a : b);
      }),
      { numRuns: 14 },
    );
  });

  it('by cursor: every record of any range exactly once, in order, for any page size (both venues)', async () => {
    await fc.assert(
      fc.asyncProperty(arbLimit, fc.boolean(), fc.integer({ min: -3, max: 40 }), fc.integer({ min: 0, max: 40 }), async (limit, venueA, s, len) => {
        const origin = venueA ? DAY : DAY + 100;
        const start = origin + s;
        const end = start + len;
        const expected = venueA ? t.filler.expected('exchange-a', MA, (ts) => ts >= start && ts <= end) : t.filler.expected('exchange-b', TB, (ts) => ts >= start && ts <= end);
        const got = venueA
          ? await walkCursor(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${start}&end_timestamp=${end}`, limit)
          : await walkCursor(`/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${start}&end_timestamp=${end}`, limit);
        expect(got).toEqual(expected);
      }),
      { numRuns: 24 },
    );
  });

  it('by cursor across UTC dates: a walk over two days sees both', async () => {
    const got = await walkCursor(`/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${NEXT + 86_399_999}`, 37);
    expect(got).toEqual(t.filler.expected('exchange-a', MA, (ts) => ts >= DAY));
    expect(got).toHaveLength(280);
  });
});

describe('authentication on every historical-data endpoint', () => {
  const urls = [
    `/exchange-a/market/data?condition_id=${MA}&date=2026-03-01`,
    `/market/data?condition_id=${MA}&date=2026-03-01`,
    `/exchange-b/market/data?ticker=${TB}&date=2026-03-01`,
    `/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${NEXT}`,
    `/market/data/range?condition_id=${MA}&start_timestamp=${DAY}&end_timestamp=${NEXT}`,
    `/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY}&end_timestamp=${NEXT}`,
    `/exchange-a/market/date-range?condition_id=${MA}`,
    `/exchange-b/market/date-range?ticker=${TB}`,
    `/exchange-a/market/list`,
    `/exchange-b/market/list`,
  ];

  it('401 without a key, with a malformed header, or with an unknown key; 200 with a key', async () => {
    const unknown = `bt_live_${'A'.repeat(43)}`;
    for (const url of urls) {
      for (const headers of [{}, { authorization: `Basic ${key}` }, { authorization: 'Bearer' }, bearer(unknown), bearer(`${key}x`)]) {
        const r = await get(url, headers as Record<string, string>);
        expect(r.status, `${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(r.body.error.code).toBe('unauthorized');
      }
      expect((await get(url)).status, url).toBe(200);
    }
  });

  it('authentication comes before parameter checks (no probing without a key)', async () => {
    const r = await get('/exchange-a/market/data?condition_id=zz', {});
    expect(r.status).toBe(401);
  });

  it('/health needs no key', async () => {
    const r = await get('/health', {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ok', checks: { clickhouse: true, redis: true } });
  });
});
