/** Identifier normalisation shared by capture, storage and the API. */

const CONDITION_ID = /^(0x)?[0-9a-f]{1,128}$/i;
const TICKER = /^[A-Z0-9][A-Z0-9._-]{0,127}$/;

/**
 * Condition ids met, as given → normalised: every exchange A event names its market, and a
 * capture has a few hundred. Bounded: it starts over when full.
 */
const conditionIds = new Map<string, string | null>();
const CONDITION_IDS_KEPT = 10_000;
const CONDITION_ID_MAX_TEXT = 140;

/** Condition ids are answered lower-case with `0x`; returns null when malformed. */
export function normaliseConditionId(raw: string): string | null {
  const known = conditionIds.get(raw);
  if (known !== undefined) return known;
  const s = raw.trim();
  const id = CONDITION_ID.test(s) ? `0x${s.toLowerCase().replace(/^0x/, '')}` : null;
  // Only what could be an id is kept: the API passes user text here too.
  if (raw.length <= CONDITION_ID_MAX_TEXT) {
    if (conditionIds.size >= CONDITION_IDS_KEPT) conditionIds.clear();
    conditionIds.set(raw, id);
  }
  return id;
}

/**
 * Tickers met, as given → normalised, as conditionIds: every exchange B message names its
 * market, and trimming, upper-casing and testing the text again cost a replay about half a
 * CPU second per million frames.
 */
const tickers = new Map<string, string | null>();
const TICKERS_KEPT = 10_000;
const TICKER_MAX_TEXT = 140;

/** Tickers are answered upper-case; returns null when malformed. */
export function normaliseTicker(raw: string): string | null {
  const known = tickers.get(raw);
  if (known !== undefined) return known;
  const s = raw.trim().toUpperCase();
  const ticker = TICKER.test(s) ? s : null;
  if (raw.length <= TICKER_MAX_TEXT) {
    if (tickers.size >= TICKERS_KEPT) tickers.clear();
    tickers.set(raw, ticker);
  }
  return ticker;
}

let lastIsoMs = Number.NaN;
let lastIso = '';
/** The minute of the last time written by toISOString: its start (ms) and "YYYY-MM-DDTHH:MM:". */
let minuteStart = Number.NaN;
let minutePrefix = '';
/** The last instant a Date holds (its first, negated, starts a minute too). */
const MAX_DATE_MS = 8.64e15;

/** ISO 8601 UTC with milliseconds, the one format every stored time uses. */
export function isoMs(ms: number): string {
  // Capture asks for a frame's receive time several times (normaliser, lineage), and
  // consecutive frames mostly share their millisecond, else their minute: the last answer
  // is remembered, and a time of the same minute is its seconds written after that minute's.
  if (ms === lastIsoMs) return lastIso;
  const inMinute = ms - minuteStart;
  if (inMinute >= 0 && inMinute < 60_000 && Number.isInteger(ms) && ms <= MAX_DATE_MS) {
    const sec = Math.floor(inMinute / 1000);
    const milli = inMinute - sec * 1000;
    lastIso = `${minutePrefix}${sec < 10 ? '0' : ''}${sec}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
  } else {
    lastIso = new Date(ms).toISOString();
    if (Number.isInteger(ms)) {
      minuteStart = ms - (((ms % 60_000) + 60_000) % 60_000);
      minutePrefix = lastIso.slice(0, -7); // less "SS.mmmZ"
    }
  }
  lastIsoMs = ms;
  return lastIso;
}

/**
 * The last date and instant the store can hold: ClickHouse `Date` (the raw tables' date
 * partition) ends on 2149-06-06, and a later value would wrap around inside the engine and
 * be stored under a wrong date. Later event times are refused (dead-lettered) with a reason.
 */
export const MAX_EVENT_DATE = '2149-06-06';
export const MAX_EVENT_MS = Date.UTC(2149, 5, 6, 23, 59, 59, 999);

/**
 * The latest receive time the ingest sequence can number (received_ms · 2^23 must fit a
 * UInt64: before 2^41 ms, 2039-09-07T15:47:35.551Z). See libs/venues/src/sequencer.ts.
 */
export const MAX_RECEIVED_MS = 2 ** 41 - 1;

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * "YYYY-MM-DDTHH:MM:" of the last good time spelled as capture spells it (toISOString), when
 * a minute from the range's end: a time of the same minute, spelled so, is good too. Every
 * line of a capture file is checked, and its times are nearly all of the last minute's.
 */
let goodMinute: string | undefined;
const CAPTURE_SPELLING = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:[0-5]\d\.\d{3}Z$/;
const SAME_MINUTE_TAIL = /^.{17}[0-5]\d\.\d{3}Z$/;

function inGoodMinute(v: string): boolean {
  return v.length === 24 && goodMinute !== undefined && v.startsWith(goodMinute) && SAME_MINUTE_TAIL.test(v);
}

/**
 * Why `v` (named `field` in the message) is not a receive time capture could have stamped,
 * or null when it is one: ISO 8601 with a zone, 1970..MAX_RECEIVED_MS. What comes from a
 * capture file or Kafka is checked with it: a later time cannot be numbered, and the engine
 * would store a time outside its DateTime64 range as another one, without a word.
 */
export function receiveTimeError(field: string, v: unknown): string | null {
  if (typeof v === 'string' && inGoodMinute(v)) return null;
  if (typeof v !== 'string' || !ISO_8601.test(v) || !Number.isFinite(Date.parse(v))) return `${field} is not an ISO 8601 time: ${JSON.stringify(v ?? null)}`;
  const ms = Date.parse(v);
  if (ms < 0 || ms > MAX_RECEIVED_MS) return `${field} ${v} is outside 1970..${isoMs(MAX_RECEIVED_MS)}, the receive times the ingest sequence numbers`;
  if (CAPTURE_SPELLING.test(v) && ms < MAX_RECEIVED_MS - 60_000) goodMinute = v.slice(0, 17);
  return null;
}

/**
 * The UTC date (YYYY-MM-DD) of a Unix-milliseconds instant: the date partition of a record.
 * The sink asks it for every stored record, mostly of one day: the last day's text is kept
 * (for instants from 1970 on, where Date's truncation is the floor the day bounds assume).
 */
let utcDayStart = Number.NaN;
let utcDayText = '';
export function utcDate(ms: number): string {
  if (ms >= utcDayStart && ms < utcDayStart + 86_400_000) return utcDayText;
  const text = new Date(ms).toISOString().slice(0, 10);
  const start = Math.floor(ms / 86_400_000) * 86_400_000;
  if (ms >= 0 && start + 86_400_000 <= 8.64e15) {
    utcDayStart = start;
    utcDayText = text;
  }
  return text;
}

/**
 * A full exchange A condition id, normalised (`0x` + 64 lower-case hex digits, the 32-byte
 * hash the venue uses), or null. The API accepts any hex length so that stored data under
 * any id stays reachable; a command that acts on a market (a back-fill) or names one a user
 * typed wants the real thing, and its error text says so.
 */
export function normaliseFullConditionId(raw: string): string | null {
  const id = normaliseConditionId(raw);
  return id !== null && id.length === 66 ? id : null;
}
