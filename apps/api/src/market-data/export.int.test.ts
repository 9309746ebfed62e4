import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import type { ExchangeBMessage, RawMessage } from '@booktape/domain';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';
import { aCsv, bCsv } from './long-format.test-support.ts';

/**
 * Bulk export against the real engine: the gzipped CSV and the Parquet file (read back by
 * hyparquet, an independent reader) hold exactly the reference records in the documented
 * long format, over several days; summary exports hold exactly the JSON summary buckets of
 * every token and day.
 */

const MA = conditionId(31);
const TB = 'KXEXPORT-26MAR01';
const DAY1 = Date.UTC(2026, 2, 1);
const DAY2 = DAY1 + 86_400_000;
const ASSETS = ['3101', '3102'];

let t: TestApi;
let key: string;

function aDay(start: number, n: number, tag: string): RawMessage[] {
  return Array.from({ length: n }, (_, i) =>
    aMessage({ market: MA, ts: start + i * 60_000, hash: `0x${tag}${i.toString(16).padStart(6, '0')}`, asset: ASSETS[i % 2], kind: i % 9 === 0 ? 'book' : i % 9 === 4 ? 'tick_size_change' : 'price_change', frame: i % 2 }),
  );
}

function bDay(start: number, n: number, seq0: number): RawMessage[] {
  return Array.from({ length: n }, (_, i): RawMessage => {
    const m = bMessage({ ticker: TB, ms: start + i * 45_000, seq: seq0 + i, kind: i % 12 === 0 ? 'snapshot' : 'delta' });
    if (i % 12 === 7) return { ...m, record: { ...m.record, type: 'gap', expected_seq: seq0 + i - 1 } } as ExchangeBMessage;
    if (i % 12 === 9) return { ...m, record: { ticker: TB, timestamp: m.record.timestamp, epoch_ms: m.record.epoch_ms, sid: 12, seq: seq0 + i, type: 'trade', data: { yes_price: 41, note: 'a, "b"' } } };
    return m;
  });
}

beforeAll(async () => {
  t = await startTestApi();
  await t.filler.insert('exchange-a', [...aDay(DAY1 + 3_600_000, 60, 'e1'), ...aDay(DAY2 + 7_200_000, 40, 'e2')]);
  await t.filler.insert('exchange-b', [...bDay(DAY1 + 1_000_000, 50, 100), ...bDay(DAY2 + 5_000_000, 30, 900)]);
  key = await t.newKey();
});
afterAll(async () => t?.close());

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, json: () => JSON.parse(res.body) as Record<string, any> };
}

const arrayBuffer = (buf: Buffer) => buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
const readParquet = async (buf: Buffer) => (await parquetReadObjects({ file: arrayBuffer(buf), compressors })) as Array<Record<string, unknown>>;
/** Parquet rows with Int64 read as numbers (hyparquet gives bigints), absent values as null. */
const typed = (rows: Array<Record<string, unknown>>) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === undefined ? null : typeof v === 'bigint' ? Number(v) : v])));
/** A CSV integer field as its Int64 column holds it, null where the CSV is empty. */
const numOrNull = (v: string | null | undefined): number | null => (v === '' || v === null || v === undefined ? null : Number(v));
/**
 * A decimal text as hyparquet reads a DECIMAL(38, 18) column: the stored unscaled integer
 * (exactly text × 10^18, computed here in BigInt from the exact text) times 10^-18, the
 * reader's own formula. Null where the CSV is empty.
 */
function decimalRead(v: string | null | undefined): number | null {
  if (v === '' || v === null || v === undefined) return null;
  const [int, frac = ''] = v.replace(/^-/, '').split('.');
  const unscaled = BigInt(int! + frac.padEnd(18, '0')) * (v.startsWith('-') ? -1n : 1n);
  return Number(unscaled) * 10 ** -18;
}
/** Every column's Parquet type as hyparquet reports it, and every column chunk's codec. */
function layout(buf: Buffer): { columns: Record<string, string>; codecs: Set<string> } {
  const md = parquetMetadata(arrayBuffer(buf));
  const columns: Record<string, string> = {};
  for (const e of md.schema.slice(1)) {
    const lt = e.logical_type as { type: string; unit?: string; isAdjustedToUTC?: boolean; precision?: number; scale?: number } | undefined;
    columns[e.name] =
      lt?.type === 'TIMESTAMP' ? `timestamp[${lt.unit}${lt.isAdjustedToUTC ? ', UTC' : ''}]` : lt?.type === 'DECIMAL' ? `decimal(${lt.precision}, ${lt.scale})` : lt?.type === 'STRING' ? 'string' : String(e.type);
  }
  return { columns, codecs: new Set(md.row_groups.flatMap((g) => g.columns.map((c) => String(c.meta_data?.codec)))) };
}
const TS = 'timestamp[MILLIS, UTC]';
const DEC = 'decimal(38, 18)';

describe('bulk export', () => {
  it('exchange A raw: gzipped CSV and Parquet hold the reference records, long format, two days', async () => {
    const expected = t.filler.expected('exchange-a', MA).flatMap(aCsv);
    expect(expected.length).toBeGreaterThan(100);
    const csv = await get(`/exchange-a/market/export?condition_id=${MA}&start_date=2026-03-01&end_date=2026-03-02`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('application/gzip');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="${MA}_2026-03-01_2026-03-02_raw.csv.gz"`);
    expect(parse(gunzipSync(csv.raw), { columns: true })).toEqual(expected);

    const pq = await get(`/exchange-a/market/export?condition_id=${MA}&start_date=2026-03-01&end_date=2026-03-02&format=parquet`);
    expect(pq.status).toBe(200);
    expect(pq.headers['content-type']).toBe('application/vnd.apache.parquet');
    expect(layout(pq.raw)).toEqual({
      columns: { timestamp: TS, asset_id: 'string', event_type: 'string', side: 'string', price: DEC, size: DEC, hash: 'string', received_at: TS },
      codecs: new Set(['ZSTD']),
    });
    const rows = await readParquet(pq.raw);
    expect(rows.length).toBe(expected.length);
    expect(typed(rows)).toEqual(
      expected.map((e) => ({
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
    // One day only.
    const one = await get(`/exchange-a/market/export?condition_id=${MA}&start_date=2026-03-02&end_date=2026-03-02`);
    expect(parse(gunzipSync(one.raw), { columns: true })).toEqual(t.filler.expected('exchange-a', MA, (ts) => ts >= DAY2).flatMap(aCsv));
  });

  it('exchange B raw: snapshots, deltas, gaps and trades in CSV and Parquet', async () => {
    const expected = t.filler.expected('exchange-b', TB).flatMap(bCsv);
    const csv = await get(`/exchange-b/market/export?ticker=${TB}&start_date=2026-03-01&end_date=2026-03-02&format=csv&kind=raw`);
    expect(parse(gunzipSync(csv.raw), { columns: true })).toEqual(expected);
    const file = (await get(`/exchange-b/market/export?ticker=${TB}&start_date=2026-03-01&end_date=2026-03-02&format=parquet`)).raw;
    expect(layout(file).columns).toMatchObject({ timestamp: TS, price: DEC, size: DEC, delta: DEC, seq: 'INT64', received_at: TS });
    const rows = await readParquet(file);
    expect(typed(rows)).toEqual(
      expected.map((e) => ({
        timestamp: new Date(Number(e.timestamp)),
        ticker: e.ticker,
        type: e.type,
        side: e.side,
        price: decimalRead(e.price),
        size: decimalRead(e.size),
        delta: decimalRead(e.delta),
        seq: numOrNull(e.seq),
        sid: numOrNull(e.sid),
        expected_seq: numOrNull(e.expected_seq),
        received_at: new Date(e.received_at!),
        data: e.data,
      })),
    );
  });

  it('summaries: every token and day, the JSON answer bucket for bucket, in CSV and Parquet', async () => {
    const json: Array<Record<string, unknown>> = [];
    for (const asset of ASSETS) {
      for (const date of ['2026-03-01', '2026-03-02']) {
        const r = await get(`/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${asset}&date=${date}&resolution=900`);
        for (const b of r.json().data) json.push({ asset_id: asset, ...b });
      }
    }
    expect(json.length).toBeGreaterThan(100);
    const flat = json.map((b: any) => {
      const o: Record<string, unknown> = { asset_id: b.asset_id, timestamp: b.timestamp, quote_count: b.quote_count, is_forward_filled: b.is_forward_filled, best_bid: b.best_bid, best_bid_size: b.best_bid_size, best_ask: b.best_ask, best_ask_size: b.best_ask_size, mid_price: b.mid_price, spread: b.spread };
      for (const p of ['best_bid', 'best_ask', 'mid_price', 'spread']) for (const f of ['open', 'high', 'low', 'close']) o[`${p}_${f}`] = b[`${p}_ohlc`]?.[f] ?? null;
      return o;
    });
    const base = `/exchange-a/market/export?condition_id=${MA}&start_date=2026-03-01&end_date=2026-03-02&kind=summary&resolution=900`;
    const cast = (v: string, ctx: { header: boolean; column: string | number }) => (ctx.header ? v : v === '' ? null : v === 'true' ? true : v === 'false' ? false : ctx.column === 'asset_id' ? v : Number(v));
    const csvRows = parse(gunzipSync((await get(base)).raw), { columns: true, cast });
    expect(csvRows).toEqual(flat);
    const file = (await get(`${base}&format=parquet`)).raw;
    const cols = layout(file);
    expect(cols.codecs).toEqual(new Set(['ZSTD']));
    expect(cols.columns).toMatchObject({ asset_id: 'string', timestamp: TS, quote_count: 'INT32', is_forward_filled: 'BOOLEAN', best_bid: DEC, spread: DEC, mid_price_close: DEC });
    const pq = await readParquet(file);
    // The JSON answer's exact decimals, as the reader reads the decimal columns.
    const exactJson: Array<Record<string, unknown>> = [];
    for (const asset of ASSETS) {
      for (const date of ['2026-03-01', '2026-03-02']) {
        const r = await get(`/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${asset}&date=${date}&resolution=900&format=csv`);
        exactJson.push(...(parse(r.raw, { columns: true }) as Array<Record<string, string>>).map((row) => ({ asset_id: asset, ...row })));
      }
    }
    expect(typed(pq)).toEqual(
      flat.map((f, i) => {
        const exact = exactJson[i] as Record<string, string>;
        const o: Record<string, unknown> = { ...f, timestamp: new Date(f.timestamp as number) };
        for (const k of Object.keys(f)) if (!['asset_id', 'timestamp', 'quote_count', 'is_forward_filled'].includes(k)) o[k] = decimalRead(exact[k]);
        return o;
      }),
    );
    const one = parse(gunzipSync((await get(`${base}&asset_id=${ASSETS[1]}`)).raw), { columns: true, cast });
    expect(one).toEqual(flat.filter((r) => r.asset_id === ASSETS[1]));
  });

  it('refuses more than 31 days, reversed dates, and a resolution for raw, naming the parameter', async () => {
    for (const [q, param] of [
      ['start_date=2026-03-01&end_date=2026-04-01', 'end_date'],
      ['start_date=2026-03-02&end_date=2026-03-01', 'start_date'],
      ['start_date=2026-03-01&end_date=2026-03-01&resolution=60', 'resolution'],
      ['start_date=2026-03-01&end_date=2026-03-01&format=xlsx', 'format'],
      ['start_date=2026-03-01&end_date=2026-03-01&kind=book', 'kind'],
    ] as const) {
      const r = await get(`/exchange-b/market/export?ticker=${TB}&${q}`);
      expect(r.status, q).toBe(400);
      expect(r.json().error.param, q).toBe(param);
    }
    expect((await get(`/exchange-b/market/export?ticker=${TB}&start_date=2026-03-01&end_date=2026-03-31`)).status).toBe(200);
    // A token for a raw export (which holds every token) is refused, not ignored.
    const raw = await get(`/exchange-a/market/export?condition_id=${MA}&start_date=2026-03-01&end_date=2026-03-01&asset_id=${ASSETS[0]}`);
    expect(raw.status).toBe(400);
    expect(raw.json().error.param).toBe('asset_id');
    // An error is never offered as the file.
    expect(raw.headers['content-disposition']).toBeUndefined();
  });

  it('a token id with CSV specials stays one field; control characters are refused', async () => {
    const odd = 'a,"b"';
    const other = conditionId(32);
    await t.filler.insert('exchange-a', [aMessage({ market: other, ts: DAY1 + 1000, hash: '0xodd1', asset: odd, kind: 'book' })]);
    const r = await get(`/exchange-a/market/export?condition_id=${other}&start_date=2026-03-01&end_date=2026-03-01&kind=summary&resolution=3600&asset_id=${encodeURIComponent(odd)}`);
    expect(r.status).toBe(200);
    const rows = parse(gunzipSync(r.raw), { columns: true }) as Array<Record<string, string>>;
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((x) => x.asset_id))).toEqual(new Set([odd]));
    expect((await get(`/exchange-a/market/export?condition_id=${MA}&start_date=2026-03-01&end_date=2026-03-01&kind=summary&asset_id=a%0Ab`)).status).toBe(400);
  });
});
