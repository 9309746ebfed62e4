import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import type { RawMessage } from '@booktape/domain';
import { ExportRepository } from '@booktape/storage';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';
import { aCsv, bCsv } from './long-format.test-support.ts';
import { DAILY_VERSION_TTL_MS } from './daily.route.ts';

/**
 * Daily files across markets against the real engine: one file per venue and finalised day
 * holds every market's records (read back by hyparquet and csv-parse), is served from the
 * cache with a strong ETag and byte ranges, is refused for an open day, and is rebuilt when a
 * late row changes the day.
 */

const MARKETS = [conditionId(61), conditionId(62), conditionId(63)].sort();
const TICKERS = ['KXDAILY-A', 'KXDAILY-B'];
const DATE = '2026-03-01';
const DAY = Date.UTC(2026, 2, 1);
const NEXT = DAY + 86_400_000;

let t: TestApi;
let key: string;

function aDay(market: string, start: number, n: number, tag: string): RawMessage[] {
  return Array.from({ length: n }, (_, i) =>
    aMessage({ market, ts: start + i * 60_000, hash: `0x${tag}${i.toString(16).padStart(6, '0')}`, asset: `${tag}${i % 2}`, kind: i % 7 === 0 ? 'book' : 'price_change', frame: i % 2 }),
  );
}

beforeAll(async () => {
  t = await startTestApi();
  await t.filler.insert('exchange-a', [
    ...MARKETS.flatMap((m, k) => aDay(m, DAY + 1_800_000 * (k + 1), 20 + k * 5, `d${k}`)),
    // The next day: never in the file of DATE.
    ...aDay(MARKETS[0]!, NEXT + 1000, 5, 'n0'),
  ]);
  await t.filler.insert(
    'exchange-b',
    TICKERS.flatMap((ticker, k) => Array.from({ length: 15 }, (_, i) => bMessage({ ticker, ms: DAY + 1_000_000 * (k + 1) + i * 30_000, seq: 100 * k + i, kind: i % 5 === 0 ? 'snapshot' : 'delta' }))),
  );
  key = await t.newKey();
});
afterAll(async () => t?.close());
// A test that stops the clock (Date.now) or counts calls puts them back, also when it fails.
afterEach(() => vi.restoreAllMocks());

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { ...bearer(key), ...headers } });
  return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, json: () => JSON.parse(res.body) as Record<string, any> };
}

const arrayBuffer = (buf: Buffer) => buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
const readParquet = async (buf: Buffer) => (await parquetReadObjects({ file: arrayBuffer(buf), compressors })) as Array<Record<string, unknown>>;
/** A decimal text as hyparquet reads a DECIMAL(38, 18) column (export.int.test.ts), null where empty. */
function decimalRead(v: string | null | undefined): number | null {
  if (v === '' || v === null || v === undefined) return null;
  const [int, frac = ''] = v.replace(/^-/, '').split('.');
  return Number(BigInt(int! + frac.padEnd(18, '0')) * (v.startsWith('-') ? -1n : 1n)) * 10 ** -18;
}
/** Every market's expected CSV rows of DATE, market by market, the market leading. */
const expectedA = (): Array<Record<string, string>> => MARKETS.flatMap((m) => t.filler.expected('exchange-a', m, (ts) => ts < NEXT).flatMap(aCsv).map((r) => ({ condition_id: m, ...r })));

describe('daily files across markets', () => {
  it('exchange A raw: one Parquet file and one csv.gz with every market of the day, typed as the export', async () => {
    const expected = expectedA();
    expect(new Set(expected.map((r) => r.condition_id))).toEqual(new Set(MARKETS));
    const csv = await get(`/exchange-a/daily/raw?date=${DATE}&format=csv.gz`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('application/gzip');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="exchange-a_${DATE}_raw.csv.gz"`);
    expect(Number(csv.headers['content-length'])).toBe(csv.raw.length);
    expect(parse(gunzipSync(csv.raw), { columns: true })).toEqual(expected);

    const pq = await get(`/exchange-a/daily/raw?date=${DATE}`);
    expect(pq.status).toBe(200);
    expect(pq.headers['content-type']).toBe('application/vnd.apache.parquet');
    const md = parquetMetadata(arrayBuffer(pq.raw));
    const types = Object.fromEntries(md.schema.slice(1).map((e) => [e.name, (e.logical_type as { type: string } | undefined)?.type ?? String(e.type)]));
    expect(types).toMatchObject({ condition_id: 'STRING', timestamp: 'TIMESTAMP', price: 'DECIMAL', size: 'DECIMAL', received_at: 'TIMESTAMP' });
    expect(new Set(md.row_groups.flatMap((g) => g.columns.map((c) => String(c.meta_data?.codec))))).toEqual(new Set(['ZSTD']));
    const rows = (await readParquet(pq.raw)).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === undefined ? null : v])));
    expect(rows).toEqual(
      expected.map((e) => ({
        condition_id: e.condition_id,
        timestamp: new Date(Number(e.timestamp)),
        asset_id: e.asset_id,
        event_type: e.event_type,
        side: e.side,
        price: decimalRead(e.price),
        size: decimalRead(e.size),
        hash: e.hash,
        received_at: new Date(e.received_at!),
      })),
    );
  });

  it('exchange B raw and summaries hold every ticker; an A summary every market and token, as the per-market export', async () => {
    const b = await get(`/exchange-b/daily/raw?date=${DATE}&format=csv.gz`);
    expect(parse(gunzipSync(b.raw), { columns: true })).toEqual(TICKERS.flatMap((m) => t.filler.expected('exchange-b', m).flatMap(bCsv)));
    const bPq = await readParquet((await get(`/exchange-b/daily/raw?date=${DATE}`)).raw);
    expect(new Set(bPq.map((r) => r.ticker))).toEqual(new Set(TICKERS));

    const day = parse(gunzipSync((await get(`/exchange-a/daily/summary?date=${DATE}&resolution=3600&format=csv.gz`)).raw), { columns: true }) as Array<Record<string, string>>;
    const perMarket: Array<Record<string, string>> = [];
    for (const m of MARKETS) {
      const r = await get(`/exchange-a/market/export?condition_id=${m}&start_date=${DATE}&end_date=${DATE}&kind=summary&resolution=3600`);
      perMarket.push(...(parse(gunzipSync(r.raw), { columns: true }) as Array<Record<string, string>>).map((row) => ({ condition_id: m, ...row })));
    }
    expect(new Set(perMarket.map((r) => `${r.condition_id} ${r.asset_id}`)).size).toBe(MARKETS.length * 2);
    expect(day).toEqual(perMarket);
    const pq = await readParquet((await get(`/exchange-a/daily/summary?date=${DATE}&resolution=3600`)).raw);
    expect(pq.map((r) => [r.condition_id, r.asset_id, (r.timestamp as Date).getTime()])).toEqual(perMarket.map((r) => [r.condition_id, r.asset_id, Number(r.timestamp)]));
    const bSummary = parse(gunzipSync((await get(`/exchange-b/daily/summary?date=${DATE}&resolution=3600&format=csv.gz`)).raw), { columns: true }) as Array<Record<string, string>>;
    expect(bSummary.length).toBe(TICKERS.length * 24);
  });

  it('hour=HH: the file of one UTC hour holds exactly that hour of every market, summaries as the day file has them', async () => {
    const hourStart = DAY + 3_600_000;
    const inHour = (ts: number) => ts >= hourStart && ts < hourStart + 3_600_000;
    const want: Array<Record<string, string>> = MARKETS.flatMap((m) => t.filler.expected('exchange-a', m, inHour).flatMap(aCsv).map((r) => ({ condition_id: m, ...r })));
    // The first market's records lie in hour 0, the others' in hour 1.
    expect(new Set(want.map((r) => r.condition_id)).size).toBe(2);
    const r = await get(`/exchange-a/daily/raw?date=${DATE}&hour=1&format=csv.gz`);
    expect(r.headers['content-disposition']).toBe(`attachment; filename="exchange-a_${DATE}T01_raw.csv.gz"`);
    expect(parse(gunzipSync(r.raw), { columns: true })).toEqual(want);
    const pq = await readParquet((await get(`/exchange-a/daily/raw?date=${DATE}&hour=1`)).raw);
    expect(pq.map((x) => [x.condition_id, (x.timestamp as Date).getTime(), x.hash])).toEqual(want.map((x) => [x.condition_id, Number(x.timestamp), x.hash]));

    const day = parse(gunzipSync((await get(`/exchange-a/daily/summary?date=${DATE}&resolution=600&format=csv.gz`)).raw), { columns: true }) as Array<Record<string, string>>;
    const hour = parse(gunzipSync((await get(`/exchange-a/daily/summary?date=${DATE}&resolution=600&hour=1&format=csv.gz`)).raw), { columns: true }) as Array<Record<string, string>>;
    const dayInHour = day.filter((b) => inHour(Number(b.timestamp)));
    expect(dayInHour.length).toBeGreaterThan(0);
    expect(hour).toEqual(dayInHour);
    expect((await get(`/exchange-a/daily/raw?date=${DATE}&hour=24`)).json().error.param).toBe('hour');
  });

  it('a strong ETag and 304; a Range returns exactly those bytes; 416 beyond the file', async () => {
    const url = `/exchange-a/daily/raw?date=${DATE}&format=csv.gz`;
    const full = await get(url);
    const etag = full.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(full.headers['accept-ranges']).toBe('bytes');
    expect(full.headers['cache-control']).toMatch(/^private, max-age=\d+, immutable$/);
    const again = await get(url, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.raw.length).toBe(0);

    const size = full.raw.length;
    const head = await t.app.inject({ method: 'HEAD', url: `/api/v1${url}`, headers: bearer(key) });
    expect(head.statusCode).toBe(200);
    expect(head.rawPayload.length).toBe(0);
    expect([head.headers['content-length'], head.headers.etag, head.headers['accept-ranges']]).toEqual([String(size), etag, 'bytes']);
    const mid = await get(url, { range: 'bytes=10-99' });
    expect(mid.status).toBe(206);
    expect(mid.headers['content-range']).toBe(`bytes 10-99/${size}`);
    expect(Number(mid.headers['content-length'])).toBe(90);
    expect(mid.raw.equals(full.raw.subarray(10, 100))).toBe(true);
    const tail = await get(url, { range: 'bytes=-20' });
    expect(tail.raw.equals(full.raw.subarray(size - 20))).toBe(true);
    const rest = await get(url, { range: `bytes=${size - 5}-` });
    expect(rest.raw.equals(full.raw.subarray(size - 5))).toBe(true);
    const beyond = await get(url, { range: `bytes=${size}-` });
    expect(beyond.status).toBe(416);
    expect(beyond.headers['content-range']).toBe(`bytes */${size}`);
    expect(beyond.json().error.code).toBe('range_not_satisfiable');

    // Requests side by side for a file not built yet: one build, the same bytes for all.
    const side = await Promise.all([1, 2, 3].map(() => get(`/exchange-a/daily/summary?date=${DATE}&resolution=900`)));
    expect(side.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(side.every((r) => r.raw.equals(side[0]!.raw))).toBe(true);
    expect((await readdir(t.config.dailyDir)).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('an open day is refused with when it will be available; bad parameters are 400s', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const open = await get(`/exchange-a/daily/raw?date=${today}`);
    expect(open.status).toBe(409);
    expect(open.json().error).toMatchObject({ code: 'not_finalised', param: 'date' });
    expect(open.json().error.message).toContain(new Date(Date.parse(`${today}T00:00:00Z`) + 86_400_000 + t.config.caching.finalisedAfterMs).toISOString());
    for (const [qs, param] of [
      ['date=2026-02-30', 'date'],
      [`date=${DATE}&format=xlsx`, 'format'],
      [`date=${DATE}&resolution=0`, 'resolution'],
    ] as const) {
      const r = await get(`/exchange-a/daily/${qs.includes('resolution') ? 'summary' : 'raw'}?${qs}`);
      expect(r.status, qs).toBe(400);
      expect(r.json().error.param, qs).toBe(param);
    }
  });

  it('HEAD, 304s and range GETs in a row read the day’s version once; read again after a few seconds, or once its file is gone', async () => {
    const url = `/exchange-b/daily/raw?date=${DATE}&format=csv.gz`;
    // The clock stands still, so "in a row" does not depend on how busy the machine is.
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
    try {
      const full = await get(url);
      expect(full.status).toBe(200);
      const etag = full.headers.etag as string;
      const reads = vi.spyOn(ExportRepository.prototype, 'dayVersion');
      const head = () => t.app.inject({ method: 'HEAD', url: `/api/v1${url}`, headers: bearer(key) });
      expect((await head()).statusCode).toBe(200);
      for (let i = 0; i < 3; i++) expect((await get(url, { 'if-none-match': etag })).status).toBe(304);
      for (const range of ['bytes=0-9', 'bytes=10-99', 'bytes=-20']) {
        const part = await get(url, { range });
        expect(part.status).toBe(206);
        expect(part.headers.etag).toBe(etag);
      }
      expect(reads).toHaveBeenCalledTimes(0);
      // A few seconds later the day is counted again (a late row would be seen), once.
      clock.mockReturnValue(now + DAILY_VERSION_TTL_MS);
      expect((await head()).headers.etag).toBe(etag);
      expect((await get(url, { 'if-none-match': etag })).status).toBe(304);
      expect(reads).toHaveBeenCalledTimes(1);
      // The file of that version gone (a newer build removes it): the version is read afresh, the file built again.
      for (const f of await readdir(t.config.dailyDir)) if (f.startsWith(`exchange-b_${DATE}_raw_`) && f.endsWith('.csv.gz')) await unlink(path.join(t.config.dailyDir, f));
      const rebuilt = await get(url);
      expect([rebuilt.status, rebuilt.headers.etag]).toEqual([200, etag]);
      expect(rebuilt.raw.equals(full.raw)).toBe(true);
      expect(reads.mock.calls.length).toBeGreaterThanOrEqual(2);
    } finally {
      clock.mockRestore();
    }
  });

  it('a late row into the finalised day changes the ETag and the file (seen within a few seconds)', async () => {
    const url = `/exchange-a/daily/raw?date=${DATE}&format=csv.gz`;
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
    const before = await get(url);
    const summaryUrl = `/exchange-a/daily/summary?date=${DATE}&resolution=3600&format=csv.gz`;
    const summaryBefore = await get(summaryUrl);
    const late = aMessage({ market: MARKETS[1]!, ts: DAY + 86_000_000, hash: '0xlate01', asset: 'late', kind: 'book' });
    await t.filler.insert('exchange-a', [late]);
    // Within the few seconds the version is kept, the answer may still be the day before the late row.
    expect((await get(url, { 'if-none-match': before.headers.etag as string })).status).toBe(304);
    clock.mockReturnValue(now + DAILY_VERSION_TTL_MS);
    const after = await get(url, { 'if-none-match': before.headers.etag as string });
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    const rows = parse(gunzipSync(after.raw), { columns: true }) as Array<Record<string, string>>;
    expect(rows).toEqual(expectedA());
    expect(rows.some((r) => r.hash === '0xlate01' && r.condition_id === MARKETS[1])).toBe(true);
    // The day's summaries too: the late token's buckets join.
    const summaryAfter = await get(summaryUrl, { 'if-none-match': summaryBefore.headers.etag as string });
    expect(summaryAfter.status).toBe(200);
    expect(summaryAfter.headers.etag).not.toBe(summaryBefore.headers.etag);
    expect((parse(gunzipSync(summaryAfter.raw), { columns: true }) as Array<Record<string, string>>).some((b) => b.asset_id === 'late')).toBe(true);
    // The old version of the file is gone from the cache.
    expect((await readdir(t.config.dailyDir)).filter((f) => f.startsWith(`exchange-a_${DATE}_raw_`) && f.endsWith('.csv.gz'))).toHaveLength(1);
  });
});
