import { z } from 'zod';

/** Stable error codes (docs/rules/api-decisions.md). Clients may switch on them; never rename one. */
export const ERROR_CODES = [
  'invalid_parameter',
  'missing_parameter',
  'invalid_cursor',
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'not_finalised',
  'range_not_satisfiable',
  'method_not_allowed',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'too_many_concurrent_requests',
  'service_unavailable',
  'lookup_unavailable',
  'internal_error',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const errorSchema = z
  .object({
    error: z.object({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      param: z.string().optional(),
    }),
  })
  .meta({ id: 'Error', description: 'Every error answer: a stable `code` clients may switch on, a message (shown only below 500), and the parameter at fault when there is one.' });
export type ErrorBody = z.infer<typeof errorSchema>;

/** Error body of docs/rules/api-decisions.md; messages are shown only below 500. */
export function errorBody(code: ErrorCode, message: string, param?: string): ErrorBody {
  return { error: param === undefined ? { code, message } : { code, message, param } };
}

/** An error that is the answer: status, code, message and the parameter at fault. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly param?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** What a `too_many_concurrent_requests` answer carries besides the error (ConcurrencyExceeded). */
export interface ConcurrencyInfo {
  /** requests: the key's requests in progress; stream_sessions: the key's share of the raw-data stream sessions; replays: its websocket replays. */
  limit: 'requests' | 'stream_sessions' | 'replays';
  allowed: number;
  retry_after_seconds: number;
}

/** 429 `too_many_concurrent_requests`: the key holds its share already; the body carries `concurrency`. */
export class TooManyConcurrentError extends ApiError {
  constructor(
    message: string,
    readonly concurrency: ConcurrencyInfo,
  ) {
    super(429, 'too_many_concurrent_requests', message);
    this.name = 'TooManyConcurrentError';
  }
}

export const invalidParameter = (param: string, message: string) => new ApiError(400, 'invalid_parameter', message, param);
export const notFound = (message: string) => new ApiError(404, 'not_found', message);

/** A backing service (ClickHouse, Redis) is unreachable: the answer is 503, not 500. */
export class UnavailableError extends ApiError {
  constructor(service: string, cause?: unknown) {
    super(503, 'service_unavailable', `${service} is unavailable, retry later`);
    this.name = 'UnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * 503 `lookup_unavailable`: whether a slug names anything cannot be told now: the market
 * catalogue does not know it and the metadata API failed, timed out, or is already asked by
 * as many lookups as it may be. Not "does not exist" (that is a 404): retry after
 * `retryAfterS` seconds (the Retry-After header).
 */
export class LookupUnavailableError extends ApiError {
  constructor(
    message: string,
    readonly retryAfterS: number,
  ) {
    super(503, 'lookup_unavailable', message, 'slug');
    this.name = 'LookupUnavailableError';
  }
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'UND_ERR_SOCKET',
  'CHDB_CONNECTION',
  'CHDB_CLOSED',
]);

const UNAVAILABLE_MESSAGES = [
  /connection is closed/i,
  /max retries per request/i,
  /command timed out/i,
  /enableOfflineQueue/i,
  /stream isn't writeable/i,
  /socket hang up/i,
  /timeout error/i,
  /no active connection/i,
  /chdbconnection is closed/i,
  /stream sessions are closed/i,
  /connect ECONNREFUSED/i,
  // ClickHouse server overload: not the request's fault.
  /TOO_MANY_SIMULTANEOUS_QUERIES|MEMORY_LIMIT_EXCEEDED|TIMEOUT_EXCEEDED|ALL_CONNECTION_TRIES_FAILED|NO_AVAILABLE_REPLICA/,
];

/** True for errors that mean "a backing service is down or overloaded". */
export function isUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  if (err instanceof UnavailableError) return true;
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ChdbConnectionError' || e.name === 'ChdbClosedError' || e.name === 'StreamBusyError') return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((re) => re.test(e.message as string))) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isUnavailable(x, depth + 1))) return true;
  return isUnavailable(e.cause, depth + 1);
}

/** Runs a call to a backing service, turning a connection failure into a 503. */
export async function guard<T>(service: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (isUnavailable(e)) throw new UnavailableError(service, e);
    throw e;
  }
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'service_unavailable',
};

export function codeForStatus(status: number): ErrorCode {
  return STATUS_CODES[status] ?? (status >= 500 ? 'internal_error' : 'bad_request');
}

/** Error answers every route may give. */
export const errors = {
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
  503: errorSchema,
};
