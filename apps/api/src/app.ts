import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import { ApiKeysRepository, MarketDataRepository, SubscriptionsRepository, closeStreamSessions, type ClickHouse } from '@booktape/storage';
import type { ApiConfig } from './config.ts';
import { ApiError, codeForStatus, errorBody, isUnavailable, type ErrorCode } from './errors.ts';
import { KeyService } from './keys.service.ts';
import { MISSING } from './params.ts';
import { ResultCache } from './result-cache.ts';
import type { Services } from './services.ts';
import { healthRoutes } from './routes/health.route.ts';
import { keysRoutes } from './routes/keys.route.ts';
import { marketDataRoutes } from './routes/market-data.route.ts';
import { marketsRoutes } from './routes/markets.route.ts';
import { orderbookSummaryRoutes } from './routes/orderbook-summary.route.ts';
import { lookupRoutes } from './routes/lookup.route.ts';
import { SlugLookupService } from './lookup.service.ts';
import { MarketCatalogueRepository } from '@booktape/storage';
import { SubscriptionService } from './billing/subscription.service.ts';
import { subscriptionsRoutes } from './routes/subscriptions.route.ts';
import { stripeWebhookRoutes } from './routes/stripe-webhook.route.ts';
import { RequestLogRepository } from '@booktape/storage';
import { RequestLogWriter } from './request-log.ts';
import { QuotaService } from './quota/quota.service.ts';
import { DEFAULT_PLAN_LIMITS } from './quota/limits.ts';
import { billableRoutes } from './quota/billable.hooks.ts';
import { usageRoutes } from './routes/usage.route.ts';
import { statsRoutes } from './routes/stats.route.ts';
import { createMonitoring } from './monitoring/index.ts';
import { monitoringRoutes } from './routes/monitoring.route.ts';

export { errorBody } from './errors.ts';

export interface ApiDeps {
  ch: ClickHouse;
  log: Logger;
  /** Key cache and usage notes. Build it with createRedis (fails fast when Redis is down). */
  redis: Redis;
  config: ApiConfig;
  /** Extra health probes of the process this API runs in (Kafka, capture…). */
  probes?: Record<string, () => Promise<boolean> | boolean>;
}

export const API_PREFIX = '/api/v1';

/** Maps any error to the body of DESIGN §5. Messages are shown only below 500. */
function toErrorBody(err: FastifyError & { statusCode?: number }): { status: number; code: ErrorCode; message: string; param?: string } {
  if (err instanceof ApiError) {
    return { status: err.statusCode, code: err.code, message: err.message, ...(err.param === undefined ? {} : { param: err.param }) };
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const issue = err.validation[0]!;
    const param = issue.instancePath.replace(/^\//, '').split('/')[0] || undefined;
    const missing = issue.message === MISSING;
    const message = param ? `${param} ${issue.message}` : `${err.validationContext ?? 'request'}: ${issue.message}`;
    return { status: 400, code: missing ? 'missing_parameter' : 'invalid_parameter', message, ...(param ? { param } : {}) };
  }
  if (isUnavailable(err)) return { status: 503, code: 'service_unavailable', message: 'a backing service is unavailable, retry later' };
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
  if (status === 500) return { status, code: 'internal_error', message: 'internal error' };
  return { status, code: codeForStatus(status), message: err.message };
}

export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: true,
    // Bodies are tiny here (POST /keys takes none): refuse anything large early.
    bodyLimit: 64 * 1024,
    // A client that stops reading a streamed page would hold a store session for good:
    // after a minute without any socket progress the connection is dropped.
    connectionTimeout: 60_000,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toErrorBody(err);
    if (e.status >= 500) {
      if (e.status === 503) req.log.warn({ err }, 'backing service unavailable');
      else req.log.error({ err }, 'request failed');
    }
    if (e.status === 503) reply.header('retry-after', '1');
    return reply.status(e.status).send(errorBody(e.code, e.message, e.param));
  });
  app.setNotFoundHandler((req, reply) => reply.status(404).send(errorBody('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));

  // Operations: status, status page, Prometheus metrics (every response is counted by route pattern).
  const monitoring = createMonitoring(deps);
  app.addHook('onResponse', async (req, reply) => monitoring.metrics.observe(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime));

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'booktape historical order-book data',
        description: 'Raw order-book events and availability for exchange A (condition ids) and exchange B (tickers). See docs/api.md.',
        version: '1.0.0',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key from POST /api/v1/keys: bt_live_…' },
          adminToken: { type: 'apiKey', in: 'header', name: 'X-Admin-Token' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: `${API_PREFIX}/docs` });

  const keys = new KeyService({
    repo: new ApiKeysRepository(deps.ch),
    redis: deps.redis,
    log: deps.log,
    redisKeyPrefix: deps.config.redisKeyPrefix,
    usageFlushMs: deps.config.usageFlushMs,
  });
  keys.start();
  app.decorateRequest('apiKey', null);
  const subscriptions = new SubscriptionService({
    repo: new SubscriptionsRepository(deps.ch),
    redis: deps.redis,
    log: deps.log,
    redisKeyPrefix: deps.config.redisKeyPrefix,
    billing: deps.config.billing,
  });
  // Plans and quotas: the request log (written in batches) is the record the quota counters
  // in Redis are rebuilt from.
  const requestLogRepo = new RequestLogRepository(deps.ch);
  const requestLog = new RequestLogWriter({ repo: requestLogRepo, log: deps.log, flushMs: deps.config.requestLogFlushMs ?? 2000 });
  requestLog.start();
  const quota = new QuotaService({
    redis: deps.redis,
    repo: requestLogRepo,
    log: deps.log,
    redisKeyPrefix: deps.config.redisKeyPrefix,
    limits: deps.config.plans ?? DEFAULT_PLAN_LIMITS,
    pending: requestLog,
  });
  const services: Services = {
    config: deps.config,
    data: new MarketDataRepository(deps.ch, { maxStreamSessions: deps.config.streamSessions }),
    keys,
    cache: new ResultCache(deps.config.resultCacheMs),
    catalogue: new MarketCatalogueRepository(deps.ch),
    subscriptions,
    quota,
    requestLog,
    requireKey: async (req) => {
      req.apiKey = await keys.authenticate(req.headers.authorization);
    },
  };
  // Every route behind requireKey is billable: quota reservation, request log, 429 in OpenAPI.
  const billable = billableRoutes({ requireKey: services.requireKey, quota, subscriptions, requestLog, prefix: API_PREFIX });
  app.addHook('onRoute', billable.onRoute);
  app.addHook('onClose', async () => {
    await requestLog.stop();
    await keys.stop();
    closeStreamSessions(deps.ch);
  });

  await app.register(
    async (v1) => {
      const api = v1.withTypeProvider<ZodTypeProvider>();
      api.get(
        '/openapi.json',
        { schema: { hide: true, response: { 200: z.record(z.string(), z.unknown()) } } },
        async () => app.swagger() as unknown as Record<string, unknown>,
      );
      await api.register(healthRoutes, { deps });
      await api.register(marketDataRoutes, { services });
      await api.register(marketsRoutes, { services });
      await api.register(orderbookSummaryRoutes, { services, ch: deps.ch, redis: deps.redis });
      await api.register(keysRoutes, { services });
      await api.register(lookupRoutes, {
        lookup: new SlugLookupService({
          catalogue: services.catalogue,
          log: deps.log,
          gamma: deps.config.slugLookup?.gammaUrl ? { url: deps.config.slugLookup.gammaUrl, timeoutMs: deps.config.slugLookup.timeoutMs } : null,
          missCacheMs: deps.config.slugLookup?.missCacheMs ?? 30_000,
        }),
      });
      await api.register(subscriptionsRoutes, { services, subscriptions });
      await api.register(stripeWebhookRoutes, { subscriptions });
      await api.register(usageRoutes, { services, requests: requestLogRepo, billableUrls: billable.urls, apiPrefix: API_PREFIX });
      await api.register(statsRoutes, { services, requests: requestLogRepo });
    },
    { prefix: API_PREFIX },
  );
  await app.register(monitoringRoutes, { monitoring, apiPrefix: API_PREFIX, adminToken: deps.config.adminToken });
  return app as unknown as FastifyInstance;
}
