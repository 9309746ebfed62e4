import type { FastifyRequest, RouteOptions } from 'fastify';
import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import type {
  ExportRepository,
  ClickHouse,
  CoverageRepository,
  MarketCatalogueRepository,
  MarketDataRepository,
  OutagesRepository,
  ReplayRepository,
  RequestLogRepository,
  StreamPoolStats,
} from '@booktape/storage';
import type { BookReader, SummaryReader } from '@booktape/summaries';
import type { ApiConfig } from './config.ts';
import type { ResultCache } from './http/result-cache.ts';
import type { SubscriptionService } from './billing/subscription.service.ts';
import type { MarketChecksSource } from './coverage/coverage.ts';
import type { KeyService } from './keys/keys.service.ts';
import type { SlugLookupService } from './lookup/lookup.service.ts';
import type { Monitoring } from './monitoring/index.ts';
import type { FootprintReader } from './monitoring/footprint.ts';
import type { QuotaService } from './usage/quota.service.ts';
import type { ConcurrencyLimiter } from './usage/concurrency.ts';
import type { RequestLogWriter } from './usage/request-log.ts';

/**
 * The contract between the composition root and the route plugins: what the process hands
 * the API (ApiDeps), and what every feature plugin receives (`{ services }`). Types only,
 * so every module can depend on it and it depends on no module that registers routes.
 */

export interface ApiDeps {
  ch: ClickHouse;
  log: Logger;
  /** Key cache and usage notes. Build it with createRedis (fails fast when Redis is down). */
  redis: Redis;
  config: ApiConfig;
  /** Extra health probes of the process this API runs in (Kafka, capture…). */
  probes?: Record<string, Probe>;
  /** Reads the storage footprint for the status; absent: system.parts through `ch` (tests put a failing one here). */
  footprint?: FootprintReader;
}

/** A probe's answer: up or not, optionally with its state and why (shown in /health's `details`). */
export type ProbeResult = boolean | { ok: boolean; state: string; detail: string | null };
export type Probe = () => Promise<ProbeResult> | ProbeResult;

/** What the route plugins need, built once by buildServices (composition.ts). */
export interface Services {
  config: ApiConfig;
  log: Logger;
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
  /** The stored request log, read by the usage and statistics routes. */
  requests: RequestLogRepository;
  /** Order-book summaries: the stored rollups, with the part not rolled up yet computed live. */
  summaries: SummaryReader;
  /** The book at any instant: from the rollup's checkpoints where exact, else the raw events since the last snapshot. */
  books: BookReader;
  /** Exchange A: the condition id an outcome token was rolled up under. */
  assetMarkets: { marketOfAsset(asset: string): Promise<string | null>; assetsOf(market: string, from: string, to: string): Promise<string[]> };
  /** The websocket replay's reads: several markets' records in one serving order (issue 25). */
  replay: ReplayRepository;
  /** Replays running per API key, websocket replays and merged streams together (API_REPLAYS_PER_KEY). */
  replaySlots: ConcurrencyLimiter;
  /** Bulk exports written as Parquet by the engine. */
  exports: ExportRepository;
  /** Exchange A slug → condition ids (catalogue, then the metadata API). */
  lookup: SlugLookupService;
  coverage: CoverageRepository;
  /** Declared outages (coverage map, status page, /outages). */
  outages: OutagesRepository;
  /** The rollup's stored per asset-day checks (coverage map). */
  checks: MarketChecksSource;
  /** Status monitor and Prometheus metrics. */
  monitoring: Monitoring;
  /** /health: every probe (the store, Redis and the process's own), and the embedded stream pool. */
  health: { probes: Record<string, Probe>; streamPool: (now: number) => StreamPoolStats | null };
  /**
   * onRequest hook of every historical-data route: Bearer key required. A route with this
   * hook is billable unless its config says `billable: false`: the quota check and the
   * request log are added to it (usage/billable.hooks.ts).
   */
  requireKey: (req: FastifyRequest) => Promise<void>;
  /** Makes the routes with requireKey billable (an onRoute hook), and lists them. */
  billable: { onRoute: (route: RouteOptions) => void; urls: ReadonlySet<string> };
}
