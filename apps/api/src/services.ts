import type { FastifyRequest } from 'fastify';
import type { ApiKeyRecord, MarketDataRepository } from '@booktape/storage';
import type { MarketCatalogueRepository } from '@booktape/storage';
import type { ApiConfig } from './config.ts';
import type { KeyService } from './keys.service.ts';
import type { SubscriptionService } from './billing/subscription.service.ts';
import type { ResultCache } from './result-cache.ts';
import type { QuotaService } from './quota/quota.service.ts';
import type { RequestLogWriter } from './request-log.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key that authenticated this request (historical-data routes). */
    apiKey: ApiKeyRecord | null;
  }
}

/** What the route plugins need, built once by buildApp. */
export interface Services {
  config: ApiConfig;
  data: MarketDataRepository;
  keys: KeyService;
  cache: ResultCache;
  /** Exchange A market catalogue (slug lookup, outcome token ids of a condition). */
  catalogue: MarketCatalogueRepository;
  /** Plans and billing: `subscriptions.planOf(userId)` is the plan in force now. */
  subscriptions: SubscriptionService;
  /** Plan limits and the per-user quota counters (Redis, rebuilt from the request log). */
  quota: QuotaService;
  /** The request log of billable requests, written to ClickHouse in batches. */
  requestLog: RequestLogWriter;
  /**
   * onRequest hook of every historical-data route: Bearer key required. A route with this
   * hook is billable: the quota check and the request log are added to it (quota/billable.hooks.ts).
   */
  requireKey: (req: FastifyRequest) => Promise<void>;
}
