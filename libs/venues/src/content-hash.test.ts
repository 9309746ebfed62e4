import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha1Hex } from './content-hash.ts';

describe('sha1Hex', () => {
  // Stored dedup ids were made with a Hash object; the one-shot digest must give the same
  // id for every text, lone surrogates included (both encode them as U+FFFD in UTF-8).
  it('equals the Hash object digest of the UTF-8 text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(sha1Hex(text)).toBe(createHash('sha1').update(text, 'utf8').digest('hex'));
      }),
      { numRuns: 2000 },
    );
    expect(sha1Hex('\ud800x')).toBe(createHash('sha1').update('\ud800x', 'utf8').digest('hex'));
  });
});
