import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PUBLIC_SECURITY, adminTokenMatcher } from '../http/auth.ts';
import { errorSchema } from '../http/errors.ts';
import { ApiError } from '../http/errors.ts';
import { API_PREFIX } from '../http/prefix.ts';
import type { Services } from '../services.ts';
import { monitoringStatusSchema } from './status.ts';
import { renderStatusPage } from './status-page.ts';

/**
 * `/metrics` with ADMIN_TOKEN set: the token in `X-Admin-Token`, or as `Authorization:
 * Bearer <token>` (what Prometheus's scrape `authorization` setting sends).
 */
function metricsGuard(adminToken: string | undefined) {
  const matches = adminTokenMatcher(adminToken);
  return async (req: FastifyRequest) => {
    if (!matches) return;
    const header = req.headers['x-admin-token'];
    const auth = req.headers.authorization;
    const given = typeof header === 'string' && header !== '' ? header : typeof auth === 'string' && /^Bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
    if (given === undefined || given === '') throw new ApiError(401, 'unauthorized', 'missing X-Admin-Token header (or Authorization: Bearer <admin token>)');
    if (!matches(given)) throw new ApiError(401, 'unauthorized', 'wrong admin token');
  };
}

/**
 * Operations: `GET /api/v1/monitoring/status` (JSON), `GET /status` (the public status
 * page, HTML) and `GET /metrics` (Prometheus). Status and page need no authentication and
 * show nothing secret; both answer 200 whatever the state (the body says it), including
 * when Redis, ClickHouse or Kafka are down. Registered at the root, so the page and the
 * metrics live where people and scrapers look for them.
 */
export const monitoringRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { monitor, metrics } = services.monitoring;
  const { adminToken } = services.config;
  const statusUrl = `${API_PREFIX}/monitoring/status`;

  app.get(
    statusUrl,
    {
      schema: {
        summary: 'Infrastructure status for the public status page',
        description:
          'Per venue: capture state, connections, last event and events/s; Kafka consumer lag; sink; rollup backlog and its oldest pending asset; ClickHouse and Redis health; ingestor processes; the storage footprint (rows and bytes on disk per table). No authentication. Always 200: `status` says ok, degraded or down. Computed at most once a second, the footprint at most every 30 s.',
        tags: ['service'],
        security: PUBLIC_SECURITY,
        querystring: z.object({}),
        response: { 200: monitoringStatusSchema },
      },
    },
    async (_req, reply) => {
      reply.header('cache-control', 'no-store');
      return monitor.status();
    },
  );

  app.get(
    '/status',
    {
      schema: {
        summary: 'Public status page (HTML, refreshes itself every 10 s)',
        tags: ['service'],
        security: PUBLIC_SECURITY,
        produces: ['text/html'],
        querystring: z.object({}),
        response: { 200: z.string().describe('The status page: the same status as GET /api/v1/monitoring/status, for people.') },
      },
    },
    async (_req, reply) => {
      const html = renderStatusPage(await monitor.status(), { jsonUrl: statusUrl });
      return reply
        .header('cache-control', 'no-store')
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        .header('x-content-type-options', 'nosniff')
        .type('text/html; charset=utf-8')
        .send(html);
    },
  );

  app.get(
    '/metrics',
    {
      onRequest: metricsGuard(adminToken),
      schema: {
        summary: 'Prometheus metrics (text exposition format)',
        description: 'HTTP requests and latency by route pattern, the monitoring status as gauges (the storage footprint per table included), process metrics. Needs the admin token when ADMIN_TOKEN is set.',
        tags: ['service'],
        // With a token: in X-Admin-Token, or as a Bearer token (Prometheus's scrape setting).
        security: adminToken ? [{ adminToken: [] }, { adminBearer: [] }] : PUBLIC_SECURITY,
        produces: ['text/plain'],
        querystring: z.object({}),
        response: {
          200: z.string().describe('The metrics in the Prometheus text exposition format (text/plain; version=0.0.4).'),
          ...(adminToken ? { 401: errorSchema } : {}),
        },
      },
    },
    async (_req, reply) => {
      const text = await metrics.render(await monitor.status());
      return reply.header('cache-control', 'no-store').type(metrics.contentType).send(text);
    },
  );
};
