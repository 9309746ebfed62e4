import { z } from 'zod';
import { PLANS } from '../billing/plans.ts';
import { VENUE_ENUM } from '@booktape/venues';

/** Schemas of the 429 answer and of the usage and statistics endpoints. */

export const quotaExceededSchema = z
  .object({
    error: z.object({
      code: z.literal('rate_limited'),
      message: z.string(),
    }),
    quota: z.object({
      limit: z.enum(['monthly', 'per_second']).describe('Which limit refused the request: the monthly quota or the per-second burst limit.'),
      plan: z.enum(PLANS),
      allowed: z.number().int().describe('The value of that limit.'),
      used: z.number().int().describe('Counted in its window: quota units this month (1 per call, a bulk export\'s days); requests this second.'),
      remaining: z.number().int().describe('allowed − used, never below 0. A bulk export is refused when its days exceed it.'),
      requested: z.number().int().describe('What the refused request counts: 1, or the days of a bulk export (monthly quota).'),
      window: z.string().describe('The window: YYYY-MM for the monthly quota, the second (ISO 8601) for the burst limit.'),
      resets_at: z.string().describe('When the window ends (ISO 8601): the first instant of the next UTC month, or the next second.'),
      retry_after_seconds: z.number().int().describe('Same value as the Retry-After header.'),
    }),
  })
  .describe('A plan limit was reached. The Retry-After header says when to try again.')
  .meta({ id: 'QuotaExceeded' });

export const concurrencyExceededSchema = z
  .object({
    error: z.object({
      code: z.literal('too_many_concurrent_requests'),
      message: z.string(),
    }),
    concurrency: z.object({
      limit: z
        .enum(['requests', 'stream_sessions', 'replays'])
        .describe("Which share the key has used up: its requests in progress (PLAN_<PLAN>_CONCURRENT), its share of this API process's raw-data stream sessions (API_STREAM_SESSIONS_PER_KEY), or its websocket replays running (API_REPLAYS_PER_KEY)."),
      allowed: z.number().int().describe('How many of them one API key may have at once on this API process.'),
      retry_after_seconds: z.number().int().describe('Same value as the Retry-After header.'),
    }),
  })
  .describe('The key already has as many requests in progress, or raw-data streams open, as it may: retry once one of them has ended (Retry-After). Not counted against the quota.')
  .meta({ id: 'ConcurrencyExceeded' });

/** Every 429 of a billable route: a plan limit, or too many requests in progress. */
export const tooManyRequestsSchema = z.union([quotaExceededSchema, concurrencyExceededSchema]);

const iso = () => z.string().describe('ISO 8601, UTC, milliseconds.');

export const periodSchema = z
  .object({
    month: z.string().describe('YYYY-MM: the calendar month (UTC) the quota counts.'),
    start: iso(),
    end: iso().describe('First instant of the next month (exclusive): when the count resets.'),
  })
  .meta({ id: 'UsagePeriod' });

export const usageSchema = z
  .object({
    user_id: z.string(),
    tier: z.enum(PLANS).describe('The plan in force now.'),
    calls_this_period: z.number().int().describe('Successful billable requests this period, in quota units: 1 per call, a bulk export counts its days.'),
    limit: z.number().int().nullable().describe('Monthly quota of the plan; null when unlimited.'),
    remaining: z.number().int().nullable().describe('limit − calls (never below 0); null when unlimited.'),
    unlimited: z.boolean(),
    per_second_limit: z.number().int().nullable().describe('Burst limit of the plan (requests per second, all keys of the user together); null when unlimited.'),
    period: periodSchema,
    resets_at: iso(),
  })
  .meta({ id: 'Usage', description: "The user's plan, and the quota used and left this period." });

const counts = {
  requests: z.number().int().describe('All requests (any status).'),
  successful: z.number().int().describe('2xx: these are the billed ones.'),
  rate_limited: z.number().int().describe('429: refused by a plan limit.'),
  failed: z.number().int().describe('Other non-2xx answers (bad parameters, unavailable store, client gone).'),
  bytes: z.number().int().describe('Response body bytes.'),
};

export const requestCountSchema = z
  .object({
    user_id: z.string(),
    from: iso(),
    to: iso(),
    endpoint: z.string().nullable(),
    status: z.string().nullable(),
    count: z.number().int().describe('Requests matching every filter.'),
    ...counts,
  })
  .meta({ id: 'RequestCount', description: 'The requests matching the filters in the window, by outcome.' });

export const timeframeSchema = z
  .object({
    user_id: z.string(),
    from: iso(),
    to: iso(),
    interval: z.enum(['hour', 'day']),
    endpoint: z.string().nullable(),
    status: z.string().nullable(),
    data_points: z.number().int(),
    data: z.array(z.object({ timestamp: z.number().int().describe('Bucket start, Unix ms (UTC-aligned).'), start: iso(), ...counts })),
  })
  .meta({ id: 'RequestTimeframe', description: 'Requests per bucket of the window, zeros included.' });

export const recentSchema = z
  .object({
    user_id: z.string(),
    data: z.array(
      z.object({
        request_id: z.string(),
        time: iso().describe('When the request arrived.'),
        endpoint: z.string(),
        params: z.record(z.string(), z.unknown()).describe('Query parameters as the endpoint understood them (normalised ids; cursors shortened).'),
        status: z.number().int(),
        latency_ms: z.number(),
        bytes: z.number().int(),
        key_id: z.string(),
        plan: z.string().nullable().describe('The plan in force; null when the request was refused before the quota check (bad parameters).'),
        venue: z.string().nullable(),
        market: z.string().nullable(),
      }),
    ),
    data_count: z.number().int(),
    pagination: z.object({
      limit: z.number().int(),
      has_more: z.boolean(),
      next_cursor: z.string().nullable(),
    }),
  })
  .meta({ id: 'RecentRequests', description: 'One page of the most recent requests, newest first.' });

const latency = z.object({ p50: z.number().nullable(), p95: z.number().nullable() }).describe('Latency quantiles in ms (approximate).');

export const statsSchema = z
  .object({
    generated_at: iso(),
    period: periodSchema,
    requests_today: z.number().int().describe('Requests since 00:00 UTC today, any status.'),
    requests_this_period: z.number().int().describe('Requests this month, any status.'),
    from: iso(),
    to: iso(),
    totals: z.object({ ...counts, distinct_users: z.number().int(), distinct_keys: z.number().int(), latency_ms: latency }).describe('Over [from, to].'),
    endpoints: z.array(z.object({ endpoint: z.string(), ...counts, latency_ms: latency })).describe('Over [from, to], busiest first.'),
  })
  .meta({ id: 'ServiceStats', description: 'Service-wide request statistics.' });

export const popularMarketsSchema = z
  .object({
    venue: z.enum(VENUE_ENUM).nullable(),
    period: z.string(),
    from: iso(),
    to: iso(),
    markets: z.array(
      z.object({
        venue: z.string(),
        market: z.string().describe('Condition id (exchange A) or ticker (exchange B).'),
        requests: z.number().int().describe('Successful requests about the market.'),
        distinct_users: z.number().int(),
        last_requested_at: iso(),
      }),
    ),
  })
  .meta({ id: 'PopularMarkets', description: 'The markets asked for most in the period, most first.' });
