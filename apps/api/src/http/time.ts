import { MAX_EVENT_MS } from '@booktape/domain';

/**
 * The one time model of the API (docs/api.md, "Time"): every time parameter, on every route,
 * is read here. Pure.
 *
 * Accepted forms:
 * - Unix time, a non-negative whole number: **below 10^11 it is seconds**, from 10^11 on
 *   milliseconds (10^11 s is the year 5138; 10^11 ms is 1973-03-03, before any data).
 * - ISO 8601 date-time **with a zone**: `2026-03-01T12:00:00Z`, `…T12:00:00.250+02:00`,
 *   `…T12:00Z`. A time without a zone is refused: it would depend on where it was written.
 *   Fractions beyond milliseconds are cut (the data is in milliseconds).
 * - A UTC date `YYYY-MM-DD`: that day.
 *
 * What a value covers is its whole unit: `1772409599` is the second 23:59:59.000–.999,
 * `2026-03-01T12:00Z` the minute, `2026-03-01` the day, a millisecond value or an ISO time
 * with milliseconds exactly that millisecond. As a START a value means the first
 * millisecond it covers, as an inclusive END the last (so `end_timestamp=1772409599`
 * includes 23:59:59.999), as an INSTANT (the book at a time, an outage's bounds) the first.
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** How a bound is read: the first millisecond it covers (start, instant) or the last (inclusive end). */
export type TimeEdge = 'start' | 'end' | 'instant';

/** Unix seconds below this, milliseconds from it. */
export const SECONDS_THRESHOLD = 1e11;
export const MAX_TIME_MS = MAX_EVENT_MS;

const DAY_MS = 86_400_000;
const UNIX = /^\d{1,16}$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:\d{2})?$/;

export const TIME_FORMS = 'an ISO 8601 time with a zone (2026-03-01T12:00:00Z), Unix seconds or milliseconds (below 10^11 = seconds), or a UTC date YYYY-MM-DD';

const showRaw = (raw: unknown): string => {
  if (typeof raw !== 'string') return JSON.stringify(raw) ?? 'nothing';
  return JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw);
};

const realDate = (y: number, m: number, d: number): boolean => {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
};

/** A time value → milliseconds since the epoch, read as `edge` says. */
export function parseTime(raw: unknown, edge: TimeEdge): Parsed<number> {
  const bad = (why = `must be ${TIME_FORMS}`): Parsed<number> => ({ ok: false, message: `${why}, got ${showRaw(raw)}` });
  let first: number;
  let span: number; // milliseconds the value covers
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0) return bad('must be a non-negative whole number of seconds or milliseconds');
    [first, span] = raw < SECONDS_THRESHOLD ? [raw * 1000, 1000] : [raw, 1];
  } else if (typeof raw !== 'string') {
    return bad();
  } else {
    const s = raw.trim();
    let m: RegExpExecArray | null;
    if (UNIX.test(s)) {
      const n = Number(s);
      [first, span] = n < SECONDS_THRESHOLD ? [n * 1000, 1000] : [n, 1];
    } else if ((m = DATE.exec(s))) {
      const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
      if (!realDate(y, mo, d)) return bad('must be a real calendar date');
      [first, span] = [Date.UTC(y, mo - 1, d), DAY_MS];
    } else if ((m = DATE_TIME.exec(s))) {
      const [y, mo, d, h, mi] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
      const sec = m[6] === undefined ? 0 : Number(m[6]);
      const frac = m[7] ?? '';
      if (m[8] === undefined) return bad('needs a zone (Z or ±hh:mm): a time without one means a different instant in every place');
      if (!realDate(y, mo, d) || h > 23 || mi > 59 || sec > 59) return bad('must be a valid date and time');
      let offset = 0;
      if (m[8].toUpperCase() !== 'Z') {
        const [oh, om] = [Number(m[8].slice(1, 3)), Number(m[8].slice(4, 6))];
        if (oh > 23 || om > 59) return bad('must have a zone offset from -23:59 to +23:59');
        offset = (m[8][0] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
      }
      const ms = Number(frac.padEnd(3, '0').slice(0, 3));
      first = Date.UTC(y, mo - 1, d, h, mi, sec, ms) - offset;
      span = m[6] === undefined ? 60_000 : frac.length === 0 ? 1000 : frac.length >= 3 ? 1 : 10 ** (3 - frac.length);
    } else {
      return bad();
    }
  }
  const value = edge === 'end' ? first + span - 1 : first;
  if (first < 0 || value > MAX_TIME_MS) return { ok: false, message: `must lie between 1970-01-01 and 2149-06-06T23:59:59.999Z, got ${showRaw(raw)}` };
  return { ok: true, value };
}

/** The UTC date (YYYY-MM-DD) of an instant. */
export function utcDateOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * "An inclusive end covers the whole second it names", where a route has to reason about an
 * end it was given rather than just read one. An end in seconds reaches the second's .999,
 * so an end is this many milliseconds past the instant the caller wrote.
 */
export const END_OF_SECOND_MS = 999;

/**
 * Whether the inclusive window [startMs, endMs] lasts at most `maxMs` as the caller wrote
 * it: an end read to its second's last millisecond counts as the second it names, so a day
 * given in seconds (00:00:00 to the next 00:00:00) is one day, and one second more is not.
 */
export function spansAtMost(startMs: number, endMs: number, maxMs: number): boolean {
  return endMs - startMs <= maxMs + END_OF_SECOND_MS;
}

/**
 * Whether an inclusive end recorded earlier (in a cursor) is the end of the query now
 * given: the same millisecond, or the first millisecond of the second `endMs` closes. Before
 * this time model an end in seconds stopped at the second's .000; it now ends at .999, so
 * what was recorded under the old reading still names the same end (and the new, later end
 * is a superset of the old range: a walk continued under it repeats and skips nothing).
 */
export function sameInclusiveEnd(recordedMs: number, endMs: number): boolean {
  return recordedMs === endMs || (endMs % 1000 === END_OF_SECOND_MS && recordedMs === endMs - END_OF_SECOND_MS);
}
