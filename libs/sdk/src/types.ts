/**
 * Types of the API's endpoints, read from the generated document types by path (not by
 * operationId, so they hold while the document's naming changes).
 */
import type { components, paths } from './generated/schema.ts';
import type { SdkQuery } from './query.ts';

export type { components, paths };
export type Schemas = components['schemas'];
export type Venue = 'exchange-a' | 'exchange-b';

type GetOp<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;

/** The query parameters of `GET path`, as the API names them. */
export type ApiQuery<P extends keyof paths> = GetOp<P> extends { parameters: { query?: infer Q } } ? ([NonNullable<Q>] extends [never] ? Record<never, never> : NonNullable<Q>) : never;

/** The JSON body of a 200 to `GET path`. */
export type ApiJson<P extends keyof paths> = GetOp<P> extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;

/** The query of `GET path` as the SDK takes it (camelCase, `from`/`to`/`at`), without the keys in `Drop`. */
export type Params<P extends keyof paths, Drop extends string = never> = Omit<SdkQuery<ApiQuery<P>>, Drop | 'format'>;

export type VenuePath<V extends Venue, Rest extends string> = `/api/v1/${V}/${Rest}` & keyof paths;

export type DataPage<V extends Venue> = ApiJson<VenuePath<V, 'market/data'>>;
export type RangePage<V extends Venue> = ApiJson<VenuePath<V, 'market/data/range'>>;
/** One raw record of a venue (exchange A: an event; exchange B: a record). */
export type RawRecord<V extends Venue> = V extends 'exchange-a' ? Schemas['ExchangeARawEvent'] : Schemas['ExchangeBRawRecord'];
export type Availability<V extends Venue> = ApiJson<VenuePath<V, 'market/date-range'>>;
export type MarketsPage<V extends Venue> = ApiJson<VenuePath<V, 'market/list'>>;
export type Summary<V extends Venue> = ApiJson<VenuePath<V, 'market/orderbook-summary'>>;
export type SummaryBucket = Schemas['SummaryBucket'];
export type Book<V extends Venue> = ApiJson<VenuePath<V, 'market/book'>>;
export type BookSnapshots<V extends Venue> = ApiJson<VenuePath<V, 'market/book-snapshots'>>;
export type Coverage<V extends Venue> = ApiJson<VenuePath<V, 'market/coverage'>>;
export type CoverageDay = Schemas['CoverageDay'];
export type BookLevel = Schemas['BookLevel'];
export type BookA = ApiJson<'/api/v1/exchange-a/market/book'>;
export type BookB = ApiJson<'/api/v1/exchange-b/market/book'>;
