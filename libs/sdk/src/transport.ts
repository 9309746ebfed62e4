import { BooktapeError, errorFromResponse } from './errors.ts';
import { DEFAULT_RETRY, RETRY_STATUSES, parseRetryAfter, retryDelay, sleep, type RetryPolicy } from './retry.ts';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  fetch?: FetchLike | undefined;
  retry: RetryPolicy;
  signal?: AbortSignal | undefined;
  /** Extra headers on every request (a dashboard backend's X-Admin-Token, say). */
  headers?: Record<string, string> | undefined;
}

export interface RequestOptions {
  signal?: AbortSignal | undefined;
  accept?: string;
  /** Answers with these statuses are returned, not thrown (health's 503 is an answer). */
  okStatuses?: readonly number[];
  /** Follow no retries (health checks want the answer as it is). */
  noRetry?: boolean;
  /** GET unless said; anything else is never retried (a POST that reached the API may have acted). */
  method?: 'GET' | 'POST' | 'DELETE';
}

/**
 * Browsers set Accept-Encoding themselves and refuse to let a script set it. Node's fetch
 * (undici) decodes gzip and br but, before Node 22.15, not zstd, which the API prefers
 * when offered: say what this runtime can read.
 */
const IS_NODE = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';

/**
 * Both signals in one: aborts when either does. AbortSignal.any (Node 20.3+, current
 * browsers) lets the combined signal go with the request; the fallback's listeners are
 * removed by the caller's `done` so a long-lived client signal does not collect one per call.
 */
function eitherSignal(a: AbortSignal | undefined, b: AbortSignal | undefined): { signal: AbortSignal | undefined; done: () => void } {
  const none = () => undefined;
  if (!a || !b) return { signal: a ?? b, done: none };
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === 'function') return { signal: any.call(AbortSignal, [a, b]), done: none };
  const c = new AbortController();
  const onA = () => c.abort(a.reason);
  const onB = () => c.abort(b.reason);
  if (a.aborted) onA();
  else if (b.aborted) onB();
  a.addEventListener('abort', onA, { once: true });
  b.addEventListener('abort', onB, { once: true });
  return {
    signal: c.signal,
    done: () => {
      a.removeEventListener('abort', onA);
      b.removeEventListener('abort', onB);
    },
  };
}

/** HTTP to the API: the key, compression, retries on 429 / 503, typed errors. */
export class Transport {
  private readonly base: URL;
  private readonly fetchFn: FetchLike;

  constructor(private readonly opts: TransportOptions) {
    // A base with or without a trailing slash, with or without /api/v1: paths are absolute.
    this.base = new URL(opts.baseUrl);
    const f = opts.fetch ?? (globalThis.fetch as FetchLike | undefined);
    if (!f) throw new Error('BooktapeClient: no fetch in this runtime; pass options.fetch');
    this.fetchFn = f;
  }

  /** An absolute URL for an API path (`/api/v1/…`) or a `Link` target (`/api/v1/…?…`). */
  url(pathAndQuery: string, query: Array<[string, string]> = []): URL {
    const u = new URL(pathAndQuery, this.base);
    // A base with a path prefix (a reverse proxy mounting the API under /booktape) keeps it.
    const prefix = this.base.pathname.replace(/\/+$/, '');
    if (prefix && !u.pathname.startsWith(`${prefix}/`)) u.pathname = prefix + u.pathname;
    for (const [k, v] of query) u.searchParams.append(k, v);
    return u;
  }

  async request(url: URL, ro: RequestOptions = {}): Promise<Response> {
    const { signal, done } = eitherSignal(this.opts.signal, ro.signal);
    const headers: Record<string, string> = { accept: ro.accept ?? 'application/json', ...this.opts.headers };
    const method = ro.method ?? 'GET';
    // A write that reached the API may have happened: it is not sent twice.
    const noRetry = ro.noRetry || method !== 'GET';
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    if (IS_NODE) headers['accept-encoding'] = 'gzip, br';
    try {
      for (let attempt = 0; ; attempt++) {
        let res: Response;
        try {
          res = await this.fetchFn(url.toString(), { method, headers, ...(signal ? { signal } : {}) });
        } catch (e) {
          // No answer at all (connection refused or reset, DNS): a read is tried again like
          // a 503 without Retry-After. An abort is the caller's.
          const wait = signal?.aborted || noRetry ? undefined : retryDelay(this.opts.retry, attempt, undefined);
          if (wait === undefined) throw e;
          await sleep(wait, signal);
          continue;
        }
        if (res.ok || ro.okStatuses?.includes(res.status)) return res;
        const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
        const wait = !noRetry && RETRY_STATUSES.has(res.status) ? retryDelay(this.opts.retry, attempt, retryAfterMs) : undefined;
        const text = await res.text().catch(() => '');
        if (wait === undefined) throw errorFromResponse(res.status, text, retryAfterMs);
        await sleep(wait, signal);
      }
    } finally {
      // Only without AbortSignal.any: a body still streaming after this returns is then no
      // longer aborted by either signal; the price of not leaking a listener per call.
      done();
    }
  }

  async json<T>(url: URL, ro: RequestOptions = {}): Promise<T> {
    const res = await this.request(url, ro);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new BooktapeError(res.status, 'invalid_response', `expected JSON from ${url.pathname}, got ${res.headers.get('content-type') ?? 'no content type'}`, undefined, text);
    }
  }
}

export { DEFAULT_RETRY };
