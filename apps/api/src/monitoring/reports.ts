import type { Redis } from 'ioredis';
import { ingestorReportKeys, ingestorReportSchema, type IngestorReport } from '@booktape/messaging';

/**
 * Reader of the ingestors' status reports in Redis. The writer is
 * apps/ingestor/src/status-publisher.ts; keys and schema are their contract in
 * libs/messaging (status-report.ts), and monitoring.int.test.ts runs the real publisher
 * against this reader. Everything read is validated: a report that does not parse is
 * skipped, never trusted.
 */

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
