import { z } from 'zod';
import { MAX_EVENT_DATE, MAX_EVENT_MS, normaliseConditionId, normaliseTicker } from '@booktape/domain';
import { SECONDS_THRESHOLD, TIME_FORMS, parseTime, type TimeEdge } from './time.ts';

export { SECONDS_THRESHOLD } from './time.ts';

/**
 * Request parameters: pure rules, used by the routes' zod schemas and tested by properties.
 * Query values arrive as strings (or arrays when a name is repeated: refused). Every
 * failure names what is wrong; the error handler adds the parameter's name.
 */

export const LIMITS = {
  rawLimitDefault: 10_000,
  rawLimitMax: 100_000,
  listLimitDefault: 100,
  listLimitMax: 1_000,
  /** Deeper than this, use the range endpoint (keyset paging) instead of offsets. */
  offsetMax: 1_000_000_000,
  /** Longest accepted id / prefix / name, so nothing unbounded reaches a query. */
  idMaxLength: 128,
} as const;

/**
 * The last date and instant the store can hold (ClickHouse `Date` ends on 2149-06-06);
 * later values would wrap around inside the engine, so they are refused here.
 */
export const MAX_DATE = MAX_EVENT_DATE;
export const MAX_TIMESTAMP_MS = MAX_EVENT_MS;

/** Dates as YYYY-MM-DD that exist on the calendar. */
export function isCalendarDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

export function show(v: string, max = 40): string {
  return JSON.stringify(v.length > max ? `${v.slice(0, max)}…` : v);
}

/** Unix seconds or milliseconds → milliseconds (a value below 10^11 is seconds). */
export function toMilliseconds(value: number): number {
  return value < SECONDS_THRESHOLD ? value * 1000 : value;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

export function parseConditionId(raw: string): Parsed<string> {
  if (raw.trim() === '') return { ok: false, message: 'must not be empty' };
  if (raw.length > LIMITS.idMaxLength + 2) return { ok: false, message: `must be at most ${LIMITS.idMaxLength} hex digits` };
  const id = normaliseConditionId(raw);
  return id ? { ok: true, value: id } : { ok: false, message: `must be a hex condition id (0x optional), got ${show(raw)}` };
}

export function parseTicker(raw: string): Parsed<string> {
  if (raw.trim() === '') return { ok: false, message: 'must not be empty' };
  if (raw.length > LIMITS.idMaxLength) return { ok: false, message: `must be at most ${LIMITS.idMaxLength} characters` };
  const t = normaliseTicker(raw);
  return t ? { ok: true, value: t } : { ok: false, message: `must be a ticker of A-Z, 0-9, '.', '_' and '-', got ${show(raw)}` };
}

/** A condition id prefix: hex digits, 0x optional, any case → `0x` + lower case. */
export function parseConditionIdPrefix(raw: string): Parsed<string> {
  const s = raw.trim().toLowerCase();
  if (s.length > LIMITS.idMaxLength + 2) return { ok: false, message: `must be at most ${LIMITS.idMaxLength} hex digits` };
  const hex = s.startsWith('0x') ? s.slice(2) : s;
  return /^[0-9a-f]*$/.test(hex) ? { ok: true, value: `0x${hex}` } : { ok: false, message: `must be hex digits (0x optional), got ${show(raw)}` };
}

/** A ticker prefix: upper-cased, ticker characters only (may be empty). */
export function parseTickerPrefix(raw: string): Parsed<string> {
  const s = raw.trim().toUpperCase();
  if (s.length > LIMITS.idMaxLength) return { ok: false, message: `must be at most ${LIMITS.idMaxLength} characters` };
  return /^[A-Z0-9._-]*$/.test(s) ? { ok: true, value: s } : { ok: false, message: `must be ticker characters A-Z, 0-9, '.', '_' and '-', got ${show(raw)}` };
}

export function parseDate(raw: string): Parsed<string> {
  if (!isCalendarDate(raw)) return { ok: false, message: `must be a UTC date YYYY-MM-DD, got ${show(raw)}` };
  if (raw < '1970-01-01' || raw > MAX_DATE) return { ok: false, message: `must be a date from 1970-01-01 to ${MAX_DATE}` };
  return { ok: true, value: raw };
}

export function parseInteger(raw: string, min: number, max: number): Parsed<number> {
  if (!/^\d{1,16}$/.test(raw)) return { ok: false, message: `must be an integer from ${min} to ${max}, got ${show(raw)}` };
  const n = Number(raw);
  if (n < min) return { ok: false, message: `must be at least ${min}` };
  if (n > max) return { ok: false, message: `must be at most ${max}` };
  return { ok: true, value: n };
}

/**
 * A time parameter → milliseconds, by the API's one time model (http/time.ts, docs/api.md
 * "Time"): Unix seconds or ms, ISO 8601 with a zone, or a UTC date; an inclusive `end`
 * covers the whole unit given (a second given in seconds ends at its .999).
 */
export function parseTimestamp(edge: TimeEdge): (raw: string) => Parsed<number> {
  return (raw) => parseTime(raw, edge);
}

/** Start of the earliest accepted UTC date, in ms. */
export function earliestMs(earliestDate: string): number {
  return Date.parse(`${earliestDate}T00:00:00Z`);
}

/** Text that names something: trimmed, not empty, at most `max` characters, no control characters. */
export function parseText(max: number): (raw: string) => Parsed<string> {
  return (r) => {
    const s = r.trim();
    if (s === '') return { ok: false, message: 'must not be empty' };
    if (s.length > max) return { ok: false, message: `must be at most ${max} characters` };
    // Control characters have no place in a label or an id and would confuse logs.
    if (/[\u0000-\u001f\u007f]/.test(s)) return { ok: false, message: 'must not contain control characters' };
    return { ok: true, value: s };
  };
}

/** One of `values`, any case, surrounding spaces ignored. */
export function parseOneOf<T extends string>(values: readonly T[]): (raw: string) => Parsed<T> {
  return (r) => {
    const v = r.trim().toLowerCase();
    return (values as readonly string[]).includes(v) ? { ok: true, value: v as T } : { ok: false, message: `must be one of ${values.join(', ')}` };
  };
}

/**
 * A comma-separated list of `values` (any case, spaces around items ignored, a repeat kept
 * once), at least one: `include=source`. An empty item or an unknown value is refused, so a
 * misspelt request never silently answers without what it asked for.
 */
export function parseList<T extends string>(values: readonly T[]): (raw: string) => Parsed<T[]> {
  return (r) => {
    const items = r.split(',').map((i) => i.trim().toLowerCase());
    const unknown = items.find((i) => !(values as readonly string[]).includes(i));
    if (unknown !== undefined) {
      return { ok: false, message: `${unknown === '' ? 'has an empty item' : `knows no ${JSON.stringify(unknown.slice(0, 40))}`}: must be a comma-separated list of ${values.join(', ')}` };
    }
    return { ok: true, value: [...new Set(items)] as T[] };
  };
}

/**
 * A pure parser as a zod query field. A repeated name arrives as an array and is refused;
 * a missing one gets the message MISSING, so the error handler can answer
 * `missing_parameter` rather than `invalid_parameter`.
 */
export const MISSING = 'is required';
function parsed<T>(parse: (raw: string) => Parsed<T>) {
  return z
    .string({ error: (iss) => (iss.input === undefined ? MISSING : 'must be given once, as a string') })
    .transform((v, ctx): T => {
      const r = parse(v);
      if (!r.ok) {
        ctx.addIssue({ code: 'custom', message: r.message });
        return z.NEVER;
      }
      return r.value;
    });
}

/** OpenAPI hints: a query value is text on the wire, but documents what it must hold. */
type Doc = { description: string; example?: string | number; type?: 'integer'; minimum?: number; maximum?: number; enum?: string[]; anyOf?: readonly unknown[] };

/** A time parameter in the document: Unix seconds or ms as an integer, or ISO 8601 / a date as text. */
export const TIME_SCHEMA = {
  // No type of its own (the wire's string would override the integer alternative).
  type: undefined,
  anyOf: [
    { type: 'integer', minimum: 0, maximum: MAX_EVENT_MS },
    { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}([Tt]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?([Zz]|[+-]\\d{2}:\\d{2}))?$' },
  ],
} as const;

const EDGE_WORDS: Record<TimeEdge, string> = {
  start: 'inclusive, from the first millisecond of the unit given',
  end: 'inclusive, to the last millisecond of the unit given (1772409599 in seconds includes 23:59:59.999)',
  instant: 'the first millisecond of the unit given',
};

/** The OpenAPI description of a time parameter. */
export function timeDescription(what: string, edge: TimeEdge): string {
  return `${what}, ${EDGE_WORDS[edge]}. ${TIME_FORMS}. See docs/api.md, "Time".`;
}

/** A required query field read by a pure parser, documented for OpenAPI. */
export function requiredField<T>(parse: (raw: string) => Parsed<T>, description: string, example?: string | number, extra: Omit<Doc, 'description' | 'example'> = {}) {
  return parsed(parse).meta({ description, ...(example === undefined ? {} : { example }), ...extra });
}

function optional<T>(parse: (raw: string) => Parsed<T>, description: string, def: T, extra: Omit<Doc, 'description'> = {}) {
  return parsed(parse)
    .optional()
    .transform((v) => (v === undefined ? def : v))
    .meta({ description, ...extra });
}

/** An optional query field read by a pure parser: undefined when absent. */
export function optionalField<T>(parse: (raw: string) => Parsed<T>, description: string, extra: Omit<Doc, 'description'> = {}) {
  return parsed(parse).optional().meta({ description, ...extra });
}

export const q = {
  conditionId: () => requiredField(parseConditionId, 'Market condition id, hex, with or without 0x, any case.', '0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1'),
  ticker: () => requiredField(parseTicker, 'Market ticker (upper-cased).', 'KXBTCD-26MAR0117-T84999.99'),
  date: () => requiredField(parseDate, 'UTC date YYYY-MM-DD.', '2026-03-01'),
  /** A time parameter (docs/api.md, "Time"); `edge` says which millisecond of the unit given it means. */
  timestamp: (what: string, edge: TimeEdge) => requiredField(parseTimestamp(edge), timeDescription(what, edge), 1772323200000, TIME_SCHEMA),
  offset: () => optional((r) => parseInteger(r, 0, LIMITS.offsetMax), 'Records to skip. Default 0.', 0, { type: 'integer', minimum: 0, maximum: LIMITS.offsetMax }),
  rawLimit: () =>
    optional((r) => parseInteger(r, 1, LIMITS.rawLimitMax), `Records per page, 1 to ${LIMITS.rawLimitMax}. Default ${LIMITS.rawLimitDefault}.`, LIMITS.rawLimitDefault as number, {
      type: 'integer',
      minimum: 1,
      maximum: LIMITS.rawLimitMax,
    }),
  listLimit: () =>
    optional((r) => parseInteger(r, 1, LIMITS.listLimitMax), `Markets per page, 1 to ${LIMITS.listLimitMax}. Default ${LIMITS.listLimitDefault}.`, LIMITS.listLimitDefault as number, {
      type: 'integer',
      minimum: 1,
      maximum: LIMITS.listLimitMax,
    }),
  conditionIdPrefix: () => optionalField(parseConditionIdPrefix, 'Condition id prefix, hex, with or without 0x.'),
  tickerPrefix: () => optionalField(parseTickerPrefix, 'Ticker prefix (upper-cased).'),
  cursor: () =>
    optionalField((r) => (r.length > 0 && r.length <= 2048 ? { ok: true, value: r } : { ok: false, message: 'must be the next_cursor of the previous page' }), 'The next_cursor of the previous page, unchanged.'),
  text: (description: string, max: number) => requiredField(parseText(max), description),
  optionalText: (description: string, max: number) => optionalField(parseText(max), description),
  /** An optional comma-separated list of `values` (parseList). */
  list: <T extends string>(values: readonly T[], description: string) => optionalField(parseList(values), description, { example: values.join(',') }),
  /** An optional choice among `values` (the first is the default the description names). */
  oneOf: <T extends string>(values: readonly T[], description: string) => optionalField(parseOneOf(values), description, { enum: [...values] }),
};
