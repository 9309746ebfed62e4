import {
  ApiKeysRepository,
  BookEventsRepository,
  ExportRepository,
  CoverageRepository,
  MarketCatalogueRepository,
  MarketDataRepository,
  OutagesRepository,
  ReplayRepository,
  RequestLogRepository,
  SubscriptionsRepository,
  SummariesRepository,
  closeStreamSessions,
  streamPoolStats,
} from '@booktape/storage';
import { BookReader, SummaryReader } from '@booktape/summaries';
import { SubscriptionService } from './billing/subscription.service.ts';
import { requireKeyHook } from './http/auth.ts';
import { API_PREFIX } from './http/prefix.ts';
import { ResultCache } from './http/result-cache.ts';
import { KeyService } from './keys/keys.service.ts';
import { SlugLookupService } from './lookup/lookup.service.ts';
import { createMonitoring } from './monitoring/index.ts';
import type { ApiDeps, Services } from './services.ts';
import { billableRoutes } from './usage/billable.hooks.ts';
import { QuotaService } from './usage/quota.service.ts';
import { ConcurrencyLimiter } from './usage/concurrency.ts';
import { RequestLogWriter } from './usage/request-log.ts';

export interface Composition {
  services: Services;
  /** Starts what only a serving app needs (the export leftovers sweep); runs once. */
  serving(): void;
  /** Stops the background loops (key usage flush, request-log writer) and the stream sessions. Runs once. */
  stop(): Promise<void>;
}

/**
 * The API's composition root: every service and repository, built once from the process's
 * clients and config, and the background loops started. The route plugins get `services`.
 */
/** An export temp table older than this is a dead build's (a live export takes minutes). */
const EXPORT_LEFTOVER_MS = 6 * 3_600_000;

export function buildServices(deps: ApiDeps): Composition {
  const { ch, redis, log, config } = deps;
  const keys = new KeyService({ repo: new ApiKeysRepository(ch), redis, log, redisKeyPrefix: config.redisKeyPrefix, usageFlushMs: config.usageFlushMs });
  const subscriptions = new SubscriptionService({ repo: new SubscriptionsRepository(ch), redis, log, redisKeyPrefix: config.redisKeyPrefix, billing: config.billing });
  // Plans and quotas: the request log (written in batches) is the record the quota counters
  // in Redis are rebuilt from.
  const requests = new RequestLogRepository(ch);
  const requestLog = new RequestLogWriter({ repo: requests, log, flushMs: config.requestLogFlushMs });
  const quota = new QuotaService({ redis, repo: requests, log, redisKeyPrefix: config.redisKeyPrefix, limits: config.plans, pending: requestLog });
  const catalogue = new MarketCatalogueRepository(ch);
  const summariesRepo = new SummariesRepository(ch);
  const bookEvents = new BookEventsRepository(ch);
  const outages = new OutagesRepository(ch);
  const exports = new ExportRepository(ch);
  const streamPool = (now = Date.now()) => streamPoolStats(ch, config.streamSessions, now);
  const requireKey = requireKeyHook(keys);
  const services: Services = {
    config,
    log,
    data: new MarketDataRepository(ch, { maxStreamSessions: config.streamSessions, maxStreamSessionsPerOwner: config.streamSessionsPerKey }),
    keys,
    cache: new ResultCache(config.resultCacheMs),
    catalogue,
    subscriptions,
    quota,
    requestLog,
    requests,
    summaries: new SummaryReader({ summaries: summariesRepo, events: bookEvents, redis, queuePrefix: config.rollupQueuePrefix }),
    books: new BookReader({
      summaries: summariesRepo,
      events: bookEvents,
      redis,
      queuePrefix: config.rollupQueuePrefix,
      onStateError: (err) => log.warn({ err }, 'rollup state unreadable: book answers rebuilt from raw events'),
      onPreloadError: (err) => log.warn({ err }, 'a day build\'s checkpoint states unreadable at once: book answers read them one by one'),
    }),
    assetMarkets: summariesRepo,
    replay: new ReplayRepository(ch),
    replaySlots: new ConcurrencyLimiter(),
    exports,
    lookup: new SlugLookupService({
      catalogue,
      log,
      gamma: config.slugLookup.gammaUrl ? { url: config.slugLookup.gammaUrl, timeoutMs: config.slugLookup.timeoutMs } : null,
      missCacheMs: config.slugLookup.missCacheMs,
    }),
    coverage: new CoverageRepository(ch),
    outages,
    checks: summariesRepo,
    monitoring: createMonitoring({ ch, redis, log, config, outages, streamPool, footprint: deps.footprint }),
    health: {
      probes: {
        clickhouse: async () => (await ch.client.ping()).success,
        redis: async () => redis.status === 'ready' && (await redis.ping()) === 'PONG',
        ...deps.probes,
      },
      streamPool,
    },
    requireKey,
    // Every route behind requireKey is billable: quota reservation, request log, 429 in OpenAPI.
    billable: billableRoutes({ requireKey, keys, quota, subscriptions, requestLog, concurrency: new ConcurrencyLimiter(), prefix: API_PREFIX }),
  };
  keys.start();
  requestLog.start();
  // Exports of a process that died mid-build leave temp tables and files: swept from when the
  // app serves (an app built only for its OpenAPI document has no store to sweep), then hourly.
  const sweepExports = () =>
    void exports
      .sweep(EXPORT_LEFTOVER_MS)
      .then((n) => n.tables + n.files > 0 && log.info(n, 'removed what failed exports left behind'))
      .catch((err: unknown) => log.warn({ err }, 'export leftovers sweep failed'));
  let sweeper: NodeJS.Timeout | undefined;
  let stopping: Promise<void> | undefined;
  return {
    services,
    serving: () => {
      if (sweeper !== undefined) return;
      sweepExports();
      sweeper = setInterval(sweepExports, 3_600_000);
      sweeper.unref();
    },
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(sweeper);
        await requestLog.stop();
        await keys.stop();
        // Give-backs still being retried stop with the Redis client (a month-end-bounded overcount, logged).
        quota.close();
        closeStreamSessions(ch);
      })()),
  };
}
