import { describe, expect, it } from 'vitest';
import { nextLink, walkCursors, walkOffsets } from './pages.ts';

describe('nextLink', () => {
  it('finds rel="next" as the API writes it, and in a list of links', () => {
    expect(nextLink('</api/v1/exchange-a/market/data?condition_id=0x1&date=2026-03-01&offset=10&limit=10>; rel="next"')).toBe('/api/v1/exchange-a/market/data?condition_id=0x1&date=2026-03-01&offset=10&limit=10');
    expect(nextLink('</a?x=1>; rel="prev", </b?y=2>; rel=next')).toBe('/b?y=2');
    expect(nextLink('</c>; rel="last next"')).toBe('/c');
  });

  it('is undefined without a next link', () => {
    expect(nextLink(null)).toBeUndefined();
    expect(nextLink('</a>; rel="prev"')).toBeUndefined();
    expect(nextLink('</a>; rel="nextish"')).toBeUndefined();
  });
});

describe('walks', () => {
  const items = Array.from({ length: 23 }, (_, i) => i);

  it('offset pages: every item once, the next offset where the items ended', async () => {
    const asked: number[] = [];
    const page = async (offset: number) => {
      asked.push(offset);
      const data = items.slice(offset, offset + 10);
      return { data, pagination: { offset, limit: 10, total_count: items.length, has_more: offset + data.length < items.length } };
    };
    const got: number[] = [];
    for await (const x of walkOffsets(0, page, (p) => p.data, (p) => p.pagination)) got.push(x);
    expect(got).toEqual(items);
    expect(asked).toEqual([0, 10, 20]);
  });

  it('cursor pages: stops on has_more false or a null cursor', async () => {
    const page = async (cursor: string | undefined) => {
      const at = cursor ? Number(cursor) : 0;
      const data = items.slice(at, at + 7);
      const more = at + 7 < items.length;
      return { data, pagination: { limit: 7, has_more: more, next_cursor: more ? String(at + 7) : null } };
    };
    const got: number[] = [];
    for await (const x of walkCursors(undefined, page, (p) => p.data, (p) => p.pagination)) got.push(x);
    expect(got).toEqual(items);
  });
});
