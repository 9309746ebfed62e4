import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TooManyBucketsError, planBuckets, summaryBucketsJson, utcDayWindow, type ExactBucket } from '@booktape/book';
import type { ClickHouse } from '@booktape/storage';
import type { Redis } from 'ioredis';
import { guard, invalidParameter } from '../errors.ts';
import { earliestMs, parseInteger, parseTimestamp, q } from '../params.ts';
import { errors } from '../schemas.ts';
import type { Services } from '../services.ts';
import { SummaryReader } from '../summary-reader.ts';

const ohlc = z.object({ open: z.number(), high: z.number(), low: z.number(), close: z.number() }).nullable();
const bucket = z
  .object({
    timestamp: z.number().int().describe('Bucket start, Unix milliseconds.'),
    quote_count: z.number().int(),
    is_forward_filled: z.boolean(),
    best_bid: z.number().nullable(),
    best_bid_size: z.number().nullable(),
    best_ask: z.number().nullable(),
    best_ask_size: z.number().nullable(),
    mid_price: z.number().nullable(),
    spread: z.number().nullable(),
    best_bid_ohlc: ohlc,
    best_ask_ohlc: ohlc,
    mid_price_ohlc: ohlc,
    spread_ohlc: ohlc,
  })
  .meta({ id: 'SummaryBucket' });
const summaryCommon = {
  date: z.string().nullable(),
  start_timestamp: z.number().int().optional(),
  end_timestamp: z.number().int().optional(),
  resolution_seconds: z.number().int(),
  data_points: z.number().int(),
  data: z.array(bucket),
};

/**
 * Summary answers are written as JSON text by this module to the schema's shape (the
 * schema still documents them in OpenAPI); validating up to 100,000 buckets again on the
 * way out would cost more than computing them. Error bodies are objects: stringified.
 */
const plainJson = () => (data: unknown) => (typeof data === 'string' ? data : JSON.stringify(data));

const optionalText = (parse: (raw: string) => { ok: true; value: number } | { ok: false; message: string }, description: string) =>
  z
    .string()
    .optional()
    .meta({ description })
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const r = parse(v);
      if (!r.ok) {
        ctx.addIssue({ code: 'custom', message: r.message });
        return z.NEVER;
      }
      return r.value;
    });

const windowQuery = {
  date: z.string().optional().meta({ description: 'UTC date YYYY-MM-DD; required unless both timestamps are given.' }),
  start_timestamp: optionalText(parseTimestamp, 'Window start, inclusive; Unix seconds or milliseconds. Together with end_timestamp.'),
  end_timestamp: optionalText(parseTimestamp, 'Window end, inclusive; Unix seconds or milliseconds. Together with start_timestamp.'),
  resolution: optionalText((r) => parseInteger(r, 1, 3600), 'Bucket size in seconds, 1 to 3600. Default 60.'),
};

/**
 * Order-book summaries (interface 4.3, DESIGN §4) from the rollup worker's stored buckets,
 * with the part not rolled up yet computed live from the raw events (SummaryReader), so an
 * answer equals the rules over everything stored, seconds-old data included.
 */
export const orderbookSummaryRoutes: FastifyPluginAsyncZod<{ services: Services; ch: ClickHouse; redis: Redis }> = async (app, { services, ch, redis }) => {
  const { config, requireKey } = services;
  const security = [{ bearerAuth: [] }];
  const reader = new SummaryReader(ch, redis, config.rollupQueuePrefix ?? 'booktape');

  function plan(venue: 'exchange-a' | 'exchange-b', query: { date?: string | undefined; start_timestamp?: number | undefined; end_timestamp?: number | undefined; resolution?: number | undefined }) {
    const { date, start_timestamp: start, end_timestamp: end } = query;
    const resolution = query.resolution ?? 60;
    if (date !== undefined && (start !== undefined || end !== undefined)) throw invalidParameter('date', 'give either date or start_timestamp and end_timestamp, not both');
    if ((start === undefined) !== (end === undefined)) throw invalidParameter(start === undefined ? 'start_timestamp' : 'end_timestamp', 'start_timestamp and end_timestamp must be given together');
    let window: { startMs: number; endMs: number };
    if (date !== undefined) {
      const parsed = q.date().safeParse(date);
      if (!parsed.success) throw invalidParameter('date', parsed.error.issues[0]?.message ?? 'must be a date YYYY-MM-DD');
      window = utcDayWindow(parsed.data);
    } else if (start !== undefined && end !== undefined) {
      if (start > end) throw invalidParameter('start_timestamp', 'start_timestamp must not be after end_timestamp');
      window = { startMs: start, endMs: end };
    } else {
      throw invalidParameter('date', 'date is required unless start_timestamp and end_timestamp are given');
    }
    if (venue === 'exchange-a' && window.startMs < earliestMs(config.exchangeAEarliestDate)) {
      throw invalidParameter(date !== undefined ? 'date' : 'start_timestamp', `exchange A summaries start at ${config.exchangeAEarliestDate}`);
    }
    try {
      return { window, resolution, plan: planBuckets(window, resolution) };
    } catch (e) {
      if (e instanceof TooManyBucketsError) throw invalidParameter('resolution', `${e.requested} buckets requested; one answer holds at most ${e.limit}: use a larger resolution or a shorter window`);
      throw invalidParameter('resolution', (e as Error).message);
    }
  }

  // Buckets after "now" hold nothing yet: the series stops at the current bucket.
  const clampToNow = <T extends { plan: ReturnType<typeof planBuckets>; window: { startMs: number; endMs: number }; resolution: number }>(p: T) => {
    const now = Date.now();
    if (p.window.endMs <= now) return p.plan;
    return planBuckets({ startMs: p.window.startMs, endMs: Math.max(p.window.startMs - 1, now) }, p.resolution);
  };

  // The body as JSON text: the small head stringified, the buckets written from their exact decimals.
  const answer = (head: Record<string, unknown>, exact: ExactBucket[], p: ReturnType<typeof plan>, date: string | undefined): string => {
    const fields = {
      ...head,
      date: date ?? null,
      ...(date === undefined ? { start_timestamp: p.window.startMs, end_timestamp: p.window.endMs } : {}),
      resolution_seconds: p.resolution,
      data_points: exact.length,
    };
    return `${JSON.stringify(fields).slice(0, -1)},"data":${summaryBucketsJson(exact)}}`;
  };

  for (const url of ['/exchange-a/market/orderbook-summary', '/market/orderbook-summary']) {
    app.get(
      url,
      {
        schema: {
          summary: `Exchange A order-book summary of one outcome token${url.startsWith('/market') ? ' (legacy alias)' : ''}`,
          tags: ['exchange-a'],
          security,
          querystring: z.object({ condition_id: q.conditionId(), asset_id: q.text('Outcome token (CLOB token) id within the condition.', 128), ...windowQuery }),
          response: { 200: z.object({ market_condition_id: z.string(), asset_id: z.string(), ...summaryCommon }), ...errors },
        },
        onRequest: requireKey,
        serializerCompiler: plainJson,
      },
      async (req, reply) => {
        const p = plan('exchange-a', req.query);
        const key = { venue: 'exchange-a' as const, market: req.query.condition_id, asset: req.query.asset_id };
        const exact = await guard('ClickHouse', () => reader.buckets(key, clampToNow(p), p.resolution));
        reply.type('application/json; charset=utf-8');
        return answer({ market_condition_id: req.query.condition_id, asset_id: req.query.asset_id }, exact, p, req.query.date) as never;
      },
    );
  }

  app.get(
    '/exchange-b/market/orderbook-summary',
    {
      schema: {
        summary: 'Exchange B order-book summary (YES bid; YES ask implied by the NO book)',
        tags: ['exchange-b'],
        security,
        querystring: z.object({ ticker: q.ticker(), ...windowQuery }),
        response: { 200: z.object({ market_ticker: z.string(), ...summaryCommon }), ...errors },
      },
      onRequest: requireKey,
      serializerCompiler: plainJson,
    },
    async (req, reply) => {
      const p = plan('exchange-b', req.query);
      const key = { venue: 'exchange-b' as const, market: req.query.ticker, asset: req.query.ticker };
      const exact = await guard('ClickHouse', () => reader.buckets(key, clampToNow(p), p.resolution));
      reply.type('application/json; charset=utf-8');
      return answer({ market_ticker: req.query.ticker }, exact, p, req.query.date) as never;
    },
  );
};
