import type { IngestorReport } from '@booktape/messaging';
import type { IngestorHealth } from './status-publisher.ts';

/** One ingestor's health at T0 (both roles), and the publisher's context, for the status report's tests. */

export const T0 = Date.parse('2026-03-01T12:00:00Z');

export function health(o: { recordsA?: number; recordsB?: number; stored?: number; paused?: boolean; lastDataAt?: string | null } = {}): IngestorHealth {
  return {
    sink: { ok: !o.paused, consumer: 'running', reason: null, batches: 3, stored: o.stored ?? 0, deadLettered: 1, insertFailures: 2, paused: o.paused ?? false, lastStoredAt: T0 - 500 },
    catalogue: null,
    capture: {
      counters: {
        'exchange-a': { frames: 40, records: o.recordsA ?? 0, controls: 1, deadLetters: 2, lastFrameAt: T0 },
        'exchange-b': { frames: 0, records: o.recordsB ?? 0, controls: 0, deadLetters: 0, lastFrameAt: null },
      },
      producer: { buffered: 17, sent: 100, flushes: 10, errors: 0 },
      sources: [
        // Exchange A wraps its capture stats in `feeds`; exchange B's status is the stats.
        { venue: 'exchange-a', resolving: false, lastError: null, feeds: { venue: 'exchange-a', enabled: true, markets: 4, connections: 2, connected: 1, framesReceived: 40, dataFramesReceived: 38, reconnects: 3, lastDataAt: o.lastDataAt === undefined ? new Date(T0 - 1200).toISOString() : o.lastDataAt, feeds: [] } },
        { venue: 'exchange-b', enabled: false, offReason: 'no_credentials', markets: 0, connections: 0, connected: 0, framesReceived: 0, dataFramesReceived: 0, reconnects: 0, lastDataAt: null, feeds: [] },
      ],
    },
  } as unknown as IngestorHealth;
}

export const ctx = {
  instance: 'host-w7-capture+sink',
  workerId: 7,
  roles: ['capture', 'sink'] as IngestorReport['roles'],
  venues: { 'exchange-a': true, 'exchange-b': true },
  groupId: 'g',
  startedAt: T0 - 60_000,
  intervalMs: 5000,
  kafka: { ok: true, checked_at: new Date(T0).toISOString(), lag: 4, lag_by_venue: { 'exchange-a': 3, 'exchange-b': 1 } },
};
