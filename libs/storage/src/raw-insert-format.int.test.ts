import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage, Venue } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { RAW_TABLE, RawEventsRepository, type StoredMessage } from './index.ts';

/**
 * The sink's TabSeparated insert against the independent reference of the engine's own
 * JSONEachRow parser: any batch, whatever its strings hold (tabs, line feeds, backslashes,
 * `\N`, quotes, any Unicode), its times, nulls and integers, is stored column for column as
 * the JSON insert stores it.
 */

const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', '\\', '\\N', '\t', '\n', '\r\n', 'a\tb', 'x\\ty', '"q"', 'é€😀', '\u0000', '\\\\n'),
);
const ms = fc.integer({ min: 0, max: Date.parse('2105-12-31T23:59:59.999Z') });
const seq = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String);
const partition = fc.record({ partition: fc.integer({ min: 0, max: 1000 }), offset: fc.bigInt({ min: 0n, max: 2n ** 62n }).map(String) });

const aMessage = fc.record({ market: text, asset: text, type: text, hash: text, dedup: text, ts: ms, received: ms, seq, worker: fc.integer({ min: 0, max: 0xffff_ffff }), extra: fc.option(fc.dictionary(text, text, { maxKeys: 2 }), { nil: undefined }), price: text }).map(
  (x): ExchangeAMessage => ({
    venue: 'exchange-a',
    received_at: new Date(x.received).toISOString(),
    worker_id: x.worker,
    ingest_seq: x.seq,
    dedup_id: x.dedup,
    event: { market: x.market, asset_id: x.asset, timestamp: String(x.ts), hash: x.hash, event_type: x.type, price: x.price, ...(x.extra ? { extra: x.extra } : {}) } as unknown as ExchangeAMessage['event'],
  }),
);
const int64OrNull = fc.option(fc.bigInt({ min: -(2n ** 53n) + 1n, max: 2n ** 53n - 1n }).map(Number), { nil: null });
const bMessage = fc.record({ ticker: text, type: text, dedup: text, ts: ms, received: ms, seq, worker: fc.integer({ min: 0, max: 0xffff_ffff }), sid: int64OrNull, s: int64OrNull, side: text }).map(
  (x): ExchangeBMessage => ({
    venue: 'exchange-b',
    received_at: new Date(x.received).toISOString(),
    worker_id: x.worker,
    ingest_seq: x.seq,
    dedup_id: x.dedup,
    record: { type: x.type, ticker: x.ticker, timestamp: new Date(x.ts).toISOString(), epoch_ms: x.ts, sid: x.sid, seq: x.s, side: x.side } as unknown as ExchangeBMessage['record'],
  }),
);

describe('raw insert formats (embedded ClickHouse)', () => {
  let t: TestClickHouse;
  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => t?.cleanup());

  /** Every stored column (inserted_at aside), in a fixed order, as the engine writes JSON. */
  async function stored(venue: Venue): Promise<unknown[]> {
    const table = t.ch.table(RAW_TABLE[venue]);
    const rs = await t.ch.client.query({ query: `SELECT * EXCEPT (inserted_at) FROM ${table} ORDER BY ALL`, format: 'JSONEachRow' });
    return rs.json();
  }

  async function roundTrip(venue: Venue, batch: StoredMessage[]): Promise<{ tsv: unknown[]; json: unknown[] }> {
    const out: Record<string, unknown[]> = {};
    for (const format of ['tsv', 'json'] as const) {
      await t.ch.client.command({ query: `TRUNCATE TABLE ${t.ch.table(RAW_TABLE[venue])}` });
      expect(await new RawEventsRepository(t.ch, format).insert(venue, batch, `fmt-${format}-${Math.random()}`)).toBe(batch.length);
      out[format] = await stored(venue);
    }
    return { tsv: out.tsv!, json: out.json! };
  }

  const batchOf = <M extends RawMessage>(m: fc.Arbitrary<M>) => fc.array(fc.tuple(m, partition).map(([message, position]): StoredMessage => ({ message, position })), { minLength: 1, maxLength: 40 });

  it.each([
    ['exchange-a', batchOf(aMessage)],
    ['exchange-b', batchOf(bMessage)],
  ] as const)('%s: a TabSeparated batch is stored exactly as the same batch in JSONEachRow', async (venue, batches) => {
    await fc.assert(
      fc.asyncProperty(batches, async (batch) => {
        const { tsv, json } = await roundTrip(venue, batch);
        expect(tsv).toEqual(json);
        expect(tsv).toHaveLength(batch.length);
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('times keep their milliseconds and dates follow the event time, at the edges of days and of the epoch', async () => {
    const edges = [0, 1, 999, 1000, 86_399_999, 86_400_000, Date.parse('2026-03-01T23:59:59.999Z'), Date.parse('2026-03-02T00:00:00.000Z'), Date.parse('2105-12-31T23:59:59.999Z')];
    const batch = edges.map((ts, i): StoredMessage => ({
      message: { venue: 'exchange-b', received_at: new Date(ts).toISOString(), worker_id: 1, ingest_seq: String(i), dedup_id: `e${i}`, record: { type: 'delta', ticker: 'T', timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: null, seq: null } } as unknown as ExchangeBMessage,
      position: { partition: 0, offset: String(i) },
    }));
    await t.ch.client.command({ query: `TRUNCATE TABLE ${t.ch.table(RAW_TABLE['exchange-b'])}` });
    await new RawEventsRepository(t.ch).insert('exchange-b', batch, 'edges');
    const rs = await t.ch.client.query({ query: `SELECT toString(event_date) AS d, toUnixTimestamp64Milli(event_ts) AS e, toUnixTimestamp64Milli(received_at) AS r FROM ${t.ch.table('raw_exchange_b')} ORDER BY e`, format: 'JSONEachRow' });
    const rows = await rs.json<{ d: string; e: string; r: string }>();
    expect(rows).toEqual(edges.map((ts) => ({ d: new Date(ts).toISOString().slice(0, 10), e: String(ts), r: String(ts) })));
  });
});
