import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { etagOf, isFinalised, matchingTag } from './caching.ts';

describe('caching rules', () => {
  it('a day is finalised exactly `after` ms past its end, for any instant in it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 86_399_999 }), fc.integer({ min: 0, max: 7_200_000 }), (day, inDay, after) => {
        const end = (day + 1) * 86_400_000;
        const at = day * 86_400_000 + inDay;
        expect(isFinalised(at, end + after - 1, after)).toBe(false);
        expect(isFinalised(at, end + after, after)).toBe(true);
      }),
    );
  });

  it('If-None-Match: weak comparison, content codings ignored, lists and * understood', () => {
    const tag = etagOf('x', 1);
    const base = tag.slice(1, -1);
    expect(matchingTag(undefined, tag)).toBeNull();
    expect(matchingTag(tag, tag)).toBe(tag);
    expect(matchingTag(`W/${tag}`, tag)).toBe(`W/${tag}`);
    expect(matchingTag(`"other", "${base}-br"`, tag)).toBe(`"${base}-br"`);
    expect(matchingTag('*', tag)).toBe(tag);
    expect(matchingTag(`"${base}-lzma"`, tag)).toBeNull();
    expect(matchingTag(`"${base.slice(1)}"`, tag)).toBeNull();
    expect(matchingTag('garbage, "', tag)).toBeNull();
  });

  it('tags differ whenever a part does, including where parts meet', () => {
    expect(etagOf('ab', 'c')).not.toBe(etagOf('a', 'bc'));
    expect(etagOf('a', 1)).not.toBe(etagOf('a', 2));
    expect(etagOf(Buffer.from('x'))).toBe(etagOf('x'));
  });
});
