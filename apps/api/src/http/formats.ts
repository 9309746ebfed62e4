import type { FastifyRequest } from 'fastify';
import { q } from './params.ts';

/** Answer formats of the raw, range and summary endpoints (docs/api.md, "Formats"). */
export const FORMATS = ['json', 'ndjson', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

export const CONTENT_TYPES: Record<Format, string> = {
  json: 'application/json; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
};

/** The media types of those answers (CONTENT_TYPES without parameters), for the OpenAPI document. */
export const FORMAT_MEDIA_TYPES: readonly string[] = FORMATS.map((f) => CONTENT_TYPES[f].split(';')[0]!);

/** The `format` query field: json (the default, today's shape), ndjson or csv. */
export const formatField = () =>
  q.oneOf(FORMATS, 'Answer format: json (default), ndjson (one record per line) or csv (header row, then one row per record; see docs/api.md).');

/**
 * A `Link` header value pointing at the next page: this request's own path and query with
 * `changes` applied (RFC 8288; relative to the request's URL).
 */
export function nextLink(req: FastifyRequest, changes: Record<string, string | number>): string {
  const url = new URL(req.url, 'http://localhost');
  for (const [k, v] of Object.entries(changes)) url.searchParams.set(k, String(v));
  return `<${url.pathname}${url.search}>; rel="next"`;
}
