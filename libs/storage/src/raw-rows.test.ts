import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { plainA, plainB, writeA, writeARebuilt, writeB, writeBRebuilt, type KafkaPosition } from './raw-codec.ts';
import { RowBinaryWriter } from './row-binary.ts';
import { decimalText, exchangeAMessage, exchangeAMessages, exchangeBMessage, exchangeBMessages } from './venue-shapes.test-support.ts';

/**
 * writeA / writeB check a record's fields instead of building its JSON text and the table's
 * rebuild of it: they must write exactly the bytes of the general way (writeARebuilt /
 * writeBRebuilt, which compares the two texts), or refuse it with the same error, for any
 * record, including ones no venue sends.
 */
type Outcome = { bytes: string } | { error: string };

function run<M>(write: (w: RowBinaryWriter, m: M, p: KafkaPosition) => void, m: M, p: KafkaPosition): Outcome {
  const w = new RowBinaryWriter(64);
  try {
    // Twice into one writer: scratch state left by one row must not leak into the next.
    write(w, m, p);
    write(w, m, p);
    return { bytes: w.bytes().toString('hex') };
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` };
  }
}

const POS = { partition: 3, offset: '17' };

/** A value in place of a field: another type, a spelling JSON or the columns treat otherwise. */
const oddValue = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, '', 0, -0, 1.5, 'BUY', 'SELL', '-0', '0.10', '1e3', '"q"', 'a\\b', '\u0001', '\ud800', '😀', [], {}, ['0.1', '2'], { price: '0.1', size: '2' }, true),
  decimalText,
  fc.string({ maxLength: 4 }),
);

/** Mutations of a record object: a field replaced, removed or added, keys reordered. */
function mutate(o: Record<string, unknown>, keys: readonly string[]) {
  return fc
    .tuple(fc.constantFrom(...keys), oddValue, fc.constantFrom('set', 'delete', 'reorder', 'add'))
    .map(([k, v, how]) => {
      const out: Record<string, unknown> = { ...o };
      if (how === 'set') out[k] = v;
      else if (how === 'delete') delete out[k];
      else if (how === 'add') out[`${k}_x`] = v;
      else {
        const val = out[k];
        delete out[k];
        out[k] = val;
      }
      return out;
    });
}

const A_FIELDS = ['market', 'asset_id', 'timestamp', 'hash', 'event_type', 'bids', 'asks', 'changes', 'extra'];
const LEVEL_FIELDS = ['price', 'size'];
const CHANGE_FIELDS = ['price', 'side', 'size', 'hash', 'best_bid', 'best_ask'];

/** An exchange A message, then possibly one mutation of its event, a level or a change. */
const wildA: fc.Arbitrary<ExchangeAMessage> = exchangeAMessage.chain((m) => {
  const e = m.event as unknown as Record<string, unknown>;
  const options: Array<fc.Arbitrary<ExchangeAMessage>> = [fc.constant(m), mutate(e, A_FIELDS).map((event) => ({ ...m, event }) as unknown as ExchangeAMessage)];
  for (const side of ['bids', 'asks'] as const) {
    const levels = m.event[side];
    if (levels && levels.length > 0) {
      options.push(
        fc.tuple(fc.nat({ max: levels.length - 1 }), mutate(levels[0] as unknown as Record<string, unknown>, LEVEL_FIELDS)).map(([i, lv]) => {
          const copy: unknown[] = [...levels];
          copy[i] = lv;
          return { ...m, event: { ...m.event, [side]: copy } } as ExchangeAMessage;
        }),
      );
    }
  }
  const changes = m.event.changes;
  if (changes && changes.length > 0) {
    options.push(
      mutate(changes[0] as unknown as Record<string, unknown>, CHANGE_FIELDS).map((c) => ({ ...m, event: { ...m.event, changes: [c, ...changes.slice(1)] } }) as unknown as ExchangeAMessage),
      fc.constantFrom('', m.event.changes![0]!.hash ?? 'h').map((hash) => ({ ...m, event: { ...m.event, hash } })),
    );
  }
  options.push(fc.constantFrom<unknown>({ market: 'x' }, { tick_size: '0.01', hash: 'y' }, [1], 'text', null, {}, { a: undefined }).map((extra) => ({ ...m, event: { ...m.event, extra } }) as unknown as ExchangeAMessage));
  return fc.oneof(...options);
});

const B_FIELDS = ['type', 'ticker', 'timestamp', 'epoch_ms', 'sid', 'seq', 'yes', 'no', 'side', 'price', 'delta', 'venue_ts', 'market_id', 'expected_seq', 'data'];

const wildB: fc.Arbitrary<ExchangeBMessage> = exchangeBMessage.chain((m) => {
  const r = m.record as unknown as Record<string, unknown>;
  const options: Array<fc.Arbitrary<ExchangeBMessage>> = [fc.constant(m), mutate(r, B_FIELDS).map((record) => ({ ...m, record }) as unknown as ExchangeBMessage)];
  for (const side of ['yes', 'no'] as const) {
    const levels = m.record[side];
    if (levels && levels.length > 0) {
      options.push(
        fc.tuple(fc.nat({ max: levels.length - 1 }), oddValue, fc.constantFrom(0, 1, 2)).map(([i, v, at]) => {
          const copy: unknown[] = [...levels];
          const pair: unknown[] = [...levels[i]!];
          pair[at] = v;
          copy[i] = pair;
          return { ...m, record: { ...m.record, [side]: copy } } as unknown as ExchangeBMessage;
        }),
      );
    }
  }
  options.push(
    fc.integer({ min: -5, max: 5 }).map((d) => ({ ...m, record: { ...m.record, epoch_ms: m.record.epoch_ms + d } })),
    fc.constantFrom('2026-03-14T12:00:00Z', '2026-03-14T12:00:00.000Z', 'yesterday', '+275760-09-13T00:00:00.000Z').map((venue_ts) => ({ ...m, record: { ...m.record, venue_ts } })),
  );
  return fc.oneof(...options);
});

describe('typed raw rows written from the record fields', () => {
  it('write the bytes of the general way for every exchange A record, odd ones included', () => {
    fc.assert(
      fc.property(wildA, fc.nat({ max: 2 ** 31 - 1 }), (m, partition) => {
        const p = { partition, offset: '17' };
        expect(run(writeA, m, p)).toEqual(run(writeARebuilt, m, p));
      }),
      { numRuns: 2000 },
    );
  });

  it('write the bytes of the general way for every exchange B record, odd ones included', () => {
    fc.assert(
      fc.property(wildB, (m) => {
        expect(run(writeB, m, POS)).toEqual(run(writeBRebuilt, m, POS));
      }),
      { numRuns: 2000 },
    );
  });

  it('write the same bytes for books deeper than the scratch columns were', () => {
    // The first sides fit the scratch columns as they start (256 slots), the second ones not.
    const depth = fc.integer({ min: 100, max: 700 });
    const levels = (n: number, k: number) => Array.from({ length: n }, (_, i) => ({ price: `0.${String(i + k).padStart(4, '0')}`, size: `${i * 7 + k}.00` }));
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 120 }), depth, fc.nat({ max: 9 }), (nb, na, k) => {
        const b = exchangeBMessages().find((x) => x.record.type === 'snapshot')!;
        const pairs = (n: number, j: number) => levels(n, j).map((l) => [l.price, l.size] as [string, string]);
        const snapshot = { ...b, record: { ...b.record, yes: pairs(nb, k), no: pairs(na, k + 2) } };
        expect(run(writeB, snapshot, POS)).toEqual(run(writeBRebuilt, snapshot, POS));
        expect(plainB(snapshot.record)).toBe(true);
        const [a] = exchangeAMessages();
        const book = { ...a!, event: { market: a!.event.market, asset_id: '1', timestamp: a!.event.timestamp, hash: 'h', event_type: 'book', bids: levels(nb, k), asks: levels(na, k + 1) } };
        expect(run(writeA, book, POS)).toEqual(run(writeARebuilt, book, POS));
        expect(plainA(book.event)).toBe(true);
      }),
      { numRuns: 30 },
    );
  });

  it('vouch for every venue shape, old and new, so the venue traffic takes the quick way', () => {
    for (const m of exchangeAMessages()) expect(plainA(m.event), JSON.stringify(m.event)).toBe(true);
    for (const m of exchangeBMessages()) expect(plainB(m.record), JSON.stringify(m.record)).toBe(true);
  });

  it('leave to the general way what they cannot vouch for', () => {
    const [m] = exchangeAMessages();
    const e = m!.event;
    expect(plainA({ ...e, timestamp: `0${e.timestamp}` })).toBe(false);
    expect(plainA({ ...e, extra: { market: 'x' } })).toBe(false);
    expect(plainA({ ...e, asset_id: 'a"b' })).toBe(false);
    const { market, ...rest } = e;
    expect(plainA({ ...rest, market } as typeof e)).toBe(false);
    const book = exchangeAMessages().find((x) => x.event.event_type === 'book')!.event;
    expect(plainA(book)).toBe(true);
    expect(plainA({ ...book, bids: undefined })).toBe(false);
    const snapshot = exchangeBMessages().find((x) => x.record.type === 'snapshot')!.record;
    expect(plainB({ ...snapshot, no: undefined })).toBe(false);
  });
});
