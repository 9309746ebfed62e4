import type { components } from './generated/schema.ts';

/** The API's stable error codes (docs/api.md, Errors). */
export type ApiErrorCode = components['schemas']['Error']['error']['code'];
export type QuotaInfo = components['schemas']['QuotaExceeded']['quota'];

/**
 * An answer the API refused, or one the client could not read. `code` is the API's own
 * code when the body carried one; `http_error` when the body was not the API's error shape
 * (a proxy's page, say); `invalid_response` when a 2xx body was not what was asked for.
 */
export class BooktapeError extends Error {
  override readonly name = 'BooktapeError';
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode | 'http_error' | 'invalid_response',
    message: string,
    /** The query parameter at fault (the API's `param`), when it named one. */
    readonly parameter: string | undefined,
    /** The parsed body (or its text, when it was not JSON). */
    readonly body: unknown,
    /** How long the API asked to wait (Retry-After, ms) on a 429 or 503 that was not retried. */
    readonly retryAfterMs: number | undefined = undefined,
  ) {
    super(message);
  }

  /** The quota that refused a 429 (which limit, its window, when it resets). */
  get quota(): QuotaInfo | undefined {
    const q = (this.body as { quota?: QuotaInfo } | null | undefined)?.quota;
    return q && typeof q === 'object' ? q : undefined;
  }
}

/** Builds the error for a non-2xx answer from its status, body text and Retry-After. */
export function errorFromResponse(status: number, text: string, retryAfterMs?: number): BooktapeError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; param?: unknown } } | null)?.error;
  if (e && typeof e.code === 'string' && typeof e.message === 'string') {
    return new BooktapeError(status, e.code as ApiErrorCode, e.message, typeof e.param === 'string' ? e.param : undefined, body, retryAfterMs);
  }
  return new BooktapeError(status, 'http_error', `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`, undefined, body, retryAfterMs);
}
