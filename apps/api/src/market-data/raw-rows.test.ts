import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parse } from 'csv-parse/sync';
import { aCsv } from './long-format.test-support.ts';
import { RawRowsToCsv, RawRowsToJson } from './raw-rows.ts';

const arbRecord = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.string(), fc.integer(), fc.constant(null)), { maxKeys: 4 });
const arbRows = fc.array(fc.tuple(fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 5 }), arbRecord), { maxLength: 40 });

function linesOf(rows: Array<[string[], Record<string, unknown>]>): Buffer {
  return Buffer.from(rows.map(([k, r]) => `${JSON.stringify(k)}\t${JSON.stringify(r)}\n`).join(''), 'utf8');
}

/** Splits a buffer at arbitrary byte positions (server chunks may split rows, even characters). */
function split(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  out.push(buf.subarray(prev));
  return out;
}

describe('raw rows to a JSON array', () => {
  it('yields exactly the first `max` records, however the input is chunked', () => {
    fc.assert(
      fc.property(arbRows, fc.array(fc.nat(), { maxLength: 10 }), fc.integer({ min: 1, max: 50 }), (rows, cuts, max) => {
        const conv = new RawRowsToJson(max);
        const parts: Buffer[] = [];
        for (const chunk of split(linesOf(rows), cuts)) parts.push(conv.push(chunk));
        if (!conv.more) conv.end();
        const json = JSON.parse(`[${Buffer.concat(parts).toString('utf8')}]`);
        const kept = rows.slice(0, max);
        expect(json).toEqual(kept.map(([, r]) => r));
        expect(conv.count).toBe(kept.length);
        expect(conv.more).toBe(rows.length > max);
        expect(conv.lastPosition()).toEqual(kept.length ? kept[kept.length - 1]![0] : null);
      }),
    );
  });

  it('notices a stream that broke off inside a row', () => {
    const conv = new RawRowsToJson(10);
    conv.push(Buffer.from('["1"]\t{"a":1}\n["2"]\t{"a"'));
    expect(() => conv.end()).toThrow(/inside a row/);
  });
});

describe('raw rows to NDJSON and CSV', () => {
  it('ndjson: one record per line, the same records as the JSON array, however chunked', () => {
    fc.assert(
      fc.property(arbRows, fc.array(fc.nat(), { maxLength: 10 }), fc.integer({ min: 1, max: 50 }), (rows, cuts, max) => {
        const conv = new RawRowsToJson(max, true);
        const out = Buffer.concat(split(linesOf(rows), cuts).map((c) => conv.push(c))).toString('utf8');
        const kept = rows.slice(0, max);
        expect(out.split('\n').slice(0, -1).map((l) => JSON.parse(l))).toEqual(kept.map(([, r]) => r));
        expect(out.endsWith('\n') || kept.length === 0).toBe(true);
        expect(conv.lastPosition()).toEqual(kept.length ? kept[kept.length - 1]![0] : null);
      }),
    );
  });

  // Any text in any field (commas, quotes, line breaks, non-ASCII) must come back from an
  // independent CSV reader exactly.
  const text = fc.string({ unit: 'binary', maxLength: 12 });
  const level = fc.record({ price: text, size: text });
  const arbA = fc.record(
    {
      timestamp: text,
      asset_id: text,
      event_type: text,
      hash: text,
      received_at: text,
      bids: fc.array(level, { maxLength: 3 }),
      asks: fc.array(level, { maxLength: 3 }),
      changes: fc.array(fc.record({ price: text, size: text, side: fc.constantFrom('BUY', 'SELL') }), { maxLength: 3 }),
    },
    { requiredKeys: ['timestamp', 'asset_id', 'event_type', 'hash', 'received_at'] },
  );

  it('csv (exchange A): one row per level with the event fields repeated, read back exactly', () => {
    fc.assert(
      fc.property(fc.array(arbA, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 6 }), (records, cuts) => {
        const conv = new RawRowsToCsv(1000, 'exchange-a');
        const lines = linesOf(records.map((r, i) => [[String(i)], r]));
        const out = RawRowsToCsv.header('exchange-a') + Buffer.concat(split(lines, cuts).map((c) => conv.push(c))).toString('utf8');
        const expected = records.flatMap(aCsv);
        expect(parse(out, { columns: true })).toEqual(expected);
      }),
    );
  });
});

describe('raw rows to CSV with a trailing field (include=source)', () => {
  it('puts the field last on every row of the record, quoted where it must be; the header names it', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.integer({ min: 0, max: 3 }), (source, levels) => {
        const bids = Array.from({ length: levels }, (_, i) => ({ price: `0.${i + 1}`, size: String(i + 10) }));
        const rec = { market: '0xab', asset_id: '1', timestamp: '1000', hash: '0xh', event_type: 'book', bids, asks: [], received_at: '2026-03-01T00:00:01.000Z', worker_id: 0, source };
        const conv = new RawRowsToCsv(10, 'exchange-a', '', ['source']);
        const body = RawRowsToCsv.header('exchange-a', [], ['source']) + conv.push(linesOf([[['1000'], rec]])).toString('utf8');
        const rows = parse(body, { columns: true }) as Array<Record<string, string>>;
        expect(rows).toEqual(aCsv(rec).map((r) => ({ ...r, source })));
        expect(body.split('\n')[0]!.split(',').at(-1)).toBe('source');
      }),
    );
  });
});
