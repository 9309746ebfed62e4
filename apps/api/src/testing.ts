/**
 * Test support for the API's integration tests (real embedded ClickHouse, real Redis):
 * realistic raw messages, the served records they must turn into, and an app per test file.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage, Venue } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { RawEventsRepository, type ClickHouse } from '@booktape/storage';
import { deleteRedisPrefix, requireEnv, tempClickHouse, uniqueId, type TestClickHouse } from '@booktape/testkit';
import { createApp } from './api.ts';
import { DEFAULT_DATA_FLOORS, type ApiConfig } from './config.ts';
import { DEFAULT_THRESHOLDS } from './monitoring/status.ts';
import { createRedis, type Redis } from './redis.ts';
import { UNLIMITED_PLANS } from './usage/limits.ts';

/** ingest_seq as capture makes it: received_ms * 2^23 + frame-in-ms * 2^11 + record-in-frame. */
export function ingestSeq(receivedMs: number, frame = 0, record = 0): string {
  return (BigInt(receivedMs) * 2n ** 23n + BigInt(frame) * 2n ** 11n + BigInt(record)).toString();
}

export function conditionId(n: number): string {
  return `0x${n.toString(16).padStart(4, '0')}${'c0ffee'.repeat(10)}`;
}

export interface AOpts {
  market: string;
  ts: number;
  hash: string;
  asset?: string;
  kind?: 'book' | 'price_change' | 'tick_size_change';
  receivedMs?: number;
  frame?: number;
  record?: number;
  worker?: number;
}

/** A Polymarket-style record: a book snapshot, a price change, or a non-book event. */
export function aMessage(o: AOpts): ExchangeAMessage {
  const received = o.receivedMs ?? o.ts + 7;
  const kind = o.kind ?? 'price_change';
  const base = { market: o.market, asset_id: o.asset ?? '71321045679252212594626385532706912750332728571942532289631379312455583992563', timestamp: String(o.ts), hash: o.hash };
  const event =
    kind === 'book'
      ? { ...base, event_type: 'book', bids: [{ price: '0.01', size: '1200.5' }, { price: '0.48', size: '30' }], asks: [{ price: '0.99', size: '10' }, { price: '0.52', size: '25' }], extra: { tick_size: '0.01' } }
      : kind === 'price_change'
        ? { ...base, event_type: 'price_change', changes: [{ price: '0.49', side: 'BUY' as const, size: String(o.ts % 500) }], extra: { best_bid: '0.49', best_ask: '0.52' } }
        : { ...base, event_type: 'tick_size_change', extra: { old_tick_size: '0.01', new_tick_size: '0.001' } };
  return {
    venue: 'exchange-a',
    received_at: new Date(received).toISOString(),
    worker_id: o.worker ?? 3,
    ingest_seq: ingestSeq(received, o.frame ?? 0, o.record ?? 0),
    dedup_id: o.hash,
    event,
  };
}

export interface BOpts {
  ticker: string;
  ms: number;
  seq: number;
  kind?: 'snapshot' | 'delta';
  frame?: number;
  worker?: number;
}

/** A Kalshi-style record: the capture's receive time is the event time. */
export function bMessage(o: BOpts): ExchangeBMessage {
  const kind = o.kind ?? 'delta';
  const common = { ticker: o.ticker, timestamp: new Date(o.ms).toISOString(), epoch_ms: o.ms, sid: 11, seq: o.seq };
  const record =
    kind === 'snapshot'
      ? { ...common, type: 'snapshot' as const, yes: [['0.4100', '120.00'], ['0.4200', '15.00']] as [string, string][], no: [['0.5500', '40.00']] as [string, string][] }
      : { ...common, type: 'delta' as const, side: 'yes' as const, price: '0.4200', delta: o.seq % 2 ? '-5.00' : '7.50', venue_ts: new Date(o.ms - 3).toISOString() };
  return {
    venue: 'exchange-b',
    received_at: new Date(o.ms).toISOString(),
    worker_id: o.worker ?? 5,
    ingest_seq: ingestSeq(o.ms, o.frame ?? 0, 0),
    dedup_id: `b:${o.ticker}:11:${o.seq}`,
    record,
  };
}

/**
 * What `Filler.expected` reads of a stored message of each venue, keyed by venue: its
 * identity (as the table's key collapses copies, market first) and its served row's event
 * time, tie-breaks and record fields.
 */
interface ExpectedOf<M extends RawMessage> {
  identity(m: M): unknown[];
  row(m: M): { ts: number; tie: unknown[]; record: Record<string, unknown> };
}
const EXPECTED: { readonly [V in Venue]: ExpectedOf<Extract<RawMessage, { venue: V }>> } = {
  'exchange-a': {
    identity: (m) => [m.event.market, m.event.timestamp, m.event.asset_id, m.event.event_type, m.dedup_id],
    row: (m) => ({ ts: Number(m.event.timestamp), tie: [m.event.asset_id, m.event.event_type], record: (({ extra, ...e }) => ({ ...extra, ...e }))(m.event) }),
  },
  'exchange-b': {
    identity: (m) => [m.record.ticker, m.record.epoch_ms, m.record.type, m.dedup_id],
    row: (m) => ({ ts: m.record.epoch_ms, tie: [m.record.type], record: { ...m.record } }),
  },
};

/** Inserts messages the way the sink does (positions increase across calls). */
export class Filler {
  private offset = 0;
  private batch = 0;
  readonly stored: Array<{ message: RawMessage; offset: number }> = [];
  constructor(readonly repo: RawEventsRepository) {}

  async insert(venue: Venue, messages: RawMessage[]): Promise<void> {
    const batch = messages.map((message) => ({ message, position: { partition: 0, offset: String(this.offset++) } }));
    await this.repo.insert(venue, batch, `fill-${venue}-${this.batch++}-${randomBytes(4).toString('hex')}`);
    for (const b of batch) this.stored.push({ message: b.message, offset: Number(b.position.offset) });
  }

  /**
   * The records the API must serve for a market, in serving order: deduplicated by the
   * table's row identity (the first stored copy wins), ordered by
   * (event time, ingest_seq, dedup_id, tie-breaks).
   */
  expected(venue: Venue, market: string, filter: (ts: number) => boolean = () => true): Array<Record<string, unknown>> {
    const byIdentity = new Map<string, { message: RawMessage; offset: number }>();
    for (const s of this.stored) {
      const m = s.message;
      if (m.venue !== venue) continue;
      const id = (EXPECTED[m.venue] as ExpectedOf<RawMessage>).identity(m);
      if (id[0] !== market) continue;
      const k = JSON.stringify(id);
      const prev = byIdentity.get(k);
      if (!prev || prev.offset > s.offset) byIdentity.set(k, s);
    }
    const rows = [...byIdentity.values()].map(({ message: m }) => {
      const { ts, tie, record } = (EXPECTED[m.venue] as ExpectedOf<RawMessage>).row(m);
      return { ts, seq: BigInt(m.ingest_seq), id: m.dedup_id, tie, out: { ...record, received_at: m.received_at, worker_id: m.worker_id } as Record<string, unknown> };
    });
    const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    rows.sort((a, b) => a.ts - b.ts || (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0) || cmp(a.id, b.id) || cmp(a.tie.join('\u0000'), b.tie.join('\u0000')));
    return rows.filter((r) => filter(r.ts)).map((r) => r.out);
  }
}

export function testConfig(overrides: Partial<ApiConfig> = {}): ApiConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    publicUrl: undefined,
    adminToken: undefined,
    corsOrigins: undefined,
    openServiceWarning: undefined,
    cursorSecret: randomBytes(32),
    dailyDir: path.join(tmpdir(), `booktape-daily-${randomBytes(6).toString('hex')}`),
    dataFloors: { ...DEFAULT_DATA_FLOORS },
    redisKeyPrefix: `${uniqueId('bt-api-test')}:`,
    resultCacheMs: 0,
    summaryAnswerCacheBytes: 64 * 1024 * 1024,
    caching: { finalisedAfterMs: 3_600_000, maxAgeSeconds: 86_400 },
    offsetContinuationMs: 60_000,
    usageFlushMs: 200,
    streamSessions: 4,
    // As many as the pool: a test that shares the sessions out between keys says so.
    streamSessionsPerKey: 4,
    // No slow-reader floor: a test that reads slowly on purpose sets one.
    streamFloor: { bytesPerSecond: 0, windowMs: 10_000 },
    // Catalogue only: tests never reach the venue's metadata API unless they point it at a fake.
    slugLookup: { gammaUrl: null, timeoutMs: 3000, missCacheMs: 30_000 },
    rollupQueuePrefix: 'booktape',
    billing: undefined,
    monitoring: DEFAULT_THRESHOLDS,
    // Tests make many requests with one key: no plan limits unless a test sets them.
    plans: UNLIMITED_PLANS,
    requestLogFlushMs: 200,
    ...overrides,
  };
}

/**
 * The config the OpenAPI documents are built with (the linted one, `scripts/openapi.mjs`, and
 * the SDK's committed one): the API as deployed, an admin token set so the operator routes
 * declare it, at `http://HOST:PORT` or `publicUrl`. Nothing else in it reaches the document.
 */
export function documentConfig(o: { host?: string | undefined; port?: number | undefined; publicUrl?: string | undefined } = {}): ApiConfig {
  return testConfig({ adminToken: 'openapi-document-admin-token', host: o.host ?? '127.0.0.1', port: o.port ?? 8080, publicUrl: o.publicUrl, cursorSecret: Buffer.alloc(32) });
}

export interface TestApi {
  app: FastifyInstance;
  ch: ClickHouse;
  redis: Redis;
  config: ApiConfig;
  filler: Filler;
  /** Creates a key through the API and returns it. */
  newKey(userId?: string): Promise<string>;
  /** Another app on the same store (other config or deps). */
  another(overrides?: Partial<ApiConfig>, redis?: Redis): Promise<FastifyInstance>;
  close(): Promise<void>;
}

export { deleteRedisPrefix };

/** A migrated temp ClickHouse, the project's Redis under a unique prefix, and the app. */
export async function startTestApi(overrides: Partial<ApiConfig> = {}): Promise<TestApi> {
  const t: TestClickHouse = await tempClickHouse();
  const redis = createRedis(requireEnv('REDIS_URL'), { connectionName: 'booktape-api-test' });
  const config = testConfig(overrides);
  const log = silentLogger();
  const app = await createApp({ ch: t.ch, log, redis, config });
  const extra: Array<{ app: FastifyInstance; redis?: Redis }> = [];
  const prefixes = new Set([config.redisKeyPrefix]);
  const extraDailyDirs: string[] = [];
  return {
    app,
    ch: t.ch,
    redis,
    config,
    filler: new Filler(new RawEventsRepository(t.ch)),
    async newKey(userId = 'user-1') {
      const res = await app.inject({ method: 'POST', url: `/api/v1/keys?name=test&user_id=${encodeURIComponent(userId)}`, headers: config.adminToken ? { 'x-admin-token': config.adminToken } : {} });
      if (res.statusCode !== 200) throw new Error(`POST /keys: ${res.statusCode} ${res.body}`);
      return (res.json() as { data: { api_key: string } }).data.api_key;
    },
    async another(o = {}, otherRedis) {
      const c = { ...config, ...o };
      prefixes.add(c.redisKeyPrefix);
      extraDailyDirs.push(c.dailyDir);
      const a = await createApp({ ch: t.ch, log, redis: otherRedis ?? redis, config: c });
      extra.push({ app: a, ...(otherRedis ? { redis: otherRedis } : {}) });
      return a;
    },
    async close() {
      for (const e of extra) {
        await e.app.close().catch(() => undefined);
        e.redis?.disconnect();
      }
      await app.close();
      for (const p of prefixes) await deleteRedisPrefix(redis, p);
      redis.disconnect();
      await t.cleanup();
      // The daily files the test's API wrote (testConfig gives each config a temp directory of
      // its own; one a test named itself is left alone).
      for (const d of new Set([config.dailyDir, ...extraDailyDirs])) {
        if (path.dirname(d) === tmpdir() && path.basename(d).startsWith('booktape-daily-')) rmSync(d, { recursive: true, force: true });
      }
    },
  };
}

/** Authorization header for a key. */
export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
