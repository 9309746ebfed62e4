/** Walking paged answers: offset pages, cursor pages, and `Link` headers. */

export interface OffsetPagination {
  offset: number;
  limit: number;
  total_count: number;
  has_more: boolean;
}
export interface CursorPagination {
  limit: number;
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * Every item of offset pages, from `start`: the next page starts where this one's items
 * end. (The API remembers where a page ended, so the next one costs no more than the first.)
 */
export async function* walkOffsets<P, T>(start: number, page: (offset: number) => Promise<P>, items: (p: P) => T[], pagination: (p: P) => OffsetPagination): AsyncGenerator<T, void, undefined> {
  let offset = start;
  for (;;) {
    const p = await page(offset);
    const got = items(p);
    yield* got;
    if (!pagination(p).has_more || got.length === 0) return;
    offset += got.length;
  }
}

/** Every item of cursor pages: each page's `next_cursor`, unchanged, asks for the next. */
export async function* walkCursors<P, T>(first: string | undefined, page: (cursor: string | undefined) => Promise<P>, items: (p: P) => T[], pagination: (p: P) => CursorPagination): AsyncGenerator<T, void, undefined> {
  let cursor = first;
  for (;;) {
    const p = await page(cursor);
    yield* items(p);
    const { has_more, next_cursor } = pagination(p);
    if (!has_more || next_cursor === null) return;
    cursor = next_cursor;
  }
}

/** The target of `rel="next"` in a Link header (RFC 8288), or undefined. */
export function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (m && /;\s*rel\s*=\s*"?(?:[^";]*\s)?next(?:\s[^";]*)?"?\s*(?:;|$)/i.test(m[2] ?? '')) return m[1];
  }
  return undefined;
}
