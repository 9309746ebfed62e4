/**
 * CSV fields and rows (RFC 4180), the one writer of every CSV the project makes: the API's
 * CSV pages, exports and daily files, and the CLI's `--format csv`. (The published SDK,
 * which depends on nothing, keeps its own copy in libs/sdk/src/helpers.ts; the same property
 * test checks both.)
 *
 * A field is quoted when it holds a quote, a comma, a CR or an LF, its quotes doubled;
 * anything else is written as it is. Rows end with `\n`.
 */

/** Characters that make a field need quotes. */
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One field: null and undefined are empty, a string is itself, an object or array its JSON
 * text, anything else `String(v)`; quoted when it must be.
 */
export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return NEEDS_QUOTES.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One row of fields, `\n`-terminated. */
export function csvRow(fields: readonly unknown[]): string {
  return `${fields.map(csvField).join(',')}\n`;
}
