export { BooktapeClient, ExchangeAClient, KeysClient, UsageClient, VenueClient, type BooktapeClientOptions, type CallOptions, type ExportFile, type PageSize } from './client.ts';
export { BooktapeError, type ApiErrorCode, type QuotaInfo } from './errors.ts';
export { parseRetryAfter, retryDelay, DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
export { toQuery, type DateInput, type TimeInput, type SdkQuery } from './query.ts';
export { nextLink } from './pages.ts';
export * from './helpers.ts';
export type * from './types.ts';
export type { FetchLike } from './transport.ts';
export { ndjsonMessages, type ReplayLevel, type ReplayMessage, type ReplayStreamParams } from './replay.ts';
