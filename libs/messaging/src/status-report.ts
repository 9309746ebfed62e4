import { z } from 'zod';
import { VENUE_ENUM } from '@booktape/venues';

/**
 * The status report an ingestor process writes to Redis every few seconds, for the API's
 * `/monitoring/status` and status page. In production every app is its own process, so the
 * API cannot look into the ingestor's memory; this module is the contract between the
 * writer (apps/ingestor/src/status-publisher.ts) and the reader
 * (apps/api/src/monitoring/reports.ts). Layout:
 *
 *   <prefix>:monitoring:ingestor:<instance>   the latest report (JSON), expires after the writer's retention
 *   <prefix>:monitoring:ingestors             sorted set: instance → time of its latest report
 *
 * `<prefix>` is ROLLUP_QUEUE_PREFIX, the Redis namespace every app of a deployment shares.
 * The reader validates everything with `ingestorReportSchema`: a report that does not parse
 * is skipped, never trusted.
 */

export const INGESTOR_REPORT_VERSION = 1;

export function ingestorReportKeys(prefix: string): { index: string; report: (instance: string) => string } {
  return { index: `${prefix}:monitoring:ingestors`, report: (instance) => `${prefix}:monitoring:ingestor:${instance}` };
}

/** How long the free texts of a report may be (the writer cuts them to fit). */
export const REPORT_REASON_MAX = 1000;
export const REPORT_OFF_REASON_MAX = 64;

const venue = z.enum(VENUE_ENUM);
const count = z.number().finite().nonnegative();
const iso = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be a time');

/** One venue's capture in one process. */
export const venueReportSchema = z.object({
  venue,
  /** False: the process does not capture the venue (not in CAPTURE_VENUES, or exchange B without credentials or tickers). */
  enabled: z.boolean(),
  /**
   * Why a venue is not captured (null while it is): `turned_off` (CAPTURE_VENUES),
   * `no_credentials`, `bad_credentials`, `no_markets`. A code, never an error text: the API
   * shows it publicly. Free text so a new code does not make older readers drop the report;
   * absent from reports of ingestors older than the field.
   */
  off_reason: z.string().max(REPORT_OFF_REASON_MAX).nullable().optional(),
  /** Exchange A: still resolving which markets to capture (metadata API unreachable). */
  resolving: z.boolean(),
  markets: count,
  /** Websocket connections (feeds) and how many are open now. */
  connections: count,
  connected: count,
  reconnects: count,
  /** The last frame carrying market data. */
  last_event_at: iso.nullable(),
  /** Normalised records produced to Kafka: total, and per second over the last interval. */
  records_total: count,
  events_per_second: count,
  frames_total: count,
  dead_letters_total: count,
});

export const sinkReportSchema = z.object({
  group_id: z.string(),
  /** True while ClickHouse refuses inserts and the sink holds its batch. */
  paused: z.boolean(),
  /**
   * The Kafka consumer: `restarting` after a crash (nothing stored meanwhile), `joining`
   * before it first joined its group. Absent from reports of sinks older than the consumer state.
   */
  consumer: z.enum(['joining', 'running', 'restarting', 'stopped']).optional(),
  /** Why the sink is not ok (or not consuming yet); null when all is well. */
  reason: z.string().max(REPORT_REASON_MAX).nullable().optional(),
  stored_total: count,
  stored_per_second: count,
  last_stored_at: iso.nullable(),
  insert_failures: count,
  dead_lettered: count,
  /**
   * Records ClickHouse refused as bad data, split out of their batch and dead-lettered (also
   * in `dead_lettered`). Absent from reports of sinks older than the split.
   */
  refused_records: count.optional(),
  /** The consumer group's lag (messages not yet committed), from the Kafka admin API. */
  kafka: z.object({
    ok: z.boolean(),
    checked_at: iso.nullable(),
    lag: count.nullable(),
    lag_by_venue: z.record(venue, count).nullable(),
  }),
});

export const ingestorReportSchema = z.object({
  v: z.literal(INGESTOR_REPORT_VERSION),
  instance: z.string().min(1).max(200),
  worker_id: z.number().int().nonnegative(),
  roles: z.array(z.enum(['capture', 'sink'])),
  started_at: iso,
  published_at: iso,
  interval_ms: z.number().int().positive(),
  capture: z
    .object({
      venues: z.array(venueReportSchema),
      producer_backlog: count,
      producer_errors: count,
    })
    .nullable(),
  sink: sinkReportSchema.nullable(),
});

export type IngestorReport = z.infer<typeof ingestorReportSchema>;
export type VenueReport = z.infer<typeof venueReportSchema>;
export type SinkReport = z.infer<typeof sinkReportSchema>;
