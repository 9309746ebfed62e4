import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { adminSecurity } from '../http/auth.ts';
import { errors, guard, invalidParameter } from '../http/errors.ts';
import { TIME_SCHEMA, optionalField, parseInteger, timeDescription } from '../http/params.ts';
import type { Services } from '../services.ts';
import { usageAccess } from './access.ts';
import { dayStart, periodOf } from './limits.ts';
import { popularMarketsSchema, statsSchema } from './schemas.ts';
import { USAGE_LIMITS, parseInstant } from './usage-params.ts';
import { VENUE_ENUM } from '@booktape/venues';

/**
 * Service-wide statistics from the request log, for the operator (admin token when
 * ADMIN_TOKEN is set). They trail the traffic by at most REQUEST_LOG_FLUSH_MS per API
 * process. Not billable.
 */

const iso = (ms: number) => new Date(ms).toISOString();

export const POPULAR_PERIODS = ['today', '24h', '7d', '30d', 'month'] as const;
type PopularPeriod = (typeof POPULAR_PERIODS)[number];

/** The window of a popular-markets period, ending now. */
export function popularWindow(period: PopularPeriod, now: number): { fromMs: number; toMs: number } {
  switch (period) {
    case 'today':
      return { fromMs: dayStart(now), toMs: now };
    case '24h':
      return { fromMs: now - 86_400_000, toMs: now };
    case '7d':
      return { fromMs: now - 7 * 86_400_000, toMs: now };
    case '30d':
      return { fromMs: now - 30 * 86_400_000, toMs: now };
    case 'month':
      return { fromMs: periodOf(now).startMs, toMs: now };
  }
}

export const statsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, requests } = services;
  const access = usageAccess(config.adminToken, services.keys);
  const security = adminSecurity(config.adminToken);

  app.get(
    '/stats',
    {
      schema: {
        summary: 'Service-wide request statistics',
        description: 'Requests today and this month, and for a window (default: this month so far): outcomes, distinct users and keys, bytes, latency quantiles, per endpoint.',
        tags: ['usage'],
        security,
        querystring: z.object({
          from: optionalField((r) => parseInstant(r, 'start'), `${timeDescription('Window start', 'start')} Default: start of this month (UTC).`, TIME_SCHEMA),
          to: optionalField((r) => parseInstant(r, 'end'), `${timeDescription('Window end', 'end')} Default: now.`, TIME_SCHEMA),
        }),
        response: { 200: statsSchema, ...errors },
      },
      onRequest: access.adminOnly,
    },
    async (req) => {
      const now = Date.now();
      const period = periodOf(now);
      const toMs = req.query.to ?? now;
      const fromMs = req.query.from ?? periodOf(Math.min(toMs, now)).startMs;
      if (fromMs > toMs) throw invalidParameter('from', 'from must not be after to');
      const [today, month, totals, endpoints] = await guard('ClickHouse', () =>
        Promise.all([requests.countSince(dayStart(now)), requests.countSince(period.startMs), requests.stats(fromMs, toMs), requests.endpointStats(fromMs, toMs)]),
      );
      return {
        generated_at: iso(now),
        period: { month: period.id, start: iso(period.startMs), end: iso(period.endMs) },
        requests_today: today,
        requests_this_period: month,
        from: iso(fromMs),
        to: iso(toMs),
        totals,
        endpoints,
      };
    },
  );

  app.get(
    '/stats/popular-markets',
    {
      schema: {
        summary: 'The markets asked for most',
        description: 'Markets by successful requests naming them (raw data, ranges, summaries, availability), most first.',
        tags: ['usage'],
        security,
        querystring: z.object({
          venue: z.enum(VENUE_ENUM, { error: `must be ${VENUE_ENUM.join(' or ')}` }).optional().meta({ description: 'Only this venue. Default: both.' }),
          period: z
            .enum(POPULAR_PERIODS, { error: `must be one of ${POPULAR_PERIODS.join(', ')}` })
            .optional()
            .default('7d')
            .meta({ description: 'today (UTC), the last 24h / 7d / 30d, or month (this calendar month, UTC). Default 7d.' }),
          limit: optionalField((r) => parseInteger(r, 1, USAGE_LIMITS.popularMax), `Markets, 1 to ${USAGE_LIMITS.popularMax}. Default ${USAGE_LIMITS.popularDefault}.`, {
            type: 'integer',
            minimum: 1,
            maximum: USAGE_LIMITS.popularMax,
          }),
        }),
        response: { 200: popularMarketsSchema, ...errors },
      },
      onRequest: access.adminOnly,
    },
    async (req) => {
      const { fromMs, toMs } = popularWindow(req.query.period, Date.now());
      const markets = await guard('ClickHouse', () => requests.popularMarkets(fromMs, toMs, req.query.venue, req.query.limit ?? USAGE_LIMITS.popularDefault));
      return { venue: req.query.venue ?? null, period: req.query.period, from: iso(fromMs), to: iso(toMs), markets };
    },
  );
};
