/** Identifier normalisation shared by capture, storage and the API. */

const CONDITION_ID = /^(0x)?[0-9a-f]{1,128}$/i;
const TICKER = /^[A-Z0-9][A-Z0-9._-]{0,127}$/;

/** Condition ids are answered lower-case with `0x`; returns null when malformed. */
export function normaliseConditionId(raw: string): string | null {
  const s = raw.trim();
  if (!CONDITION_ID.test(s)) return null;
  const hex = s.toLowerCase().replace(/^0x/, '');
  return `0x${hex}`;
}

/** Tickers are answered upper-case; returns null when malformed. */
export function normaliseTicker(raw: string): string | null {
  const s = raw.trim().toUpperCase();
  return TICKER.test(s) ? s : null;
}

/** ISO 8601 UTC with milliseconds, the one format every stored time uses. */
export function isoMs(ms: number): string {
  return new Date(ms).toISOString();
}

/** The UTC date (YYYY-MM-DD) of a Unix-milliseconds instant: the date partition of a record. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
