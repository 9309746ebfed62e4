import { z } from 'zod';

/** The order-book summary answer (interface 4.3); written as JSON text by the route, documented here. */

const ohlc = z.object({ open: z.number(), high: z.number(), low: z.number(), close: z.number() }).nullable();
const summaryBucket = z
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
/** The answer's fields after those naming the series (venue table). */
export const summaryCommon = {
  date: z.string().nullable(),
  start_timestamp: z.number().int().optional(),
  end_timestamp: z.number().int().optional(),
  resolution_seconds: z.number().int(),
  data_points: z.number().int(),
  data: z.array(summaryBucket),
};
