import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/**
 * CORS (docs/api.md, "Browsers and CORS"): off unless `CORS_ORIGINS` lists the origins whose
 * pages may call the API from a browser. Off, an answer carries no Access-Control-* field,
 * so a browser keeps it from every other site's scripts. On, an allowed origin's requests
 * (and their preflights) are answered with that origin, and the answer fields a client
 * needs (paging, caching, limits, the request id, file names) are exposed to its scripts.
 * Keys travel in `Authorization`, never in cookies: no credentials mode.
 */

/** `*` (any origin) or a list of exact origins. */
export type CorsOrigins = '*' | readonly string[];

/**
 * CORS_ORIGINS: `*`, or origins separated by commas, each `http(s)://host[:port]` exactly
 * as a browser sends it in `Origin` (no path, no trailing slash, lower-case host, no
 * default port). Unset or empty: undefined (CORS off). A malformed entry: an error naming it.
 */
export function parseCorsOrigins(raw: string | undefined): { ok: true; value: CorsOrigins | undefined } | { ok: false; message: string } {
  const s = (raw ?? '').trim();
  if (s === '') return { ok: true, value: undefined };
  if (s === '*') return { ok: true, value: '*' };
  const out: string[] = [];
  for (const part of s.split(',')) {
    const o = part.trim();
    let url: URL | undefined;
    try {
      url = new URL(o);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== o) {
      return { ok: false, message: `"${o}" is not an origin: expected * or comma-separated origins like https://app.example.com (scheme, host and port only, as browsers send them)` };
    }
    if (!out.includes(o)) out.push(o);
  }
  return { ok: true, value: out };
}

/** Answer fields a browser script may read (all others are hidden by CORS). */
export const EXPOSED_HEADERS = [
  'Link',
  'X-Total-Count',
  'ETag',
  'Content-Disposition',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
  'X-Request-Id',
  'X-Export-Days',
  'X-Resolved-Condition-Id',
  'X-Resolved-Asset-Id',
  // Daily files answer byte ranges (a browser Parquet reader asks for them).
  'Content-Range',
  'Accept-Ranges',
];

/** Request fields a browser script may send. */
export const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'If-None-Match', 'X-Request-Id', 'Range'];

export async function registerCors(app: FastifyInstance, origins: CorsOrigins | undefined): Promise<void> {
  if (origins === undefined) return;
  await app.register(fastifyCors, {
    origin: origins === '*' ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    credentials: false,
    // A browser may reuse a preflight for ten minutes.
    maxAge: 600,
  });
}
