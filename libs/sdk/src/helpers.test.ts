import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvRow } from '@booktape/domain';
import { SUMMARY_COLUMNS, bookLevels, bookSnapshotRows, bookTop, coverageBrief, coverageGaps, summaryRows, toCsv } from './helpers.ts';
import type { CoverageDay, SummaryBucket } from './types.ts';

const bucket = (over: Partial<SummaryBucket> = {}): SummaryBucket => ({
  timestamp: 1772323200000,
  quote_count: 3,
  is_forward_filled: false,
  best_bid: 0.45,
  best_bid_size: 5,
  best_ask: 0.55,
  best_ask_size: 7,
  mid_price: 0.5,
  spread: 0.1,
  best_bid_ohlc: { open: 0.4, high: 0.46, low: 0.4, close: 0.45 },
  best_ask_ohlc: { open: 0.6, high: 0.6, low: 0.55, close: 0.55 },
  mid_price_ohlc: { open: 0.5, high: 0.53, low: 0.5, close: 0.5 },
  spread_ohlc: { open: 0.2, high: 0.2, low: 0.1, close: 0.1 },
  ...over,
});

describe('summaryRows', () => {
  it('flattens each OHLC into four columns, in the API CSV column order', () => {
    const [row] = summaryRows([bucket()]);
    expect(Object.keys(row!)).toEqual([...SUMMARY_COLUMNS]);
    expect(row).toMatchObject({ best_bid_open: 0.4, best_bid_high: 0.46, best_ask_low: 0.55, spread_close: 0.1, mid_price: 0.5 });
  });

  it('keeps an empty bucket null in every flattened column', () => {
    const [row] = summaryRows([bucket({ quote_count: 0, is_forward_filled: true, best_bid: null, best_bid_ohlc: null, spread_ohlc: null })]);
    expect(row).toMatchObject({ best_bid: null, best_bid_open: null, best_bid_close: null, spread_high: null, best_ask_open: 0.6 });
  });
});

describe('bookTop', () => {
  it('exchange A: best bid and ask, mid and spread without float noise', () => {
    expect(bookTop({ bids: [{ price: '0.45', size: '30' }, { price: '0.4', size: '1' }], asks: [{ price: '0.55', size: '25' }] })).toEqual({ bestBid: 0.45, bestBidSize: 30, bestAsk: 0.55, bestAskSize: 25, mid: 0.5, spread: 0.1 });
    expect(bookTop({ bids: [{ price: '0.48', size: '30' }], asks: [] })).toEqual({ bestBid: 0.48, bestBidSize: 30, bestAsk: null, bestAskSize: null, mid: null, spread: null });
  });

  it('exchange B: the best NO bid is a YES offer at 1 − its price', () => {
    expect(bookTop({ yes: [{ price: '0.42', size: '15' }], no: [{ price: '0.55', size: '40' }] })).toEqual({ bestBid: 0.42, bestBidSize: 15, bestAsk: 0.45, bestAskSize: 40, mid: 0.435, spread: 0.03 });
  });
});

describe('book rows', () => {
  it('lists levels best first per side, and snapshots with their instant', () => {
    const book = { bids: [{ price: '0.48', size: '30' }, { price: '0.01', size: '1200.5' }], asks: [{ price: '0.52', size: '25' }] };
    expect(bookLevels(book)).toEqual([
      { side: 'bid', level: 0, price: 0.48, size: 30 },
      { side: 'bid', level: 1, price: 0.01, size: 1200.5 },
      { side: 'ask', level: 0, price: 0.52, size: 25 },
    ]);
    const rows = bookSnapshotRows([
      { timestamp: 60_000, as_of_ms: 59_000, is_known: true, yes: [{ price: '0.41', size: '120' }], no: [] },
      { timestamp: 120_000, as_of_ms: null, is_known: false, yes: [], no: [] },
    ]);
    expect(rows).toEqual([{ timestamp: 60_000, as_of_ms: 59_000, is_known: true, side: 'yes', level: 0, price: 0.41, size: 120 }]);
  });
});

describe('coverage', () => {
  const checks = { book_events: 1, venue_best_checked: 1, venue_best_mismatches: 0, first_mismatch_ms: null, crossed_observations: 0, unknown_book_ms: 0 };
  const day = (date: string, status: CoverageDay['status'], gaps: CoverageDay['gaps'] = [], checksComplete = true): CoverageDay => ({
    date, status, events: status === 'missing' ? 0 : 10, first_event_ms: null, last_event_ms: null, gaps, checks, checks_complete: checksComplete, sources: [], imported_only: false,
  });

  it('sorts days by status; trustworthy only when every day is complete and checked', () => {
    const gap = { kind: 'disconnect' as const, start_ms: 1000, end_ms: 43_000, detail: 'capture: closed 1006' };
    const days = [day('2026-03-01', 'complete'), day('2026-03-02', 'partial', [gap]), day('2026-03-03', 'missing')];
    expect(coverageBrief(days)).toEqual({ complete: ['2026-03-01'], partial: ['2026-03-02'], missing: ['2026-03-03'], trustworthy: false });
    expect(coverageBrief([day('2026-03-01', 'complete')]).trustworthy).toBe(true);
    expect(coverageBrief([day('2026-03-01', 'complete', [], false)]).trustworthy).toBe(false);
    expect(coverageGaps(days)).toEqual([{ date: '2026-03-02', ...gap, duration_ms: 42_000 }]);
  });
});

describe('toCsv', () => {
  it('writes RFC 4180: a header, quotes where needed, null as empty, objects as JSON', () => {
    expect(toCsv([{ a: 1, b: 'x,y', c: null, d: 'say "hi"' }, { a: 2, b: 'line\nbreak', c: true, d: { k: 1 } }])).toBe(
      'a,b,c,d\n1,"x,y",,"say ""hi"""\n2,"line\nbreak",true,"{""k"":1}"\n',
    );
    expect(toCsv([{ a: 1, b: 2 }], ['b'])).toBe('b\n2\n');
    expect(toCsv([], ['a'])).toBe('a\n');
  });

  const awkward = fc.oneof(fc.string({ unit: fc.constantFrom('"', ',', '\r', '\n', 'a', ' ', 'é') }), fc.string());

  it('reads back unchanged with csv-parse, header included, for any column names and values; the same text as the project writer', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(awkward, { minLength: 1, maxLength: 5 }).chain((cols) => fc.tuple(fc.constant(cols), fc.array(fc.array(awkward, { minLength: cols.length, maxLength: cols.length }), { maxLength: 10 }))),
        ([cols, values]) => {
          const rows = values.map((v) => Object.fromEntries(cols.map((c, i) => [c, v[i]])));
          const text = toCsv(rows, cols);
          expect(parse(text, { bom: false })).toEqual([cols, ...values]);
          // This package's copy of the CSV writer (it depends on nothing) writes what libs/domain's does.
          expect(text).toBe([cols, ...values].map(csvRow).join(''));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("without columns, a key only later rows have is a column too, not dropped", () => {
    expect(toCsv([{ a: 1 }, { a: 2, b: 'late' }, { c: 3 }])).toBe('a,b,c\n1,,\n2,late,\n,,3\n');
  });
});
