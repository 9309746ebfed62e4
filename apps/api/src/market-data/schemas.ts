import { z } from 'zod';

/**
 * Response schemas (interface §2). Raw-data pages are streamed, so for them these schemas
 * document the shape (OpenAPI) and the tests check it; every other answer is serialised
 * through them.
 */

const level = z.object({ price: z.string(), size: z.string() });

/** Present only with include=source, as the record's last field. */
const sourceField = z
  .string()
  .optional()
  .describe('Only with include=source: where the record came from, `capture:worker-<worker_id>` (own capture) or `import:<format>:<file>` (an imported file).');

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
    source: sourceField,
  })
  .describe('Exchange A raw event (venue extras such as tick_size may appear as further fields).')
  .meta({ id: 'ExchangeARawEvent' });

const pair = z.array(z.string()).describe('[price, size]');
export const exchangeBRecord = z
  .looseObject({
    type: z
      .enum(['snapshot', 'delta', 'gap', 'ticker', 'trade'])
      .describe(
        'snapshot / delta: the book. gap: a marker capture stores when the venue skipped a sequence number on this subscription; the book of this ticker is unknown from here until its next snapshot. ticker / trade: non-book messages of those channels, the venue message in `data`.',
      ),
    ticker: z.string(),
    timestamp: z.string().describe('ISO 8601 with UTC offset.'),
    epoch_ms: z.number().int(),
    sid: z.number().int().nullable().optional().describe('Venue subscription id.'),
    seq: z.number().int().nullable().describe('Venue sequence number of the subscription (gap: the one that arrived).'),
    yes: z.array(pair).nullable().optional().describe('snapshot: yes bids [price, size].'),
    no: z.array(pair).nullable().optional().describe('snapshot: no bids [price, size].'),
    side: z.enum(['yes', 'no']).optional().describe('delta: the side.'),
    price: z.string().nullable().optional().describe('delta: the price level, as the venue sent it.'),
    delta: z.string().nullable().optional().describe('delta: the signed size change, as the venue sent it.'),
    venue_ts: z.string().nullable().optional().describe("The venue's own time where it sent one, ISO 8601."),
    expected_seq: z.number().int().optional().describe('gap: the sequence number capture expected (absent on the marker of a capture that started mid-session: the book is unknown, nothing is known lost).'),
    data: z.record(z.string(), z.unknown()).optional().describe("ticker / trade: the venue's message as received."),
    received_at: z.string(),
    worker_id: z.number().int(),
    source: sourceField,
  })
  .describe('Exchange B raw record: a book snapshot or delta, a gap marker, or a ticker / trade message.')
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

/** A raw-data page of one UTC date (offset pages); `marketField` names the market. */
export const datePage = (marketField: string, record: z.ZodType) =>
  z.object({
    [marketField]: z.string(),
    date: z.string(),
    data: z.array(record),
    data_count: z.number().int(),
    pagination: offsetPagination,
  });

/** A raw-data page of a time range (cursor pages). */
export const rangePage = (marketField: string, record: z.ZodType) =>
  z.object({
    [marketField]: z.string(),
    start_timestamp: z.number().int(),
    end_timestamp: z.number().int(),
    data: z.array(record),
    data_count: z.number().int(),
    pagination: cursorPagination,
  });

/** Availability: the stored UTC dates of a market. */
export const dateRange = (marketField: string) =>
  z.object({
    [marketField]: z.string(),
    has_data: z.boolean(),
    start_date: z.string().nullable(),
    end_date: z.string().nullable(),
    available_date_count: z.number().int(),
  });

/** A page of the markets with stored data; `listField` holds their ids. */
export const marketList = (listField: string) =>
  z.object({
    total_markets: z.number().int(),
    returned_count: z.number().int(),
    filter_prefix: z.string().nullable(),
    [listField]: z.array(z.string()),
    pagination: offsetPagination,
  });
