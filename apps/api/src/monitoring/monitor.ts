import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import { FootprintRepository, type ClickHouse, type OutagesRepository, type StreamPoolStats } from '@booktape/storage';
import type { IngestorReport } from '@booktape/messaging';
import { FootprintMonitor, type FootprintReader } from './footprint.ts';
import { readIngestorReports } from './reports.ts';
import { readRollupBacklog, type RollupBacklog } from './rollup-backlog.ts';
import { DEFAULT_THRESHOLDS, RECENT_OUTAGE_DAYS, aggregateStatus, type MonitoringStatus, type OutageInput, type Thresholds } from './status.ts';

export interface StatusMonitorDeps {
  ch: ClickHouse;
  /** The API's fail-fast client (createRedis). */
  redis: Redis;
  /** ROLLUP_QUEUE_PREFIX: the rollup queue and the ingestors' reports live under it. */
  queuePrefix: string;
  log: Logger;
  /** The declared outages (the composition's repository), listed on the status. */
  outages: Pick<OutagesRepository, 'list'>;
  thresholds?: Thresholds;
  /** A computed status is reused this long (a public page that many people refresh). */
  cacheMs?: number;
  /** Longest wait for one check; a check that takes longer counts as failed. */
  checkTimeoutMs?: number;
  now?: () => number;
  /** This instance's embedded stream pool (streamPoolStats); absent or null: no pool. */
  streamPool?: () => StreamPoolStats | null;
  /** Reads the storage footprint; absent: FootprintRepository on `ch`. */
  footprint?: FootprintReader;
  /** The footprint is read at most this often (30 s). */
  footprintCacheMs?: number;
  /** The status that starts a footprint read waits this long for it (1 s, at most the check timeout). */
  footprintWaitMs?: number;
  /** Configuration warnings, in words (an open service): for authenticated status requests only. */
  warnings?: string[];
  /** The operator routes answer anyone on an address others can reach (BOOKTAPE_ALLOW_OPEN=1): public. */
  operatorRoutesOpen?: boolean;
}

class TimeoutError extends Error {}

/**
 * Gathers the status: ClickHouse `SELECT 1`, Redis PING, the ingestors' reports, the
 * rollup backlog and the storage footprint (FootprintMonitor: cached 30 s), each bounded by a timeout, so the answer comes within about
 * `checkTimeoutMs` even when every backing service is gone; that is when it is needed. A
 * check still running from an earlier request is joined rather than started again, so a
 * hung store cannot pile up probes. Never throws.
 */
export class StatusMonitor {
  private readonly thresholds: Thresholds;
  private readonly cacheMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private cached: { at: number; status: MonitoringStatus } | undefined;
  private computing: Promise<MonitoringStatus> | undefined;
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly footprint: FootprintMonitor;

  constructor(private readonly deps: StatusMonitorDeps) {
    this.thresholds = deps.thresholds ?? DEFAULT_THRESHOLDS;
    this.cacheMs = deps.cacheMs ?? 1000;
    // Generous: a busy embedded engine can take a second for SELECT 1, and a false "down" is worse than a slower page.
    this.timeoutMs = deps.checkTimeoutMs ?? 2500;
    this.now = deps.now ?? Date.now;
    this.footprint = new FootprintMonitor({
      reader: deps.footprint ?? new FootprintRepository(deps.ch),
      log: deps.log,
      cacheMs: deps.footprintCacheMs,
      waitMs: Math.min(deps.footprintWaitMs ?? 1000, this.timeoutMs),
      now: this.now,
    });
  }

  async status(): Promise<MonitoringStatus> {
    const c = this.cached;
    if (c && this.now() - c.at < this.cacheMs) return c.status;
    this.computing ??= this.compute()
      .then((status) => {
        this.cached = { at: this.now(), status };
        return status;
      })
      .finally(() => (this.computing = undefined));
    return this.computing;
  }

  /** Runs `fn` unless the same check is still running; waits at most the timeout either way. */
  private check<T>(name: string, fn: () => Promise<T>): Promise<T> {
    let p = this.inFlight.get(name) as Promise<T> | undefined;
    if (!p) {
      p = Promise.resolve()
        .then(fn)
        .finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, p);
      p.catch(() => undefined);
    }
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new TimeoutError(`${name} took longer than ${this.timeoutMs} ms`)), this.timeoutMs)))]).finally(() =>
      clearTimeout(timer),
    );
  }

  private async timed(name: string, fn: () => Promise<unknown>): Promise<{ ok: boolean; latencyMs: number | null }> {
    const started = performance.now();
    try {
      await this.check(name, fn);
      return { ok: true, latencyMs: Math.round(performance.now() - started) };
    } catch (e) {
      this.deps.log.debug({ check: name, err: (e as Error).message }, 'monitoring check failed');
      return { ok: false, latencyMs: null };
    }
  }

  private async compute(): Promise<MonitoringStatus> {
    const { ch, redis, queuePrefix, outages: declared } = this.deps;
    const [clickhouse, redisHealth] = await Promise.all([
      this.timed('clickhouse', async () => {
        const rs = await ch.client.query({ query: 'SELECT 1 AS ok', format: 'JSONEachRow' });
        const rows = await rs.json<{ ok: number }>();
        if (Number(rows[0]?.ok) !== 1) throw new Error('SELECT 1 did not answer 1');
      }),
      this.timed('redis', async () => {
        // A client still making its first connection (a process that just started) is
        // waited for, within the check's time limit; one that lost its connection and is
        // reconnecting would fail any command anyway: say so at once.
        if (redis.status === 'wait' || redis.status === 'connecting' || redis.status === 'connect') {
          await new Promise<void>((resolve, reject) => {
            redis.once('ready', resolve);
            redis.once('end', () => reject(new Error('redis connection ended')));
          });
        }
        if (redis.status !== 'ready') throw new Error(`redis connection is ${redis.status}`);
        if ((await redis.ping()) !== 'PONG') throw new Error('PING did not answer PONG');
      }),
    ]);
    // The Redis reads and the ClickHouse read side by side: each bounded by the check's time
    // limit, so the whole answer takes about one limit, not one per store.
    let reports: IngestorReport[] | null = null;
    let unreadableReports = 0;
    let rollup: RollupBacklog | null = null;
    let outages: OutageInput[] | null = null;
    // The footprint beside them: it bounds its own wait (shorter than the check's) and never throws.
    const [r, b, o, footprint] = await Promise.allSettled([
      redisHealth.ok ? this.check('reports', () => readIngestorReports(redis, queuePrefix)) : null,
      redisHealth.ok ? this.check('rollup', () => readRollupBacklog(redis, queuePrefix)) : null,
      clickhouse.ok ? this.check('outages', () => declared.list({ fromMs: this.now() - RECENT_OUTAGE_DAYS * 86_400_000, limit: 200 })) : null,
      this.footprint.current({ clickhouseUp: clickhouse.ok }),
    ]);
    // A store that is down was not read (null): its reason is already in the status.
    if (r.status === 'fulfilled') ({ reports, unreadable: unreadableReports } = r.value ?? { reports: null, unreadable: 0 });
    else this.deps.log.warn({ err: (r.reason as Error).message }, 'cannot read the ingestor status reports');
    if (b.status === 'fulfilled') rollup = b.value;
    else this.deps.log.warn({ err: (b.reason as Error).message }, 'cannot read the rollup backlog');
    if (o.status === 'fulfilled') outages = o.value;
    else this.deps.log.warn({ err: (o.reason as Error).message }, 'cannot read the declared outages');
    const now = this.now();
    const streamPool = this.deps.streamPool?.() ?? null;
    return aggregateStatus({
      now,
      stores: { clickhouse, redis: redisHealth },
      reports,
      unreadableReports,
      rollup,
      thresholds: this.thresholds,
      outages,
      streamPool,
      footprint: footprint.status === 'fulfilled' ? footprint.value : undefined,
      warnings: this.deps.warnings ?? [],
      operatorRoutesOpen: this.deps.operatorRoutesOpen ?? false,
    });
  }
}
