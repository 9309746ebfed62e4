import fastifyCompress from '@fastify/compress';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { stripeWebhookRoutes } from './billing/stripe-webhook.route.ts';
import { subscriptionsRoutes } from './billing/subscriptions.route.ts';
import { coverageRoutes } from './coverage/coverage.route.ts';
import { outagesRoutes } from './coverage/outages.route.ts';
import { etagCodingOnRoute } from './http/caching.ts';
import { setErrorHandlers } from './http/error-handler.ts';
import { codeForStatus, errorBody } from './http/errors.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerCors } from './http/cors.ts';
import { REQUEST_ID_HEADER, REQUEST_ID_LOG_LABEL, genRequestId, requestIdHook } from './http/request-id.ts';
import { API_PREFIX } from './http/prefix.ts';
import { keysRoutes } from './keys/keys.route.ts';
import { lookupRoutes } from './lookup/lookup.route.ts';
import { bookRoutes } from './market-data/book.route.ts';
import { exportRoutes } from './market-data/export.route.ts';
import { dailyRoutes } from './market-data/daily.route.ts';
import { marketDataRoutes } from './market-data/market-data.route.ts';
import { marketsRoutes } from './market-data/markets.route.ts';
import { venueAliasRewrite } from './market-data/venues.ts';
import { healthRoutes } from './monitoring/health.route.ts';
import { monitoringRoutes } from './monitoring/monitoring.route.ts';
import type { Services } from './services.ts';
import { replayRoutes } from './replay/replay.route.ts';
import { replayStreamRoutes } from './replay-stream/stream.route.ts';
import { orderbookSummaryRoutes } from './summaries/orderbook-summary.route.ts';
import { statsRoutes } from './usage/stats.route.ts';
import { usageRoutes } from './usage/usage.route.ts';

export { API_PREFIX } from './http/prefix.ts';
export { errorBody } from './http/errors.ts';

/** Every feature's routes under the API prefix, each a plugin taking `{ services }`. */
const FEATURES = [
  healthRoutes,
  marketDataRoutes,
  marketsRoutes,
  orderbookSummaryRoutes,
  bookRoutes,
  exportRoutes,
  dailyRoutes,
  replayRoutes,
  replayStreamRoutes,
  keysRoutes,
  lookupRoutes,
  subscriptionsRoutes,
  stripeWebhookRoutes,
  usageRoutes,
  statsRoutes,
  coverageRoutes,
  outagesRoutes,
];

/** The HTTP face of the services: error handling, OpenAPI, and every feature's routes. */
export async function buildApp(services: Services): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
    trustProxy: true,
    // Bodies are tiny here (POST /keys takes none): refuse anything large early.
    bodyLimit: 64 * 1024,
    // A client that stops reading a streamed page would hold a store session for good:
    // after a minute without any socket progress the connection is dropped.
    connectionTimeout: 60_000,
    // X-Request-Id: the client's well-formed one or a UUID, on every answer and log line (http/request-id.ts).
    requestIdHeader: false,
    genReqId: genRequestId,
    // polymarket / kalshi in the path: the same routes as exchange-a / exchange-b (market-data/venues.ts).
    rewriteUrl: (req) => venueAliasRewrite(req.url ?? '/'),
    // What the router refuses before any hook runs (a path that is not valid percent-encoding,
    // an overlong parameter) answers like every other error, with its request id.
    frameworkErrors: (err, req, res) => {
      const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      void (res as unknown as FastifyReply)
        .header(REQUEST_ID_HEADER, req.id)
        .header('cache-control', 'no-store')
        .code(status)
        .send(errorBody(codeForStatus(status), status === 500 ? 'internal error' : err.message));
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  setErrorHandlers(app as unknown as FastifyInstance);
  app.addHook('onRequest', requestIdHook);
  // Browsers only from the origins CORS_ORIGINS lists; off when it is unset.
  await registerCors(app as unknown as FastifyInstance, services.config.corsOrigins);

  // Every response is counted by route pattern (Prometheus metrics).
  const { metrics } = services.monitoring;
  app.addHook('onResponse', async (req, reply) => metrics.observe(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime));

  // Every answer the client accepts compressed is (zstd where the runtime has it, br, gzip),
  // streamed pages included. Request bodies are tiny and the Stripe webhook needs its bytes
  // as sent: no request decompression.
  await app.register(fastifyCompress, {
    global: true,
    globalDecompression: false,
    encodings: ['zstd', 'br', 'gzip', 'deflate', 'identity'],
    customTypes: /^(?:application\/(?:json|x-ndjson|problem\+json)|text\/(?:csv|plain|html))(?:;|$)/,
  });
  // After the compression plugin's onRoute, so a tag is adjusted after the body was compressed.
  app.addHook('onRoute', etagCodingOnRoute);

  await registerOpenApi(app as unknown as FastifyInstance, services.config);

  app.decorateRequest('apiKey', null);
  app.addHook('onRoute', services.billable.onRoute);

  const opts = { services };
  await app.register(
    async (v1) => {
      const api = v1.withTypeProvider<ZodTypeProvider>();
      api.get(
        '/openapi.json',
        { schema: { hide: true, response: { 200: z.record(z.string(), z.unknown()) } } },
        async () => app.swagger() as unknown as Record<string, unknown>,
      );
      for (const plugin of FEATURES) await api.register(plugin, opts);
    },
    { prefix: API_PREFIX },
  );
  // Status page and metrics at the root, where people and scrapers look for them.
  await app.register(monitoringRoutes, opts);
  return app as unknown as FastifyInstance;
}
