import type { paths } from './generated/schema.ts';
import { nextLink, walkCursors, walkOffsets } from './pages.ts';
import { toQuery } from './query.ts';
import { ndjsonMessages, type ReplayMessage, type ReplayStreamParams } from './replay.ts';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
import { Transport, type FetchLike, type RequestOptions } from './transport.ts';
import type {
  ApiJson,
  Availability,
  Book,
  BookSnapshots,
  Coverage,
  DataPage,
  MarketsPage,
  Params,
  RangePage,
  RawRecord,
  Summary,
  Venue,
  VenuePath,
} from './types.ts';

export interface BooktapeClientOptions {
  /** Where the API is: `http://127.0.0.1:8080` (a path prefix of a reverse proxy is kept). */
  baseUrl: string;
  /** An API key (`bt_live_…`), sent as `Authorization: Bearer`. Public endpoints work without. */
  apiKey?: string;
  /** A fetch to use instead of the global one (a proxy agent, a test double). */
  fetch?: FetchLike;
  /** Retries of a 429 or 503 (default 3). */
  maxRetries?: number;
  /** The longest Retry-After that is waited (default 60 s); a longer one is thrown at once. */
  maxRetryDelayMs?: number;
  /** First back-off step when an answer gives no Retry-After (default 500 ms, doubling). */
  retryBaseDelayMs?: number;
  /** Aborts every request of this client. */
  signal?: AbortSignal;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** Iterator parameters: `pageSize` is the API's `limit` per request (default 10,000 records). */
export interface PageSize {
  pageSize?: number;
}

/** A bulk export: the file as the API sent it (gzipped CSV or Parquet), not yet read. */
export interface ExportFile {
  /** From Content-Disposition: `<market>_<start>_<end>_<kind>[_<R>s].csv.gz|parquet`. */
  filename: string | undefined;
  contentType: string;
  /** UTC days covered (X-Export-Days), what it counted against the quota. */
  days: number;
  /** The bytes as they arrive; read it once (or call bytes()). */
  body: ReadableStream<Uint8Array> | null;
  bytes(): Promise<Uint8Array>;
}

type Json<P extends keyof paths> = ApiJson<P>;
/** The JSON body of a 200 to `METHOD path` (ApiJson is GET's). */
type OpJson<P extends keyof paths, M extends 'post' | 'delete'> = paths[P][M] extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;

/** One venue's historical data. Methods named `…Page` are one request; the others walk every page. */
export class VenueClient<V extends Venue> {
  constructor(
    protected readonly t: Transport,
    readonly venue: V,
  ) {}

  protected path(rest: string): string {
    return `/api/v1/${this.venue}/${rest}`;
  }

  protected get<T>(rest: string, params: object, o: CallOptions & RequestOptions = {}, timeNames = true): Promise<T> {
    return this.t.json<T>(this.t.url(this.path(rest), toQuery(params, { timeNames })), o);
  }

  /** One page of a market's raw records on one UTC date (`offset`, `limit`). */
  dataPage(params: Params<VenuePath<V, 'market/data'>>, o?: CallOptions): Promise<DataPage<V>> {
    return this.get('market/data', params, o);
  }

  /** Every raw record of a market on one UTC date, page by page (offset pages). */
  rawByDate(params: Params<VenuePath<V, 'market/data'>, 'offset' | 'limit'> & PageSize & { offset?: number }, o?: CallOptions): AsyncGenerator<RawRecord<V>, void, undefined> {
    const { pageSize, offset, ...rest } = params as PageSize & { offset?: number };
    type P = { data: RawRecord<V>[]; pagination: import('./pages.ts').OffsetPagination };
    return walkOffsets(
      offset ?? 0,
      (off) => this.get<P>('market/data', { ...rest, offset: off, limit: pageSize }, o),
      (p) => p.data,
      (p) => p.pagination,
    );
  }

  /** One page of a market's raw records in an inclusive time window (`from`, `to`, `cursor`, `limit`). */
  rangePage(params: Params<VenuePath<V, 'market/data/range'>>, o?: CallOptions): Promise<RangePage<V>> {
    return this.get('market/data/range', params, o);
  }

  /**
   * Every raw record of a market in an inclusive time window, in serving order, following
   * the cursors: `for await (const e of client.exchangeA.raw({ conditionId, from, to }))`.
   */
  raw(params: Params<VenuePath<V, 'market/data/range'>, 'limit'> & PageSize, o?: CallOptions): AsyncGenerator<RawRecord<V>, void, undefined> {
    const { pageSize, cursor, ...rest } = params as PageSize & { cursor?: string };
    type P = { data: RawRecord<V>[]; pagination: import('./pages.ts').CursorPagination };
    return walkCursors(
      cursor,
      (c) => this.get<P>('market/data/range', { ...rest, cursor: c, limit: pageSize }, o),
      (p) => p.data,
      (p) => p.pagination,
    );
  }

  /**
   * Raw records as the API's long CSV (one row per price level change; docs/api.md,
   * Formats), every page, following the `Link` header: yields the header row once, then
   * each page's rows. A window (`from`, `to`) reads the range endpoint, a `date` the date one.
   */
  async *rawCsv(
    params: (Params<VenuePath<V, 'market/data/range'>, 'limit' | 'cursor'> | Params<VenuePath<V, 'market/data'>, 'limit' | 'offset'>) & PageSize,
    o?: CallOptions,
  ): AsyncGenerator<string, void, undefined> {
    const { pageSize, ...rest } = params as PageSize & Record<string, unknown>;
    const rest2 = 'date' in rest ? 'market/data' : 'market/data/range';
    let url: URL | undefined = this.t.url(this.path(rest2), [...toQuery(rest, { timeNames: true }), ...toQuery({ limit: pageSize, format: 'csv' })]);
    for (let first = true; url; first = false) {
      const res = await this.t.request(url, { ...o, accept: 'text/csv' });
      const text = await res.text();
      // Every page repeats the header row (a line of plain column names, never quoted).
      yield first ? text : text.slice(text.indexOf('\n') + 1);
      const next = nextLink(res.headers.get('link'));
      url = next === undefined ? undefined : this.t.url(next);
    }
  }

  /** The stored UTC dates of a market (first, last, how many). */
  dateRange(params: Params<VenuePath<V, 'market/date-range'>>, o?: CallOptions): Promise<Availability<V>> {
    return this.get('market/date-range', params, o);
  }

  /** One page of the markets with data (`prefix`, `offset`, `limit`). */
  marketsPage(params: Params<VenuePath<V, 'market/list'>> = {} as Params<VenuePath<V, 'market/list'>>, o?: CallOptions): Promise<MarketsPage<V>> {
    return this.get('market/list', params, o);
  }

  /** Every market with data (condition ids on exchange A, tickers on exchange B), in byte order. */
  markets(params: Params<VenuePath<V, 'market/list'>, 'offset' | 'limit'> & PageSize & { offset?: number } = {} as Params<VenuePath<V, 'market/list'>, 'offset' | 'limit'>, o?: CallOptions): AsyncGenerator<string, void, undefined> {
    const { pageSize, offset, ...rest } = params as PageSize & { offset?: number };
    type P = { market_condition_ids?: string[]; market_tickers?: string[]; pagination: import('./pages.ts').OffsetPagination };
    return walkOffsets(
      offset ?? 0,
      (off) => this.get<P>('market/list', { ...rest, offset: off, limit: pageSize }, o),
      (p) => p.market_condition_ids ?? p.market_tickers ?? [],
      (p) => p.pagination,
    );
  }

  /** Order-book summary buckets (OHLC of best bid, best ask, mid, spread) for a `date` or a window `from`–`to`. */
  summary(params: Params<VenuePath<V, 'market/orderbook-summary'>>, o?: CallOptions): Promise<Summary<V>> {
    return this.get('market/orderbook-summary', params, o);
  }

  /** The same buckets as the API's CSV (one row per bucket, each OHLC flattened into four columns). */
  async summaryCsv(params: Params<VenuePath<V, 'market/orderbook-summary'>>, o?: CallOptions): Promise<string> {
    const url = this.t.url(this.path('market/orderbook-summary'), [...toQuery(params, { timeNames: true }), ['format', 'csv']]);
    return (await this.t.request(url, { ...o, accept: 'text/csv' })).text();
  }

  /** The full book at an instant (`at`: Unix s / ms or a Date), `depth` levels a side. */
  book(params: Params<VenuePath<V, 'market/book'>>, o?: CallOptions): Promise<Book<V>> {
    return this.get('market/book', params, o);
  }

  /** The full book at every multiple of `interval` seconds in a window of up to a day. */
  bookSnapshots(params: Params<VenuePath<V, 'market/book-snapshots'>>, o?: CallOptions): Promise<BookSnapshots<V>> {
    return this.get('market/book-snapshots', params, o);
  }

  /** Per UTC day: records, gaps, cross-checks and a status (complete / partial / missing). Not billed. */
  coverage(params: Params<VenuePath<V, 'market/coverage'>>, o?: CallOptions): Promise<Coverage<V>> {
    return this.get('market/coverage', params, o);
  }

  /**
   * A bulk export of up to 31 days (raw or summaries; gzipped CSV or Parquet). The file is
   * returned unread: stream `body` to disk, or `await file.bytes()`.
   */
  async export(params: Params<VenuePath<V, 'market/export'>> & { format?: 'csv' | 'parquet' }, o?: CallOptions): Promise<ExportFile> {
    const url = this.t.url(this.path('market/export'), toQuery(params, { timeNames: true }));
    const res = await this.t.request(url, { ...o, accept: '*/*' });
    const disposition = res.headers.get('content-disposition') ?? '';
    return {
      filename: /filename="([^"]+)"/.exec(disposition)?.[1],
      contentType: res.headers.get('content-type') ?? 'application/octet-stream',
      days: Number(res.headers.get('x-export-days') ?? 0),
      body: res.body,
      bytes: async () => new Uint8Array(await res.arrayBuffer()),
    };
  }
}

/** Exchange A (Polymarket): markets by condition id, books by outcome token (asset id). */
export class ExchangeAClient extends VenueClient<'exchange-a'> {
  /** Event or market slug (or a polymarket.com URL) → condition ids and outcome tokens. Needs no key. */
  lookupSlug(params: Params<'/api/v1/lookup/slug'>, o?: CallOptions): Promise<Json<'/api/v1/lookup/slug'>> {
    return this.t.json(this.t.url('/api/v1/lookup/slug', toQuery(params)), o);
  }
}

/** A user's plan, quota and request history (the user's own key, or the admin token). */
export class UsageClient {
  constructor(private readonly t: Transport) {}

  private fetchJson<T>(path: string, params: object, o?: CallOptions): Promise<T> {
    return this.t.json<T>(this.t.url(path, toQuery(params)), o);
  }

  private userPath(userId: string, rest: string): string {
    return `/api/v1/user/${encodeURIComponent(userId)}/requests/${rest}`;
  }

  /** Plan, calls this period, limit, remaining, burst limit. */
  get(params: Params<'/api/v1/usage'>, o?: CallOptions): Promise<Json<'/api/v1/usage'>> {
    return this.fetchJson('/api/v1/usage', params, o);
  }

  /** How many requests matched (`from`, `to`, `endpoint`, `status`), split by outcome. */
  requestCount(userId: string, params: Params<'/api/v1/user/{user_id}/requests/count'> = {}, o?: CallOptions): Promise<Json<'/api/v1/user/{user_id}/requests/count'>> {
    return this.fetchJson(this.userPath(userId, 'count'), params, o);
  }

  /** Requests per hour or day, zeros included. */
  requestTimeframe(userId: string, params: Params<'/api/v1/user/{user_id}/requests/timeframe'> = {}, o?: CallOptions): Promise<Json<'/api/v1/user/{user_id}/requests/timeframe'>> {
    return this.fetchJson(this.userPath(userId, 'timeframe'), params, o);
  }

  /** One page of the newest requests (`limit`, `cursor`). */
  recentRequestsPage(userId: string, params: Params<'/api/v1/user/{user_id}/requests/recent'> = {}, o?: CallOptions): Promise<Json<'/api/v1/user/{user_id}/requests/recent'>> {
    return this.fetchJson(this.userPath(userId, 'recent'), params, o);
  }

  /** Every logged request of a user, newest first, following the cursors. */
  recentRequests(userId: string, params: PageSize = {}, o?: CallOptions): AsyncGenerator<Json<'/api/v1/user/{user_id}/requests/recent'>['data'][number], void, undefined> {
    return walkCursors(
      undefined,
      (cursor) => this.recentRequestsPage(userId, { cursor, limit: params.pageSize } as Params<'/api/v1/user/{user_id}/requests/recent'>, o),
      (p) => p.data,
      (p) => p.pagination,
    );
  }
}

/**
 * The operator's API keys (`/keys`): a dashboard backend's, or `booktape keys`. When the
 * service has ADMIN_TOKEN set, pass it as `headers: { 'x-admin-token': … }`. Writes are
 * never retried: a create that reached the API may have made a key.
 */
export class KeysClient {
  constructor(private readonly t: Transport) {}

  /** A new key for a user; the full key (`api_key`) is in this answer only. */
  create(params: { userId: string; name: string }, o?: CallOptions): Promise<OpJson<'/api/v1/keys', 'post'>> {
    return this.t.json(this.t.url('/api/v1/keys', toQuery(params)), { ...o, method: 'POST' });
  }

  /** A user's active keys (never the keys themselves). */
  list(params: { userId: string }, o?: CallOptions): Promise<Json<'/api/v1/keys'>> {
    return this.t.json(this.t.url('/api/v1/keys', toQuery(params)), o);
  }

  /** Revokes a user's key; revoking again answers as the first time. */
  revoke(params: { userId: string; keyId: string }, o?: CallOptions): Promise<OpJson<'/api/v1/keys/{key_id}', 'delete'>> {
    return this.t.json(this.t.url(`/api/v1/keys/${encodeURIComponent(params.keyId)}`, toQuery({ userId: params.userId })), { ...o, method: 'DELETE' });
  }
}

/**
 * The booktape API from TypeScript, in Node (>= 20) and browsers: only fetch, URL and
 * AbortSignal. Retries 429 and 503 as the API asks (Retry-After), throws BooktapeError
 * with the API's code otherwise.
 */
export class BooktapeClient {
  readonly exchangeA: ExchangeAClient;
  readonly exchangeB: VenueClient<'exchange-b'>;
  readonly usage: UsageClient;
  /** Operator routes: API keys. */
  readonly keys: KeysClient;
  private readonly t: Transport;

  constructor(options: BooktapeClientOptions) {
    const retry: RetryPolicy = {
      maxRetries: options.maxRetries ?? DEFAULT_RETRY.maxRetries,
      maxRetryDelayMs: options.maxRetryDelayMs ?? DEFAULT_RETRY.maxRetryDelayMs,
      baseDelayMs: options.retryBaseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
    };
    this.t = new Transport({ baseUrl: options.baseUrl, apiKey: options.apiKey, fetch: options.fetch, retry, signal: options.signal, headers: options.headers });
    this.exchangeA = new ExchangeAClient(this.t, 'exchange-a');
    this.exchangeB = new VenueClient(this.t, 'exchange-b');
    this.usage = new UsageClient(this.t);
    this.keys = new KeysClient(this.t);
  }

  /** Infrastructure status (venues, Kafka lag, sink, rollup backlog, stores); public, always answered. */
  monitoringStatus(o?: CallOptions): Promise<Json<'/api/v1/monitoring/status'>> {
    return this.t.json(this.t.url('/api/v1/monitoring/status'), o);
  }

  /** Health of the API and its stores. A degraded service (503) is an answer here, not an error. */
  health(o?: CallOptions): Promise<Json<'/api/v1/health'>> {
    return this.t.json(this.t.url('/api/v1/health'), { ...o, okStatuses: [503], noRetry: true });
  }

  /**
   * The merged replay stream (docs/api.md, "Merged replay stream"): many markets of both
   * venues in one time order, normalised, as the API sends them: `start`, the opening
   * `book`s, then `book`, `book_change`, `trade`, `gap` and `snapshot` messages, and `end`.
   * Read as you iterate (a slow loop slows the server's read; `break` ends the request).
   * An error line from the server, or a stream cut before its `end`, is thrown (BooktapeError).
   */
  async *replayStream(params: ReplayStreamParams, o?: CallOptions): AsyncGenerator<ReplayMessage, void, undefined> {
    const { markets, snapshotInterval, depth, from, to } = params;
    const url = this.t.url('/api/v1/replay/stream', [
      ...markets.map((m): [string, string] => ['markets', m]),
      // This route's window is `from` / `to` themselves (not start_timestamp / end_timestamp).
      ...toQuery({ from, to, snapshotInterval, depth }),
    ]);
    const res = await this.t.request(url, { ...o, accept: 'application/x-ndjson' });
    yield* ndjsonMessages(res.body);
  }

  /** Outages the operator declared (public): periods a venue's data is missing or wrong. */
  outages(params: Params<'/api/v1/outages'> = {}, o?: CallOptions): Promise<Json<'/api/v1/outages'>> {
    return this.t.json(this.t.url('/api/v1/outages', toQuery(params)), o);
  }
}
