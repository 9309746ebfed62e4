import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_FRAME_CHARS, decodeRawMessages, encodeRawMessages, encodeRawValue } from '@booktape/messaging';
import { deadLetterMessage, frameOfValue } from './dead-letter.ts';
import { aMessage } from './records.test-support.ts';

const AT = new Date('2026-04-02T12:00:00.000Z');
const source = { topic: 'raw.exchange-a', partition: 2, offset: '41' };

describe('dead letters', () => {
  it('carry the venue, the reason, the frame and where the message came from; keyed by that place', () => {
    const text = encodeRawMessages([aMessage(1)]);
    const m = deadLetterMessage({ venue: 'exchange-a', reason: 'bad event', frame: { text, encoding: 'utf8' }, source }, AT);
    expect(m.key).toBe('raw.exchange-a/2/41');
    expect(JSON.parse(m.value)).toEqual({ venue: 'exchange-a', received_at: AT.toISOString(), reason: 'bad event', frame: text, source });
  });

  it('keep a binary value in base64 and say so; it decodes to the same records', () => {
    const value = Buffer.from(encodeRawValue([aMessage(1), aMessage(2)]));
    const letter = JSON.parse(deadLetterMessage({ venue: 'exchange-a', reason: 'r', frame: frameOfValue(value), source }, AT).value) as { frame: string; frame_encoding?: string };
    expect(letter.frame_encoding).toBe('base64');
    const back = decodeRawMessages('exchange-a', Buffer.from(letter.frame, 'base64'));
    expect(back.ok && back.messages).toEqual([aMessage(1), aMessage(2)]);
    // A JSON value stays text, without the field.
    expect(frameOfValue(Buffer.from('[1]'))).toEqual({ text: '[1]', encoding: 'utf8' });
  });

  it('keep the head of a frame too large to send again, and say so in the reason; a message without value has no frame', () => {
    const big = 'x'.repeat(DEAD_LETTER_FRAME_CHARS + 10);
    const letter = JSON.parse(deadLetterMessage({ venue: null, reason: 'too big', frame: { text: big, encoding: 'utf8' }, source }, AT).value) as { frame: string; reason: string };
    expect(letter.frame).toHaveLength(DEAD_LETTER_FRAME_CHARS);
    expect(letter.reason).toBe(`too big; frame truncated to its first ${DEAD_LETTER_FRAME_CHARS} of ${big.length} characters`);
    expect(JSON.parse(deadLetterMessage({ venue: null, reason: 'empty message value', frame: frameOfValue(null), source }, AT).value)).toMatchObject({ frame: null });
  });
});
