import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PUBLIC_SECURITY, adminTokenMatcher } from '../http/auth.ts';
import { errorSchema } from '../http/errors.ts';
import { ApiError } from '../http/errors.ts';
import { API_PREFIX } from '../http/prefix.ts';
import type { Services } from '../services.ts';
import { monitoringStatusSchema, type MonitoringStatus } from './status.ts';
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

/** How long a status request waits to learn whether its key is valid (a slow store must not hold the status). */
const AUTH_WAIT_MS = 1_000;

/**
 * Operations: `GET /api/v1/monitoring/status` (JSON), `GET /status` (the public status
 * page, HTML) and `GET /metrics` (Prometheus). Status and page need no authentication and
 * show nothing secret; both answer 200 whatever the state (the body says it), including
 * when Redis, ClickHouse or Kafka are down. Registered at the root, so the page and the
 * metrics live where people and scrapers look for them.
 *
 * Configuration warnings in words (an open service's: HOST, what anyone can do) are for the
 * operator: the JSON status shows them only to a request with a valid API key or the admin
 * token; anyone else, and the public page, see only the short `operator_routes_open` flag.
 */
export const monitoringRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { monitor, metrics } = services.monitoring;
  const { adminToken } = services.config;
  const statusUrl = `${API_PREFIX}/monitoring/status`;
  const adminMatches = adminTokenMatcher(adminToken);

  /** The status as anyone may see it: the warnings' text left out. */
  const publicView = (s: MonitoringStatus): MonitoringStatus => (s.warnings.length === 0 ? s : { ...s, warnings: [] });

  /**
   * Whether the request is the operator's or a customer's: the admin token (when one is set)
   * or a valid API key. Never fails: a wrong or unreadable credential is simply anonymous.
   */
  async function authenticated(req: FastifyRequest): Promise<boolean> {
    const admin = req.headers['x-admin-token'];
    if (adminMatches && typeof admin === 'string' && admin !== '' && adminMatches(admin)) return true;
    const auth = req.headers.authorization;
    if (typeof auth !== 'string' || auth === '') return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), AUTH_WAIT_MS)));
    try {
      return await Promise.race([services.keys.authenticate(auth).then(() => true, () => false), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  app.get(
    statusUrl,
    {
      schema: {
        summary: 'Infrastructure status for the public status page',
        description:
          'Per venue: capture state, connections, last event and events/s; Kafka consumer lag; sink; rollup backlog and its oldest pending asset; ClickHouse and Redis health; ingestor processes; the storage footprint (rows and bytes on disk per table). No authentication needed; `warnings` (configuration warnings in words) only with a valid API key (Bearer) or the admin token (X-Admin-Token), anyone sees the `operator_routes_open` flag. Always 200 (a wrong key only leaves the warnings out): `status` says ok, degraded or down. Computed at most once a second, the footprint at most every 30 s.',
        tags: ['service'],
        security: PUBLIC_SECURITY,
        querystring: z.object({}),
        response: { 200: monitoringStatusSchema },
      },
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      const s = await monitor.status();
      return s.warnings.length > 0 && (await authenticated(req)) ? s : publicView(s);
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
      const html = renderStatusPage(publicView(await monitor.status()), { jsonUrl: statusUrl });
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
