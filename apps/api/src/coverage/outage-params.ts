import type { Venue } from '@booktape/domain';
import { venueFromShortName, venueModules } from '@booktape/venues';
import { show, type Parsed } from '../http/params.ts';
import { parseTime } from '../http/time.ts';

/**
 * Input rules of declared outages, shared by the API (POST /outages) and the CLI
 * (`booktape outage add`), so both refuse the same things with the same words. Pure.
 */

export const OUTAGE_REASON_MAX = 500;

/** `exchange-a (a) or exchange-b (b)`: the names parseVenue takes. */
const VENUE_WORDS = venueModules()
  .map((m) => `${m.venue} (${m.short})`)
  .join(' or ');

/** exchange-a / exchange-b, or the CLI's short a / b. */
export function parseVenue(raw: unknown): Parsed<Venue> {
  const venue = typeof raw === 'string' ? venueFromShortName(raw) : null;
  if (venue !== null) return { ok: true, value: venue };
  return { ok: false, message: `must be ${VENUE_WORDS}, got ${typeof raw === 'string' ? show(raw) : JSON.stringify(raw) ?? 'nothing'}` };
}

/**
 * An outage bound: an instant by the API's one time model (http/time.ts): Unix seconds or
 * milliseconds (number or digits; below 10^11 = seconds), an ISO 8601 time WITH a zone, or
 * a UTC date (its midnight). Both bounds are read as instants (their first millisecond):
 * `to` is exclusive.
 */
export function parseInstant(raw: unknown): Parsed<number> {
  return parseTime(raw, 'instant');
}

export function parseReason(raw: unknown): Parsed<string> {
  if (typeof raw !== 'string') return { ok: false, message: 'must be a text' };
  const s = raw.trim();
  if (s === '') return { ok: false, message: 'must not be empty' };
  if (s.length > OUTAGE_REASON_MAX) return { ok: false, message: `must be at most ${OUTAGE_REASON_MAX} characters` };
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(s)) return { ok: false, message: 'must not contain control characters' };
  return { ok: true, value: s };
}

export interface OutageInput {
  venue: Venue;
  start_ms: number;
  end_ms: number;
  reason: string;
}

/** The whole declaration, checked: the first problem, named by its field. */
export function parseOutage(body: { venue?: unknown; from?: unknown; to?: unknown; reason?: unknown }): { ok: true; value: OutageInput } | { ok: false; field: string; message: string } {
  for (const f of ['venue', 'from', 'to', 'reason'] as const) if (body[f] === undefined) return { ok: false, field: f, message: `${f} is required` };
  const venue = parseVenue(body.venue);
  if (!venue.ok) return { ok: false, field: 'venue', message: `venue ${venue.message}` };
  const from = parseInstant(body.from);
  if (!from.ok) return { ok: false, field: 'from', message: `from ${from.message}` };
  const to = parseInstant(body.to);
  if (!to.ok) return { ok: false, field: 'to', message: `to ${to.message}` };
  if (from.value >= to.value) return { ok: false, field: 'to', message: `to (${new Date(to.value).toISOString()}) must be after from (${new Date(from.value).toISOString()})` };
  const reason = parseReason(body.reason);
  if (!reason.ok) return { ok: false, field: 'reason', message: `reason ${reason.message}` };
  return { ok: true, value: { venue: venue.value, start_ms: from.value, end_ms: to.value, reason: reason.value } };
}
