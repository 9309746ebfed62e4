import { describe, expect, it } from 'vitest';
import { encodeRawMessages, encodeRawValue } from '@booktape/messaging';
import { decodeGapBatch, decodeRawBatch } from './batch-decode.ts';
import { aMessage, bMessage } from './records.test-support.ts';

describe('decodeRawBatch', () => {
  it('reads binary and JSON values mixed in one batch, in Kafka order, each record with its position', () => {
    const messages = [
      { offset: '7', value: Buffer.from(encodeRawValue([aMessage(1), aMessage(2)])) },
      { offset: '8', value: Buffer.from(encodeRawMessages([aMessage(3)])) },
      { offset: '9', value: Buffer.from(encodeRawValue([aMessage(4)])) },
    ];
    const { rows, rejected } = decodeRawBatch('exchange-a', 5, messages);
    expect(rejected).toEqual([]);
    expect(rows).toEqual([
      { message: aMessage(1), position: { partition: 5, offset: '7' } },
      { message: aMessage(2), position: { partition: 5, offset: '7' } },
      { message: aMessage(3), position: { partition: 5, offset: '8' } },
      { message: aMessage(4), position: { partition: 5, offset: '9' } },
    ]);
  });

  it('refuses a whole message that does not decode or breaks a rule, with its offset and value, and keeps the others', () => {
    const cut = Buffer.from(encodeRawValue([aMessage(1)])).subarray(0, 12);
    const wrongVenue = Buffer.from(encodeRawMessages([bMessage(1)]));
    const messages = [
      { offset: '1', value: cut },
      { offset: '2', value: Buffer.from(encodeRawValue([aMessage(2)])) },
      { offset: '3', value: wrongVenue },
      { offset: '4', value: null },
    ];
    const { rows, rejected } = decodeRawBatch('exchange-a', 0, messages);
    expect(rows.map((r) => r.message)).toEqual([aMessage(2)]);
    expect(rejected.map((r) => [r.offset, r.value])).toEqual([
      ['1', cut],
      ['3', wrongVenue],
      ['4', null],
    ]);
    expect(rejected[0]!.reason).toMatch(/^binary value refused: truncated/);
    expect(rejected[1]!.reason).toBe('record 0: venue exchange-b on the exchange-a topic');
    expect(rejected[2]!.reason).toBe('empty message value');
  });
});

describe('decodeGapBatch', () => {
  it('keeps the gaps that parse, refuses the others', () => {
    const gap = { venue: 'exchange-a', connection_id: 'c1', started_at: '2026-04-02T12:00:00.000Z', ended_at: '2026-04-02T12:00:05.000Z', reason: 'reconnect', markets: ['0xm1'] };
    const { gaps, rejected } = decodeGapBatch([
      { offset: '0', value: Buffer.from(JSON.stringify(gap)) },
      { offset: '1', value: Buffer.from('{not json') },
    ]);
    expect(gaps.map((g) => g.offset)).toEqual(['0']);
    expect(rejected).toEqual([{ offset: '1', value: Buffer.from('{not json'), reason: 'gap message is not JSON' }]);
  });
});
