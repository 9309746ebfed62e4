import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import type { Admin, Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';
import { asVenue } from '@booktape/venues';
import { INGESTOR_REPORT_VERSION, REPORT_OFF_REASON_MAX, REPORT_REASON_MAX, consumerGroupLag, ingestorReportKeys, type IngestorReport, type SinkReport, type Topics, type VenueReport } from '@booktape/messaging';
import type { IngestorConfig } from './config.ts';
import type { Ingestor } from './ingestor.ts';

/** A count per venue, all zero. */
const zeroes = () => Object.fromEntries(VENUES.map((v) => [v, 0])) as Record<Venue, number>;

/**
 * Status reports of an ingestor process, for the API's `/monitoring/status` and status page.
 *
 * In production every app is its own process (docs/rules/shape.md), so the API cannot look into the
 * ingestor's memory: each ingestor writes a small JSON report to Redis every few seconds and
 * the API reads all of them. Keys and schema are the contract in libs/messaging
 * (status-report.ts); the monitoring integration test runs this publisher against the API's
 * reader.
 *
 * A report older than three intervals is stale: the API shows that process as not reporting
 * (crashed, hung, or cut off from Redis) until the key expires after `retentionMs`. A clean
 * stop deletes it.
 */

export type IngestorHealth = ReturnType<Ingestor['health']>;

export interface StatusPublisherDeps {
  /** Not owned: the caller closes it. Build it with createStatusRedis (fails fast). */
  redis: Redis;
  /** ROLLUP_QUEUE_PREFIX. */
  prefix: string;
  log: Logger;
  ingestor: { health(): IngestorHealth; readonly topics: Topics };
  config: Pick<IngestorConfig, 'roles' | 'venues' | 'sinkGroupId'> & { platform: { workerId: number } };
  /** For the sink's consumer lag; without it (or without the sink role) no lag is reported. */
  kafka?: Kafka | null;
  /** How often a report is written. Default 5 s. */
  intervalMs?: number;
  /** How long a report outlives its process (shown as stale meanwhile). Default 1 h. */
  retentionMs?: number;
  /** Default: `<hostname>-w<worker id>-<roles>`, so a restarted process replaces its own report. */
  instance?: string;
  now?: () => number;
}

/**
 * A Redis client for the publisher: while Redis is away a command fails after one reconnect
 * attempt or 2 s (reports are written one at a time, so nothing piles up).
 */
export function createStatusRedis(url: string): Redis {
  const r = new Redis(url, {
    connectionName: 'booktape-status',
    maxRetriesPerRequest: 1,
    commandTimeout: 2000,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 3000),
  });
  r.on('error', () => undefined);
  return r;
}

interface Counters {
  at: number;
  records: Record<Venue, number>;
  stored: number;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function rate(delta: number, ms: number): number {
  return ms > 0 && delta > 0 ? Math.round((delta * 10_000) / ms) / 10 : 0;
}

/**
 * A capture source's status(): exchange B's is the capture stats themselves; exchange A's
 * wraps them in `feeds` (absent while it is still resolving its markets).
 */
function venueStats(s: Record<string, unknown>): { venue: Venue | null; resolving: boolean; enabled: boolean; offReason: string | null; stats: Record<string, unknown> } {
  const wrapped = s['feeds'] !== null && typeof s['feeds'] === 'object' && !Array.isArray(s['feeds']);
  const stats = (wrapped ? s['feeds'] : s) as Record<string, unknown>;
  const venue = str(s['venue']) ?? str(stats['venue']);
  return {
    venue: asVenue(venue),
    resolving: s['resolving'] === true,
    enabled: stats['enabled'] !== false,
    offReason: str(s['offReason']),
    stats,
  };
}

/** The report for one health snapshot (pure): rates are taken against `prev`. */
export function buildReport(
  h: IngestorHealth,
  ctx: { instance: string; workerId: number; roles: IngestorReport['roles']; venues: Record<Venue, boolean>; groupId: string; startedAt: number; intervalMs: number; kafka: SinkReport['kafka'] },
  prev: Counters,
  now: number,
): { report: IngestorReport; counters: Counters } {
  const elapsed = now - prev.at;
  const records = zeroes();
  let capture: IngestorReport['capture'] = null;
  if (h.capture) {
    const byVenue = new Map<Venue, ReturnType<typeof venueStats>>();
    for (const s of h.capture.sources) {
      const v = venueStats(s);
      if (v.venue) byVenue.set(v.venue, v);
    }
    capture = {
      venues: VENUES.map((venue): VenueReport => {
        const c = h.capture!.counters[venue];
        records[venue] = c.records;
        const v = byVenue.get(venue);
        const st = v?.stats ?? {};
        const enabled = ctx.venues[venue] && v !== undefined && v.enabled;
        return {
          venue,
          enabled,
          off_reason: enabled ? null : !ctx.venues[venue] || v === undefined ? 'turned_off' : (v.offReason ?? 'unknown').slice(0, REPORT_OFF_REASON_MAX),
          resolving: v?.resolving ?? false,
          markets: num(st['markets']),
          connections: num(st['connections']),
          connected: num(st['connected']),
          reconnects: num(st['reconnects']),
          last_event_at: str(st['lastDataAt']),
          records_total: c.records,
          events_per_second: rate(c.records - prev.records[venue], elapsed),
          frames_total: c.frames,
          dead_letters_total: c.deadLetters,
        };
      }),
      producer_backlog: num(h.capture.producer.buffered),
      producer_errors: num((h.capture.producer as { errors?: unknown }).errors),
    };
  }
  const stored = h.sink?.stored ?? 0;
  const sink: SinkReport | null = h.sink
    ? {
        group_id: ctx.groupId,
        paused: h.sink.paused,
        consumer: h.sink.consumer,
        // Bounded as the contract reads it: a longer crash message would make the API throw
        // the whole report away, and show this process as not reporting.
        reason: typeof h.sink.reason === 'string' ? h.sink.reason.slice(0, REPORT_REASON_MAX) : h.sink.reason,
        stored_total: h.sink.stored,
        stored_per_second: rate(stored - prev.stored, elapsed),
        last_stored_at: h.sink.lastStoredAt === null ? null : new Date(h.sink.lastStoredAt).toISOString(),
        insert_failures: h.sink.insertFailures,
        dead_lettered: h.sink.deadLettered,
        refused_records: h.sink.refusedRecords,
        kafka: ctx.kafka,
      }
    : null;
  return {
    report: {
      v: INGESTOR_REPORT_VERSION,
      instance: ctx.instance,
      worker_id: ctx.workerId,
      roles: ctx.roles,
      started_at: new Date(ctx.startedAt).toISOString(),
      published_at: new Date(now).toISOString(),
      interval_ms: ctx.intervalMs,
      capture,
      sink,
    },
    counters: { at: now, records, stored },
  };
}

function sanitise(s: string): string {
  return s.replace(/[^A-Za-z0-9_.+-]/g, '_').slice(0, 120);
}

/**
 * Publishes this process's report every `intervalMs` (see the module comment). Never throws
 * and never blocks the ingestor: a Redis or Kafka outage is logged once and retried on the
 * next tick.
 */
export function createStatusPublisher(deps: StatusPublisherDeps) {
  const intervalMs = deps.intervalMs ?? 5000;
  const retentionMs = deps.retentionMs ?? 3_600_000;
  const now = deps.now ?? Date.now;
  const roles: IngestorReport['roles'] = [...(deps.config.roles.capture ? ['capture' as const] : []), ...(deps.config.roles.sink ? ['sink' as const] : [])];
  const instance = sanitise(deps.instance ?? `${hostname()}-w${deps.config.platform.workerId}-${roles.join('+') || 'none'}`);
  const keys = ingestorReportKeys(deps.prefix);
  const log = deps.log.child({ component: 'status-publisher' });
  const topics = deps.ingestor.topics;
  const lagTopics = [...VENUES.map((v) => topics.raw[v]), topics.gaps];
  // Lag checks are bounded so a dead broker cannot stall the reports.
  const lagTimeoutMs = Math.max(500, Math.min(4000, Math.floor(intervalMs * 0.8)));
  // How long a lag read stays the lag while the next read is still on its way. It used to be
  // two intervals: with short intervals on a loaded machine, where one read takes longer than
  // that, every report went out saying the lag could not be read although each read succeeded
  // (the cause of the flaky monitoring test). A read that fails still says so at once.
  const lagStaleMs = Math.max(2 * intervalMs, 10_000);

  const startedAt = now();
  let counters: Counters = { at: startedAt, records: zeroes(), stored: 0 };
  let kafka: SinkReport['kafka'] = { ok: false, checked_at: null, lag: null, lag_by_venue: null };
  let lastLagOkAt = 0;
  let admin: Admin | undefined;
  let lagInFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  let running = false;
  let redisFailing = false;
  let kafkaFailing = false;
  let last: IngestorReport | undefined;

  const wantsLag = deps.config.roles.sink && !!deps.kafka;

  async function checkLag(): Promise<void> {
    try {
      if (!admin) {
        admin = deps.kafka!.admin({ retry: { retries: 1, initialRetryTime: 200, maxRetryTime: 1000 } });
        await admin.connect();
      }
      const lag = await consumerGroupLag(admin, deps.config.sinkGroupId, lagTopics);
      const byVenue = Object.fromEntries(VENUES.map((v) => [v, lag.get(topics.raw[v]) ?? 0])) as Record<Venue, number>;
      lastLagOkAt = now();
      kafka = { ok: true, checked_at: new Date(lastLagOkAt).toISOString(), lag: [...lag.values()].reduce((a, b) => a + b, 0), lag_by_venue: byVenue };
      if (kafkaFailing) log.info('kafka consumer lag readable again');
      kafkaFailing = false;
    } catch (e) {
      kafka = { ok: false, checked_at: kafka.checked_at, lag: null, lag_by_venue: null };
      if (!kafkaFailing) log.warn({ err: (e as Error).message }, 'cannot read the kafka consumer lag; retrying every report');
      kafkaFailing = true;
      const a = admin;
      admin = undefined;
      await a?.disconnect().catch(() => undefined);
    }
  }

  async function refreshLag(): Promise<void> {
    if (!wantsLag) return;
    lagInFlight ??= checkLag().finally(() => (lagInFlight = undefined));
    let t: NodeJS.Timeout | undefined;
    const answered = await Promise.race([lagInFlight.then(() => true), new Promise<false>((r) => (t = setTimeout(() => r(false), lagTimeoutMs)))]);
    clearTimeout(t);
    // Still waiting for the broker: a lag read too long ago is no longer a lag.
    if (!answered && now() - lastLagOkAt > lagStaleMs) kafka = { ...kafka, ok: false, lag: null, lag_by_venue: null };
  }

  async function publish(): Promise<void> {
    await refreshLag();
    const built = buildReport(
      deps.ingestor.health(),
      { instance, workerId: deps.config.platform.workerId, roles, venues: deps.config.venues, groupId: deps.config.sinkGroupId, startedAt, intervalMs, kafka },
      counters,
      now(),
    );
    counters = built.counters;
    last = built.report;
    if (!running) return;
    try {
      const at = Date.parse(built.report.published_at);
      const res = await deps.redis
        .multi()
        .set(keys.report(instance), JSON.stringify(built.report), 'PX', retentionMs)
        .zadd(keys.index, at, instance)
        .zremrangebyscore(keys.index, '-inf', at - retentionMs)
        .exec();
      const failed = res?.find(([err]) => err)?.[0];
      if (failed) throw failed;
      if (redisFailing) log.info('status reports written again');
      redisFailing = false;
    } catch (e) {
      if (!redisFailing) log.warn({ err: (e as Error).message }, 'cannot write the status report to redis; retrying every report');
      redisFailing = true;
    }
  }

  function schedule(): void {
    if (!running) return;
    timer = setTimeout(() => {
      ticking = publish().finally(schedule);
    }, intervalMs);
    timer.unref();
  }

  return {
    instance,
    /** The last report built (tests, logs). */
    get last(): IngestorReport | undefined {
      return last;
    },
    /** Writes the first report at once, then one every interval. */
    start(): void {
      if (running) return;
      running = true;
      ticking = publish().finally(schedule);
    },
    /** Stops reporting and removes this process's report (a clean stop is not a crash). */
    async stop(): Promise<void> {
      if (!running) return;
      running = false;
      clearTimeout(timer);
      // A report still being written goes out before the delete below (same connection,
      // commands in order); one not yet written sees `running` false and is dropped.
      let t: NodeJS.Timeout | undefined;
      await Promise.race([ticking?.catch(() => undefined), new Promise((r) => (t = setTimeout(r, 1000)))]);
      clearTimeout(t);
      if (deps.redis.status === 'ready') {
        await deps.redis
          .multi()
          .del(keys.report(instance))
          .zrem(keys.index, instance)
          .exec()
          .catch((e: Error) => log.warn({ err: e.message }, 'could not remove the status report'));
      }
      await admin?.disconnect().catch(() => undefined);
      admin = undefined;
    },
  };
}

export type StatusPublisher = ReturnType<typeof createStatusPublisher>;
