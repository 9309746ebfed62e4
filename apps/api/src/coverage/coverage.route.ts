import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { KEY_SECURITY } from '../http/auth.ts';
import { errors, guard, invalidParameter } from '../http/errors.ts';
import { q } from '../http/params.ts';
import { slugRoute } from '../market-data/market-by-slug.ts';
import { dataFloor, VENUES, marketOf, venueName, type VenueApi } from '../market-data/venues.ts';
import type { Services } from '../services.ts';
import { coverageAnswer } from './coverage.schemas.ts';
import { COVERAGE_MAX_DAYS, DAY_MS, coverageDays, datesBetween } from './coverage.ts';

/**
 * The coverage map: per UTC day of one market, what is stored and where it cannot be
 * trusted. Needs a Bearer key but is not billed (`billable: false`): it is what a user
 * consults before choosing what to download.
 */
export const coverageRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, coverage, outages, checks, requireKey, lookup } = services;
  const range = { start_date: q.date(), end_date: q.date() };

  async function answer(v: VenueApi, market: string, start: string, end: string) {
    const { venue } = v;
    if (end < start) throw invalidParameter('end_date', 'end_date must not be before start_date');
    const days = (Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS + 1;
    if (days > COVERAGE_MAX_DAYS) throw invalidParameter('end_date', `at most ${COVERAGE_MAX_DAYS} days per request (start_date to end_date inclusive), got ${days}`);
    const first = dataFloor(v, config);
    if (first !== undefined && start < first) {
      throw invalidParameter('start_date', `start_date must not be before ${first}: ${venueName(v)} data is served from that date on`);
    }
    const fromMs = Date.parse(`${start}T00:00:00Z`);
    const toMs = Date.parse(`${end}T00:00:00Z`) + DAY_MS;
    const [{ assets: raw, sources }, checkRows, declared] = await guard('ClickHouse', () =>
      Promise.all([coverage.rawDays(venue, market, start, end), checks.checksForMarket(venue, market, start, end), outages.list({ venue, fromMs, toMs })]),
    );
    // Capture gaps of a venue with outcome tokens name markets or, without the catalogue, tokens.
    const ids = v.asset ? [market, ...new Set([...raw.map((r) => r.asset), ...checkRows.map((c) => c.asset)])] : [market];
    const gaps = await guard('ClickHouse', () => coverage.captureGaps(venue, fromMs, toMs, ids));
    return coverageDays({ venue, dates: datesBetween(start, end), raw, sources, captureGaps: gaps, checks: checkRows, outages: declared, now: Date.now() });
  }

  const description = `One item per UTC day from start_date to end_date (at most ${COVERAGE_MAX_DAYS} days). Needs a key; not billed. See docs/api.md "Coverage".`;

  for (const v of VENUES) {
    const bySlug = slugRoute(v, lookup, { marketRequired: true, outcome: 'none' });
    app.get(
      `/${v.venue}/market/coverage`,
      {
        schema: {
          summary: `${v.label} coverage map of one market: per day, records, their sources, gaps and cross-checks`,
          description,
          tags: [v.venue],
          security: KEY_SECURITY,
          answerHeaders: bySlug.answerHeaders,
          querystring: z.object({ [v.marketParam]: v.market(), ...bySlug.fields, ...range }),
          response: { 200: coverageAnswer(v.marketField).describe('Per UTC day: records, gaps and cross-checks of the market.'), ...errors },
        },
        onRequest: requireKey,
        ...bySlug.options,
        config: { billable: false },
      },
      async (req) => {
        const { start_date, end_date } = req.query;
        const market = marketOf(v, req.query);
        return { [v.marketField]: market, start_date, end_date, data: await answer(v, market, start_date, end_date) };
      },
    );
  }
};
