import type { FastifyInstance, FastifySchema } from 'fastify';
import fastifySwagger, { type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { ApiConfig } from '../config.ts';
import { KEY_SECURITY, type Security } from './auth.ts';
import { errorSchema } from './errors.ts';
import { API_PREFIX } from './prefix.ts';

declare module 'fastify' {
  interface FastifySchema {
    /** Fields the route's 200 carries beyond those every answer of its kind has (OpenAPI only): keys of ANSWER_HEADERS. */
    answerHeaders?: readonly AnswerHeader[];
  }
}

/**
 * The OpenAPI document, built from the routes' zod schemas, and its browsable UI. Must be
 * registered before the routes it documents. What the document promises and how it is
 * checked: docs/api.md, "The OpenAPI contract".
 *
 * On top of the schema conversion (fastify-type-provider-zod) this module adds, for every
 * route, without the route having to spell it out:
 * - the operationId, derived from method and path (operationIdOf);
 * - a response description for every status: an error's from its status and the route's
 *   security, any other from the description of its zod schema (a route that leaves one
 *   out fails the document: app.swagger() throws, and the OpenAPI tests with it);
 * - the media types of each answer (the route's `produces`, JSON by default);
 * - the response fields each answer carries (docs/api.md, "Answer fields"): X-Request-Id on
 *   every answer; on keyed routes Cache-Control and the RateLimit fields; ETag beside a
 *   304; Retry-After on 429 and 503; and what the route names in `schema.answerHeaders`
 *   (Link, X-Total-Count, Content-Disposition, X-Export-Days, X-Resolved-*);
 * and to the document: the servers entry from the config, and only the component schemas
 * that something references.
 */
export async function registerOpenApi(app: FastifyInstance, config: ApiConfig): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'booktape historical order-book data',
        description:
          'Raw order-book events and availability for exchange A (condition ids) and exchange B (tickers). See docs/api.md.\n\n' +
          'Venue names: every path under `/api/v1/exchange-a/` is also served under `/api/v1/polymarket/`, and every path under `/api/v1/exchange-b/` under `/api/v1/kalshi/`. ' +
          'The alias is the same operation, not a copy: the same answer byte for byte, cursors valid under both spellings, billed as the canonical path. ' +
          'This document lists the canonical paths only (docs/api.md, "Venue names").\n\n' +
          'Exchange A markets can be named by `slug` (and outcome tokens by `outcome`) wherever `condition_id` (and `asset_id`) are taken; the ids used come back in X-Resolved-Condition-Id and X-Resolved-Asset-Id (docs/api.md, "Slug and outcome").',
        version: '1.0.0',
        // The repository's LICENSE: clients generated from this document may say what they may do with it.
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: serverUrl(config), description: config.publicUrl ? 'PUBLIC_URL' : 'The configured HOST and PORT' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key from POST /api/v1/keys: bt_live_…' },
          adminToken: { type: 'apiKey', in: 'header', name: 'X-Admin-Token', description: 'The ADMIN_TOKEN the service was started with.' },
          adminBearer: { type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN as a Bearer token (GET /metrics only: what a Prometheus scrape sends).' },
          apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key', description: 'An API key in the URL, for websocket clients that cannot set headers (the replay websockets only).' },
        },
      },
    },
    transform: documentRoute,
    transformObject: documentObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: `${API_PREFIX}/docs` });
}

/**
 * The base URL clients reach the API at: PUBLIC_URL when set (behind a proxy or a load
 * balancer), else HOST and PORT as the server listens (a wildcard address as localhost).
 */
export function serverUrl(config: Pick<ApiConfig, 'host' | 'port' | 'publicUrl'>): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  const h = config.host.trim();
  const host = h === '0.0.0.0' || h === '::' || h === '[::]' || h === '' ? 'localhost' : h.includes(':') && !h.startsWith('[') ? `[${h}]` : h;
  return `http://${host}:${config.port}`;
}

/**
 * The operationId of a route: the method in lower case, then each path segment after
 * /api/v1 in PascalCase, a path parameter as `By<Name>`:
 * `GET /api/v1/exchange-a/market/data/range` → `getExchangeAMarketDataRange`,
 * `DELETE /api/v1/keys/{key_id}` → `deleteKeysByKeyId`, `GET /status` → `getStatus`.
 * Method and path are unique, so the ids are; they change only when the path does.
 */
export function operationIdOf(method: string, url: string): string {
  const path = url.startsWith(`${API_PREFIX}/`) ? url.slice(API_PREFIX.length) : url;
  const pascal = (s: string) =>
    s
      .split(/[-_.]/)
      .filter(Boolean)
      .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
      .join('');
  const words = path
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      const param = /^(?::(\w+)|\{(\w+)\})$/.exec(segment);
      return param ? `By${pascal(param[1] ?? param[2]!)}` : pascal(segment);
    });
  return method.toLowerCase() + words.join('');
}

/** What the body of each media type is, beside JSON (whose schema is the route's zod schema). */
const MEDIA_SCHEMAS: Record<string, Record<string, unknown>> = {
  'application/x-ndjson': { type: 'string', description: 'NDJSON (format=ndjson): one JSON record per line, the items of `data` in the JSON answer.' },
  'text/csv': { type: 'string', description: 'CSV (format=csv): a header row, then one row per record (docs/api.md, "Formats").' },
  'application/gzip': { type: 'string', format: 'binary', description: 'A gzipped CSV file (format=csv).' },
  'application/vnd.apache.parquet': { type: 'string', format: 'binary', description: 'A Parquet file with typed columns (format=parquet).' },
  'text/html': { type: 'string', description: 'An HTML page.' },
  'text/plain': { type: 'string', description: 'Plain text.' },
};

type HeaderSpec = { type: 'string' | 'integer'; description: string };

/** Response fields the API sends, as the document declares them. */
const ANSWER_HEADERS = {
  'X-Request-Id': {
    type: 'string',
    description: "The request's id: the client's own X-Request-Id when well-formed (1-128 of A-Z a-z 0-9 . _ : @ / + = -), else a UUID; in the service's log lines as request_id.",
  },
  'RateLimit-Limit': { type: 'integer', description: 'The limit closest to refusing (burst: requests per second; monthly: quota units per month) (draft-ietf-httpapi-ratelimit-headers-06; absent for a plan without limits).' },
  'RateLimit-Remaining': { type: 'integer', description: 'What remains of that limit after this request (burst: in this second; monthly: this calendar month, UTC).' },
  'RateLimit-Reset': { type: 'integer', description: 'Seconds until that limit resets (1 for the burst window; until 00:00 UTC on the 1st for the monthly quota).' },
  'RateLimit-Policy': { type: 'string', description: 'Every limit of the plan, `<quota>;w=<window seconds>`: the burst (`w=1`) and the monthly quota (`w` = seconds in this month).' },
  'Cache-Control': { type: 'string', description: 'Always `private` on a keyed answer (no shared cache may keep it): `private, max-age=…, immutable` for finalised days, else `private, no-cache` (`private, no-store` for errors and exports).' },
  ETag: { type: 'string', description: 'Answers about finalised UTC days only (docs/api.md, "Caching"): send it back in If-None-Match for a 304.' },
  Link: { type: 'string', description: '`<url>; rel="next"`: the next page, when there is one (offset pages; cursor pages in ndjson and csv).' },
  'X-Total-Count': { type: 'integer', description: 'Records of the date in all pages together.' },
  'Content-Disposition': { type: 'string', description: '`attachment; filename="<market>_<from>_<to>_<kind>….csv.gz|parquet"`: the file name.' },
  'Accept-Ranges': { type: 'string', description: '`bytes`: a daily file may be fetched in byte ranges (Range: bytes=first-last).' },
  'Content-Range': { type: 'string', description: '`bytes <first>-<last>/<size>` on a 206; `bytes */<size>` on a 416.' },
  'Content-Length': { type: 'integer', description: 'Bytes in this answer (the whole file, or the range).' },
  'X-Export-Days': { type: 'integer', description: 'UTC days the file covers: the quota units the request counted.' },
  'X-Resolved-Condition-Id': { type: 'string', description: 'Requests naming the market by `slug` only: the condition id the slug resolved to (the answer is the one that id gives).' },
  'X-Resolved-Asset-Id': { type: 'string', description: 'Requests naming the outcome token by `outcome` only: the asset id the outcome resolved to.' },
} satisfies Record<string, HeaderSpec>;

export type AnswerHeader = keyof typeof ANSWER_HEADERS;

const RATE_LIMIT_HEADERS: readonly AnswerHeader[] = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'];

const pickHeaders = (names: readonly AnswerHeader[]): Record<string, HeaderSpec> => Object.fromEntries(names.map((n) => [n, ANSWER_HEADERS[n]]));

const retryAfter = (what: string) => ({ 'Retry-After': { type: 'integer', description: what } });

/** A route behind requireKey: its security is exactly the Bearer key. */
const isKeyed = (security: unknown): boolean => JSON.stringify(security) === JSON.stringify(KEY_SECURITY);

/** Error answers (the `Error` body, or `QuotaExceeded` for 429): what each status means here. */
function errorDescription(status: number, security: Security | undefined): string | undefined {
  const schemes = new Set((security ?? []).flatMap((s) => Object.keys(s)));
  switch (status) {
    case 400:
      return 'Invalid request (`missing_parameter`, `invalid_parameter`, `invalid_cursor` or `bad_request`): `error.param` names the parameter at fault.';
    case 401: {
      const needs = [
        schemes.has('bearerAuth') ? 'a valid API key (`Authorization: Bearer <key>`)' : '',
        schemes.has('adminToken') ? 'the admin token (`X-Admin-Token`)' : '',
        schemes.has('adminBearer') ? 'the admin token as `Authorization: Bearer <token>`' : '',
      ].filter(Boolean);
      return `Not authenticated (\`unauthorized\`): the request needs ${needs.length > 0 ? needs.join(' or ') : 'credentials'}; it was missing, malformed or wrong.`;
    }
    case 403:
      return 'Refused (`forbidden`): a revoked API key, or a key asking for what only its own user or the operator may see.';
    case 404:
      return 'Not found (`not_found`): nothing matches the path, or what the request names does not exist.';
    case 413:
      return 'Body too large (`payload_too_large`).';
    case 415:
      return 'Body of an unsupported media type (`unsupported_media_type`).';
    case 429:
      return "Over the plan's monthly quota or per-second limit (`rate_limited`: `quota` says which), or the key already has as many requests in progress as its plan allows, or as many raw-data pages streaming as one key may (`too_many_concurrent_requests`: `concurrency.limit` says which; counted against nothing); retry after `Retry-After` seconds.";
    case 503:
      return 'A backing service (ClickHouse, Redis, Stripe) is down or overloaded, or the feature is not configured (`service_unavailable`); or a slug the market catalogue does not know could not be looked up because the metadata API failed, timed out or is busy (`lookup_unavailable`: not a sign the slug does not exist). Retry after `Retry-After` seconds.';
    default:
      return undefined;
  }
}

type JsonSchema = Record<string, unknown>;

/** One route's operation: its operationId, and a described response of each status with its media types. */
const documentRoute: SwaggerTransform = (input) => {
  const { schema, url, route } = input;
  const out = jsonSchemaTransform(input);
  if (!schema || (out.schema as { hide?: boolean }).hide) return out;
  const method = Array.isArray(route.method) ? route.method[0]! : route.method;
  const where = `${method} ${url}`;
  const { produces, answerHeaders, ...rest } = out.schema as FastifySchema & { response?: Record<string, JsonSchema> };
  const zodResponses = (schema.response ?? {}) as Record<string, z.ZodType>;
  const etags = '304' in zodResponses;
  const keyed = isKeyed(schema.security);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, json] of Object.entries(rest.response ?? {})) {
    const code = Number(status);
    const zodSchema = zodResponses[status];
    const description = zodSchema === errorSchema || code === 429 ? errorDescription(code, schema.security as Security | undefined) : zodSchema?.description;
    if (!description) throw new Error(`OpenAPI: ${where}: the ${status} answer has no description (describe its zod schema)`);
    // Keyed answers with a user (not 401/403: no key; not 5xx: Redis may be what failed) say where the user stands.
    const rateLimited = keyed && code !== 401 && code !== 403 && code < 500;
    const names: AnswerHeader[] = [
      'X-Request-Id',
      ...(keyed ? (['Cache-Control'] as const) : []),
      ...(rateLimited ? RATE_LIMIT_HEADERS : []),
      ...(etags && (code === 304 || (code >= 200 && code < 300)) ? (['ETag'] as const) : []),
      ...(code >= 200 && code < 300 ? (answerHeaders ?? []) : []),
    ];
    const headers: Record<string, unknown> = {
      ...pickHeaders(names),
      ...(code === 429
        ? retryAfter('Seconds until the limit that refused the request allows it again.')
        : code === 503 && zodSchema === errorSchema
          ? retryAfter('Seconds to wait before retrying (1).')
          : {}),
    };
    if (code === 304) {
      responses[status] = { type: 'null', description, headers };
      continue;
    }
    const media = code < 300 && produces && produces.length > 0 ? produces : ['application/json'];
    const content: Record<string, { schema: JsonSchema }> = {};
    for (const type of media) {
      const other = MEDIA_SCHEMAS[type];
      if (type !== 'application/json' && !other) throw new Error(`OpenAPI: ${where}: no schema for media type ${type} (add it to MEDIA_SCHEMAS)`);
      content[type] = { schema: type === 'application/json' ? json : other! };
    }
    responses[status] = { description, headers, content };
  }
  return {
    url: out.url,
    schema: {
      ...rest,
      operationId: (schema.operationId as string | undefined) ?? operationIdOf(method, url),
      ...(rest.response ? { response: responses } : {}),
    },
  };
};

/**
 * The document, with only the component schemas that an operation references (directly
 * or through other components): the zod conversion adds an input and an output variant of
 * every registered schema (`Error` and `ErrorInput`), most of which nothing uses.
 */
const documentObject: SwaggerTransformObject = (input) => {
  const doc = jsonSchemaTransformObject(input) as { paths?: unknown; components?: { schemas?: Record<string, unknown> } };
  const schemas = doc.components?.schemas;
  if (!schemas) return doc as ReturnType<SwaggerTransformObject>;
  const used = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (!v || typeof v !== 'object') return;
    for (const [k, child] of Object.entries(v)) {
      if (k === '$ref' && typeof child === 'string' && child.startsWith('#/components/schemas/')) {
        const name = child.slice('#/components/schemas/'.length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(child);
    }
  };
  visit(doc.paths);
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  return { ...doc, components: { ...doc.components, schemas: kept, headers: shareHeaders(doc.paths) } } as ReturnType<SwaggerTransformObject>;
};

/**
 * The answer fields of ANSWER_HEADERS once, in `components.headers`, referenced from every
 * response that carries them (in place: the paths are the document's own copy). Written out
 * on each of ~250 responses they made up most of the document.
 */
function shareHeaders(paths: unknown): Record<string, unknown> {
  const shared: Record<string, unknown> = {};
  for (const methods of Object.values((paths ?? {}) as Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown> }> }>>)) {
    for (const op of Object.values(methods)) {
      for (const r of Object.values(op.responses ?? {})) {
        for (const name of Object.keys(r.headers ?? {})) {
          if (!(name in ANSWER_HEADERS)) continue;
          shared[name] ??= r.headers![name];
          r.headers![name] = { $ref: `#/components/headers/${name}` };
        }
      }
    }
  }
  return Object.fromEntries(Object.keys(shared).sort().map((n) => [n, shared[n]]));
}
