import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import type { ClickHouse, OutagesRepository, StreamPoolStats } from '@booktape/storage';
import type { ApiConfig } from '../config.ts';
import { ApiMetrics } from './metrics.ts';
import { StatusMonitor } from './monitor.ts';
import type { FootprintReader } from './footprint.ts';

export { ApiMetrics, UNMATCHED_ROUTE, statusRegistry } from './metrics.ts';
export { StatusMonitor } from './monitor.ts';
export { FootprintMonitor, type FootprintReader, type FootprintReading } from './footprint.ts';
export { aggregateStatus, footprintStatus, formatAge, formatBytes, monitoringStatusSchema, DEFAULT_THRESHOLDS, type MonitoringStatus, type Thresholds } from './status.ts';
export { renderStatusPage, esc } from './status-page.ts';
export { readIngestorReports } from './reports.ts';
export { readRollupBacklog, type RollupBacklog } from './rollup-backlog.ts';

export interface Monitoring {
  monitor: StatusMonitor;
  metrics: ApiMetrics;
}

/** The status monitor and the metrics of one API app. */
export function createMonitoring(deps: {
  ch: ClickHouse;
  redis: Redis;
  log: Logger;
  config: ApiConfig;
  outages: Pick<OutagesRepository, 'list'>;
  streamPool: () => StreamPoolStats | null;
  footprint?: FootprintReader | undefined;
}): Monitoring {
  return {
    monitor: new StatusMonitor({
      ch: deps.ch,
      redis: deps.redis,
      log: deps.log,
      outages: deps.outages,
      queuePrefix: deps.config.rollupQueuePrefix,
      thresholds: deps.config.monitoring,
      streamPool: deps.streamPool,
      ...(deps.footprint ? { footprint: deps.footprint } : {}),
      warnings: deps.config.openServiceWarning === undefined ? [] : [deps.config.openServiceWarning],
      operatorRoutesOpen: deps.config.openServiceWarning !== undefined,
    }),
    metrics: new ApiMetrics(),
  };
}
