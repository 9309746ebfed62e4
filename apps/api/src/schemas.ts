import { z } from 'zod';
import { errorSchema } from './errors.ts';

/**
 * Response schemas (interface §2). Raw-data pages are streamed, so for them these schemas
 * document the shape (OpenAPI) and the tests check it; every other answer is serialised
 * through them.
 */

const level = z.object({ price: z.string(), size: z.string() });

export const exchangeARecord = z
  .looseObject({
    market: z.string().describe('Market condition id.'),
    asset_id: z.string().describe('Outcome token (CLOB token) id.'),
    timestamp: z.string().describe('Event time in milliseconds.'),
    hash: z.string().describe('Unique hash of the event.'),
    event_type: z.string().describe('Typically book or price_change.'),
    bids: z.array(level).optional(),
    asks: z.array(level).optional(),
    changes: z.array(z.looseObject({ price: z.string(), side: z.string(), size: z.string() })).optional(),
    received_at: z.string().describe('ISO 8601 time of recording.'),
    worker_id: z.number().int().describe('Ingestion worker id.'),
  })
  .describe('Exchange A raw event (venue extras such as tick_size may appear as further fields).')
  .meta({ id: 'ExchangeARawEvent' });

const pair = z.array(z.string()).describe('[price, size]');
export const exchangeBRecord = z
  .looseObject({
    type: z.string().describe('snapshot, delta or gap.'),
    ticker: z.string(),
    timestamp: z.string().describe('ISO 8601 with UTC offset.'),
    epoch_ms: z.number().int(),
    seq: z.number().int().nullable(),
    yes: z.array(pair).nullable().optional(),
    no: z.array(pair).nullable().optional(),
    received_at: z.string(),
    worker_id: z.number().int(),
  })
  .describe('Exchange B raw record (deltas carry side, price and delta).')
  .meta({ id: 'ExchangeBRawRecord' });

export const offsetPagination = z
  .object({
    offset: z.number().int(),
    limit: z.number().int(),
    total_count: z.number().int(),
    has_more: z.boolean(),
  })
  .meta({ id: 'OffsetPagination' });

export const cursorPagination = z
  .object({
    limit: z.number().int(),
    has_more: z.boolean(),
    next_cursor: z.string().nullable().describe('Pass unchanged, with the same market and range, for the next page; null on the last page.'),
  })
  .meta({ id: 'CursorPagination' });

export const exchangeADatePage = z.object({
  market_condition_id: z.string(),
  date: z.string(),
  data: z.array(exchangeARecord),
  data_count: z.number().int(),
  pagination: offsetPagination,
});
export const exchangeBDatePage = z.object({
  market_ticker: z.string(),
  date: z.string(),
  data: z.array(exchangeBRecord),
  data_count: z.number().int(),
  pagination: offsetPagination,
});
export const exchangeARangePage = z.object({
  market_condition_id: z.string(),
  start_timestamp: z.number().int(),
  end_timestamp: z.number().int(),
  data: z.array(exchangeARecord),
  data_count: z.number().int(),
  pagination: cursorPagination,
});
export const exchangeBRangePage = z.object({
  market_ticker: z.string(),
  start_timestamp: z.number().int(),
  end_timestamp: z.number().int(),
  data: z.array(exchangeBRecord),
  data_count: z.number().int(),
  pagination: cursorPagination,
});

const availability = {
  has_data: z.boolean(),
  start_date: z.string().nullable(),
  end_date: z.string().nullable(),
  available_date_count: z.number().int(),
};
export const exchangeADateRange = z.object({ market_condition_id: z.string(), ...availability });
export const exchangeBDateRange = z.object({ market_ticker: z.string(), ...availability });

export const exchangeAList = z.object({
  total_markets: z.number().int(),
  returned_count: z.number().int(),
  filter_prefix: z.string().nullable(),
  market_condition_ids: z.array(z.string()),
  pagination: offsetPagination,
});
export const exchangeBList = z.object({
  total_markets: z.number().int(),
  returned_count: z.number().int(),
  filter_prefix: z.string().nullable(),
  market_tickers: z.array(z.string()),
  pagination: offsetPagination,
});

export const keyCreated = z.object({
  success: z.boolean(),
  data: z.object({
    key_id: z.string(),
    api_key: z.string().describe('The full key. Shown only in this response.'),
    user_id: z.string(),
    name: z.string(),
    created_at: z.string(),
  }),
});
export const keyList = z.object({
  user_id: z.string(),
  api_keys: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      status: z.enum(['active', 'revoked']),
      created_at: z.string(),
      last_used_at: z.string().nullable(),
    }),
  ),
  total: z.number().int(),
});
export const keyRevoked = z.object({
  success: z.boolean(),
  data: z.object({ key_id: z.string(), status: z.enum(['active', 'revoked']), revoked_at: z.string().nullable() }),
});

export const health = z.object({
  status: z.enum(['ok', 'degraded']),
  time: z.string(),
  checks: z.record(z.string(), z.boolean()),
});

/** Error answers every route may give. */
export const errors = {
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
  503: errorSchema,
};
