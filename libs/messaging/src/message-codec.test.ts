import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_RECEIVED_MS, receiveTimeError } from '@booktape/domain';
import { encodeRawValue } from './message-codec.ts';
import { DEAD_LETTER_FRAME_CHARS, concatRawMessages, deadLetterFrame, decodeCaptureGap, decodeRawMessages, rawRecordCount, tooLargeDeadLetter } from './message-codec.ts';

const b = (record: Record<string, unknown>) =>
  Buffer.from(JSON.stringify([{ venue: 'exchange-b', received_at: '2026-05-01T00:00:00.000Z', worker_id: 1, ingest_seq: '12', dedup_id: 'd', record }]));
const goodB = { type: 'delta', ticker: 'KX-1', timestamp: '2026-05-01T00:00:00.000Z', epoch_ms: 1777593600000, sid: 1, seq: 2 };

describe('raw message decoding', () => {
  it('accepts a well-formed record and merged arrays of them', () => {
    const one = b(goodB).toString();
    const merged = decodeRawMessages('exchange-b', Buffer.from(concatRawMessages([one, one])));
    expect(merged.ok && merged.messages.length).toBe(2);
  });

  it('refuses, with a reason, what would crash or corrupt the sink downstream', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...goodB, timestamp: undefined }, 'bad record'],
      [{ ...goodB, epoch_ms: 1.5 }, 'epoch_ms'],
      [{ ...goodB, epoch_ms: 9e15 }, 'epoch_ms'],
      [{ ...goodB, epoch_ms: '1777593600000' }, 'epoch_ms'],
      // After ClickHouse Date's end it would be stored under 2149-06-06: dead-lettered instead.
      [{ ...goodB, epoch_ms: Date.UTC(2150, 0, 1) }, 'after 2149-06-06'],
    ];
    for (const [record, reason] of cases) {
      const d = decodeRawMessages('exchange-b', b(record));
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toContain(reason);
    }
    expect(decodeRawMessages('exchange-a', b(goodB)).ok).toBe(false); // wrong topic
    expect(decodeRawMessages('exchange-b', Buffer.from('{oops')).ok).toBe(false);
    expect(decodeRawMessages('exchange-b', null).ok).toBe(false);
  });

  it('refuses a JSON value whose bytes are not UTF-8, and keeps a real U+FFFD', () => {
    const cut = b({ ...goodB, ticker: 'KX-@@@' });
    cut.set([0xf0, 0x9f, 0x98], cut.indexOf('@@@')); // a 4-byte sequence cut short: one U+FFFD, 3 bytes
    expect(decodeRawMessages('exchange-b', cut)).toEqual({ ok: false, reason: 'value is not UTF-8' });
    const real = decodeRawMessages('exchange-b', b({ ...goodB, ticker: 'KX-\ufffd' }));
    expect(real.ok && (real.messages[0] as { record: { ticker: string } }).record.ticker).toBe('KX-\ufffd');
  });

  it('refuses what the engine would store as another value without a word', () => {
    const lineage = (o: Record<string, unknown>) => Buffer.from(JSON.stringify([{ venue: 'exchange-b', received_at: '2026-05-01T00:00:00.000Z', worker_id: 1, ingest_seq: '12', dedup_id: 'd', record: goodB, ...o }]));
    const cases: Array<[Buffer, string]> = [
      // UInt64 ingest_seq: 2^64 would be stored as 0.
      [lineage({ ingest_seq: (2n ** 64n).toString() }), 'bad ingest_seq'],
      [lineage({ ingest_seq: '99999999999999999999' }), 'bad ingest_seq'],
      // UInt32 worker_id: 2^32 + 5 would be stored as 5.
      [lineage({ worker_id: 2 ** 32 + 5 }), 'bad worker_id'],
      [lineage({ worker_id: '1' }), 'bad worker_id'],
      // DateTime64 received_at: year 10000 would be stored as 9999-12-31; and past 2039 no ingest_seq can number it.
      [lineage({ received_at: '+010000-01-01T00:00:00.000Z' }), 'received_at is not an ISO 8601 time'],
      [lineage({ received_at: '2045-01-01T00:00:00.000Z' }), 'received_at 2045-01-01T00:00:00.000Z is outside 1970..'],
      [lineage({ received_at: '1960-01-01T00:00:00.000Z' }), 'is outside 1970..'],
      [lineage({ received_at: 'May 1, 2026' }), 'received_at is not an ISO 8601 time'],
      // Nullable(Int64) sid and seq: true would be stored as 1, "5" as 5, 2^63 as a negative number.
      [b({ ...goodB, sid: true }), 'bad record sid or seq'],
      [b({ ...goodB, seq: '5' }), 'bad record sid or seq'],
      [b({ ...goodB, sid: 2 ** 63 }), 'bad record sid or seq'],
    ];
    for (const [value, reason] of cases) {
      const d = decodeRawMessages('exchange-b', value);
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toContain(reason);
    }
    expect(decodeRawMessages('exchange-b', lineage({ ingest_seq: (2n ** 64n - 1n).toString(), worker_id: 2 ** 32 - 1 })).ok).toBe(true);
    expect(decodeRawMessages('exchange-b', b({ ...goodB, sid: null, seq: null })).ok).toBe(true);
  });

  it('leaves to the engine what it refuses outright, so the sink dead-letters that record alone', () => {
    // The sink splits the batch on the engine's refusal and keeps the message's other records.
    const value = (worker_id: number, sid: number) => Buffer.from(JSON.stringify([{ venue: 'exchange-b', received_at: '2026-05-01T00:00:00.000Z', worker_id, ingest_seq: '12', dedup_id: 'd', record: { ...goodB, sid } }]));
    expect(decodeRawMessages('exchange-b', value(-1, 1)).ok).toBe(true);
    expect(decodeRawMessages('exchange-b', value(1, 1.5)).ok).toBe(true);
  });
});

describe('receive time checks', () => {
  // The check skips its Date.parse for a time in the minute of a good one: it must still
  // accept exactly what receiveTimeError accepts, whatever came before, in JSON and binary values.
  const near = (ms: number) => fc.integer({ min: -120_000, max: 120_000 }).map((d) => ms + d);
  const time = fc.oneof(near(Date.UTC(2026, 4, 1)), near(MAX_RECEIVED_MS), near(0), fc.integer({ min: -1e13, max: 1e13 })).filter((ms) => Math.abs(ms) <= 8.64e15);
  const spelling = fc.oneof(
    time.map((ms) => new Date(ms).toISOString()),
    fc.tuple(time, fc.constantFrom(':60.000Z', ':59.999Z', ':5x.000Z', ':00.000+01:00', ':00.00Z', ':00Z', ':99.000Z')).map(([ms, tail]) => new Date(ms).toISOString().slice(0, 16) + tail),
    fc.string(),
  );
  it('accepts exactly what receiveTimeError accepts, in any order', () => {
    fc.assert(
      fc.property(fc.array(spelling, { minLength: 1, maxLength: 12 }), fc.boolean(), (times, binary) => {
        for (const received_at of times) {
          const m = { venue: 'exchange-b', received_at, worker_id: 1, ingest_seq: '12', dedup_id: 'd', record: goodB };
          const value = binary ? encodeRawValue([m as never]) : Buffer.from(JSON.stringify([m]));
          const d = decodeRawMessages('exchange-b', value);
          const expected = receiveTimeError('received_at', received_at);
          expect(d.ok ? null : d.reason).toBe(expected === null ? null : `record 0: ${expected}`);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

describe('capture gap decoding', () => {
  const gap = { venue: 'exchange-a', connection_id: 'a-0#1', started_at: '2026-05-01T00:00:00.000Z', ended_at: null, reason: 'closed', markets: ['1', '2'] };
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v));

  it('accepts an open and a closed gap', () => {
    expect(decodeCaptureGap(enc(gap))).toEqual({ ok: true, gap });
    expect(decodeCaptureGap(enc({ ...gap, ended_at: '2026-05-01T00:00:05.000Z' })).ok).toBe(true);
    const { ended_at: _, ...open } = gap;
    expect(decodeCaptureGap(enc(open))).toEqual({ ok: true, gap });
  });

  it('refuses every shape that would fail its insert forever', () => {
    for (const bad of [null, 'text', { ...gap, venue: 'exchange-c' }, { ...gap, started_at: 'yesterday' }, { ...gap, ended_at: 5 }, { ...gap, markets: [1] }, { ...gap, connection_id: undefined }, { ...gap, started_at: '+010000-01-01T00:00:00.000Z' }, { ...gap, ended_at: '2045-01-01T00:00:00.000Z' }]) {
      expect(decodeCaptureGap(enc(bad)).ok).toBe(false);
    }
    expect(decodeCaptureGap(Buffer.from('{')).ok).toBe(false);
  });
});

describe('dead letters of values too large for the broker', () => {
  it('keeps a small frame whole and the head of a large one, saying how much was cut', () => {
    expect(deadLetterFrame('abc')).toEqual({ frame: 'abc', truncated: null });
    const big = 'x'.repeat(DEAD_LETTER_FRAME_CHARS + 10);
    const cut = deadLetterFrame(big);
    expect(cut.frame).toBe(big.slice(0, DEAD_LETTER_FRAME_CHARS));
    expect(cut.truncated).toBe(`frame truncated to its first ${DEAD_LETTER_FRAME_CHARS} of ${big.length} characters`);
  });

  it('counts the records of a merged value, and none in what is not an array of them', () => {
    const one = b(goodB).toString();
    expect(rawRecordCount(concatRawMessages([one, one, one]))).toBe(3);
    expect(rawRecordCount('{"a":1}')).toBe(0);
    expect(rawRecordCount('[1,')).toBe(0);
  });

  it('names the venue, the size and the record count, and fits well inside the broker limit', () => {
    const one = b(goodB).toString();
    const value = concatRawMessages(Array.from({ length: 20_000 }, () => one));
    const dl = JSON.parse(tooLargeDeadLetter('exchange-b', value, new Date('2026-05-01T00:00:00Z'))) as Record<string, string>;
    expect(dl.venue).toBe('exchange-b');
    expect(dl.received_at).toBe('2026-05-01T00:00:00.000Z');
    expect(dl.reason).toContain(`a message of ${value.length} characters (20000 record(s))`);
    expect(dl.frame).toBe(value.slice(0, DEAD_LETTER_FRAME_CHARS));
    expect(JSON.stringify(dl).length).toBeLessThan(256 * 1024);
  });
});
