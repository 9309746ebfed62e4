import type { FastifyRequest } from 'fastify';
import type { ApiKeyRecord, MarketDataRepository } from '@booktape/storage';
import type { MarketCatalogueRepository } from '@booktape/storage';
import type { ApiConfig } from './config.ts';
import type { KeyService } from './keys.service.ts';
import type { SubscriptionService } from './billing/subscription.service.ts';
import type { ResultCache } from './result-cache.ts';

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
  /** onRequest hook of every historical-data route: Bearer key required. */
  requireKey: (req: FastifyRequest) => Promise<void>;
}
