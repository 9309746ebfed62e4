import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, register } from 'prom-client';
import { venueStates, type MonitoringStatus } from './status.ts';

/**
 * Prometheus metrics of one API instance (prom-client, text exposition format).
 *
 * - HTTP: requests and their latency by method, route *pattern* (never the raw URL, whose
 *   query strings and ids would make the series unbounded; requests that match no route
 *   share the route label `unmatched`) and status code.
 * - Gauges built from the monitoring status at scrape time (venues, Kafka lag, sink,
 *   rollup backlog, stores). A value that is unknown is left out, not reported as 0. Every
 *   API instance exports the same values; aggregate them with max(), not sum().
 * - The process's default metrics (CPU, memory, event loop, GC), registered once per
 *   process however many apps it builds (tests build many).
 */

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export const UNMATCHED_ROUTE = 'unmatched';

/** The status as gauges, in a registry of their own (built per scrape). */
export function statusRegistry(s: MonitoringStatus): Registry {
  const registry = new Registry();
  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [registry] });

  const status = gauge('booktape_status', 'Overall service status (1 for the current one): ok, degraded, down', ['status']);
  for (const st of ['ok', 'degraded', 'down']) status.set({ status: st }, s.status === st ? 1 : 0);

  const state = gauge('booktape_venue_state', 'Capture state of each venue (1 for the current one)', ['venue', 'state']);
  const connections = gauge('booktape_venue_connections', 'Venue websocket connections of all live capture processes', ['venue']);
  const up = gauge('booktape_venue_connections_up', 'Venue websocket connections that are open', ['venue']);
  const rate = gauge('booktape_venue_events_per_second', 'Records captured per second (last report interval, all capture processes)', ['venue']);
  const age = gauge('booktape_venue_last_event_age_seconds', 'Seconds since the last market-data frame of the venue (absent when none yet)', ['venue']);
  const lag = gauge('booktape_venue_kafka_lag_messages', 'Messages of the venue in Kafka not yet stored by the sink (absent when unknown)', ['venue']);
  for (const v of s.venues) {
    for (const st of venueStates) state.set({ venue: v.venue, state: st }, v.state === st ? 1 : 0);
    connections.set({ venue: v.venue }, v.connections);
    up.set({ venue: v.venue }, v.connected);
    rate.set({ venue: v.venue }, v.events_per_second);
    if (v.last_event_age_ms !== null) age.set({ venue: v.venue }, v.last_event_age_ms / 1000);
    if (v.kafka_lag !== null) lag.set({ venue: v.venue }, v.kafka_lag);
  }

  if (s.kafka.consumer_lag !== null) gauge('booktape_kafka_consumer_lag_messages', 'Sink consumer group lag over all its topics').set(s.kafka.consumer_lag);
  if (s.sink.state !== 'unknown') {
    gauge('booktape_sink_stored_per_second', 'Records stored per second by all live sink processes').set(s.sink.stored_per_second);
    gauge('booktape_sink_refused_records', 'Records ClickHouse refused as bad data and the live sinks dead-lettered, since each sink started').set(s.sink.refused_records);
  }

  const r = s.rollup;
  if (r.workers !== null) {
    const workers = gauge('booktape_rollup_workers', 'Rollup worker processes by liveness: live (reporting now) or stopped (stopped reporting in the last hour without a clean stop)', ['state']);
    workers.set({ state: 'live' }, r.workers);
    workers.set({ state: 'stopped' }, r.stopped_workers ?? 0);
  }
  if (r.waiting !== null) {
    const jobs = gauge('booktape_rollup_queue_jobs', 'Rollup queue jobs by state', ['state']);
    jobs.set({ state: 'waiting' }, r.waiting);
    jobs.set({ state: 'active' }, r.active ?? 0);
    jobs.set({ state: 'delayed' }, r.delayed ?? 0);
    jobs.set({ state: 'failed' }, r.failed ?? 0);
    gauge('booktape_rollup_pending_assets', 'Assets whose summaries are behind the raw data').set(r.pending_assets ?? 0);
    gauge('booktape_rollup_oldest_pending_age_seconds', 'How long the longest-pending asset has waited for its rollup (0 when none)').set(r.oldest_pending ? r.oldest_pending.age_ms / 1000 : 0);
    const claims = gauge('booktape_rollup_claims', 'Assets claimed by a rollup job: live (lease held) or stale (lease ran out, its process stopped)', ['state']);
    claims.set({ state: 'live' }, Math.max(0, (r.claimed_assets ?? 0) - (r.stale_claims ?? 0)));
    claims.set({ state: 'stale' }, r.stale_claims ?? 0);
    gauge('booktape_rollup_oldest_stale_claim_age_seconds', 'Since the lease of the oldest stale rollup claim ran out (0 when none)').set(r.oldest_stale_claim ? r.oldest_stale_claim.age_ms / 1000 : 0);
  }

  const p = s.stream_sessions;
  if (p.in_use !== null) {
    const sessions = gauge('booktape_stream_sessions', 'Embedded-engine sessions for streaming raw reads of this API instance: in use, and the most there may be', ['state']);
    sessions.set({ state: 'in_use' }, p.in_use);
    sessions.set({ state: 'max' }, p.max ?? 0);
    gauge('booktape_stream_session_waiting_reads', 'Raw reads waiting for a free stream session').set(p.waiting ?? 0);
    gauge('booktape_stream_session_busy_timeouts', 'Raw reads that found no free stream session in time (answered 503) since the API started').set(p.busy_timeouts ?? 0);
    gauge('booktape_stream_sessions_exhausted', 'Whether raw reads are waiting for, or recently timed out on, a stream session (1) or not (0)').set(p.state === 'exhausted' ? 1 : 0);
  }

  const storeUp = gauge('booktape_store_up', 'Whether the store answers (1) or not (0)', ['store']);
  const storeLatency = gauge('booktape_store_latency_seconds', 'Response time of the store check', ['store']);
  for (const store of ['clickhouse', 'redis'] as const) {
    const h = s.stores[store];
    storeUp.set({ store }, h.ok ? 1 : 0);
    if (h.latency_ms !== null) storeLatency.set({ store }, h.latency_ms / 1000);
  }

  // Storage footprint: left out (not 0) while it cannot be read; booktape_footprint_up says so.
  const f = s.footprint;
  gauge('booktape_footprint_up', 'Whether the storage footprint (system.parts) could be read (1) or not (0)').set(f.state === 'ok' ? 1 : 0);
  if (f.state === 'ok') {
    const rows = gauge('booktape_table_rows', 'Rows in the active parts of each ClickHouse table (unmerged duplicates included)', ['table']);
    const disk = gauge('booktape_table_bytes_on_disk', 'Bytes on disk of the active parts of each ClickHouse table', ['table']);
    const raw = gauge('booktape_table_uncompressed_bytes', 'Uncompressed bytes of the active parts of each ClickHouse table', ['table']);
    const parts = gauge('booktape_table_parts', 'Active parts of each ClickHouse table', ['table']);
    const perRow = gauge('booktape_table_bytes_per_row', 'Bytes on disk per row of each raw table (what one stored event costs)', ['table']);
    for (const t of f.tables) {
      rows.set({ table: t.table }, t.rows);
      disk.set({ table: t.table }, t.bytes_on_disk);
      raw.set({ table: t.table }, t.data_uncompressed_bytes);
      parts.set({ table: t.table }, t.parts);
      if (t.bytes_per_row !== null) perRow.set({ table: t.table }, t.bytes_per_row);
    }
  }

  const processes = gauge('booktape_ingestor_processes', 'Ingestor processes with a report, by whether they are reporting now', ['live']);
  const live = s.processes.filter((p) => p.live).length;
  processes.set({ live: 'true' }, live);
  processes.set({ live: 'false' }, s.processes.length - live);
  return registry;
}

export class ApiMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status_code'>;
  private readonly duration: Histogram<'method' | 'route' | 'status_code'>;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'booktape_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status code', labelNames: ['method', 'route', 'status_code'], registers });
    this.duration = new Histogram({
      name: 'booktape_http_request_duration_seconds',
      help: 'Time from request to the end of the response (streamed pages included), by method, route pattern and status code',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
  }

  observe(method: string, route: string | undefined, statusCode: number, ms: number): void {
    const labels = { method, route: route ?? UNMATCHED_ROUTE, status_code: String(statusCode) };
    this.requests.inc(labels);
    this.duration.observe(labels, ms / 1000);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The exposition text: the process's metrics, prom-client's default registry (counters
   * of other apps in the same process, e.g. the rollup's cross-check alerts), this app's
   * HTTP metrics, the status gauges.
   */
  async render(status: MonitoringStatus): Promise<string> {
    return Registry.merge([processMetrics(), register, this.registry, statusRegistry(status)]).metrics();
  }
}
