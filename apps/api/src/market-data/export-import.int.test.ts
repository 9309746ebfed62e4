import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage } from '@booktape/domain';
import { importBooktapeFile, importPmxtFile, ImportError, SummariesRepository, type BooktapeExportFormat } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { writePmxtFile } from '../../../../libs/storage/src/pmxt.test-support.ts';
import { aMessage, bMessage, bearer, conditionId, ingestSeq, startTestApi, type TestApi } from '../testing.ts';

/**
 * Round trip of booktape's own raw export (docs/rules/imports.md#booktapes-own-exports): a
 * store with both venues' records (captured records of every event type, multi-level frames
 * with claims and per-level hashes, venue fields, a record kept whole in residue, exchange B
 * snapshots, deltas, gaps and trades, and exchange A records an archive import brought) is
 * exported market by market with include=record, as Parquet and as csv.gz; each export is
 * imported into a fresh store (a new engine directory), rolled up, and every answer (raw pages
 * of each date in every format, range pages, summaries at several resolutions, the book at
 * many instants, coverage) is compared byte for byte with the first store's. Coverage's
 * `sources` and `imported_only` name where a store had its records from, so they are
 * compared apart: the importing store has them all from the export file. Both stores sign
 * cursors with one secret (as two API processes of one install do), so a range page's
 * cursor is compared too.
 */

const MA = conditionId(2431);
const TB = 'KXROUNDTRIP-26MAR01';
const DAY1 = Date.UTC(2026, 2, 1);
const DAY2 = DAY1 + 86_400_000;
const DATES = ['2026-03-01', '2026-03-02'];
const A1 = '24311';
const A2 = '24312';
const ASSETS = [A1, A2];
const SECRET = Buffer.alloc(32, 7);
const PMXT_FILE = 'polymarket_orderbook_2026-03-02T05.parquet';

const chg = (price: string, side: 'BUY' | 'SELL', size: string, extra: Record<string, string> = {}) => ({ price, side, size, ...extra });

function aRecords(): ExchangeAMessage[] {
  const out: ExchangeAMessage[] = [];
  for (const [d, start] of [[0, DAY1 + 3_600_000], [1, DAY2 + 7_200_000]] as const) {
    for (let i = 0; i < 40; i++) {
      const kind = i % 9 === 0 ? 'book' : i % 9 === 4 ? 'tick_size_change' : 'price_change';
      out.push(aMessage({ market: MA, ts: start + i * 61_000, hash: `0xd${d}${i.toString(16).padStart(6, '0')}`, asset: ASSETS[i % 2], kind, frame: i % 3 }));
    }
  }
  // Records the generic shapes do not cover: a frame of several levels with the venue's claims
  // and per-level hashes, a trade with venue fields, levels of several spellings.
  const msg = (ts: number, tag: string, event: Record<string, unknown>, worker = 4): ExchangeAMessage => ({
    venue: 'exchange-a',
    received_at: new Date(ts + 9).toISOString(),
    worker_id: worker,
    ingest_seq: ingestSeq(ts + 9, 1, 2),
    dedup_id: `0x${tag}`,
    event: { market: MA, timestamp: String(ts), hash: `0x${tag}ff`, ...event } as ExchangeAMessage['event'],
  });
  out.push(
    msg(DAY1 + 3_700_000, 'm1', { asset_id: ASSETS[0], event_type: 'price_change', changes: [chg('0.480', 'BUY', '20.00', { best_bid: '0.48', best_ask: '0.52', hash: '0xl1' }), chg('0.52', 'SELL', '0', { best_bid: '0.48', best_ask: '0.55', hash: '0xl2' }), chg('0.46', 'BUY', '15')] }),
    msg(DAY1 + 3_800_000, 't1', { asset_id: ASSETS[1], event_type: 'last_trade_price', extra: { price: '0.550', size: '219.217767', fee_rate_bps: '0', side: 'BUY', transaction_hash: '0xabc' } }),
    msg(DAY1 + 3_900_000, 'b9', { asset_id: ASSETS[1], event_type: 'book', bids: [], asks: [{ price: '0.6', size: '10' }], extra: { tick_size: '0.01', note: 'a, "quoted"\\ text / é' } }, 7),
    msg(DAY2 + 7_300_000, 'x1', { asset_id: ASSETS[0], event_type: 'price_change', changes: [chg('0.47', 'SELL', '3')], extra: { best_bid: '0.46', nested: { k: [1, 2] } } }),
  );
  return out;
}

function bRecords(): RawMessage[] {
  const out: RawMessage[] = [];
  for (const [start, n, seq0] of [[DAY1 + 1_000_000, 40, 100], [DAY2 + 5_000_000, 30, 900]] as const) {
    for (let i = 0; i < n; i++) {
      const m = bMessage({ ticker: TB, ms: start + i * 45_000, seq: seq0 + i, kind: i % 12 === 0 ? 'snapshot' : 'delta' });
      if (i % 12 === 7) out.push({ ...m, record: { ...m.record, type: 'gap', expected_seq: seq0 + i - 1 } } as ExchangeBMessage);
      else if (i % 12 === 9) out.push({ ...m, record: { ticker: TB, timestamp: m.record.timestamp, epoch_ms: m.record.epoch_ms, sid: 12, seq: seq0 + i, type: 'trade', data: { yes_price: 41, note: 'a, "b"' } } } as ExchangeBMessage);
      else out.push(m);
    }
  }
  return out;
}

/** An archive hour of the market on day 2: instance 1 holds these records as an import. */
const pmxtRows = () => [
  { timestamp: DAY2 + 5 * 3_600_000 + 1000, timestamp_received: DAY2 + 5 * 3_600_000 + 1500, market: MA, event_type: 'price_change', asset_id: A2, price: '0.44', size: '12', side: 'BUY', best_bid: '0.44', best_ask: '0.6' },
  { timestamp: DAY2 + 5 * 3_600_000 + 2000, timestamp_received: DAY2 + 5 * 3_600_000 + 2500, market: MA, event_type: 'last_trade_price', asset_id: A2, price: '0.6', size: '2', side: 'SELL', fee_rate_bps: 0, transaction_hash: '0xfeed' },
];

async function get(t: TestApi, key: string, url: string): Promise<{ status: number; body: Buffer }> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(key) });
  return { status: res.statusCode, body: res.rawPayload };
}

async function roll(t: TestApi): Promise<void> {
  const roller = new Roller(new SummariesRepository(t.ch), silentLogger(), { closeGraceMs: 0 });
  for (const asset of ASSETS) await roller.rollFrom({ venue: 'exchange-a', market: MA, asset }, DATES[0]!);
  await roller.rollFrom({ venue: 'exchange-b', market: TB, asset: TB }, DATES[0]!);
}

/** Every answer compared, by name; coverage without the members that name sources (returned apart). */
async function answers(t: TestApi, key: string): Promise<{ answers: Record<string, string>; sources: unknown[] }> {
  const out: Record<string, string> = {};
  const sources: unknown[] = [];
  const add = async (name: string, url: string) => {
    const r = await get(t, key, url);
    expect(r.status, `${url}: ${r.body.toString()}`).toBe(200);
    out[name] = r.body.toString('utf8');
  };
  for (const date of DATES) {
    for (const format of ['json', 'csv', 'ndjson']) {
      await add(`a raw ${date} ${format}`, `/exchange-a/market/data?condition_id=${MA}&date=${date}&format=${format}`);
      await add(`b raw ${date} ${format}`, `/exchange-b/market/data?ticker=${TB}&date=${date}&format=${format}`);
    }
    for (const R of [1, 60, 3600]) {
      for (const asset of ASSETS) await add(`a summary ${asset} ${date} ${R}`, `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${asset}&date=${date}&resolution=${R}`);
      await add(`b summary ${date} ${R}`, `/exchange-b/market/orderbook-summary?ticker=${TB}&date=${date}&resolution=${R}`);
    }
  }
  await add('a range', `/exchange-a/market/data/range?condition_id=${MA}&start_timestamp=${DAY1}&end_timestamp=${DAY2 + 86_399_999}&limit=7`);
  await add('a dates', `/exchange-a/market/date-range?condition_id=${MA}`);
  await add('b dates', `/exchange-b/market/date-range?ticker=${TB}`);
  for (const asset of ASSETS) {
    await add(`a summary range ${asset}`, `/exchange-a/market/orderbook-summary?condition_id=${MA}&asset_id=${asset}&start_timestamp=${DAY1 + 3_000_000}&end_timestamp=${DAY2 + 9_000_000}&resolution=300`);
    await add(`a snapshots ${asset}`, `/exchange-a/market/book-snapshots?condition_id=${MA}&asset_id=${asset}&start_timestamp=${DAY1 + 3_500_000}&end_timestamp=${DAY1 + 6_000_000}&interval=300`);
  }
  await add('b summary range', `/exchange-b/market/orderbook-summary?ticker=${TB}&start_timestamp=${DAY1 + 900_000}&end_timestamp=${DAY2 + 6_000_000}&resolution=300`);
  await add('b snapshots', `/exchange-b/market/book-snapshots?ticker=${TB}&start_timestamp=${DAY1 + 1_000_000}&end_timestamp=${DAY1 + 2_500_000}&interval=300`);
  await add('b range', `/exchange-b/market/data/range?ticker=${TB}&start_timestamp=${DAY1}&end_timestamp=${DAY2 + 86_399_999}&limit=7`);
  for (let at = DAY1 + 3_000_000; at < DAY2 + 86_400_000; at += 2_345_678) {
    for (const asset of ASSETS) await add(`a book ${asset} ${at}`, `/exchange-a/market/book?condition_id=${MA}&asset_id=${asset}&timestamp=${at}`);
    await add(`b book ${at}`, `/exchange-b/market/book?ticker=${TB}&timestamp=${at}`);
  }
  for (const [v, q] of [['exchange-a', `condition_id=${MA}`], ['exchange-b', `ticker=${TB}`]] as const) {
    const r = await get(t, key, `/${v}/market/coverage?${q}&start_date=${DATES[0]}&end_date=${DATES[1]}`);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body.toString()) as { data: Array<Record<string, unknown>> };
    for (const day of body.data) {
      sources.push({ venue: v, date: day.date, sources: day.sources, imported_only: day.imported_only });
      delete day.sources;
      delete day.imported_only;
    }
    out[`${v} coverage`] = JSON.stringify(body);
  }
  return { answers: out, sources };
}

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-roundtrip-'));
const files: Record<string, string> = {};
let reference: Record<string, string>;
let counts: { a: number; b: number };

beforeAll(async () => {
  const t = await startTestApi({ cursorSecret: SECRET });
  try {
    const key = await t.newKey();
    await t.filler.insert('exchange-a', aRecords());
    await t.filler.insert('exchange-b', bRecords());
    const pmxt = path.join(dir, PMXT_FILE);
    await writePmxtFile(t.ch, pmxt, pmxtRows());
    expect(await importPmxtFile(t.ch, pmxt)).toMatchObject({ inserted: 2 });
    rmSync(pmxt);
    // A record kept whole in residue (a shape the typed columns do not rebuild byte for byte).
    const [res] = await (await t.ch.client.query({ query: `SELECT count() AS n FROM ${t.ch.table('raw_exchange_a')} WHERE residue != ''`, format: 'JSONEachRow' })).json<{ n: string }>();
    counts = { a: 0, b: 0 };
    for (const [v, table, col, m] of [['a', 'raw_exchange_a', 'market', MA], ['b', 'raw_exchange_b', 'ticker', TB]] as const) {
      const [c] = await (await t.ch.client.query({ query: `SELECT count() AS n FROM ${t.ch.table(table)} FINAL WHERE ${col} = '${m}'`, format: 'JSONEachRow' })).json<{ n: string }>();
      counts[v] = Number(c!.n);
    }
    expect(Number(res!.n)).toBeGreaterThan(0);
    await roll(t);
    reference = (await answers(t, key)).answers;
    for (const format of ['parquet', 'csv'] as const) {
      for (const [v, q] of [['exchange-a', `condition_id=${MA}`], ['exchange-b', `ticker=${TB}`]] as const) {
        const r = await get(t, key, `/${v}/market/export?${q}&start_date=${DATES[0]}&end_date=${DATES[1]}&kind=raw&format=${format}&include=source,record`);
        expect(r.status, r.body.toString()).toBe(200);
        const name = `${v}_${format === 'csv' ? 'export.csv.gz' : 'export.parquet'}`;
        writeFileSync(path.join(dir, name), r.body);
        files[`${v} ${format}`] = path.join(dir, name);
      }
    }
    // Into the store it came from: every record is there already.
    for (const [v, n] of [['exchange-a', counts.a], ['exchange-b', counts.b]] as const) {
      expect(await importBooktapeFile(t.ch, files[`${v} parquet`]!, 'booktape-parquet')).toMatchObject({ inserted: 0, alreadyStored: n });
      expect(await importBooktapeFile(t.ch, files[`${v} csv`]!, 'booktape-csv')).toMatchObject({ inserted: 0, alreadyStored: n });
    }
    expect((await answers(t, key)).answers).toEqual(reference);
    // The export without include=record, for the refusal.
    const plain = await get(t, key, `/exchange-a/market/export?condition_id=${MA}&start_date=${DATES[0]}&end_date=${DATES[1]}&kind=raw&format=parquet`);
    writeFileSync(path.join(dir, 'plain.parquet'), plain.body);
    files.plain = path.join(dir, 'plain.parquet');
  } finally {
    await t.close();
  }
}, 240_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FORMAT = { parquet: 'booktape-parquet', csv: 'booktape-csv' } as const satisfies Record<string, BooktapeExportFormat>;

describe.each(['parquet', 'csv'] as const)('an export as %s imported into a fresh store', (format) => {
  it('answers every raw, summary, book and coverage request as the first store; importing it again changes nothing', async () => {
    const t = await startTestApi({ cursorSecret: SECRET });
    try {
      const key = await t.newKey();
      const a = await importBooktapeFile(t.ch, files[`exchange-a ${format}`]!, FORMAT[format]);
      const b = await importBooktapeFile(t.ch, files[`exchange-b ${format}`]!, FORMAT[format]);
      expect(a).toMatchObject({ venue: 'exchange-a', inserted: counts.a, alreadyStored: 0, superseded: 0 });
      expect(b).toMatchObject({ venue: 'exchange-b', inserted: counts.b, alreadyStored: 0 });
      await roll(t);
      const got = await answers(t, key);
      expect(Object.keys(got.answers).sort()).toEqual(Object.keys(reference).sort());
      for (const name of Object.keys(reference)) expect(got.answers[name], name).toBe(reference[name]);
      // Every record is the import's, in every day's sources.
      const srcA = `import:${FORMAT[format]}:${path.basename(files[`exchange-a ${format}`]!)}`;
      for (const s of got.sources as Array<{ venue: string; sources: Array<{ source: string }>; imported_only: boolean }>) {
        expect(s.imported_only).toBe(true);
        expect(s.sources.map((x) => x.source)).toEqual([s.venue === 'exchange-a' ? srcA : `import:${FORMAT[format]}:${path.basename(files[`exchange-b ${format}`]!)}`]);
      }

      const again = await importBooktapeFile(t.ch, files[`exchange-a ${format}`]!, FORMAT[format]);
      expect(again).toMatchObject({ inserted: 0, alreadyStored: counts.a });
      expect((await importBooktapeFile(t.ch, files[`exchange-b ${format}`]!, FORMAT[format])).inserted).toBe(0);
      await roll(t);
      const after = await answers(t, key);
      for (const name of Object.keys(reference)) expect(after.answers[name], name).toBe(reference[name]);
    } finally {
      await t.close();
    }
  }, 240_000);
});

describe('bad exports are refused whole, naming the file (and row)', () => {
  let t: TestApi;
  beforeAll(async () => {
    t = await startTestApi({ cursorSecret: SECRET });
  }, 60_000);
  afterAll(async () => t?.close());

  const stored = async () => {
    let n = 0;
    for (const table of ['raw_exchange_a', 'raw_exchange_b']) {
      const [c] = await (await t.ch.client.query({ query: `SELECT count() AS n FROM ${t.ch.table(table)}`, format: 'JSONEachRow' })).json<{ n: string }>();
      n += Number(c!.n);
    }
    return n;
  };
  const refused = async (file: string, format: BooktapeExportFormat, pattern: RegExp, opts = {}) => {
    const e = await importBooktapeFile(t.ch, file, format, opts).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ImportError);
    expect((e as ImportError).message.startsWith(file)).toBe(true);
    expect((e as ImportError).message).toMatch(pattern);
    expect(await stored()).toBe(0);
    return e as ImportError;
  };

  it('a truncated Parquet file, a cut csv.gz', async () => {
    const pq = readFileSync(files['exchange-a parquet']!);
    const cut = path.join(dir, 'cut.parquet');
    writeFileSync(cut, pq.subarray(0, Math.floor(pq.length * 0.6)));
    await refused(cut, 'booktape-parquet', /not a readable Parquet file|cannot read/);
    const gz = readFileSync(files['exchange-a csv']!);
    const cutGz = path.join(dir, 'cut.csv.gz');
    writeFileSync(cutGz, gz.subarray(0, Math.floor(gz.length * 0.7)));
    await refused(cutGz, 'booktape-csv', /cannot read the rows|not a JSON object|cut/);
  });

  it('a CSV whose record was changed: the row is named', async () => {
    const text = gunzipSync(readFileSync(files['exchange-b csv']!)).toString('utf8').split('\n');
    // Row 5 of the data (the file's 0-based row 5): its record cut short.
    const line = 1 + 5;
    const i = text[line]!.lastIndexOf('"{');
    expect(i).toBeGreaterThan(0);
    text[line] = `${text[line]!.slice(0, i)}"{""ticker"":""x"""`;
    const bad = path.join(dir, 'changed.csv.gz');
    writeFileSync(bad, gzipSync(text.join('\n')));
    const e = await refused(bad, 'booktape-csv', /record is not a JSON object/);
    expect(e.row).toBe(5);
  });

  it('a CSV whose record holds a value of the wrong type (read as 0 otherwise): the row is named', async () => {
    const text = gunzipSync(readFileSync(files['exchange-b csv']!)).toString('utf8').split('\n');
    // The first row after the fifth that carries a record: its ingest_seq made text.
    const seq = /""ingest_seq"":((?:"")?)\d+\1/;
    const line = text.findIndex((l, i) => i > 5 && seq.test(l));
    expect(line).toBeGreaterThan(5);
    text[line] = text[line]!.replace(seq, '""ingest_seq"":""abc""');
    const bad = path.join(dir, 'wrong-type.csv.gz');
    writeFileSync(bad, gzipSync(text.join('\n')));
    const e = await refused(bad, 'booktape-csv', /record was changed/);
    expect(e.row).toBe(line - 1);
  });

  it('a Parquet file of another schema, a raw export without records, an export of the other venue', async () => {
    const other = path.join(dir, 'other.parquet');
    await t.ch.client.command({ query: `SELECT number AS n, toString(number) AS s FROM numbers(10) INTO OUTFILE '${other}' FORMAT Parquet` });
    await refused(other, 'booktape-parquet', /not a booktape raw export/);
    await refused(files.plain!, 'booktape-parquet', /without the stored records.*include=record/);
    await refused(files['exchange-b parquet']!, 'booktape-parquet', /an export of exchange-b, not of exchange-a/, { venue: 'exchange-a' });
  });

  it('a record that does not match its row, a record of the other venue: the first such row is named', async () => {
    const src = files['exchange-a parquet']!;
    const q = async (query: string) => (await t.ch.client.query({ query, format: 'JSONEachRow' })).json<Record<string, string>>();
    // The rows that carry a record, after the first few.
    const [{ row }] = (await q(`SELECT toString(min(_row_number)) AS row FROM file('${src}', 'Parquet') WHERE record != '' AND _row_number > 5`)) as [{ row: string }];
    const changed = async (name: string, replace: string) => {
      const out = path.join(dir, name);
      await t.ch.client.command({
        query: `SELECT * EXCEPT (rn) REPLACE (${replace}) FROM (SELECT *, _row_number AS rn FROM file('${src}', 'Parquet')) ORDER BY rn INTO OUTFILE '${out}' TRUNCATE FORMAT Parquet`,
      });
      return out;
    };
    const asset = await changed('asset.parquet', `if(record != '' AND rn > 5, '999', asset_id) AS asset_id`);
    expect((await refused(asset, 'booktape-parquet', /the row's asset_id is not its record's: 999/)).row).toBe(Number(row));
    const other = await changed('other-venue.parquet', `if(record != '' AND rn > 5, '{"ticker":"KX-1","record_type":"delta"}', record) AS record`);
    expect((await refused(other, 'booktape-parquet', /record of exchange-b in an export of exchange-a/)).row).toBe(Number(row));
  });
});
