import { z } from 'zod';
import { VENUES, type Venue } from '@booktape/domain';
import { EXHAUSTED_AFTER_TIMEOUT_MS, streamPoolExhausted, type StreamPoolStats } from '@booktape/storage';
import type { IngestorReport } from '@booktape/messaging';
import type { FootprintReading } from './footprint.ts';
import { reportIsLive } from './reports.ts';
import type { RollupBacklog } from './rollup-backlog.ts';
import { VENUE_ENUM, venueModules } from '@booktape/venues';

/**
 * The public status (`GET /api/v1/monitoring/status`, the status page, the /metrics gauges):
 * a pure function of what the monitor gathered. Public, so it carries states, ages, rates
 * and counts only: no host names, addresses, error texts or configuration.
 */

const title = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
/** `Exchange A (Polymarket)`: each venue's label and own name, from the venue registry. */
export const VENUE_NAMES = Object.fromEntries(venueModules().map((m) => [m.venue, `${title(m.label)} (${title(m.ownName)})`])) as Record<Venue, string>;

/** Declared outages that ended this many days ago or less are still listed. */
export const RECENT_OUTAGE_DAYS = 7;
const MAX_LISTED_OUTAGES = 50;

/** A declared outage as the monitor reads it (storage's DeclaredOutage). */
export interface OutageInput {
  id: string;
  venue: Venue;
  start_ms: number;
  end_ms: number;
  reason: string;
}

export const venueStates = ['up', 'degraded', 'down', 'off', 'unknown'] as const;
export const offReasons = ['turned_off', 'no_credentials', 'bad_credentials', 'no_markets', 'unknown'] as const;
type OffReason = (typeof offReasons)[number];

/** The status page's words for why a venue is not captured. */
const OFF_DETAIL: Record<OffReason, string> = {
  turned_off: 'not captured (turned off in the capture configuration)',
  no_credentials: 'not captured: no API credentials are configured (exchange B needs an API key id and a private key)',
  bad_credentials: 'not captured: the configured API private key cannot be read',
  no_markets: 'not captured: no markets are configured',
  unknown: 'not captured',
};
export type VenueState = (typeof venueStates)[number];

const storeHealth = z.object({ ok: z.boolean(), latency_ms: z.number().int().nullable() });

const footprintFigures = {
  rows: z.number().int().describe('Rows in the active parts (copies a ReplacingMergeTree has not merged away yet included)'),
  bytes_on_disk: z.number().int().describe('Bytes on disk of the active parts: data, marks, indexes'),
  data_uncompressed_bytes: z.number().int().describe('The same columns uncompressed'),
  parts: z.number().int().describe('Active parts'),
};

const footprintSchema = z
  .object({
    state: z.enum(['ok', 'unavailable']).describe('unavailable: the figures cannot be read now (see detail); the rest of the status is not affected'),
    detail: z.string(),
    scope: z
      .enum(['database', 'this_node'])
      .nullable()
      .describe("database: the whole database of a single ClickHouse node; this_node (CLICKHOUSE_CLUSTER set): this node's `_local` tables only, not the cluster's total; null when unavailable"),
    measured_at: z.string().nullable().describe('When the figures were read (they are reused for 30 s); null when unavailable'),
    tables: z
      .array(
        z.object({
          table: z.string(),
          raw: z.boolean().describe('One of the raw tables (one per venue): the stored events'),
          ...footprintFigures,
          bytes_per_row: z.number().nullable().describe('bytes_on_disk / rows, for the raw tables: what one stored event costs; null for other tables and when empty'),
        }),
      )
      .describe('Every MergeTree table of the database, by name (empty tables as 0)'),
    total: z.object(footprintFigures).nullable().describe('All the tables together; null when unavailable'),
    raw: z
      .object({ ...footprintFigures, bytes_per_row: z.number().nullable() })
      .nullable()
      .describe('The raw tables together: bytes_per_row is what one stored event costs on disk; null when unavailable'),
  })
  .describe('What the stored data costs: rows and bytes of the active parts of each ClickHouse table (system.parts), read at most every 30 s. Never makes the status fail or wait: unreadable figures are `unavailable`.');

export const monitoringStatusSchema = z
  .object({
    status: z.enum(['ok', 'degraded', 'down']).describe('down: the API cannot serve data (ClickHouse or Redis unreachable); degraded: capture, Kafka or rollups need attention'),
    reasons: z.array(z.string()).describe('Why the status is not ok, one line each'),
    time: z.string(),
    venues: z.array(
      z.object({
        venue: z.enum(VENUE_ENUM),
        name: z.string(),
        state: z.enum(venueStates).describe('up; degraded (some connections down, or no data for too long); down (no connection, or its capture stopped reporting); off (not captured: see off_reason); unknown (no capture process reports it)'),
        detail: z.string(),
        off_reason: z
          .enum(offReasons)
          .nullable()
          .describe('Why an off venue is not captured: turned_off (capture configuration), no_credentials (exchange B needs an API key id and private key), bad_credentials (the private key cannot be read), no_markets (no markets configured), unknown; null unless off'),
        markets: z.number().int(),
        connections: z.number().int(),
        connected: z.number().int(),
        reconnects: z.number().int(),
        last_event_at: z.string().nullable(),
        last_event_age_ms: z.number().int().nullable(),
        events_per_second: z.number(),
        kafka_lag: z.number().int().nullable().describe('Messages of this venue in Kafka not yet stored by the sink'),
      }),
    ),
    kafka: z.object({
      state: z.enum(['ok', 'lagging', 'unknown']),
      detail: z.string(),
      consumer_lag: z.number().int().nullable(),
      checked_at: z.string().nullable(),
    }),
    sink: z.object({
      state: z.enum(['ok', 'joining', 'paused', 'down', 'unknown']).describe('down: a sink\'s Kafka consumer crashed and is restarting (nothing stored meanwhile); joining: a sink waits to join its consumer group'),
      detail: z.string(),
      processes: z.number().int(),
      stored_per_second: z.number(),
      last_stored_at: z.string().nullable(),
      refused_records: z.number().int().describe('Records ClickHouse refused as bad data and the live sinks dead-lettered, since each started (sinks that do not report it count 0)'),
    }),
    rollup: z.object({
      state: z.enum(['ok', 'behind', 'down', 'unknown']).describe('down: no rollup worker is running (none reports its liveness); behind: summaries lag the raw data'),
      detail: z.string(),
      workers: z.number().int().nullable().describe('Rollup worker processes reporting their liveness now'),
      stopped_workers: z.number().int().nullable().describe('Rollup worker processes that stopped reporting in the last hour without a clean stop (died, hung or cut off from Redis)'),
      waiting: z.number().int().nullable(),
      active: z.number().int().nullable(),
      delayed: z.number().int().nullable(),
      failed: z.number().int().nullable(),
      pending_assets: z.number().int().nullable(),
      oldest_pending: z
        .object({
          venue: z.enum(VENUE_ENUM),
          market: z.string(),
          asset: z.string(),
          dates: z.array(z.string()),
          since: z.string(),
          age_ms: z.number().int(),
        })
        .nullable(),
      claimed_assets: z.number().int().nullable().describe('Assets a rollup job has claimed: being rolled up now, or held by a job whose process died'),
      stale_claims: z
        .number()
        .int()
        .nullable()
        .describe('Claims whose lease ran out: their rollup process stopped renewing them (it died); the sweep hands their dates to a live worker'),
      oldest_stale_claim: z
        .object({
          venue: z.enum(VENUE_ENUM),
          market: z.string(),
          asset: z.string(),
          dates: z.array(z.string()),
          expired_at: z.string(),
          age_ms: z.number().int().describe('Since its lease ran out'),
        })
        .nullable(),
    }),
    stream_sessions: z
      .object({
        state: z.enum(['ok', 'exhausted', 'not_pooled']),
        detail: z.string(),
        in_use: z.number().int().nullable(),
        max: z.number().int().nullable(),
        waiting: z.number().int().nullable(),
        longest_wait_ms: z.number().int().nullable(),
        busy_timeouts: z.number().int().nullable().describe('Raw reads of this API instance that found no free session in time (answered 503), since it started'),
        last_busy_timeout_at: z.string().nullable(),
      })
      .describe(
        `This API instance's sessions for streaming raw reads from the embedded engine. exhausted: reads are waiting for a session, or one gave up in the last ${EXHAUSTED_AFTER_TIMEOUT_MS / 1000} s; not_pooled: reads stream from a ClickHouse server`,
      ),
    stores: z.object({ clickhouse: storeHealth, redis: storeHealth }),
    operator_routes_open: z
      .boolean()
      .describe('true: the operator routes (keys, subscriptions, every user\'s usage) answer anyone, without an admin token, on an address others can reach (BOOKTAPE_ALLOW_OPEN=1). Does not change `status`'),
    warnings: z
      .array(z.string())
      .describe(
        'How this instance is configured that its operator should know, in words (e.g. why `operator_routes_open` is true). Shown only to a request with a valid API key (Authorization: Bearer) or the admin token (X-Admin-Token); [] otherwise. They do not change `status`',
      ),
    processes: z
      .array(
        z.object({
          worker_id: z.number().int(),
          roles: z.array(z.string()),
          live: z.boolean(),
          last_report_at: z.string(),
          last_report_age_ms: z.number().int(),
        }),
      )
      .describe('Ingestor processes that reported recently; live = reporting now'),
    outages: z
      .array(
        z.object({
          id: z.string(),
          venue: z.enum(VENUE_ENUM),
          state: z.enum(['active', 'upcoming', 'ended']),
          start: z.string(),
          end: z.string(),
          reason: z.string(),
        }),
      )
      .describe(`Outages declared by the operator (GET /api/v1/outages): active, upcoming, and ended in the last ${RECENT_OUTAGE_DAYS} days, newest first`),
    footprint: footprintSchema,
  })
  .meta({ id: 'MonitoringStatus', description: 'The status now (always 200: `status` says ok, degraded or down).' });

export type MonitoringStatus = z.infer<typeof monitoringStatusSchema>;
type VenueStatus = MonitoringStatus['venues'][number];

export interface Thresholds {
  /** A connected venue without market data for longer is degraded. */
  maxEventAgeMs: number;
  /** Kafka consumer lag (messages) above which the sink counts as behind. */
  maxKafkaLag: number;
  /** An asset pending rollup for longer means the rollups are behind. */
  maxRollupDelayMs: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = { maxEventAgeMs: 300_000, maxKafkaLag: 100_000, maxRollupDelayMs: 900_000 };

export interface StatusInput {
  now: number;
  stores: { clickhouse: { ok: boolean; latencyMs: number | null }; redis: { ok: boolean; latencyMs: number | null } };
  /** null: the reports could not be read (Redis). */
  reports: IngestorReport[] | null;
  /** Reports present in Redis that do not parse (absent: none). */
  unreadableReports?: number;
  /** null: the backlog could not be read. */
  rollup: RollupBacklog | null;
  thresholds: Thresholds;
  /** Declared outages (null or absent: could not be read; the page then lists none). */
  outages?: OutageInput[] | null;
  /** The API's embedded stream pool (null or absent: a server connection, no pool). */
  streamPool?: StreamPoolStats | null;
  /** The storage footprint (absent: not read, shown as unavailable). */
  footprint?: FootprintReading;
  /** Configuration warnings, in words (an open service); shown only to authenticated requests. */
  warnings?: string[];
  /** The operator routes answer anyone on an address others can reach (BOOKTAPE_ALLOW_OPEN=1). */
  operatorRoutesOpen?: boolean;
}

const perRow = (bytes: number, rows: number) => (rows > 0 ? Math.round((bytes / rows) * 10) / 10 : null);

function sumFigures(ts: Array<{ rows: number; bytes_on_disk: number; data_uncompressed_bytes: number; parts: number }>) {
  const t = { rows: 0, bytes_on_disk: 0, data_uncompressed_bytes: 0, parts: 0 };
  for (const x of ts) {
    t.rows += x.rows;
    t.bytes_on_disk += x.bytes_on_disk;
    t.data_uncompressed_bytes += x.data_uncompressed_bytes;
    t.parts += x.parts;
  }
  return t;
}

/** "1.2 GB": sizes for details and the page (decimal units, as disks are sold). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ${units[i]}`;
}

/** The footprint as the status shows it. */
export function footprintStatus(r: FootprintReading | undefined): MonitoringStatus['footprint'] {
  if (!r || !r.ok) return { state: 'unavailable', detail: r?.reason ?? 'not measured', scope: null, measured_at: null, tables: [], total: null, raw: null };
  const tables = r.footprint.tables.map((t) => ({
    table: t.table,
    raw: t.raw,
    rows: t.rows,
    bytes_on_disk: t.bytesOnDisk,
    data_uncompressed_bytes: t.uncompressedBytes,
    parts: t.parts,
    bytes_per_row: t.raw ? perRow(t.bytesOnDisk, t.rows) : null,
  }));
  const total = sumFigures(tables);
  const raw = sumFigures(tables.filter((t) => t.raw));
  const rawPerRow = perRow(raw.bytes_on_disk, raw.rows);
  const scope = r.footprint.scope;
  return {
    state: 'ok',
    detail:
      `${formatBytes(total.bytes_on_disk)} on disk in ${tables.length} table${tables.length === 1 ? '' : 's'}` +
      (rawPerRow === null ? '' : `; raw events ${rawPerRow} bytes each`) +
      (scope === 'this_node' ? " (this node's tables only)" : ''),
    scope,
    measured_at: new Date(r.at).toISOString(),
    tables,
    total,
    raw: { ...raw, bytes_per_row: rawPerRow },
  };
}

/** A stream pool's figures as the status and /health show them. */
export function streamPoolJson(p: StreamPoolStats) {
  return {
    in_use: p.inUse,
    max: p.max,
    waiting: p.waiting,
    longest_wait_ms: p.longestWaitMs,
    busy_timeouts: p.busyTimeouts,
    last_busy_timeout_at: p.lastBusyTimeoutAt === null ? null : new Date(p.lastBusyTimeoutAt).toISOString(),
  };
}

/** "3 s", "4 min", "2 h": how long ago, for details and the page. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

function venueStatus(venue: Venue, live: IngestorReport[], stale: IngestorReport[], lag: number | null, now: number, t: Thresholds): VenueStatus {
  const base: VenueStatus = {
    venue,
    name: VENUE_NAMES[venue],
    state: 'unknown',
    detail: '',
    off_reason: null,
    markets: 0,
    connections: 0,
    connected: 0,
    reconnects: 0,
    last_event_at: null,
    last_event_age_ms: null,
    events_per_second: 0,
    kafka_lag: lag,
  };
  const of = (rs: IngestorReport[]) => rs.flatMap((r) => (r.capture?.venues ?? []).filter((v) => v.venue === venue).map((v) => ({ r, v })));
  const enabled = of(live).filter((x) => x.v.enabled);
  if (enabled.length === 0) {
    // A process that captured the venue and went silent outweighs one that never captures it.
    const lost = of(stale).filter((x) => x.v.enabled);
    if (lost.length > 0) {
      const last = Math.max(...lost.map((x) => Date.parse(x.r.published_at)));
      const lastEvent = lost.map((x) => x.v.last_event_at).filter((x): x is string => x !== null).sort().at(-1) ?? null;
      return {
        ...base,
        state: 'down',
        detail: `its capture process stopped reporting ${formatAge(now - last)} ago`,
        last_event_at: lastEvent,
        last_event_age_ms: lastEvent === null ? null : Math.max(0, now - Date.parse(lastEvent)),
      };
    }
    if (of(live).length > 0) {
      // Reports older than the field say nothing: they were off by configuration only.
      const given = of(live).map((x) => x.v.off_reason ?? 'turned_off');
      const reason: OffReason = given.map((r) => ((offReasons as readonly string[]).includes(r) ? (r as OffReason) : 'unknown')).find((r) => r !== 'turned_off') ?? 'turned_off';
      return { ...base, state: 'off', detail: OFF_DETAIL[reason], off_reason: reason };
    }
    return { ...base, detail: 'no capture process is reporting this venue' };
  }
  let markets = 0;
  let connections = 0;
  let connected = 0;
  let reconnects = 0;
  let rate = 0;
  let lastEvent: string | null = null;
  let resolving = false;
  let oldestStart = Infinity;
  for (const { r, v } of enabled) {
    markets += v.markets;
    connections += v.connections;
    connected += v.connected;
    reconnects += v.reconnects;
    rate += v.events_per_second;
    resolving ||= v.resolving && v.connections === 0;
    if (v.last_event_at !== null && (lastEvent === null || Date.parse(v.last_event_at) > Date.parse(lastEvent))) lastEvent = v.last_event_at;
    oldestStart = Math.min(oldestStart, Date.parse(r.started_at));
  }
  const age = lastEvent === null ? null : Math.max(0, now - Date.parse(lastEvent));
  let state: VenueState = 'up';
  let detail = `${connected} of ${connections} connection${connections === 1 ? '' : 's'} up`;
  if (connected === 0) {
    state = 'down';
    detail = resolving ? 'resolving which markets to capture (the venue metadata API is not reachable)' : connections === 0 ? 'no markets to capture' : `no connection up (0 of ${connections})`;
  } else if (connected < connections) {
    state = 'degraded';
  } else if (age !== null && age > t.maxEventAgeMs) {
    state = 'degraded';
    detail = `connected, but no market data for ${formatAge(age)}`;
  } else if (age === null && now - oldestStart > t.maxEventAgeMs) {
    state = 'degraded';
    detail = 'connected, but no market data received yet';
  }
  return {
    ...base,
    state,
    detail,
    markets,
    connections,
    connected,
    reconnects,
    last_event_at: lastEvent,
    last_event_age_ms: age,
    events_per_second: Math.round(rate * 10) / 10,
  };
}

/** The status from what was gathered (pure). */
export function aggregateStatus(input: StatusInput): MonitoringStatus {
  const { now, thresholds: t } = input;
  const reasons: string[] = [];
  let down = false;
  let degraded = false;
  const all = input.reports ?? [];
  const live = all.filter((r) => reportIsLive(r, now));
  const stale = all.filter((r) => !reportIsLive(r, now));

  if (!input.stores.clickhouse.ok) {
    down = true;
    reasons.push('ClickHouse is not reachable: historical data cannot be served');
  }
  if (!input.stores.redis.ok) {
    down = true;
    reasons.push('Redis is not reachable: API keys cannot be checked and capture state is unknown');
  } else if (input.reports === null) {
    degraded = true;
    reasons.push('Capture: the ingestor status reports cannot be read');
  } else if ((input.unreadableReports ?? 0) > 0) {
    // A process whose report cannot be read may be the only one capturing a venue: what is
    // shown for the venues may be missing it.
    degraded = true;
    const n = input.unreadableReports!;
    reasons.push(`Capture: ${n} ingestor status report${n === 1 ? '' : 's'} in Redis cannot be read (another version, or a corrupted value); the state shown may leave ${n === 1 ? 'that process' : 'those processes'} out`);
  }

  // Kafka: each sink reports its consumer group's lag; the freshest report per group counts.
  const sinks = live.filter((r) => r.sink !== null);
  const byGroup = new Map<string, NonNullable<IngestorReport['sink']>>();
  for (const r of sinks) {
    const s = r.sink!;
    if (!s.kafka.ok) continue;
    const prev = byGroup.get(s.group_id);
    if (!prev || (s.kafka.checked_at ?? '') > (prev.kafka.checked_at ?? '')) byGroup.set(s.group_id, s);
  }
  const lagByVenue = new Map<Venue, number>();
  let totalLag: number | null = null;
  let checkedAt: string | null = null;
  for (const s of byGroup.values()) {
    totalLag = (totalLag ?? 0) + (s.kafka.lag ?? 0);
    for (const v of VENUES) lagByVenue.set(v, (lagByVenue.get(v) ?? 0) + (s.kafka.lag_by_venue?.[v] ?? 0));
    if (s.kafka.checked_at && (checkedAt === null || s.kafka.checked_at < checkedAt)) checkedAt = s.kafka.checked_at;
  }

  const venues = VENUES.map((v) =>
    input.reports === null
      ? { ...venueStatus(v, [], [], null, now, t), detail: 'capture state cannot be read from Redis' }
      : venueStatus(v, live, stale, totalLag === null ? null : (lagByVenue.get(v) ?? 0), now, t),
  );
  for (const v of venues) {
    if (input.reports === null) break; // the Redis reason says it
    if (v.state === 'up' || v.state === 'off') continue;
    degraded = true;
    reasons.push(`${v.name}: ${v.detail}`);
  }

  let kafka: MonitoringStatus['kafka'];
  if (sinks.length === 0) {
    kafka = { state: 'unknown', detail: 'no sink process is reporting', consumer_lag: null, checked_at: null };
  } else if (totalLag === null) {
    kafka = { state: 'unknown', detail: 'the sink cannot read its consumer lag (Kafka unreachable?)', consumer_lag: null, checked_at: null };
    degraded = true;
    reasons.push('Kafka: the consumer lag cannot be read (is Kafka reachable?)');
  } else if (totalLag > t.maxKafkaLag) {
    kafka = { state: 'lagging', detail: `${totalLag} messages not yet stored`, consumer_lag: totalLag, checked_at: checkedAt };
    degraded = true;
    reasons.push(`Kafka: the sink is ${totalLag} messages behind`);
  } else {
    kafka = { state: 'ok', detail: totalLag === 0 ? 'the sink has stored everything' : `${totalLag} messages not yet stored`, consumer_lag: totalLag, checked_at: checkedAt };
  }

  let sink: MonitoringStatus['sink'];
  const storedRate = Math.round(sinks.reduce((s, r) => s + r.sink!.stored_per_second, 0) * 10) / 10;
  const lastStored = sinks.map((r) => r.sink!.last_stored_at).filter((x): x is string => x !== null).sort().at(-1) ?? null;
  const refused = sinks.reduce((n, r) => n + (r.sink!.refused_records ?? 0), 0);
  if (sinks.length === 0) {
    sink = { state: 'unknown', detail: 'no sink process is reporting', processes: 0, stored_per_second: 0, last_stored_at: null, refused_records: 0 };
    if (input.reports !== null) {
      degraded = true;
      reasons.push('Sink: no sink process is reporting, nothing is being stored');
    }
  } else if (sinks.some((r) => r.sink!.consumer === 'restarting' || r.sink!.consumer === 'stopped')) {
    const dead = sinks.filter((r) => r.sink!.consumer === 'restarting' || r.sink!.consumer === 'stopped');
    const why = dead[0]!.sink!.reason ?? 'the Kafka consumer is not running';
    sink = { state: 'down', detail: `${dead.length} of ${sinks.length} sink process${sinks.length === 1 ? '' : 'es'} not consuming: ${why}`, processes: sinks.length, stored_per_second: storedRate, last_stored_at: lastStored, refused_records: refused };
    degraded = true;
    reasons.push(`Sink: ${why}`);
  } else if (sinks.some((r) => r.sink!.paused)) {
    sink = { state: 'paused', detail: 'ClickHouse refuses inserts; the sink holds its batch and retries', processes: sinks.length, stored_per_second: storedRate, last_stored_at: lastStored, refused_records: refused };
    degraded = true;
    reasons.push('Sink: ClickHouse refuses inserts, storing is paused');
  } else if (sinks.every((r) => r.sink!.consumer === 'joining')) {
    sink = { state: 'joining', detail: sinks[0]!.sink!.reason ?? 'joining its Kafka consumer group', processes: sinks.length, stored_per_second: storedRate, last_stored_at: lastStored, refused_records: refused };
  } else {
    sink = { state: 'ok', detail: `${sinks.length} sink process${sinks.length === 1 ? '' : 'es'}`, processes: sinks.length, stored_per_second: storedRate, last_stored_at: lastStored, refused_records: refused };
  }

  let rollup: MonitoringStatus['rollup'];
  const rb = input.rollup;
  if (rb === null) {
    rollup = {
      state: 'unknown',
      detail: 'the rollup queue cannot be read',
      workers: null,
      stopped_workers: null,
      waiting: null,
      active: null,
      delayed: null,
      failed: null,
      pending_assets: null,
      oldest_pending: null,
      claimed_assets: null,
      stale_claims: null,
      oldest_stale_claim: null,
    };
    if (input.stores.redis.ok) {
      degraded = true;
      reasons.push('Rollups: the queue cannot be read');
    }
  } else {
    const age = rb.oldest ? Math.max(0, now - rb.oldest.since) : null;
    const late = age !== null && age > t.maxRollupDelayMs;
    // A stale claim is a rollup nobody is doing: summaries stay behind until it is taken over.
    const behind = late || rb.staleClaims > 0;
    const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
    const parts: string[] = [];
    if (rb.pendingAssets > 0) parts.push(`${plural(rb.pendingAssets, 'asset', 'assets')} pending, the oldest for ${formatAge(age ?? 0)}`);
    if (rb.claimedAssets > 0) parts.push(`${plural(rb.claimedAssets, 'asset', 'assets')} being rolled up`);
    if (rb.staleClaims > 0) parts.push(`${plural(rb.staleClaims, 'claim', 'claims')} held by a rollup process that stopped (lease ran out)`);
    const w = rb.workers;
    const workersDown = w.live === 0;
    const stoppedAgo = w.lastStoppedBeatAt === null ? '' : `, the last stopped reporting ${formatAge(now - w.lastStoppedBeatAt)} ago`;
    // A worker that stopped while another lives is only counted (stopped_workers): the live one takes its work over.
    if (workersDown) parts.unshift(`no rollup worker is running${stoppedAgo}`);
    const stale = rb.oldestStaleClaim;
    rollup = {
      state: workersDown ? 'down' : behind ? 'behind' : 'ok',
      detail: parts.length === 0 ? 'summaries are up to date' : parts.join('; '),
      workers: w.live,
      stopped_workers: w.stopped,
      waiting: rb.waiting,
      active: rb.active,
      delayed: rb.delayed,
      failed: rb.failed,
      pending_assets: rb.pendingAssets,
      oldest_pending: rb.oldest
        ? { venue: rb.oldest.venue, market: rb.oldest.market, asset: rb.oldest.asset, dates: rb.oldest.dates, since: new Date(rb.oldest.since).toISOString(), age_ms: age! }
        : null,
      claimed_assets: rb.claimedAssets,
      stale_claims: rb.staleClaims,
      oldest_stale_claim: stale
        ? { venue: stale.venue, market: stale.market, asset: stale.asset, dates: stale.dates, expired_at: new Date(stale.expiredAt).toISOString(), age_ms: Math.max(0, now - stale.expiredAt) }
        : null,
    };
    if (workersDown) {
      degraded = true;
      reasons.push(`Rollups: no rollup worker is running${stoppedAgo}; summaries are not being rolled up`);
    }
    if (late) {
      degraded = true;
      reasons.push(`Rollups: summaries are behind, an asset has been pending for ${formatAge(age!)}`);
    }
    if (rb.staleClaims > 0) {
      degraded = true;
      reasons.push(`Rollups: ${plural(rb.staleClaims, 'claim is', 'claims are')} held by a rollup process that stopped; the sweep hands ${rb.staleClaims === 1 ? 'it' : 'them'} to a live worker`);
    }
  }

  const pool = input.streamPool ?? null;
  let streamSessions: MonitoringStatus['stream_sessions'];
  if (pool === null) {
    streamSessions = { state: 'not_pooled', detail: 'raw reads stream from the ClickHouse server', in_use: null, max: null, waiting: null, longest_wait_ms: null, busy_timeouts: null, last_busy_timeout_at: null };
  } else {
    const exhausted = streamPoolExhausted(pool, now);
    streamSessions = {
      state: exhausted ? 'exhausted' : 'ok',
      detail: exhausted
        ? pool.waiting > 0
          ? `all ${pool.max} sessions are in use and ${pool.waiting} read${pool.waiting === 1 ? ' is' : 's are'} waiting (the longest for ${formatAge(pool.longestWaitMs)})`
          : `a raw read found no free session in time ${formatAge(now - pool.lastBusyTimeoutAt!)} ago (answered 503)`
        : `${pool.inUse} of ${pool.max} sessions in use`,
      ...streamPoolJson(pool),
    };
    if (exhausted) {
      degraded = true;
      reasons.push(`Raw data: ${streamSessions.detail}`);
    }
  }

  // Declared outages: an active one is a known hole in the venue's data right now.
  const outages = (input.outages ?? [])
    .filter((o) => o.end_ms > now - RECENT_OUTAGE_DAYS * 86_400_000)
    .sort((a, b) => b.start_ms - a.start_ms || (a.id < b.id ? -1 : 1))
    .slice(0, MAX_LISTED_OUTAGES)
    .map((o) => ({
      id: o.id,
      venue: o.venue,
      state: o.start_ms > now ? ('upcoming' as const) : o.end_ms > now ? ('active' as const) : ('ended' as const),
      start: new Date(o.start_ms).toISOString(),
      end: new Date(o.end_ms).toISOString(),
      reason: o.reason,
    }));
  for (const o of outages) {
    if (o.state !== 'active') continue;
    degraded = true;
    reasons.push(`${VENUE_NAMES[o.venue]}: declared outage until ${o.end.replace('T', ' ').slice(0, 16)} UTC: ${o.reason}`);
  }

  const processes = all
    .map((r) => {
      const at = Date.parse(r.published_at);
      return { worker_id: r.worker_id, roles: r.roles, live: reportIsLive(r, now), last_report_at: r.published_at, last_report_age_ms: Math.max(0, now - at) };
    })
    .sort((a, b) => a.worker_id - b.worker_id || a.roles.join().localeCompare(b.roles.join()) || a.last_report_age_ms - b.last_report_age_ms);

  return {
    status: down ? 'down' : degraded ? 'degraded' : 'ok',
    reasons,
    time: new Date(now).toISOString(),
    venues,
    kafka,
    sink,
    rollup,
    stream_sessions: streamSessions,
    stores: {
      clickhouse: { ok: input.stores.clickhouse.ok, latency_ms: input.stores.clickhouse.latencyMs },
      redis: { ok: input.stores.redis.ok, latency_ms: input.stores.redis.latencyMs },
    },
    operator_routes_open: input.operatorRoutesOpen ?? false,
    warnings: input.warnings ?? [],
    processes,
    outages,
    footprint: footprintStatus(input.footprint),
  };
}
