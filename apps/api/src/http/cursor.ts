import { createHmac, timingSafeEqual } from 'node:crypto';
import { sameInclusiveEnd } from './time.ts';

/**
 * Range-pagination cursors: opaque to clients, tamper-evident, bound to their query.
 *
 *   v1.<body>.<mac>
 *   body = base64url(JSON [venue, market, start_ms, end_ms, position])
 *   mac  = base64url(HMAC-SHA256(secret, "v1." + body))
 *
 * `position` is the serving-order key of the last record of the page (strings). A cursor
 * is accepted only with a valid MAC and only for the same venue, market and normalised
 * range it was issued for. Pure: no I/O, no clock.
 */

export interface CursorScope {
  venue: string;
  market: string;
  start: number;
  end: number;
}

export class CursorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CursorError';
  }
}

const VERSION = 'v1';
const MAX_LENGTH = 2048;

function mac(secret: Buffer, signed: string): Buffer {
  return createHmac('sha256', secret).update(signed).digest();
}

export function encodeCursor(secret: Buffer, scope: CursorScope, position: readonly string[]): string {
  const body = Buffer.from(JSON.stringify([scope.venue, scope.market, scope.start, scope.end, position])).toString('base64url');
  const signed = `${VERSION}.${body}`;
  return `${signed}.${mac(secret, signed).toString('base64url')}`;
}

/** The position a cursor carries, if it is authentic and belongs to `scope`; else CursorError. */
export function decodeCursor(secret: Buffer, cursor: string, scope: CursorScope, positionLength: number): string[] {
  if (cursor.length > MAX_LENGTH) throw new CursorError('cursor is not one this service issued');
  const parts = cursor.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) throw new CursorError('cursor is not one this service issued');
  const [version, body, tag] = parts as [string, string, string];
  const given = Buffer.from(tag, 'base64url');
  const expected = mac(secret, `${version}.${body}`);
  // Equal lengths first (timingSafeEqual requires it); a wrong length leaks nothing secret.
  if (given.length !== expected.length || !timingSafeEqual(given, expected) || tag !== given.toString('base64url')) {
    throw new CursorError('cursor was altered or is not one this service issued');
  }
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw new CursorError('cursor is malformed');
  }
  if (!Array.isArray(decoded) || decoded.length !== 5) throw new CursorError('cursor is malformed');
  const [venue, market, start, end, position] = decoded as unknown[];
  if (venue !== scope.venue || market !== scope.market || start !== scope.start || typeof end !== 'number' || !sameInclusiveEnd(end, scope.end)) {
    throw new CursorError('cursor belongs to another query: pass it with the same market, start_timestamp and end_timestamp');
  }
  if (!Array.isArray(position) || position.length !== positionLength || !position.every((p) => typeof p === 'string')) {
    throw new CursorError('cursor is malformed');
  }
  return position as string[];
}
