import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RequestCounts } from '@booktape/storage';
import { KEY_SECURITY, type Security } from '../http/auth.ts';
import { ApiError, errors, guard, invalidParameter } from '../http/errors.ts';
import { TIME_SCHEMA, optionalField, parseInteger, q, timeDescription } from '../http/params.ts';
import { API_PREFIX } from '../http/prefix.ts';
import type { Services } from '../services.ts';
import { usageAccess } from './access.ts';
import { periodOf } from './limits.ts';
import { recentSchema, requestCountSchema, timeframeSchema, usageSchema } from './schemas.ts';
import {
  USAGE_LIMITS,
  bucketCount,
  bucketStarts,
  decodeRecentCursor,
  encodeRecentCursor,
  fillSeries,
  parseInstant,
  parseStatus,
  type StatusFilter,
} from './usage-params.ts';

/**
 * A user's usage: the quota this period (`/usage`, live from the Redis counter) and the
 * request history (`/user/{user_id}/requests/*`, from the request log, which trails by at
 * most REQUEST_LOG_FLUSH_MS). Not billable. Who may call: see quota/access.ts.
 */

const iso = (ms: number) => new Date(ms).toISOString();

export const usageRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, quota, subscriptions, requests } = services;
  // Billable endpoints (without the prefix): the values `endpoint` may filter on.
  const billableUrls = services.billable.urls;
  const prefix = API_PREFIX;
  const access = usageAccess(config.adminToken, services.keys);
  // The user's own key, or the admin token; with no token configured the key is optional.
  const security: Security = [...KEY_SECURITY, config.adminToken ? { adminToken: [] } : {}];
  const onRequest = access.userScoped;
  const userId = () => q.text('The user (as given to POST /keys).', 128);
  const userParams = z.object({ user_id: userId() });

  const windowFields = {
    from: optionalField((r) => parseInstant(r, 'start'), `${timeDescription('Window start', 'start')} Default: the start of this month (UTC).`, TIME_SCHEMA),
    to: optionalField((r) => parseInstant(r, 'end'), `${timeDescription('Window end', 'end')} Default: now.`, TIME_SCHEMA),
  };
  const filterFields = {
    endpoint: optionalField(
      (r) => {
        const e = r.trim().startsWith(prefix) ? r.trim().slice(prefix.length) : r.trim();
        return billableUrls.has(e) ? { ok: true, value: e } : { ok: false, message: `must be a billable endpoint such as /exchange-a/market/data (one of ${[...billableUrls].sort().join(', ')})` };
      },
      'Only requests to this endpoint, e.g. /exchange-a/market/data (the /api/v1 prefix is optional).',
    ),
    status: optionalField(parseStatus, 'Only requests answered with this status (e.g. 200, 429) or class (2xx, 4xx, 5xx).'),
  };

  function window(from: number | undefined, to: number | undefined, now = Date.now()): { fromMs: number; toMs: number } {
    const toMs = to ?? now;
    const fromMs = from ?? periodOf(Math.min(toMs, now)).startMs;
    if (fromMs > toMs) throw invalidParameter('from', 'from must not be after to');
    return { fromMs, toMs };
  }

  const statusRange = (s: StatusFilter | undefined) => (s ? { min: s.min, max: s.max } : undefined);

  app.get(
    '/usage',
    {
      schema: {
        summary: "A user's plan and quota use this period",
        description: 'Calls counted this calendar month (UTC), the plan limit and what remains. Live: read from the quota counter itself.',
        tags: ['usage'],
        security,
        querystring: z.object({ user_id: userId() }),
        response: { 200: usageSchema, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const user = req.query.user_id;
      access.check(req, user);
      const plan = await subscriptions.planOf(user);
      const limit = quota.limits[plan];
      const { used, period } = await quota.used(user);
      return {
        user_id: user,
        tier: plan,
        calls_this_period: used,
        limit: limit.monthly,
        remaining: limit.monthly === null ? null : Math.max(0, limit.monthly - used),
        unlimited: limit.monthly === null,
        per_second_limit: limit.perSecond,
        period: { month: period.id, start: iso(period.startMs), end: iso(period.endMs) },
        resets_at: iso(period.endMs),
      };
    },
  );

  app.get(
    '/user/:user_id/requests/count',
    {
      schema: {
        summary: 'How many requests a user made in a window, by outcome',
        tags: ['usage'],
        security,
        params: userParams,
        querystring: z.object({ ...windowFields, ...filterFields }),
        response: { 200: requestCountSchema, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const user = req.params.user_id;
      access.check(req, user);
      const { fromMs, toMs } = window(req.query.from, req.query.to);
      const c = await guard('ClickHouse', () => requests.count(user, { fromMs, toMs, endpoint: req.query.endpoint, status: statusRange(req.query.status) }));
      return {
        user_id: user,
        from: iso(fromMs),
        to: iso(toMs),
        endpoint: req.query.endpoint ?? null,
        status: req.query.status?.label ?? null,
        count: c.requests,
        ...c,
      };
    },
  );

  app.get(
    '/user/:user_id/requests/timeframe',
    {
      schema: {
        summary: "A user's requests per hour or day (a series for a chart)",
        description: `Every bucket of the window, zeros included, aligned to UTC hours or days; at most ${USAGE_LIMITS.maxBuckets} buckets.`,
        tags: ['usage'],
        security,
        params: userParams,
        querystring: z.object({
          ...windowFields,
          interval: z.enum(['hour', 'day'], { error: 'must be hour or day' }).optional().default('day').meta({ description: 'Bucket size. Default day.' }),
          ...filterFields,
        }),
        response: { 200: timeframeSchema, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const user = req.params.user_id;
      access.check(req, user);
      const { interval } = req.query;
      const { fromMs, toMs } = window(req.query.from, req.query.to);
      if (bucketCount(fromMs, toMs, interval) > USAGE_LIMITS.maxBuckets) {
        throw invalidParameter('from', `the window holds more than ${USAGE_LIMITS.maxBuckets} ${interval} buckets: shorten it${interval === 'hour' ? ' or use interval=day' : ''}`);
      }
      const rows = await guard('ClickHouse', () => requests.timeframe(user, { fromMs, toMs, endpoint: req.query.endpoint, status: statusRange(req.query.status) }, interval));
      const zero = (start: number): RequestCounts & { start: number } => ({ start, requests: 0, successful: 0, rate_limited: 0, failed: 0, bytes: 0 });
      const data = fillSeries(bucketStarts(fromMs, toMs, interval), rows, zero).map(({ start, ...c }) => ({ timestamp: start, start: iso(start), ...c }));
      return {
        user_id: user,
        from: iso(fromMs),
        to: iso(toMs),
        interval,
        endpoint: req.query.endpoint ?? null,
        status: req.query.status?.label ?? null,
        data_points: data.length,
        data,
      };
    },
  );

  app.get(
    '/user/:user_id/requests/recent',
    {
      schema: {
        summary: "A user's most recent requests, newest first",
        tags: ['usage'],
        security,
        params: userParams,
        querystring: z.object({
          limit: optionalField((r) => parseInteger(r, 1, USAGE_LIMITS.recentMax), `Requests per page, 1 to ${USAGE_LIMITS.recentMax}. Default ${USAGE_LIMITS.recentDefault}.`, {
            type: 'integer',
            minimum: 1,
            maximum: USAGE_LIMITS.recentMax,
          }),
          cursor: optionalField((r) => ({ ok: true, value: r }), 'The next_cursor of the previous page, unchanged.'),
        }),
        response: { 200: recentSchema, ...errors },
      },
      onRequest,
    },
    async (req) => {
      const user = req.params.user_id;
      access.check(req, user);
      const limit = req.query.limit ?? USAGE_LIMITS.recentDefault;
      let before: { ts: number; requestId: string } | null = null;
      if (req.query.cursor !== undefined) {
        const c = decodeRecentCursor(config.cursorSecret, req.query.cursor, user);
        if (!c.ok) throw new ApiError(400, 'invalid_cursor', `cursor ${c.message}`, 'cursor');
        before = c.value;
      }
      const rows = await guard('ClickHouse', () => requests.recent(user, limit + 1, before));
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const more = rows.length > limit;
      return {
        user_id: user,
        data: page.map((r) => ({
          request_id: r.request_id,
          time: r.time,
          endpoint: r.endpoint,
          params: parseParams(r.params),
          status: r.status,
          latency_ms: r.latency_ms,
          bytes: r.bytes,
          key_id: r.key_id,
          plan: r.plan || null,
          venue: r.venue || null,
          market: r.market || null,
        })),
        data_count: page.length,
        pagination: { limit, has_more: more, next_cursor: more && last ? encodeRecentCursor(config.cursorSecret, user, { ts: last.ts, requestId: last.request_id }) : null },
      };
    },
  );
};

function parseParams(s: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(s);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
