import { z } from 'zod';
import { VENUE_ENUM } from '@booktape/venues';

/** Answers of the coverage and declared-outage routes (serialised through these, and in OpenAPI). */

const gap = z
  .object({
    kind: z
      .enum(['disconnect', 'sequence_gap', 'unknown_book', 'outage'])
      .describe(
        "disconnect: capture's connection was down; sequence_gap: the venue skipped a sequence number (exchange B), books unknown until the next snapshot; unknown_book: the rebuilt book of an asset was unknown; outage: declared by the operator.",
      ),
    start_ms: z.number().int(),
    end_ms: z.number().int(),
    detail: z.string(),
  })
  .meta({ id: 'CoverageGap' });

const source = z
  .object({
    source: z.string().describe('As the raw endpoints serve it with include=source: `capture:worker-<worker_id>` (own capture) or `import:<format>:<file>`.'),
    imported: z.boolean().describe('An import, not own capture.'),
    events: z.number().int().describe("This source's records of the day (every outcome token, every record type)."),
    first_event_ms: z.number().int(),
    last_event_ms: z.number().int(),
    hours: z.array(z.number().int().min(0).max(23)).describe('The UTC hours (0-23) of the event times this source holds records in, ascending.'),
  })
  .meta({ id: 'CoverageSource' });

const coverageDay = z
  .object({
    date: z.string(),
    status: z.enum(['complete', 'partial', 'missing']).describe('missing: no records; partial: gaps, venue mismatches or crossed books; complete: none of these.'),
    events: z.number().int().describe('All raw records of the market this day (every outcome token, every record type).'),
    first_event_ms: z.number().int().nullable(),
    last_event_ms: z.number().int().nullable(),
    gaps: z.array(gap).describe('Clipped to the day, by start.'),
    checks: z
      .object({
        book_events: z.number().int(),
        venue_best_checked: z.number().int(),
        venue_best_mismatches: z.number().int(),
        first_mismatch_ms: z.number().int().nullable(),
        crossed_observations: z.number().int(),
        unknown_book_ms: z.number().int(),
      })
      .describe("The rollup's cross-checks of the rebuilt books, summed over the market's outcome tokens."),
    checks_complete: z.boolean().describe('false: the rollup has not checked the whole day yet (today, or not rolled up); `checks` holds what was checked so far.'),
    sources: z
      .array(source)
      .describe('The sources that contributed records this day, by name (own capture per worker, each imported file); empty on a day without records. Their events add up to `events`.'),
    imported_only: z.boolean().describe('true: the day has records and every one came from an import (no own capture).'),
  })
  .meta({ id: 'CoverageDay' });

/** The coverage map of one market; `marketField` names it. */
export const coverageAnswer = (marketField: string) => z.object({ [marketField]: z.string(), start_date: z.string(), end_date: z.string(), data: z.array(coverageDay) });

export const outage = z
  .object({
    id: z.string(),
    venue: z.enum(VENUE_ENUM),
    start_ms: z.number().int(),
    end_ms: z.number().int(),
    start: z.string().describe('ISO 8601.'),
    end: z.string().describe('ISO 8601 (exclusive).'),
    reason: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'DeclaredOutage' });
export const outageList = z.object({ data: z.array(outage), total: z.number().int() }).describe('The declared outages, by start.');
export const outageAnswer = z.object({ success: z.boolean(), data: outage });
