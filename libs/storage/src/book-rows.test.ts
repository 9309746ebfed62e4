import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalSize, type BookRecord } from '@booktape/book';
import type { ExchangeAEvent } from '@booktape/domain';
import { RollupRecords, RowBinaryReader, claimHashesOf, foldBookRows, msText, readBookRow, rowBinaryRows, type RowClaimHash, type RowTime } from './book-rows.ts';
import { RowBinaryWriter } from './row-binary.ts';

/** The bytes, in chunks cut at the given offsets (a server's stream may cut rows anywhere). */
async function* cut(bytes: Buffer, at: number[]): AsyncGenerator<Buffer> {
  let from = 0;
  for (const p of [...new Set(at.map((x) => x % (bytes.length + 1)))].sort((a, b) => a - b)) {
    if (p > from) yield bytes.subarray(from, p);
    from = Math.max(from, p);
  }
  if (from < bytes.length) yield bytes.subarray(from);
}

describe('book rows', () => {
  it('write a millisecond as String() does, for any sequence of times (in order, repeated or not)', () => {
    const time = fc.oneof(
      fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
      fc.maxSafeInteger(),
      fc.integer({ min: -5000, max: 5000 }),
      fc.constantFrom(0, 999, 1000, 1001, 9999, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 2 ** 60, -0, 1.5, 1000.25, Number.NaN, Infinity, -Infinity),
    );
    // Runs of nearby times, as a day's records come.
    const run = fc.tuple(fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }), fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 30 })).map(([t0, steps]) => {
      let t = t0;
      return steps.map((d) => (t += d));
    });
    fc.assert(
      fc.property(fc.array(fc.oneof(time.map((t) => [t]), run), { maxLength: 20 }), (groups) => {
        for (const t of groups.flat()) expect(msText(t)).toBe(String(t));
      }),
      { numRuns: 2000 },
    );
  });

  it('read strings of any length and characters as Buffer#toString reads their UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 50 }), fc.string({ maxLength: 200 })), { maxLength: 8 }), (ss) => {
        const w = new RowBinaryWriter(4);
        for (const s of ss) w.string(s);
        const r = new RowBinaryReader();
        r.reset(w.bytes());
        for (const s of ss) expect(r.string()).toBe(Buffer.from(s, 'utf8').toString('utf8'));
        expect(r.pos).toBe(r.buf.length);
      }),
      { numRuns: 1000 },
    );
  });

  it('hand each row its time beside it, across arrays and chunk cuts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.maxSafeInteger(), fc.string({ maxLength: 20 })), { maxLength: 1500 }), fc.array(fc.nat(), { maxLength: 40 }), async (rows, at) => {
        const w = new RowBinaryWriter();
        for (const [t, s] of rows) {
          w.i64(t);
          w.string(s);
        }
        let last = Number.NaN;
        const got: { t: number; s: string; ms: number }[] = [];
        for await (const batch of rowBinaryRows(cut(w.bytes(), at), (r) => {
          const t = r.i64();
          const s = r.string();
          // A row whose text is empty hands no time, as a row read from its residue.
          last = s === '' ? Number.NaN : t;
          return { t, s };
        }, () => last)) {
          expect(batch.length).toBeLessThanOrEqual(512);
          batch.forEach((x, i) => got.push({ ...x, ms: batch.ms![i]! }));
        }
        expect(got.map((x) => [x.t, x.s])).toEqual(rows);
        for (const x of got) expect(Object.is(x.ms, x.s === '' ? Number.NaN : x.t)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

/** One exchange A book row's columns (BOOK_ROW_COLUMNS order), as the engine stores and sends them. */
interface ARow {
  ms: number;
  type: string;
  hash: string;
  residue: string;
  /** bid price, scale, size, scale; ask the same. */
  levels: [number[], number[], number[], number[], number[], number[], number[], number[]];
  /** Per entry: price, scale, side byte, size, scale, hash, best bid, scale, best ask, scale. */
  changes: [number, number, number, number, number, string, number, number, number, number][];
}

/** A row as ROLLUP_ROW_COLUMNS sends it (no entry hashes; `hash` as stored) or CLAIM_HASH_COLUMNS does (no levels). */
function writeARowAs(w: RowBinaryWriter, row: ARow, as: 'rollup' | 'claim-hashes'): void {
  w.i64(row.ms);
  w.string(row.type);
  w.string(row.hash);
  w.string(row.residue);
  if (as === 'rollup') row.levels.forEach((a, k) => (k % 2 === 0 ? w.i64Array(a) : w.u8Array(a)));
  const col = (k: number) => row.changes.map((c) => c[k] as number);
  w.i64Array(col(0));
  w.u8Array(col(1));
  w.u8Array(col(2));
  w.i64Array(col(3));
  w.u8Array(col(4));
  if (as === 'claim-hashes') {
    w.arrayLength(row.changes.length);
    for (const c of row.changes) w.string(c[5]);
  }
  w.i64Array(col(6));
  w.u8Array(col(7));
  w.i64Array(col(8));
  w.u8Array(col(9));
}

/** The record hash BOOK_ROW_COLUMNS sends (A_HASH_SQL): the first entry's where the stored one is ''. */
const aHash = (row: ARow): string => (row.hash === '' && row.changes.length > 0 ? row.changes[0]![5] : row.hash);

function writeARow(w: RowBinaryWriter, row: ARow): void {
  w.i64(row.ms);
  w.string(row.type);
  w.string(row.hash);
  w.string(row.residue);
  row.levels.forEach((a, k) => (k % 2 === 0 ? w.i64Array(a) : w.u8Array(a)));
  const col = (k: number) => row.changes.map((c) => c[k] as number);
  w.i64Array(col(0));
  w.u8Array(col(1));
  w.u8Array(col(2));
  w.i64Array(col(3));
  w.u8Array(col(4));
  w.arrayLength(row.changes.length);
  for (const c of row.changes) w.string(c[5]);
  w.i64Array(col(6));
  w.u8Array(col(7));
  w.i64Array(col(8));
  w.u8Array(col(9));
}

/** What a fold hands for a row, made comparable: the entries of a price_change as texts, whichever way it came. */
interface Seen {
  ms: number;
  record: BookRecord | null;
  entries: { price: string; size: string; side: string; claims: boolean; bestBid: string | undefined; bestAsk: string | undefined; claimHash: string }[] | null;
}

describe('book rows folded in place', () => {
  const mantissa = fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: -1000, max: 2 ** 50 }), fc.constantFrom(0, 1, 2 ** 17, 2 ** 44 + 3));
  const scale = fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 18 }));
  const claimScale = fc.oneof(fc.constant(255), fc.constant(254), scale);
  const text = fc.oneof(fc.constant(''), fc.string({ maxLength: 12 }), fc.string({ minLength: 120, maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 8 }));
  const entry = fc.tuple(mantissa, scale, fc.integer({ min: 0, max: 4 }), mantissa, scale, text, mantissa, claimScale, mantissa, claimScale);
  const levels = fc.array(fc.tuple(mantissa, scale, mantissa, scale), { maxLength: 4 });
  const side = (ls: [number, number, number, number][]) => [0, 1, 2, 3].map((k) => ls.map((l) => l[k]!));
  const row: fc.Arbitrary<ARow> = fc
    .record({
      ms: fc.oneof(fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }), fc.maxSafeInteger()),
      type: fc.oneof({ weight: 6, arbitrary: fc.constant('price_change') }, fc.constant('book'), fc.constant('tick_size_change'), fc.constant('price_chang'), fc.string({ maxLength: 140 })),
      hash: text,
      residue: fc.oneof({ weight: 6, arbitrary: fc.constant('') }, fc.constant('{"market":"m","asset_id":"a","timestamp":"5","hash":"h","event_type":"price_change","changes":[]}')),
      bids: levels,
      asks: levels,
      changes: fc.oneof({ weight: 8, arbitrary: fc.array(entry, { maxLength: 4 }) }, fc.array(entry, { minLength: 120, maxLength: 140 })),
    })
    .map(({ bids, asks, ...r }) => ({ ...r, levels: [...side(bids), ...side(asks)] as ARow['levels'] }));

  it('hand every row as the record reader reads it, for any rows cut anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 30 }), async (rows, at) => {
        const w = new RowBinaryWriter();
        for (const [i, r] of rows.entries()) {
          w.u32(i); // a lead column, skipped by the fold
          writeARow(w, r);
        }
        const bytes = w.bytes();
        // The reference: every row read whole into its record (the records' own decoder).
        const want: Seen[] = [];
        const r = new RowBinaryReader();
        r.reset(bytes);
        const time: RowTime = { ms: Number.NaN };
        for (let i = 0; i < rows.length; i++) {
          r.pos += 4;
          const rec = readBookRow('exchange-a', r, 'm', 'a', time) as ExchangeAEvent;
          want.push({ ms: time.ms, record: rec, entries: null });
        }
        const got: Seen[] = [];
        await foldBookRows(cut(bytes, at), 'exchange-a', 'm', 'a', (x) => void (x.pos += 4), {
          record: (rec, ms) => got.push({ ms, record: rec, entries: null }),
          changes: (ms, e) => {
            const entries: NonNullable<Seen['entries']> = [];
            for (let i = 0; i < e.count; i++) {
              // A size the book takes as it is must be what its own reading would make of it.
              if (e.sizeIsCanonical!(i)) expect(canonicalSize(e.size(i))).toBe(e.size(i));
              entries.push({ price: e.price(i), size: e.size(i), side: e.side(i), claims: e.claims(i), bestBid: e.bestBid(i), bestAsk: e.bestAsk(i), claimHash: e.claimHash(i) as string });
            }
            got.push({ ms, record: null, entries });
          },
        });
        expect(got.length).toBe(want.length);
        for (let i = 0; i < want.length; i++) {
          const g = got[i]!;
          const x = want[i]!;
          expect(Object.is(g.ms, x.ms)).toBe(true);
          if (g.record !== null) {
            expect(g.record).toEqual(x.record);
            continue;
          }
          // In place: only a price_change stored whole (no residue), as its record's entries.
          const rec = x.record as ExchangeAEvent;
          expect(rows[i]!.residue).toBe('');
          expect(rec.event_type).toBe('price_change');
          expect(g.entries).toEqual(
            rec.changes!.map((c) => ({ price: c.price, size: c.size, side: c.side, claims: c.best_bid !== undefined || c.best_ask !== undefined, bestBid: c.best_bid, bestAsk: c.best_ask, claimHash: c.hash ?? rec.hash })),
          );
        }
        // Every typed price_change row is read in place (none falls back to a record).
        rows.forEach((row, i) => expect(got[i]!.record === null).toBe(row.type === 'price_change' && row.residue === ''));
      }),
      { numRuns: 300 },
    );
  });

  it('without hashes, hand the same rows, a claim hash as where to fetch it, and the fetch gives the hash read with the row', async () => {
    // Times in order, many rows to a millisecond; changes only on price_change rows, as stored.
    const rowsArb = fc.array(fc.tuple(row, fc.nat({ max: 2 })), { maxLength: 60 }).map((pairs) => {
      let ms = 1_800_000_000_000;
      return pairs.map(([r, step]) => {
        ms += step % 2;
        return { ...r, ms, changes: r.type === 'price_change' ? r.changes : [] };
      });
    });
    await fc.assert(
      fc.asyncProperty(rowsArb, fc.array(fc.nat(), { maxLength: 30 }), fc.nat(), async (rows, at, pick) => {
        const fold = async (bytes: Buffer, hashes: boolean) => {
          const got: Array<{ ms: number; record: BookRecord | null; entries: unknown[] | null; hashes: Array<string | RowClaimHash> }> = [];
          await foldBookRows(
            cut(bytes, at),
            'exchange-a',
            'm',
            'a',
            () => undefined,
            {
              record: (rec, ms) => got.push({ ms, record: rec, entries: null, hashes: [] }),
              changes: (ms, e) => {
                const entries: unknown[] = [];
                const hs: Array<string | RowClaimHash> = [];
                for (let i = 0; i < e.count; i++) {
                  entries.push({ price: e.price(i), size: e.size(i), side: e.side(i), claims: e.claims(i), bestBid: e.bestBid(i), bestAsk: e.bestAsk(i) });
                  hs.push(e.claimHash(i) as string | RowClaimHash);
                }
                got.push({ ms, record: null, entries, hashes: hs });
              },
            },
            hashes,
          );
          return got;
        };
        const w = new RowBinaryWriter();
        for (const r of rows) writeARow(w, { ...r, hash: aHash(r) });
        const want = await fold(w.bytes(), true);
        const wr = new RowBinaryWriter();
        for (const r of rows) writeARowAs(wr, r, 'rollup');
        const got = await fold(wr.bytes(), false);
        expect(got.map((g) => [g.ms, g.record, g.entries])).toEqual(want.map((g) => [g.ms, g.record, g.entries]));
        // Each claim hash names its row's place in its millisecond and what the row held.
        const refs: RowClaimHash[] = [];
        const hashes: string[] = [];
        got.forEach((g, k) => {
          const ord = rows.slice(0, k).filter((r) => r.ms === rows[k]!.ms).length;
          g.hashes.forEach((ref, i) => {
            if (typeof ref === 'string') throw new Error('a hash read without hashes');
            expect(ref).toMatchObject({ deferredHash: true, ms: rows[k]!.ms, ord, entry: i, count: rows[k]!.changes.length, recHash: rows[k]!.hash });
            refs.push(ref);
            hashes.push(want[k]!.hashes[i] as string);
          });
        });
        // The fetch (any of the refs, in any order) gives the hashes read with the rows.
        const c = new RowBinaryWriter();
        for (const r of rows) writeARowAs(c, r, 'claim-hashes');
        const order = refs.map((_, i) => (i + pick) % refs.length);
        expect(await claimHashesOf(cut(c.bytes(), at), order.map((i) => refs[i]!))).toEqual(order.map((i) => hashes[i]!));
        // A row not as the fold read it: no hashes.
        if (refs.length > 0) {
          const ref = refs[pick % refs.length]!;
          const k = rows.findIndex((r, j) => r.ms === ref.ms && rows.slice(0, j).filter((x) => x.ms === ref.ms).length === ref.ord);
          const changed = rows.map((r, j) => (j !== k ? r : { ...r, changes: r.changes.map((e, i) => (i === ref.entry ? ([e[0] + 1, ...e.slice(1)] as typeof e) : e)) }));
          const d = new RowBinaryWriter();
          for (const r of changed) writeARowAs(d, r, 'claim-hashes');
          expect(await claimHashesOf(cut(d.bytes(), at), refs)).toBeNull();
          const fewer = new RowBinaryWriter();
          for (const r of rows.filter((_, j) => j !== k)) writeARowAs(fewer, r, 'claim-hashes');
          // (A row after it with the same content and hashes would give the same hashes: never others.)
          const again = await claimHashesOf(cut(fewer.bytes(), at), refs);
          if (again !== null) expect(again).toEqual(hashes);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('read as records without hashes, give the records read with them, a claim hash as where to fetch it', async () => {
    const rowsArb = fc.array(fc.tuple(row, fc.nat({ max: 2 }), fc.nat({ max: 5 })), { maxLength: 60 }).map((triples) => {
      let ms = 1_800_000_000_000;
      let item = 0;
      return triples.map(([r, step, next]) => {
        ms += step % 2;
        // Items in order (a read of several books), each item's times in order.
        if (next === 0) item++;
        return { ...r, ms, item, changes: r.type === 'price_change' ? r.changes : [] };
      });
    });
    await fc.assert(
      fc.asyncProperty(rowsArb, fc.array(fc.nat(), { maxLength: 30 }), async (rows, at) => {
        const read = async (bytes: Buffer, hashes: boolean) => {
          const records = new RollupRecords('exchange-a');
          const time: RowTime = { ms: Number.NaN };
          const got: Array<{ ms: number; record: BookRecord }> = [];
          for await (const batch of rowBinaryRows(
            cut(bytes, at),
            (r) => {
              const item = r.u32();
              return hashes ? readBookRow('exchange-a', r, 'm', 'a', time) : records.read(r, 'm', 'a', time, item);
            },
            () => time.ms,
          ))
            batch.forEach((record, i) => got.push({ ms: batch.ms![i]!, record }));
          return got;
        };
        const w = new RowBinaryWriter();
        for (const r of rows) {
          w.u32(r.item);
          writeARow(w, { ...r, hash: aHash(r) });
        }
        const want = await read(w.bytes(), true);
        const wr = new RowBinaryWriter();
        for (const r of rows) {
          wr.u32(r.item);
          writeARowAs(wr, r, 'rollup');
        }
        const got = await read(wr.bytes(), false);
        expect(got.length).toBe(want.length);
        const refs: RowClaimHash[] = [];
        const hashes: string[] = [];
        const items: number[] = [];
        got.forEach((g, k) => {
          const x = want[k]!;
          expect(Object.is(g.ms, x.ms)).toBe(true);
          const row = rows[k]!;
          if (row.residue !== '' || row.type !== 'price_change') {
            // Any other row: its record as read with the hashes (its hash is the stored one).
            expect(g.record).toEqual(row.residue !== '' ? x.record : { ...(x.record as ExchangeAEvent), hash: row.hash });
            return;
          }
          const rec = g.record as ExchangeAEvent;
          const wantRec = x.record as ExchangeAEvent;
          // The stored record hash, the same entries without their hashes; a claim's hash as where to fetch it.
          expect({ ...rec, changes: undefined }).toEqual({ ...wantRec, hash: row.hash, changes: undefined });
          const plain = (c: NonNullable<ExchangeAEvent['changes']>[number]) => {
            const { hash: _h, ...rest } = c;
            return rest;
          };
          expect(rec.changes!.map(plain)).toEqual(wantRec.changes!.map(plain));
          const ord = rows.slice(0, k).filter((r) => r.ms === row.ms && r.item === row.item).length;
          rec.changes!.forEach((c, i) => {
            const claims = c.best_bid !== undefined || c.best_ask !== undefined;
            if (!claims) return expect(c.hash).toBeUndefined();
            const ref = c.hash as unknown as RowClaimHash;
            expect(ref).toMatchObject({ deferredHash: true, ms: row.ms, ord, entry: i, count: row.changes.length, recHash: row.hash });
            refs.push(ref);
            items.push(row.item);
            // What a claim names when read with the hashes: the entry's, or the record's.
            hashes.push(wantRec.changes![i]!.hash ?? wantRec.hash);
          });
        });
        // The fetch of one item's rows gives the hashes read with them.
        for (const item of new Set(rows.map((r) => r.item))) {
          const c = new RowBinaryWriter();
          for (const r of rows.filter((r) => r.item === item)) writeARowAs(c, r, 'claim-hashes');
          const mine = refs.map((ref, i) => ({ ref, i })).filter(({ i }) => items[i] === item);
          expect(await claimHashesOf(cut(c.bytes(), at), mine.map((m) => m.ref))).toEqual(mine.map((m) => hashes[m.i]!));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('call a size canonical only where the book would read it unchanged', async () => {
    const digits = fc.oneof(fc.integer({ min: -50, max: 5000 }), fc.integer({ min: 0, max: 10 ** 15 }), fc.integer({ min: 0, max: 2 ** 53 + 10 }));
    const m = fc.tuple(digits, fc.integer({ min: 0, max: 4 })).map(([d, z]) => Math.min(d * 10 ** z, 2 ** 62));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(m, fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constantFrom(254, 255))), { minLength: 1, maxLength: 8 }), async (sizes) => {
        const w = new RowBinaryWriter();
        writeARow(w, { ms: 1_750_000_000_000, type: 'price_change', hash: 'h', residue: '', levels: [[], [], [], [], [], [], [], []], changes: sizes.map(([z, zs]) => [500, 3, 1, z, zs, '', 0, 255, 0, 255]) });
        let seen = 0;
        await foldBookRows(cut(w.bytes(), []), 'exchange-a', 'm', 'a', () => undefined, {
          record: () => expect.unreachable(),
          changes: (_ms, e) => {
            for (let i = 0; i < e.count; i++, seen++) {
              const text = e.size(i);
              if (e.sizeIsCanonical!(i)) expect(canonicalSize(text)).toBe(text);
              // Every plain one ("20", "0.5") is known as such.
              else expect(sizes[i]![0] >= 0 && sizes[i]![0] <= Number.MAX_SAFE_INTEGER && sizes[i]![1] <= 18 && (sizes[i]![1] === 0 || sizes[i]![0] % 10 !== 0)).toBe(false);
            }
          },
        });
        expect(seen).toBe(sizes.length);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuse change arrays out of step, and a stream that ends inside a row', async () => {
    const ok: ARow = { ms: 1_750_000_000_000, type: 'price_change', hash: 'h', residue: '', levels: [[], [], [], [], [], [], [], []], changes: [[500, 3, 1, 20, 0, '', 0, 255, 0, 255]] };
    const w = new RowBinaryWriter();
    writeARow(w, ok);
    const bytes = w.bytes();
    const sink = { record: () => undefined, changes: () => undefined };
    await expect(foldBookRows(cut(bytes.subarray(0, bytes.length - 1), []), 'exchange-a', 'm', 'a', () => undefined, sink)).rejects.toThrow(/ends inside a row/);
    // The side array one entry short.
    const bad = new RowBinaryWriter();
    bad.i64(ok.ms);
    bad.string('price_change');
    bad.string('h');
    bad.string('');
    for (let k = 0; k < 8; k++) bad.arrayLength(0);
    bad.i64Array([500]);
    bad.u8Array([3]);
    bad.u8Array([]);
    bad.i64Array([20]);
    bad.u8Array([0]);
    bad.arrayLength(1);
    bad.string('');
    bad.i64Array([0]);
    bad.u8Array([255]);
    bad.i64Array([0]);
    bad.u8Array([255]);
    await expect(foldBookRows(cut(bad.bytes(), []), 'exchange-a', 'm', 'a', () => undefined, sink)).rejects.toThrow(RangeError);
  });
});
