import { mkdtempSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { importPmxtFile } from '@booktape/storage';
import { writePmxtFile, type PmxtRow } from '../../../../libs/storage/src/pmxt.test-support.ts';
import { aMessage, bMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * Provenance on the read side (issue 24 point 2, docs/rules/imports.md#provenance): with
 * include=source every raw record says where it came from, in every format, and the answer
 * without it is unchanged byte for byte; the coverage map lists per day the sources and the
 * hours each holds, and says when a day is built from imports only. The reference is what
 * the test stored: which hashes it captured (and by which worker) and which rows it wrote
 * into which file, counted and timed by hand.
 */

const M = conditionId(24);
const TB = 'KXPROV-26MAR10';
const D1 = Date.UTC(2026, 2, 10);
const D2 = Date.UTC(2026, 2, 11);
const HOUR = 3_600_000;
const TOKENS = ['1111', '2222'];
const FILE1 = 'polymarket_orderbook_2026-03-10T14.parquet';
// A file name a CSV field and a JSON string must both escape.
const FILE2 = 'odd "name", 2026-03-11.parquet';
const SOURCE1 = `import:pmxt-v2:${FILE1}`;
const SOURCE2 = `import:pmxt-v2:${FILE2}`;

let t: TestApi;
let key: string;
/** Captured hash → its worker; everything else on the market is imported. */
const captured = new Map<string, number>();
/** Imported rows per (date, source): event times. */
const importedTimes = new Map<string, number[]>();

function captureHour(start: number, n: number, worker: number, tag: string) {
  return Array.from({ length: n }, (_, i) => {
    const hash = `0x${tag}${i.toString(16).padStart(6, '0')}`;
    captured.set(hash, worker);
    return aMessage({ market: M, ts: start + i * 1000, hash, asset: TOKENS[i % 2], kind: i % 5 === 0 ? 'book' : 'price_change', worker });
  });
}

/** `n` PMXT price changes per token from `start`, one per 10 s, each a distinct event. */
function pmxtRows(start: number, n: number): PmxtRow[] {
  const rows: PmxtRow[] = [];
  for (const asset of TOKENS) {
    for (let i = 0; i < n; i++) {
      const ts = start + i * 10_000;
      rows.push({ timestamp: ts, timestamp_received: ts + 30, market: M, event_type: 'price_change', asset_id: asset, price: '0.4', size: String(i + 1), side: 'BUY', best_bid: '0.4', best_ask: '0.6' });
    }
  }
  return rows;
}

async function importRows(dir: string, name: string, source: string, date: string, rows: PmxtRow[]): Promise<void> {
  const file = path.join(dir, name);
  await writePmxtFile(t.ch, file, rows);
  const r = await importPmxtFile(t.ch, file);
  expect(r.source).toBe(source);
  expect(r.inserted).toBe(rows.length);
  importedTimes.set(`${date}\u0000${source}`, [...(importedTimes.get(`${date}\u0000${source}`) ?? []), ...rows.map((x) => x.timestamp)]);
}

beforeAll(async () => {
  t = await startTestApi();
  // 2026-03-10: worker 3 in hours 9 and 10, worker 7 in hour 11, an import in hours 14 and 15.
  await t.filler.insert('exchange-a', [...captureHour(D1 + 9 * HOUR + 500, 8, 3, 'c3'), ...captureHour(D1 + 10 * HOUR + 200, 6, 3, 'd3')]);
  await t.filler.insert('exchange-a', captureHour(D1 + 11 * HOUR, 5, 7, 'c7'));
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-prov-'));
  await importRows(dir, FILE1, SOURCE1, '2026-03-10', [...pmxtRows(D1 + 14 * HOUR + 100, 4), ...pmxtRows(D1 + 15 * HOUR + 100, 3)]);
  // 2026-03-11: imports only, in hours 0 and 23.
  await importRows(dir, FILE2, SOURCE2, '2026-03-11', [...pmxtRows(D2 + 5_000, 2), ...pmxtRows(D2 + 23 * HOUR + 5_000, 2)]);
  await t.filler.insert('exchange-b', Array.from({ length: 6 }, (_, i) => bMessage({ ticker: TB, ms: D1 + 2 * HOUR + i * 1000, seq: 100 + i, kind: i === 0 ? 'snapshot' : 'delta', worker: 5 })));
  key = await t.newKey();
});
afterAll(async () => t?.close());

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  return { status: res.statusCode, headers: res.headers, text: res.body, json: () => res.json() as any };
}

/** The source the test stored a record with: the capture's worker for a captured hash, else the import of its day. */
function expectedSource(r: Record<string, unknown>): string {
  const w = captured.get(String(r.hash));
  if (w !== undefined) return `capture:worker-${w}`;
  return new Date(Number(r.timestamp)).toISOString().startsWith('2026-03-10') ? SOURCE1 : SOURCE2;
}

/** The answer with every served `"source"` field cut out: what the plain answer must be, byte for byte. */
const withoutSource = (text: string) => text.replace(/,"source":"(?:[^"\\]|\\.)*"(?=})/g, '');

const DATE_URL = (date: string, extra = '') => `/exchange-a/market/data?condition_id=${M}&date=${date}${extra}`;
const RANGE_URL = (extra = '') => `/exchange-a/market/data/range?condition_id=${M}&start_timestamp=${D1}&end_timestamp=${D2 + 86_399_999}${extra}`;

describe('raw records with include=source', () => {
  it('every record of a day of captured and imported records says its source, as the last field', async () => {
    const plain = await get(DATE_URL('2026-03-10'));
    const sourced = await get(DATE_URL('2026-03-10', '&include=source'));
    expect(plain.status, plain.text).toBe(200);
    expect(sourced.status, sourced.text).toBe(200);
    const records = sourced.json().data as Array<Record<string, unknown>>;
    // 19 captured + 14 imported records that day.
    expect(records.length).toBe(19 + 14);
    const counts = new Map<string, number>();
    for (const r of records) {
      expect(Object.keys(r).at(-1)).toBe('source');
      expect(r.source).toBe(expectedSource(r));
      counts.set(String(r.source), (counts.get(String(r.source)) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ 'capture:worker-3': 14, 'capture:worker-7': 5, [SOURCE1]: 14 });
    // Nothing else changes: the plain answer is the sourced one without the field, byte for byte.
    expect(plain.text).not.toContain('"source"');
    expect(withoutSource(sourced.text)).toBe(plain.text);
    expect(sourced.headers['x-total-count']).toBe(plain.headers['x-total-count']);
    // The captured records are served as stored (the independent reference), then their source.
    const capturedServed = records.filter((r) => captured.has(String(r.hash))).map(({ source: _, ...r }) => r);
    expect(capturedServed).toEqual(t.filler.expected('exchange-a', M));
  });

  it('a file name with quotes and a comma comes back whole in json, ndjson and csv', async () => {
    const json = await get(DATE_URL('2026-03-11', '&include=source'));
    expect(json.status, json.text).toBe(200);
    expect((json.json().data as Array<{ source: string }>).map((r) => r.source)).toEqual(Array(8).fill(SOURCE2));

    const nd = await get(DATE_URL('2026-03-11', '&include=source&format=ndjson'));
    const ndPlain = await get(DATE_URL('2026-03-11', '&format=ndjson'));
    expect(nd.status).toBe(200);
    const lines = nd.text.split('\n').filter((l) => l !== '');
    expect(lines.map((l) => JSON.parse(l).source)).toEqual(Array(8).fill(SOURCE2));
    expect(withoutSource(nd.text)).toBe(ndPlain.text);

    const csv = await get(DATE_URL('2026-03-11', '&include=source&format=csv'));
    expect(csv.status).toBe(200);
    expect(csv.text.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at,source');
    const rows = parse(csv.text, { columns: true }) as Array<Record<string, string>>;
    expect(rows.length).toBe(8);
    for (const r of rows) expect(r.source).toBe(SOURCE2);
  });

  it('csv: every row of a record (one per level) carries its source; without include the columns are as before', async () => {
    const csv = await get(DATE_URL('2026-03-10', '&include=source&format=csv'));
    const plain = await get(DATE_URL('2026-03-10', '&format=csv'));
    const json = (await get(DATE_URL('2026-03-10', '&include=source'))).json().data as Array<Record<string, unknown>>;
    const bySourceAndHash = new Map(json.map((r) => [String(r.hash), String(r.source)]));
    const rows = parse(csv.text, { columns: true }) as Array<Record<string, string>>;
    const plainRows = parse(plain.text, { columns: true }) as Array<Record<string, string>>;
    expect(plain.text.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at');
    expect(rows.length).toBe(plainRows.length);
    // A book is one row per level: more rows than records.
    expect(rows.length).toBeGreaterThan(json.length);
    rows.forEach((r, i) => {
      const { source, ...rest } = r;
      expect(rest).toEqual(plainRows[i]);
      expect(source).toBe(bySourceAndHash.get(r.hash!));
    });
    // The bytes: each sourced row is the plain row plus one field.
    const sourcedLines = csv.text.split('\n').slice(1);
    const plainLines = plain.text.split('\n').slice(1);
    expect(sourcedLines.map((l) => l.replace(/,[^,]*$/, ''))).toEqual(plainLines.map((l) => l));
  });

  it('range pages walked by cursor, and the legacy and venue-name aliases, carry the source too', async () => {
    const all: Array<Record<string, unknown>> = [];
    const plain: Array<Record<string, unknown>> = [];
    for (let cursor: string | null = null, pages = 0; ; pages++) {
      expect(pages).toBeLessThan(50);
      const c: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const r = await get(RANGE_URL(`&limit=7&include=source${c}`));
      const p = await get(RANGE_URL(`&limit=7${c}`));
      expect(r.status, r.text).toBe(200);
      expect(withoutSource(r.text)).toBe(p.text);
      all.push(...r.json().data);
      plain.push(...p.json().data);
      cursor = r.json().pagination.next_cursor;
      if (cursor === null) break;
    }
    expect(all.length).toBe(19 + 14 + 8);
    for (const r of all) expect(r.source).toBe(expectedSource(r));

    // ndjson range pages follow their Link header, which keeps include.
    const nd: string[] = [];
    for (let next: string | undefined = RANGE_URL('&limit=9&include=source&format=ndjson'); next !== undefined; ) {
      const r = await get(next);
      expect(r.status, r.text).toBe(200);
      nd.push(...r.text.split('\n').filter((l) => l !== ''));
      const link = r.headers.link as string | undefined;
      next = link === undefined ? undefined : /^<\/api\/v1([^>]+)>; rel="next"$/.exec(link)![1];
    }
    expect(nd.map((l) => JSON.parse(l))).toEqual(all);

    const canonical = await get(DATE_URL('2026-03-10', '&include=source'));
    for (const alias of [`/market/data?condition_id=${M}&date=2026-03-10&include=source`, `/polymarket/market/data?condition_id=${M}&date=2026-03-10&include=source`]) {
      const r = await get(alias);
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe(canonical.text);
    }
  });

  it('exchange B records say their capture worker', async () => {
    const r = await get(`/exchange-b/market/data?ticker=${TB}&date=2026-03-10&include=source`);
    const p = await get(`/exchange-b/market/data?ticker=${TB}&date=2026-03-10`);
    expect(r.status, r.text).toBe(200);
    const data = r.json().data as Array<Record<string, unknown>>;
    expect(data.length).toBe(6);
    for (const x of data) expect(x.source).toBe('capture:worker-5');
    expect(withoutSource(r.text)).toBe(p.text);
    const csv = await get(`/exchange-b/market/data?ticker=${TB}&date=2026-03-10&include=source&format=csv`);
    expect(csv.text.split('\n')[0]).toBe('timestamp,ticker,type,side,price,size,delta,seq,sid,expected_seq,received_at,data,source');
  });

  it('an include value it does not know, an empty one or a repeated parameter is a 400 naming include', async () => {
    for (const bad of ['&include=sorce', '&include=', '&include=source,', '&include=source,worker', '&include=source&include=source']) {
      for (const url of [DATE_URL('2026-03-10', bad), RANGE_URL(bad)]) {
        const r = await get(url);
        expect(r.status, `${url}: ${r.text}`).toBe(400);
        expect(r.json().error).toMatchObject({ code: 'invalid_parameter', param: 'include' });
      }
    }
    // Any case, spaces and a repeat inside the list are one ask for the source.
    const ok = await get(DATE_URL('2026-03-11', '&include=%20Source,SOURCE'));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.text).toBe((await get(DATE_URL('2026-03-11', '&include=source'))).text);
  });

  it('a finalised page with include has its own cache tag, the plain one keeps its own', async () => {
    const plain = await get(DATE_URL('2026-03-10'));
    const sourced = await get(DATE_URL('2026-03-10', '&include=source'));
    expect(plain.headers.etag).toBeDefined();
    expect(sourced.headers.etag).toBeDefined();
    expect(sourced.headers.etag).not.toBe(plain.headers.etag);
  });
});

describe('raw export with include=source', () => {
  const EXPORT = `/exchange-a/market/export?condition_id=${M}&start_date=2026-03-10&end_date=2026-03-11`;
  const arrayBuffer = (buf: Buffer) => buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
  const rawOf = async (url: string) => (await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) })).rawPayload;

  it('csv.gz and Parquet get a last column source on every row; without include the file is as before', async () => {
    // The reference: every record of both days with its source, one row per level in the CSV.
    const records = [...(await get(DATE_URL('2026-03-10', '&include=source'))).json().data, ...(await get(DATE_URL('2026-03-11', '&include=source'))).json().data] as Array<Record<string, unknown>>;
    const pageRows = [
      ...(parse((await get(DATE_URL('2026-03-10', '&include=source&format=csv'))).text, { columns: true }) as Array<Record<string, string>>),
      ...(parse((await get(DATE_URL('2026-03-11', '&include=source&format=csv'))).text, { columns: true }) as Array<Record<string, string>>),
    ];

    const csv = gunzipSync(await rawOf(`${EXPORT}&include=source`)).toString('utf8');
    const plain = gunzipSync(await rawOf(EXPORT)).toString('utf8');
    expect(csv.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at,source');
    const rows = parse(csv, { columns: true }) as Array<Record<string, string>>;
    expect(rows).toEqual(pageRows);
    for (const r of rows) expect(r.source).toBe(expectedSource({ hash: r.hash, timestamp: r.timestamp }));
    expect((parse(plain, { columns: true }) as Array<Record<string, string>>)).toEqual(rows.map(({ source: _, ...r }) => r));
    expect(plain.split('\n')[0]).toBe('timestamp,asset_id,event_type,side,price,size,hash,received_at');

    const pq = await rawOf(`${EXPORT}&format=parquet&include=source`);
    const names = parquetMetadata(arrayBuffer(pq)).schema.slice(1).map((e) => e.name);
    expect(names).toEqual(['timestamp', 'asset_id', 'event_type', 'side', 'price', 'size', 'hash', 'received_at', 'source']);
    const pqRows = (await parquetReadObjects({ file: arrayBuffer(pq), compressors })) as Array<Record<string, unknown>>;
    expect(pqRows.map((r) => [r.hash, r.source])).toEqual(rows.map((r) => [r.hash, r.source]));
    const plainPq = await rawOf(`${EXPORT}&format=parquet`);
    expect(parquetMetadata(arrayBuffer(plainPq)).schema.slice(1).map((e) => e.name)).toEqual(names.slice(0, -1));
    expect(new Set(records.map((r) => r.source))).toEqual(new Set(['capture:worker-3', 'capture:worker-7', SOURCE1, SOURCE2]));
  });

  it('include on a summary export, or an unknown value, is a 400 naming include', async () => {
    for (const bad of [`${EXPORT}&kind=summary&include=source`, `${EXPORT}&include=hours`]) {
      const r = await get(bad);
      expect(r.status, r.text).toBe(400);
      expect(r.json().error).toMatchObject({ code: 'invalid_parameter', param: 'include' });
    }
  });
});

describe('coverage per source', () => {
  const hoursOf = (times: number[]) => [...new Set(times.map((ms) => new Date(ms).getUTCHours()))].sort((a, b) => a - b);

  it('lists per day the sources, their events and hours, and which days are built from imports only', async () => {
    const r = await get(`/exchange-a/market/coverage?condition_id=${M}&start_date=2026-03-10&end_date=2026-03-12`);
    expect(r.status, r.text).toBe(200);
    const [d1, d2, d3] = r.json().data;
    const imported1 = importedTimes.get(`2026-03-10\u0000${SOURCE1}`)!;
    const imported2 = importedTimes.get(`2026-03-11\u0000${SOURCE2}`)!;
    expect(d1.sources).toEqual([
      { source: 'capture:worker-3', imported: false, events: 14, first_event_ms: D1 + 9 * HOUR + 500, last_event_ms: D1 + 10 * HOUR + 200 + 5000, hours: [9, 10] },
      { source: 'capture:worker-7', imported: false, events: 5, first_event_ms: D1 + 11 * HOUR, last_event_ms: D1 + 11 * HOUR + 4000, hours: [11] },
      { source: SOURCE1, imported: true, events: imported1.length, first_event_ms: Math.min(...imported1), last_event_ms: Math.max(...imported1), hours: hoursOf(imported1) },
    ]);
    expect(hoursOf(imported1)).toEqual([14, 15]);
    expect(d1.imported_only).toBe(false);
    expect(d1.events).toBe(14 + 5 + imported1.length);

    expect(d2.sources).toEqual([{ source: SOURCE2, imported: true, events: imported2.length, first_event_ms: Math.min(...imported2), last_event_ms: Math.max(...imported2), hours: [0, 23] }]);
    expect(d2.imported_only).toBe(true);
    expect(d2.events).toBe(imported2.length);

    expect(d3).toMatchObject({ date: '2026-03-12', status: 'missing', events: 0, sources: [], imported_only: false });
    // The fields that were there before are still there, unchanged in kind.
    for (const d of [d1, d2, d3]) expect(Object.keys(d)).toEqual(['date', 'status', 'events', 'first_event_ms', 'last_event_ms', 'gaps', 'checks', 'checks_complete', 'sources', 'imported_only']);
  });

  it('exchange B: a captured day is not imported-only', async () => {
    const r = await get(`/exchange-b/market/coverage?ticker=${TB}&start_date=2026-03-10&end_date=2026-03-10`);
    expect(r.status, r.text).toBe(200);
    const [d] = r.json().data;
    expect(d.sources).toEqual([{ source: 'capture:worker-5', imported: false, events: 6, first_event_ms: D1 + 2 * HOUR, last_event_ms: D1 + 2 * HOUR + 5000, hours: [2] }]);
    expect(d.imported_only).toBe(false);
  });
});
