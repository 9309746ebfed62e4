import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { batchToken, nextOffset } from './offsets.ts';

describe('offsets', () => {
  it('commits the offset after the last one, exactly, over the whole 64-bit range', () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 2n ** 63n - 2n }), (last) => void expect(nextOffset(last.toString())).toBe((last + 1n).toString())));
    expect(nextOffset('9007199254740992')).toBe('9007199254740993'); // past 2^53, where a Number would round
  });

  it('names a batch by topic, partition and its offset range', () => {
    expect(batchToken('raw.exchange-a', 3, '10', '42')).toBe('raw.exchange-a/3/10-42');
  });
});
