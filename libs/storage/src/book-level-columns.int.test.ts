import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBook, type BookRecord } from '@booktape/book';
import type { ExchangeAEvent, ExchangeAMessage, PriceChange } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { BOOK_LEVEL_COLUMNS, BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT, RawEventsRepository, bookRowBatches, streamQuery } from './index.ts';
import { exchangeAMessage } from './venue-shapes.test-support.ts';

/**
 * The book readers that want levels only (the book at an instant, book snapshots) read
 * exchange A rows in BOOK_LEVEL_COLUMNS: no hashes, no best-bid / best-ask claims. For any
 * stored records (every kind, odd spellings, records kept in their residue, claims or not),
 * the records read so must be those read in every column but for those fields, and the book
 * after each of them (known or not, every level of both sides) the same.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;
beforeAll(async () => {
  t = await tempClickHouse();
  raw = new RawEventsRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const M = `0x${'1'.repeat(64)}`;
let run = 0;

async function read(columns: string, asset: string): Promise<BookRecord[]> {
  const query = `SELECT ${columns} FROM ${t.ch.table('raw_exchange_a')} FINAL WHERE market = '${M}' AND asset_id = '${asset}' ORDER BY event_ts, ingest_seq, dedup_id`;
  const out: BookRecord[] = [];
  for await (const b of bookRowBatches('exchange-a', streamQuery(t.ch, { query, format: BOOK_ROW_FORMAT }), M, asset)) out.push(...b);
  return out;
}

/** A record without what BOOK_LEVEL_COLUMNS leaves out (a record kept in its residue is read whole either way). */
function withoutClaims(r: BookRecord): BookRecord {
  const e = r as ExchangeAEvent;
  const { hash: _h, ...rest } = e;
  if (e.changes === undefined) return rest as BookRecord;
  return { ...rest, changes: e.changes.map(({ hash: _x, best_bid: _b, best_ask: _a, ...c }: PriceChange) => c) } as BookRecord;
}

describe('exchange A rows read for their levels only', () => {
  it('give the records read in every column but for hashes and claims, and the same book after each', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(exchangeAMessage, fc.nat({ max: 40 })), { minLength: 1, maxLength: 40 }), async (ms) => {
        run++;
        const asset = `lv${run}`;
        const base = Date.UTC(2026, 2, 2, 10);
        const messages: ExchangeAMessage[] = ms.map(([m, dt], i) => ({
          ...m,
          ingest_seq: String(i + 1),
          dedup_id: `lv${run}-${i}`,
          event: { ...m.event, market: M, asset_id: asset, timestamp: String(base + dt * 10) },
        }));
        await raw.insert('exchange-a', messages.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), `lv-${run}`);
        const full = await read(BOOK_ROW_COLUMNS['exchange-a'], asset);
        const lean = await read(BOOK_LEVEL_COLUMNS['exchange-a'], asset);
        expect(lean.map(withoutClaims)).toEqual(full.map(withoutClaims));
        const a = newBook('exchange-a');
        const b = newBook('exchange-a');
        for (let i = 0; i < full.length; i++) {
          a.apply(full[i]! as never);
          b.apply(lean[i]! as never);
          expect(b.isKnown()).toBe(a.isKnown());
          expect(b.bestLevels(500)).toEqual(a.bestLevels(500));
        }
      }),
      { numRuns: 40 },
    );
  });
});
