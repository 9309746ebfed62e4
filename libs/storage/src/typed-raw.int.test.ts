import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT, RawEventsRepository, SERVED_RECORD_SQL, exchangeAPayload, exchangeBPayload, migrate, readBookRow, rowBinaryRows, streamQuery, type RowTime } from './index.ts';
import { msFromText, type BookRecord } from '@booktape/book';
import { exchangeAMessage, exchangeAMessages, exchangeBMessage, exchangeBMessages } from './venue-shapes.test-support.ts';

/**
 * The typed raw tables serve the record (SERVED_RECORD_SQL), rebuilt by the engine from the typed columns (or the
 * residue). The reference is the record as JSON.stringify writes it, the text the tables
 * stored before: the engine's rebuild must equal it byte for byte for every venue shape and
 * for arbitrary records, and the typed columns must hold the values (no residue) wherever
 * the texts are plain.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;

beforeAll(async () => {
  t = await tempClickHouse();
  await migrate(t.ch);
  raw = new RawEventsRepository(t.ch);
});
afterAll(async () => t?.cleanup());

async function served(venue: 'exchange-a' | 'exchange-b', dedup: string[]): Promise<Map<string, { payload: string; residue: string }>> {
  const table = venue === 'exchange-a' ? 'raw_exchange_a' : 'raw_exchange_b';
  const rs = await t.ch.client.query({
    query: `SELECT dedup_id, ${SERVED_RECORD_SQL[venue]} AS payload, residue FROM ${t.ch.table(table)} FINAL WHERE dedup_id IN {ids:Array(String)}`,
    query_params: { ids: dedup },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ dedup_id: string; payload: string; residue: string }>();
  return new Map(rows.map((r) => [r.dedup_id, r]));
}

let batch = 0;

/** Stores the messages; every one must be served as `payloadOf` writes it. Returns how many need no residue. */
async function roundTrip<M extends ExchangeAMessage | ExchangeBMessage>(messages: M[], payloadOf: (m: M) => string): Promise<number> {
  const venue = messages[0]!.venue;
  await raw.insert(venue, messages.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), `${venue}${++batch}`);
  const got = await served(venue, messages.map((m) => m.dedup_id));
  let typed = 0;
  for (const m of messages) {
    const row = got.get(m.dedup_id);
    expect(row?.payload, m.dedup_id).toBe(payloadOf(m));
    if (row?.residue === '') typed++;
  }
  return typed;
}

const roundTripA = (ms: ExchangeAMessage[]) => roundTrip(ms, exchangeAPayload);
const roundTripB = (ms: ExchangeBMessage[]) => roundTrip(ms, exchangeBPayload);

/** Distinct identities, so that one run's records never collapse into each other. */
function distinct<T extends { dedup_id: string }>(ms: T[]): T[] {
  return ms.map((m, i) => ({ ...m, dedup_id: `${m.dedup_id}-${batch}-${i}` }));
}

describe('typed raw tables', () => {
  it('serve every venue shape byte for byte from typed columns alone', async () => {
    const a = exchangeAMessages();
    const b = exchangeBMessages();
    expect(await roundTripA(a)).toBe(a.length);
    expect(await roundTripB(b)).toBe(b.length);
  });

  it('serve arbitrary exchange A records byte for byte (the engine rebuild equals JSON.stringify)', async () => {
    await fc.assert(fc.asyncProperty(fc.array(exchangeAMessage, { minLength: 1, maxLength: 40 }), async (ms) => void (await roundTripA(distinct(ms)))), { numRuns: 40 });
  });

  it('serve arbitrary exchange B records byte for byte (the engine rebuild equals JSON.stringify)', async () => {
    await fc.assert(fc.asyncProperty(fc.array(exchangeBMessage, { minLength: 1, maxLength: 40 }), async (ms) => void (await roundTripB(distinct(ms)))), { numRuns: 40 });
  });

  it('give the book readers every field a book and its checks use, from the typed columns (or the residue)', async () => {
    const run = async <M extends ExchangeAMessage | ExchangeBMessage>(ms: M[]) => {
      const messages = distinct(ms);
      const venue = messages[0]!.venue;
      await raw.insert(venue, messages.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), `book${++batch}`);
      // The rows as the book readers read them: RowBinary, decoded in JS (the dedup id and
      // residue first, to find the message); in one stream, and again one byte at a time
      // (every row cut by a chunk boundary, as a server's stream may cut it).
      const query = {
        query: `SELECT dedup_id, residue, ${BOOK_ROW_COLUMNS[venue]} FROM ${t.ch.table(venue === 'exchange-a' ? 'raw_exchange_a' : 'raw_exchange_b')} FINAL
          WHERE dedup_id IN {ids:Array(String)}`,
        query_params: { ids: messages.map((m) => m.dedup_id) },
        format: BOOK_ROW_FORMAT,
      } as const;
      const read = async (chunks: AsyncIterable<Buffer>) => {
        const rows = new Map<string, { residue: string; rec: BookRecord; ms: number }>();
        const time: RowTime = { ms: Number.NaN };
        const decoded = rowBinaryRows(chunks, (r) => {
          const id = r.string();
          const residue = r.string();
          const m = byId.get(id)!;
          const market = m.venue === 'exchange-a' ? m.event.market : m.record.ticker;
          const asset = m.venue === 'exchange-a' ? m.event.asset_id : '';
          return { id, residue, rec: readBookRow(venue, r, market, asset, time) };
        }, () => time.ms);
        for await (const batch of decoded) batch.forEach((x, i) => rows.set(x.id, { ...x, ms: batch.ms![i]! }));
        return rows;
      };
      const byId = new Map<string, M>(messages.map((m) => [m.dedup_id, m]));
      const whole: Buffer[] = [];
      for await (const c of streamQuery(t.ch, query)) whole.push(c);
      const rows = await read((async function* () {
        yield* whole;
      })());
      const bytes = Buffer.concat(whole);
      const split = await read((async function* () {
        for (let i = 0; i < bytes.length; i++) yield bytes.subarray(i, i + 1);
      })());
      expect(rows.size).toBe(messages.length);
      for (const m of messages) {
        const row = rows.get(m.dedup_id)!;
        const full = m.venue === 'exchange-a' ? m.event : m.record;
        // What no book reads: A's venue extras; B's venue time, market id and channel data.
        const { extra: _e, ...a } = full as ExchangeAMessage['event'];
        const { venue_ts: _v, market_id: _m, data: _d, ...b } = full as ExchangeBMessage['record'];
        // A row with a residue is read from it: the served record (A's extras flattened in).
        const served = m.venue === 'exchange-a' ? exchangeAPayload(m) : exchangeBPayload(m);
        const expected = row.residue !== '' ? JSON.parse(served) : JSON.parse(JSON.stringify(m.venue === 'exchange-a' ? a : b));
        expect(row.rec, m.dedup_id).toEqual(expected);
        expect(split.get(m.dedup_id)?.rec, m.dedup_id).toEqual(expected);
        // The time handed beside the record (the rollup's grouping and the engine's
        // observation time) is the one the engine reads from the record; a row read from its
        // residue hands none (NaN: the record is asked).
        const time = 'epoch_ms' in row.rec ? row.rec.epoch_ms : msFromText(row.rec.timestamp);
        if (row.residue !== '') expect(row.ms, m.dedup_id).toBeNaN();
        else expect(row.ms, m.dedup_id).toBe(time);
        expect(Object.is(split.get(m.dedup_id)?.ms, row.ms), m.dedup_id).toBe(true);
      }
    };
    await run(exchangeAMessages());
    await run(exchangeBMessages());
    // The newer list shape: the record's hash is its first entry's (stored once, read back
    // as one string for both), some of them from the second entry on differing.
    const firstHash = (m: ExchangeAMessage, k: number): ExchangeAMessage => {
      const h = m.event.changes?.[0]?.hash;
      return h === undefined || k % 4 === 3 ? m : { ...m, event: { ...m.event, hash: h } };
    };
    await fc.assert(fc.asyncProperty(fc.array(exchangeAMessage, { minLength: 1, maxLength: 30 }), async (ms) => run(ms.map(firstHash))), { numRuns: 15 });
    await fc.assert(fc.asyncProperty(fc.array(exchangeAMessage, { minLength: 1, maxLength: 30 }), async (ms) => run(ms)), { numRuns: 25 });
    await fc.assert(fc.asyncProperty(fc.array(exchangeBMessage, { minLength: 1, maxLength: 30 }), async (ms) => run(ms)), { numRuns: 25 });
  });
});
