import type { Redis } from 'ioredis';
import { ingestorReportKeys, ingestorReportSchema, type IngestorReport } from '@booktape/messaging';

/**
 * Reader of the ingestors' status reports in Redis. The writer is
 * apps/ingestor/src/status-publisher.ts; keys and schema are their contract in
 * libs/messaging (status-report.ts), and monitoring.int.test.ts runs the real publisher
 * against this reader. Everything read is validated: a report that does not parse is
 * never trusted; it is counted, so that the status can say some process's state is unknown
 * (a writer of another version, a corrupted value) instead of leaving it out silently.
 */

export interface ReadReports {
  /** Reports that parse, newest first. */
  reports: IngestorReport[];
  /** Reports present but not JSON, or not in the contract's shape. */
  unreadable: number;
}

/** Reports from the index, newest first; at most `max` (a bound on what one request reads). */
export async function readIngestorReports(redis: Redis, prefix: string, max = 200): Promise<ReadReports> {
  const keys = ingestorReportKeys(prefix);
  const instances = await redis.zrevrange(keys.index, 0, max - 1);
  if (instances.length === 0) return { reports: [], unreadable: 0 };
  const values = await redis.mget(...instances.map((i) => keys.report(i)));
  const reports: IngestorReport[] = [];
  let unreadable = 0;
  for (const v of values) {
    if (v === null) continue; // expired: the publisher's retention is over
    let json: unknown;
    try {
      json = JSON.parse(v);
    } catch {
      unreadable += 1;
      continue;
    }
    const parsed = ingestorReportSchema.safeParse(json);
    if (parsed.success) reports.push(parsed.data);
    else unreadable += 1;
  }
  return { reports, unreadable };
}

/** A report is live while it is younger than three of its intervals (at least 15 s). */
export function reportIsLive(r: IngestorReport, now: number): boolean {
  return now - Date.parse(r.published_at) <= Math.max(3 * r.interval_ms, 15_000);
}
