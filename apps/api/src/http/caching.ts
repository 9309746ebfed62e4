import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, RouteOptions, onSendHookHandler } from 'fastify';
import { z } from 'zod';
import { DAY_MS } from '@booktape/book';

/**
 * HTTP caching of data answers (docs/api.md, "Caching").
 *
 * An answer about a finalised past UTC day (every instant it covers lies in a UTC day that
 * ended at least `finalisedAfterMs` ago) gets a strong ETag and
 * `Cache-Control: private, max-age=…, immutable`, and a request whose `If-None-Match` holds
 * that tag is answered 304 without a body. Any other data answer gets `private, no-cache`.
 *
 * The tag names the exact bytes: a digest of the answer itself where it is built whole
 * (summaries; a settled one's names what determines its bytes, summaries/answer-tag.ts),
 * else of the request's normalised parameters and the stored data's version
 * (its deduplicated row count: rows are only ever added, and a duplicate adds nothing). A
 * late back-fill into a finalised day therefore changes the tag; `max-age` bounds how long
 * a copy taken before it is used without asking.
 *
 * Compressed answers carry the tag with the content coding appended (`"…-gzip"`), so that
 * each representation has its own strong tag (RFC 9110 8.8.3); `If-None-Match` compares the
 * tags without it (the weak comparison the RFC prescribes for that header).
 */
/** The 304 answer of a route with ETags (OpenAPI): no body. */
export const notModified = z.null().describe('Not modified: the copy whose tag was sent in If-None-Match is current (no body).');

export interface CachePolicy {
  finalisedAfterMs: number;
  maxAgeSeconds: number;
}


/** True when the UTC day of `lastMs` (the answer's last instant) ended `afterMs` or longer ago. */
export function isFinalised(lastMs: number, nowMs: number, afterMs: number): boolean {
  const dayEnd = (Math.floor(lastMs / DAY_MS) + 1) * DAY_MS;
  return nowMs >= dayEnd + afterMs;
}

/** A strong entity tag naming `parts` (digest, quoted). */
export function etagOf(...parts: ReadonlyArray<string | number | Buffer>): string {
  const h = createHash('sha256');
  for (const p of parts) {
    h.update(typeof p === 'number' ? String(p) : p);
    h.update('\u0000');
  }
  return `"${h.digest('hex').slice(0, 32)}"`;
}

const CODING_SUFFIX = /-(?:zstd|br|gzip|deflate)$/;

/** The tag of `If-None-Match` equal to `etag` (weak comparison, content coding ignored), or null. */
export function matchingTag(ifNoneMatch: string | undefined, etag: string): string | null {
  if (ifNoneMatch === undefined) return null;
  const base = etag.slice(1, -1);
  for (const raw of ifNoneMatch.split(',')) {
    const tag = raw.trim();
    if (tag === '*') return etag;
    const opaque = tag.replace(/^W\//, '');
    if (opaque.length < 2 || opaque[0] !== '"' || opaque[opaque.length - 1] !== '"') continue;
    if (opaque.slice(1, -1).replace(CODING_SUFFIX, '') === base) return tag;
  }
  return null;
}

/**
 * Sets the caching headers of a data answer: `etag` null (an open day, or a window reaching
 * into one) means no-cache. Returns true when the client's copy is current: the reply is
 * then a 304, sent by the caller with no body.
 */
export function cacheHeaders(req: FastifyRequest, reply: FastifyReply, etag: string | null, policy: CachePolicy): boolean {
  reply.header('vary', 'accept-encoding');
  if (etag === null) {
    reply.header('cache-control', 'private, no-cache');
    return false;
  }
  // private: the answer was paid for with a key; a shared cache (a CDN) must not hand it to others.
  reply.header('cache-control', `private, max-age=${policy.maxAgeSeconds}, immutable`);
  const match = matchingTag(req.headers['if-none-match'], etag);
  // A 304 repeats the tag the client holds (with its content coding), as the 200 had it.
  reply.header('etag', match === null || match === etag ? etag : match.replace(/^W\//, ''));
  if (match === null) return false;
  reply.code(304);
  return true;
}

/**
 * An onRoute hook, added after the compression plugin's own so that its onSend runs after
 * the compression: appends the content coding to the tag of a compressed answer.
 */
export function etagCodingOnRoute(route: RouteOptions): void {
  const hook: onSendHookHandler = (_req, reply, payload, done) => {
    const etag = reply.getHeader('etag');
    const coding = reply.getHeader('content-encoding');
    if (typeof etag === 'string' && typeof coding === 'string' && coding !== 'identity' && !CODING_SUFFIX.test(etag.slice(1, -1))) {
      reply.header('etag', `${etag.slice(0, -1)}-${coding}"`);
    }
    done(null, payload);
  };
  route.onSend = route.onSend === undefined ? [hook] : Array.isArray(route.onSend) ? [...route.onSend, hook] : [route.onSend, hook];
}
