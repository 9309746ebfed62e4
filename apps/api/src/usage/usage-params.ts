import { createHmac, timingSafeEqual } from 'node:crypto';
import { show, type Parsed } from '../http/params.ts';
import { parseTime } from '../http/time.ts';

/**
 * Parameters of the usage and statistics endpoints: pure rules, no I/O, no clock (the
 * current time is passed in).
 */

export const USAGE_LIMITS = {
  recentDefault: 50,
  recentMax: 1000,
  popularDefault: 10,
  popularMax: 100,
  /** Most buckets one timeframe answer holds (a month of hours is 744). */
  maxBuckets: 2000,
} as const;

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/**
 * A window bound of the usage and statistics endpoints, by the API's one time model
 * (http/time.ts): `from` is read as a start, `to` as an inclusive end, so
 * `from=2026-05-01&to=2026-05-31` is all of May and `to=1780271999` includes that second's
 * last millisecond.
 */
export function parseInstant(raw: string, edge: 'start' | 'end'): Parsed<number> {
  return parseTime(raw, edge);
}

export interface StatusFilter {
  label: string;
  min: number;
  max: number;
}

/** `2xx`, `4xx`, `5xx` (a class) or a status code such as `429`. */
export function parseStatus(raw: string): Parsed<StatusFilter> {
  const s = raw.trim().toLowerCase();
  const cls = /^([1-5])xx$/.exec(s);
  if (cls) return { ok: true, value: { label: s, min: Number(cls[1]) * 100, max: Number(cls[1]) * 100 + 99 } };
  if (/^[1-5]\d\d$/.test(s)) return { ok: true, value: { label: s, min: Number(s), max: Number(s) } };
  return { ok: false, message: `must be a status code (e.g. 200, 429) or a class (2xx, 4xx, 5xx), got ${show(raw)}` };
}

export type Interval = 'hour' | 'day';

export function intervalMs(i: Interval): number {
  return i === 'hour' ? HOUR_MS : DAY_MS;
}

/** Bucket starts (UTC-aligned) covering [fromMs, toMs]. */
export function bucketStarts(fromMs: number, toMs: number, interval: Interval): number[] {
  const step = intervalMs(interval);
  const out: number[] = [];
  for (let t = Math.floor(fromMs / step) * step; t <= toMs; t += step) out.push(t);
  return out;
}

export function bucketCount(fromMs: number, toMs: number, interval: Interval): number {
  const step = intervalMs(interval);
  return Math.floor(toMs / step) - Math.floor(fromMs / step) + 1;
}

/** A series with every bucket of the window, zeros where the log has none. */
export function fillSeries<T extends { start: number }>(starts: readonly number[], rows: readonly T[], zero: (start: number) => T): T[] {
  const byStart = new Map(rows.map((r) => [r.start, r]));
  return starts.map((s) => byStart.get(s) ?? zero(s));
}

// ---- recent-requests cursor ------------------------------------------------------------

/**
 * `r1.<body>.<mac>`: body = base64url(JSON [user_id, ts_ms, request_id]) of the last row of
 * the page; mac = HMAC-SHA256 with the cursor secret. Bound to the user it was issued for.
 */
const RECENT_VERSION = 'r1';

function mac(secret: Buffer, signed: string): Buffer {
  return createHmac('sha256', secret).update(signed).digest();
}

export function encodeRecentCursor(secret: Buffer, userId: string, pos: { ts: number; requestId: string }): string {
  const body = Buffer.from(JSON.stringify([userId, pos.ts, pos.requestId])).toString('base64url');
  const signed = `${RECENT_VERSION}.${body}`;
  return `${signed}.${mac(secret, signed).toString('base64url')}`;
}

export function decodeRecentCursor(secret: Buffer, cursor: string, userId: string): Parsed<{ ts: number; requestId: string }> {
  const bad = { ok: false as const, message: 'must be the next_cursor of the previous page of this user, unchanged' };
  if (cursor.length > 1024) return bad;
  const parts = cursor.split('.');
  if (parts.length !== 3 || parts[0] !== RECENT_VERSION) return bad;
  const [, body, tag] = parts as [string, string, string];
  const given = Buffer.from(tag, 'base64url');
  const expected = mac(secret, `${RECENT_VERSION}.${body}`);
  if (given.length !== expected.length || !timingSafeEqual(given, expected) || tag !== given.toString('base64url')) return bad;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return bad;
  }
  if (!Array.isArray(v) || v.length !== 3 || v[0] !== userId || !Number.isSafeInteger(v[1]) || typeof v[2] !== 'string') return bad;
  return { ok: true, value: { ts: v[1] as number, requestId: v[2] as string } };
}
