import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { storeBisecting } from './bisect.ts';
import type { InsertOutcome } from './insert-retry.ts';

/** A table that refuses any insert holding a bad item, as the engine refuses a whole insert for one bad row. */
function table(bad: (x: number) => boolean) {
  const stored: number[] = [];
  const parts: string[] = [];
  const attempt = async (items: number[], part: string): Promise<InsertOutcome> => {
    parts.push(part);
    if (items.some(bad)) return { kind: 'refused', refusal: 'CANNOT_PARSE_NUMBER', message: `bad value in ${items.length} rows` };
    stored.push(...items);
    return { kind: 'stored' };
  };
  return { stored, parts, attempt };
}

describe('storeBisecting', () => {
  it('stores exactly the good items, once each and in order, and returns exactly the bad ones', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { maxLength: 200 }), async (flags) => {
        const items = flags.map((_, i) => i);
        const isBad = (x: number) => flags[x]!;
        const t = table(isBad);
        const refused = await storeBisecting(items, t.attempt);
        expect(refused!.map((r) => r.item)).toEqual(items.filter(isBad));
        expect(t.stored).toEqual(items.filter((x) => !isBad(x)));
        for (const r of refused!) expect(r.reason).toMatch(/^clickhouse refused the record \(CANNOT_PARSE_NUMBER\): bad value in 1 rows$/);
        // A bisection: at most about 2·log2(n) attempts per bad item, one when none is bad.
        const bad = refused!.length;
        if (bad === 0) expect(t.parts).toEqual(items.length === 0 ? [] : ['']);
        else expect(t.parts.length).toBeLessThanOrEqual(1 + bad * 2 * Math.ceil(Math.log2(items.length) + 1));
      }),
    );
  });

  it('names each part by its range, the same on every run (the deduplication token of a re-delivery)', async () => {
    const run = async () => {
      const t = table((x) => x === 5);
      await storeBisecting([0, 1, 2, 3, 4, 5, 6], t.attempt);
      return t.parts;
    };
    const first = await run();
    expect(first).toEqual(['', '#0-3', '#4-6', '#4-5', '#4-4', '#5-5', '#6-6']);
    expect(await run()).toEqual(first);
  });

  it('gives up (null) as soon as an attempt is abandoned, and tries nothing after it', async () => {
    const seen: string[] = [];
    const out = await storeBisecting([1, -1, 2, 3], async (items, part) => {
      seen.push(part);
      if (part === '#0-1') return { kind: 'abandoned' };
      return items.includes(-1) ? { kind: 'refused', refusal: 'X', message: 'm' } : { kind: 'stored' };
    });
    expect(out).toBeNull();
    expect(seen).toEqual(['', '#0-1']);
  });

  it('tells onSplit once, when the whole batch is first refused', async () => {
    const splits: string[] = [];
    await storeBisecting([1, -1, -2, 3], table((x) => x < 0).attempt, (r) => splits.push(r));
    expect(splits).toEqual(['CANNOT_PARSE_NUMBER']);
  });
});
