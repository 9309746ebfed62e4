import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { byteRange } from './daily-files.ts';

/** The bytes a range names, as a plain reference: the RFC's rules read off a list of offsets. */
function reference(header: string, size: number): number[] | null | 'unsatisfiable' {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const all = Array.from({ length: size }, (_, i) => i);
  if (m[1] === '') return Number(m[2]) === 0 || size === 0 ? 'unsatisfiable' : all.slice(-Number(m[2]));
  const first = Number(m[1]);
  if (m[2] !== '' && Number(m[2]) < first) return null;
  if (first >= size) return 'unsatisfiable';
  return all.filter((i) => i >= first && (m[2] === '' || i <= Number(m[2])));
}

describe('byteRange', () => {
  it('names exactly the bytes RFC 9110 says, for every single range of any file', () => {
    const header = fc.oneof(
      fc.tuple(fc.nat(300), fc.nat(300)).map(([a, b]) => `bytes=${a}-${b}`),
      fc.nat(300).map((a) => `bytes=${a}-`),
      fc.nat(300).map((n) => `bytes=-${n}`),
      fc.constantFrom('bytes=-', 'items=0-1', 'bytes=0-1,4-5', 'bytes=x-1'),
    );
    fc.assert(
      fc.property(header, fc.nat(200), (h, size) => {
        const r = byteRange(h, size);
        const want = reference(h, size);
        if (r === null || r === 'unsatisfiable') expect(r).toEqual(want);
        else expect(Array.from({ length: r.end - r.start + 1 }, (_, i) => r.start + i)).toEqual(want);
      }),
    );
    expect(byteRange(undefined, 10)).toBeNull();
  });
});
