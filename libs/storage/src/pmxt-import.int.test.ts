import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BookChecker, newBook, type BookRecord } from '@booktape/book';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import type { ExchangeAEvent } from '@booktape/domain';
import { BookEventsRepository, ImportError, type StoredMessage, RawEventsRepository, importPmxtFile, supersedeImported } from './index.ts';
import { writePmxtFile, type PmxtRow } from './pmxt.test-support.ts';

/**
 * PMXT v2 import (docs/rules/imports.md): rows become the records a capture of the same
 * events would serve, with the identity the rule defines; a second import of the same file
 * changes nothing; an overlapping import adds only what is new and the first copy stays; a
 * bad file is refused whole, naming the file and the row. The reference is written by hand
 * from the rows (the expected records, and the identity as SHA-1 of its text).
 */

let t: TestClickHouse;
let raw: RawEventsRepository;
let dir: string;

beforeAll(async () => {
  t = await tempClickHouse();
  raw = new RawEventsRepository(t.ch);
  dir = mkdtempSync(path.join(tmpdir(), 'booktape-pmxt-'));
});
afterAll(async () => t?.cleanup());

const M = `0x${'ab'.repeat(32)}`;
const H = Date.UTC(2026, 2, 10, 14);
const pc = (ts: number, recv: number, side: string, price: string, size: string, bb: string, ba: string): PmxtRow => ({
  timestamp: ts, timestamp_received: recv, market: M.toUpperCase().replace('0X', '0x'), event_type: 'price_change', asset_id: '111',
  price, size, side, best_bid: bb, best_ask: ba,
});
const ROWS: PmxtRow[] = [
  { timestamp: H + 1000, timestamp_received: H + 1040, market: M, event_type: 'book', asset_id: '111', bids: '[["0.45","100"],["0.47","50"]]', asks: '[["0.55","70"],["0.52","30"]]' },
  pc(H + 2000, H + 2040, 'BUY', '0.48', '20', '0.48', '0.52'),
  pc(H + 2000, H + 2041, 'SELL', '0.52', '0', '0.48', '0.55'),
  // A level set to 200, then 100, then 200 again in one millisecond: three events.
  pc(H + 3000, H + 3050, 'BUY', '0.4800', '200.000000', '0.48', '0.55'),
  pc(H + 3000, H + 3050, 'BUY', '0.48', '100', '0.48', '0.55'),
  pc(H + 3000, H + 3050, 'BUY', '0.48', '200', '0.48', '0.55'),
  { timestamp: H + 3500, timestamp_received: H + 3540, market: M, event_type: 'last_trade_price', asset_id: '111', price: '0.55', size: '219.217767', side: 'BUY', fee_rate_bps: 0, transaction_hash: '0xabc' },
  { timestamp: H + 4000, timestamp_received: H + 4040, market: M, event_type: 'tick_size_change', asset_id: '111', old_tick_size: '0.01', new_tick_size: '0.001' },
  { timestamp: H + 4100, timestamp_received: H + 4140, market: M, event_type: 'best_bid_ask', asset_id: '111', best_bid: '0.48', best_ask: '0.55' },
  { timestamp: H + 1500, timestamp_received: H + 1540, market: M, event_type: 'book', asset_id: '222', bids: '[]', asks: '[["0.6","10"]]' },
];

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
/** The capture's formula on the receive time, below it the row's number in the file. */
const seq = (recv: number, row: number) => ((BigInt(recv) << 23n) + BigInt(row)).toString();
const lineage = (recv: number, id: string, row: number) => ({ received_at: new Date(recv).toISOString(), worker_id: 0, ingest_seq: seq(recv, row), dedup_id: id });
const base = (asset: string, ts: number, hash: string, type: string) => ({ market: M, asset_id: asset, timestamp: String(ts), hash, event_type: type });

function change(row: number, ts: number, recv: number, side: string, price: string, size: string, bb: string, ba: string, n: number) {
  const id = sha1(`pmxt1|111|${ts}|price_change|${side}|${price}|${size}|${n}`);
  return { ...base('111', ts, id, 'price_change'), changes: [{ price, side, size, best_bid: bb, best_ask: ba }], ...lineage(recv, id, row) };
}

/** The records the rows stand for, in serving order (event time, then ingest sequence). */
function expected(): unknown[] {
  const book1 = sha1(`pmxt1|111|${H + 1000}|book|0.45:100,0.47:50|0.55:70,0.52:30|1`);
  const book2 = sha1(`pmxt1|222|${H + 1500}|book||0.6:10|1`);
  const trade = sha1(`pmxt1|111|${H + 3500}|last_trade_price|BUY|0.55|219.217767|1`);
  const tick = sha1(`pmxt1|111|${H + 4000}|tick_size_change|0.01|0.001|1`);
  return [
    { ...base('111', H + 1000, book1, 'book'), bids: [{ price: '0.45', size: '100' }, { price: '0.47', size: '50' }], asks: [{ price: '0.55', size: '70' }, { price: '0.52', size: '30' }], ...lineage(H + 1040, book1, 0) },
    { ...base('222', H + 1500, book2, 'book'), bids: [], asks: [{ price: '0.6', size: '10' }], ...lineage(H + 1540, book2, 9) },
    change(1, H + 2000, H + 2040, 'BUY', '0.48', '20', '0.48', '0.52', 1),
    change(2, H + 2000, H + 2041, 'SELL', '0.52', '0', '0.48', '0.55', 1),
    change(3, H + 3000, H + 3050, 'BUY', '0.48', '200', '0.48', '0.55', 1),
    change(4, H + 3000, H + 3050, 'BUY', '0.48', '100', '0.48', '0.55', 1),
    change(5, H + 3000, H + 3050, 'BUY', '0.48', '200', '0.48', '0.55', 2),
    { price: '0.55', size: '219.217767', fee_rate_bps: '0', side: 'BUY', transaction_hash: '0xabc', ...base('111', H + 3500, '0xabc', 'last_trade_price'), ...lineage(H + 3540, trade, 6) },
    { old_tick_size: '0.01', new_tick_size: '0.001', ...base('111', H + 4000, tick, 'tick_size_change'), ...lineage(H + 4040, tick, 7) },
  ];
}

async function sources(): Promise<Record<string, number>> {
  const rs = await t.ch.client.query({ query: `SELECT source, toString(count()) AS n FROM ${t.ch.table('raw_exchange_a')} FINAL GROUP BY source`, format: 'JSONEachRow' });
  return Object.fromEntries((await rs.json<{ source: string; n: string }>()).map((r) => [r.source, Number(r.n)]));
}

/** The book of asset 111 at `atMs` and the day's cross-checks, from the stored records. */
async function bookAt(atMs: number) {
  const records = await new BookEventsRepository(t.ch).exchangeA(M, '111', atMs, atMs + 1);
  const book = newBook('exchange-a');
  const checker = BookChecker.startDay('exchange-a', Date.UTC(2026, 2, 10), book, null);
  const byMs = new Map<string, BookRecord[]>();
  for (const r of records) byMs.set((r as { timestamp: string }).timestamp, [...(byMs.get((r as { timestamp: string }).timestamp) ?? []), r]);
  for (const ms of byMs.values()) checker.applyMillisecond(book, ms, () => undefined);
  return { levels: book.bestLevels(10), checks: checker.checksAt(atMs + 1) };
}

describe('PMXT v2 import', () => {
  it('stores each row as the record the rule gives, with its provenance, and serves books and cross-checks from them', async () => {
    const file = path.join(dir, 'polymarket_orderbook_2026-03-10T14.parquet');
    await writePmxtFile(t.ch, file, ROWS);
    const r = await importPmxtFile(t.ch, file);
    expect(r).toMatchObject({ rows: 10, skipped: 1, inserted: 9, alreadyStored: 0, source: 'import:pmxt-v2:polymarket_orderbook_2026-03-10T14.parquet' });
    expect(r.partitions).toEqual([
      { market: M, asset: '111', date: '2026-03-10' },
      { market: M, asset: '222', date: '2026-03-10' },
    ]);
    expect(await raw.dump('exchange-a', M)).toEqual(expected());
    expect(await sources()).toEqual({ 'import:pmxt-v2:polymarket_orderbook_2026-03-10T14.parquet': 9 });

    const { levels, checks } = await bookAt(H + 3200);
    const pairs = (flat: string[]) => Array.from({ length: flat.length / 2 }, (_, i) => `${flat[2 * i]}:${flat[2 * i + 1]}`).sort();
    expect(pairs(levels[0])).toEqual(['0.45:100', '0.47:50', '0.48:200']);
    expect(pairs(levels[1])).toEqual(['0.55:70']);
    expect(checks.venue_best_checked).toBe(5);
    expect(checks.venue_best_mismatches).toBe(0);
    expect(checks.crossed_observations).toBe(0);

    // Again: nothing changes.
    const again = await importPmxtFile(t.ch, file);
    expect(again).toMatchObject({ rows: 10, inserted: 0, alreadyStored: 9 });
    expect(await raw.dump('exchange-a', M)).toEqual(expected());
  });

  it('adds from an overlapping import only what is new, keeping the earlier copy', async () => {
    const file = path.join(dir, 'other-recorder-2026-03-10T14.parquet');
    // Another recorder: the same events received later (another claim on one of them), and one more.
    const later = ROWS.slice(1, 4).map((row, i) => ({ ...row, timestamp_received: row.timestamp_received + 500, best_ask: i === 0 ? '0.53' : row.best_ask }));
    const extra = pc(H + 5000, H + 5040, 'SELL', '0.56', '5', '0.48', '0.55');
    await writePmxtFile(t.ch, file, [...later, extra]);
    const r = await importPmxtFile(t.ch, file);
    expect(r).toMatchObject({ rows: 4, inserted: 1, alreadyStored: 3 });
    expect(await raw.dump('exchange-a', M)).toEqual([...expected(), change(3, H + 5000, H + 5040, 'SELL', '0.56', '5', '0.48', '0.55', 1)]);
    expect(await sources()).toEqual({ 'import:pmxt-v2:polymarket_orderbook_2026-03-10T14.parquet': 9, 'import:pmxt-v2:other-recorder-2026-03-10T14.parquet': 1 });
  });

  it('gives every row the identity a reference computes from the rule, repeats and spellings included', async () => {
    /** Decimal text without trailing zeros: the value, as the identity spells it. */
    const norm = (d: string) => (d.includes('.') ? d.replace(/0+$/, '').replace(/\.$/, '') : d);
    const BOOKS = ['[["0.45","100"]]', '[]', '[["0.4","1"],["0.41","2.5"]]'];
    const row = fc.record({
      asset: fc.constantFrom('901', '902'),
      dt: fc.integer({ min: 0, max: 2 }),
      type: fc.constantFrom('price_change', 'price_change', 'last_trade_price', 'book', 'tick_size_change'),
      side: fc.constantFrom('BUY', 'SELL'),
      price: fc.constantFrom('0.5', '0.50', '0.5000', '0.48', '1', '0'),
      size: fc.constantFrom('0', '10', '10.0', '219.217767'),
      book: fc.integer({ min: 0, max: BOOKS.length - 1 }),
    });
    const files = fc.sample(fc.array(row, { minLength: 1, maxLength: 40 }), { numRuns: 4, seed: 24 });
    for (const [k, spec] of files.entries()) {
      const market = `0x${String(k).padStart(2, '0').repeat(32)}`;
      const rows: PmxtRow[] = spec.map((r, i) => {
        const common = { timestamp: H + r.dt, timestamp_received: H + r.dt + i, market, event_type: r.type, asset_id: r.asset };
        if (r.type === 'book') return { ...common, bids: BOOKS[r.book]!, asks: BOOKS[(r.book + 1) % BOOKS.length]! };
        if (r.type === 'tick_size_change') return { ...common, old_tick_size: r.price, new_tick_size: '0.001' };
        return { ...common, price: r.price, size: r.size, side: r.side, best_bid: '0.4', best_ask: '0.6' };
      });
      // The reference: n counts the earlier rows equal in asset, time, type and values.
      const seen = new Map<string, number>();
      const ids = rows.map((r) => {
        const levels = (j: string) => (JSON.parse(j) as string[][]).map(([p, z]) => `${p}:${z}`).join(',');
        const body =
          r.event_type === 'book' ? `${levels(r.bids!)}|${levels(r.asks!)}` : r.event_type === 'tick_size_change' ? `${norm(r.old_tick_size!)}|${norm(r.new_tick_size!)}` : `${r.side}|${norm(r.price!)}|${norm(r.size!)}`;
        const text = `pmxt1|${r.asset_id}|${r.timestamp}|${r.event_type}|${body}`;
        const n = (seen.get(text) ?? 0) + 1;
        seen.set(text, n);
        return sha1(`${text}|${n}`);
      });
      const file = path.join(dir, `property-${k}.parquet`);
      await writePmxtFile(t.ch, file, rows);
      const r = await importPmxtFile(t.ch, file);
      expect(r.inserted, `file ${k}`).toBe(rows.length);
      const stored = await raw.dump('exchange-a', market);
      expect(stored.map((x) => x['dedup_id']).sort(), `file ${k}`).toEqual([...ids].sort());
      for (const x of stored) {
        const i = ids.indexOf(x['dedup_id'] as string);
        const src = rows[i]!;
        if (src.event_type === 'price_change') expect(x['changes']).toEqual([{ price: norm(src.price!), side: src.side, size: norm(src.size!), best_bid: '0.4', best_ask: '0.6' }]);
        if (src.event_type === 'book') expect((x['bids'] as unknown[]).length).toBe((JSON.parse(src.bids!) as unknown[]).length);
      }
    }
  }, 300_000);

  it('takes a file with no rows as an empty hour', async () => {
    const file = path.join(dir, 'polymarket_orderbook_2026-03-10T15.parquet');
    await writePmxtFile(t.ch, file, []);
    expect(await importPmxtFile(t.ch, file)).toMatchObject({ rows: 0, inserted: 0, partitions: [] });
  });

  it('refuses a bad file whole, naming the file and the row', async () => {
    const before = await raw.count('exchange-a');
    const file = path.join(dir, 'bad.parquet');
    const rows = [...ROWS.slice(0, 3).map((row) => ({ ...row, timestamp: row.timestamp + 86_400_000 })), { ...ROWS[1]!, timestamp: H + 86_400_000 + 9000, price: '1.5' }];
    await writePmxtFile(t.ch, file, rows);
    const err = await importPmxtFile(t.ch, file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImportError);
    expect((err as ImportError).row).toBe(3);
    expect((err as Error).message).toMatch(/bad\.parquet, row 3: price is not between 0 and 1: 1\.5/);
    expect(await raw.count('exchange-a')).toBe(before);

    const other = path.join(dir, 'other-schema.parquet');
    await t.ch.client.command({ query: `INSERT INTO FUNCTION file('${other}', 'Parquet', 'ticker String, yes Float64') SELECT 'KX', 0.5` });
    await expect(importPmxtFile(t.ch, other)).rejects.toThrow(/other-schema\.parquet: not a PMXT v2 file: missing column\(s\) timestamp_received/);
    await expect(importPmxtFile(t.ch, path.join(dir, 'absent.parquet'))).rejects.toThrow(/absent\.parquet: no such file/);

    // A download cut short: the head of a good file.
    const whole = path.join(dir, 'whole.parquet');
    await writePmxtFile(t.ch, whole, rows.map((r) => ({ ...r, price: r.price === '1.5' ? '0.5' : r.price })));
    const bytes = readFileSync(whole);
    for (const keep of [bytes.length - 8, Math.floor(bytes.length / 2), 4]) {
      const cut = path.join(dir, `truncated-${keep}.parquet`);
      writeFileSync(cut, bytes.subarray(0, keep));
      await expect(importPmxtFile(t.ch, cut), `kept ${keep} bytes`).rejects.toThrow(new RegExp(`truncated-${keep}\\.parquet: not a readable Parquet file`));
    }
    expect(await raw.count('exchange-a')).toBe(before);
  });
});

describe('own capture first (docs/rules/imports.md#matching-a-captured-record)', () => {
  /** Decimal text without trailing zeros: the value, as the identity compares it. */
  const norm = (d: string) => (d.includes('.') ? d.replace(/0+$/, '').replace(/\.$/, '') : d);
  const level = fc.record({
    side: fc.constantFrom<'BUY' | 'SELL'>('BUY', 'SELL'),
    price: fc.constantFrom('0.5', '0.50', '0.500', '0.48', '1', '1.0', '0'),
    size: fc.constantFrom('10', '10.0', '10.000000', '0', '219.217767', '0.5'),
  });
  const frame = fc.record({
    asset: fc.constantFrom('931', '932'),
    dt: fc.integer({ min: 0, max: 2 }),
    type: fc.constantFrom('price_change', 'price_change', 'price_change', 'book', 'last_trade_price', 'tick_size_change'),
    levels: fc.array(level, { minLength: 1, maxLength: 3 }),
    bookSize: fc.constantFrom('100', '2.5'),
    // The venue's key order (stored in typed columns), or another (the record kept whole in residue).
    venueOrder: fc.boolean(),
  });
  type Frame = { asset: string; dt: number; type: string; levels: Array<{ side: 'BUY' | 'SELL'; price: string; size: string }>; bookSize: string; venueOrder: boolean };

  function messages(market: string, frames: Frame[]): StoredMessage[] {
    return frames.map((f, i) => {
      const recv = H + 50 + f.dt;
      const base: ExchangeAEvent = f.venueOrder
        ? { market, asset_id: f.asset, timestamp: String(H + f.dt), hash: `0xcap${i}`, event_type: f.type }
        : { hash: `0xcap${i}`, market, timestamp: String(H + f.dt), asset_id: f.asset, event_type: f.type };
      const l0 = f.levels[0]!;
      const event =
        f.type === 'price_change'
          ? { ...base, changes: f.levels.map((l) => (f.venueOrder ? { price: l.price, side: l.side, size: l.size, best_bid: '0.4', best_ask: '0.6' } : { side: l.side, size: l.size, price: l.price, best_ask: '0.6', best_bid: '0.4' })) }
          : f.type === 'book'
            ? { ...base, bids: [{ price: '0.4', size: f.bookSize }], asks: [{ price: '0.6', size: '1' }] }
            : f.type === 'last_trade_price'
              ? { ...base, extra: { price: l0.price, size: l0.size, fee_rate_bps: '0', side: l0.side } }
              : { ...base, extra: { old_tick_size: l0.price === '0' ? '0.01' : l0.price, new_tick_size: '0.001' } };
      return { message: { venue: 'exchange-a' as const, received_at: new Date(recv).toISOString(), worker_id: 2, ingest_seq: seq(recv, i), dedup_id: `0xcap${i}`, event }, position: { partition: 0, offset: String(i) } };
    });
  }

  /** The frames as an archive has them: one row per level, in capture order. */
  function rowsOf(market: string, frames: Frame[]): PmxtRow[] {
    return frames.flatMap((f): PmxtRow[] => {
      const common = { timestamp: H + f.dt, timestamp_received: H + 90 + f.dt, market, event_type: f.type, asset_id: f.asset };
      const l0 = f.levels[0]!;
      if (f.type === 'book') return [{ ...common, bids: `[["0.4","${f.bookSize}"]]`, asks: '[["0.6","1"]]' }];
      if (f.type === 'last_trade_price') return [{ ...common, price: l0.price, size: l0.size, side: l0.side, fee_rate_bps: 0 }];
      if (f.type === 'tick_size_change') return [{ ...common, old_tick_size: l0.price === '0' ? '0.01' : l0.price, new_tick_size: '0.001' }];
      return f.levels.map((l) => ({ ...common, ...l, best_bid: '0.4', best_ask: '0.6' }));
    });
  }

  /** What a stored imported record says about its event, to compare with the rows expected. */
  const eventOf = (r: Record<string, unknown>) => {
    const c = (r['changes'] as Array<Record<string, string>> | undefined)?.[0];
    return `${r['asset_id']}|${r['timestamp']}|${r['event_type']}|${c ? `${c['side']}|${c['price']}|${c['size']}` : ''}`;
  };
  const eventOfRow = (r: PmxtRow) => `${r.asset_id}|${r.timestamp}|${r.event_type}|${r.event_type === 'price_change' ? `${r.side}|${norm(r.price!)}|${norm(r.size!)}` : ''}`;

  it('matches every level of a captured frame, whatever the spelling, and stores only the events the capture lacks, in either order', async () => {
    const samples = fc.sample(fc.array(frame, { minLength: 1, maxLength: 12 }), { numRuns: 4, seed: 2401 });
    const residues = { with: 0, without: 0 };
    for (const [k, frames] of samples.entries()) {
      // Events only the archive has: a further repeat of a captured price level (n beyond the
      // capture's), and a level of another size in a captured millisecond.
      const firstChange = frames.find((f) => f.type === 'price_change');
      const extra = (m: string): PmxtRow[] =>
        firstChange === undefined
          ? []
          : [
              { timestamp: H + firstChange.dt, timestamp_received: H + 95, market: m, event_type: 'price_change', asset_id: firstChange.asset, ...firstChange.levels[0]!, best_bid: '0.4', best_ask: '0.6' },
              { timestamp: H + firstChange.dt, timestamp_received: H + 96, market: m, event_type: 'price_change', asset_id: firstChange.asset, side: 'BUY', price: '0.3', size: '77', best_bid: '0.4', best_ask: '0.6' },
            ];

      // Import after capture.
      const mx = `0x${'e'.repeat(62)}${String(k).padStart(2, '0')}`;
      await raw.insert('exchange-a', messages(mx, frames), `cap-x-${k}`);
      const captured = await raw.dump('exchange-a', mx);
      const rs = await t.ch.client.query({ query: `SELECT residue != '' AS r, toString(count()) AS n FROM ${t.ch.table('raw_exchange_a')} FINAL WHERE market = '${mx}' GROUP BY r`, format: 'JSONEachRow' });
      for (const x of await rs.json<{ r: number; n: string }>()) residues[Number(x.r) === 1 ? 'with' : 'without'] += Number(x.n);
      const fileX = path.join(dir, `after-capture-${k}.parquet`);
      await writePmxtFile(t.ch, fileX, [...rowsOf(mx, frames), ...extra(mx)]);
      const r = await importPmxtFile(t.ch, fileX);
      expect(r, `sample ${k}`).toMatchObject({ inserted: extra(mx).length, alreadyStored: rowsOf(mx, frames).length, superseded: 0 });
      const storedX = await raw.dump('exchange-a', mx);
      expect(storedX.filter((x) => x['worker_id'] === 2), `sample ${k}`).toEqual(captured);
      expect(storedX.filter((x) => x['worker_id'] === 0).map(eventOf).sort(), `sample ${k}`).toEqual(extra(mx).map(eventOfRow).sort());

      // Capture after import: the capture's copy replaces the imported rows of its events.
      const my = `0x${'f'.repeat(62)}${String(k).padStart(2, '0')}`;
      const fileY = path.join(dir, `before-capture-${k}.parquet`);
      await writePmxtFile(t.ch, fileY, [...rowsOf(my, frames), ...extra(my)]);
      expect((await importPmxtFile(t.ch, fileY)).inserted, `sample ${k}`).toBe(rowsOf(my, frames).length + extra(my).length);
      await raw.insert('exchange-a', messages(my, frames), `cap-y-${k}`);
      let removed = 0;
      for (const asset of ['931', '932']) removed += await supersedeImported(t.ch, { market: my, asset, date: '2026-03-10' });
      expect(removed, `sample ${k}`).toBe(rowsOf(my, frames).length);
      const storedY = await raw.dump('exchange-a', my);
      const swap = (xs: Array<Record<string, unknown>>, m: string) => JSON.parse(JSON.stringify(xs).split(m).join('<M>')) as unknown;
      expect(swap(storedY.filter((x) => x['worker_id'] === 2), my), `sample ${k}`).toEqual(swap(captured, mx));
      expect(storedY.filter((x) => x['worker_id'] === 0).map(eventOf).sort(), `sample ${k}`).toEqual(extra(my).map(eventOfRow).sort());
      // Nothing more to replace; the file again adds nothing.
      expect(await supersedeImported(t.ch, { market: my, asset: '931', date: '2026-03-10' })).toBe(0);
      expect(await importPmxtFile(t.ch, fileY), `sample ${k}`).toMatchObject({ inserted: 0, superseded: 0 });
      expect(await raw.dump('exchange-a', my)).toEqual(storedY);
    }
    // Both kinds of captured record were matched: from the typed columns and from a residue.
    expect(residues.with).toBeGreaterThan(3);
    expect(residues.without).toBeGreaterThan(3);
  }, 300_000);
});
