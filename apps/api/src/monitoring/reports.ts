import { z } from 'zod';
import type { Redis } from 'ioredis';

/**
 * Reader of the ingestors' status reports in Redis. The writer is
 * apps/ingestor/src/status-publisher.ts (the API does not depend on the ingestor package, so
 * the layout is repeated here and held together by monitoring.int.test.ts, which runs the
 * real publisher against this reader). Everything read is validated: a report that does not
 * parse is skipped, never trusted.
 */

export function ingestorReportKeys(prefix: string): { index: string; report: (instance: string) => string } {
  return { index: `${prefix}:monitoring:ingestors`, report: (instance) => `${prefix}:monitoring:ingestor:${instance}` };
}

const venue = z.enum(['exchange-a', 'exchange-b']);
const count = z.number().finite().nonnegative();
const iso = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be a time');

export const venueReportSchema = z.object({
  venue,
  enabled: z.boolean(),
  resolving: z.boolean(),
  markets: count,
  connections: count,
  connected: count,
  reconnects: count,
  last_event_at: iso.nullable(),
  records_total: count,
  events_per_second: count,
  frames_total: count,
  dead_letters_total: count,
});

export const ingestorReportSchema = z.object({
  v: z.literal(1),
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
  sink: z
    .object({
      group_id: z.string(),
      paused: z.boolean(),
      stored_total: count,
      stored_per_second: count,
      last_stored_at: iso.nullable(),
      insert_failures: count,
      dead_lettered: count,
      kafka: z.object({
        ok: z.boolean(),
        checked_at: iso.nullable(),
        lag: count.nullable(),
        lag_by_venue: z.record(venue, count).nullable(),
      }),
    })
    .nullable(),
});

export type IngestorReport = z.infer<typeof ingestorReportSchema>;
export type VenueReport = z.infer<typeof venueReportSchema>;

/** Reports from the index, newest first; at most `max` (a bound on what one request reads). */
export async function readIngestorReports(redis: Redis, prefix: string, max = 200): Promise<IngestorReport[]> {
  const keys = ingestorReportKeys(prefix);
  const instances = await redis.zrevrange(keys.index, 0, max - 1);
  if (instances.length === 0) return [];
  const values = await redis.mget(...instances.map((i) => keys.report(i)));
  const out: IngestorReport[] = [];
  for (const v of values) {
    if (v === null) continue; // expired: the publisher's retention is over
    try {
      const parsed = ingestorReportSchema.safeParse(JSON.parse(v));
      if (parsed.success) out.push(parsed.data);
    } catch {
      // not JSON: skipped like any report that does not parse
    }
  }
  return out;
}

/** A report is live while it is younger than three of its intervals (at least 15 s). */
export function reportIsLive(r: IngestorReport, now: number): boolean {
  return now - Date.parse(r.published_at) <= Math.max(3 * r.interval_ms, 15_000);
}
