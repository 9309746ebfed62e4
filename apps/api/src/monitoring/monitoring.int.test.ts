import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import type { FastifyInstance } from 'fastify';
import { parseEnv, silentLogger } from '@booktape/config';
import { RollupQueue, createKafka, ensureTopics, ingestorReportKeys, removeRollupWorkerBeat, rollupWorkerKeys, topicNames, writeRollupWorkerBeat } from '@booktape/messaging';
import type { ClickHouse } from '@booktape/storage';
import { freePort, requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { createStatusPublisher, type IngestorHealth } from '@booktape/ingestor';
import { createRollupWorker } from '@booktape/rollup-worker';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { createApi, createApp } from '../api.ts';
import { apiConfigFromEnv, apiEnvSchema } from '../config.ts';
import { readRollupBacklog, type MonitoringStatus } from './index.ts';
import { createRedis, type Redis } from '../redis.ts';
import { aMessage, bMessage, conditionId, deleteRedisPrefix, startTestApi, testConfig, type TestApi } from '../testing.ts';

/**
 * /api/v1/monitoring/status, /status and /metrics against the real Redis, Kafka and
 * ClickHouse: the ingestor's real status publisher on one side and the API's reader on the
 * other, the rollup backlog, and answers (never a 500) while a backing service is down.
 */

let t: TestApi;
let closedPort: number;
const queuePrefix = uniqueId('bt-mon');
const ADMIN = 'admin-token-0123456789';
const dataDir = mkdtempSync(path.join(tmpdir(), 'booktape-mon-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));


/** A fresh app on the same stores: its status cache is empty. */
const fresh = (o: Parameters<TestApi['another']>[0] = {}, redis?: Redis) => t.another(o, redis);

async function status(app: FastifyInstance): Promise<MonitoringStatus> {
  const res = await app.inject({ url: '/api/v1/monitoring/status' });
  expect(res.statusCode).toBe(200);
  return res.json() as MonitoringStatus;
}

function captureHealth(o: { connectedA: number; stored: number; records: number }): IngestorHealth {
  const now = new Date().toISOString();
  return {
    sink: { ok: true, batches: 1, stored: o.stored, deadLettered: 2, refusedRecords: 2, insertFailures: 0, paused: false, lastStoredAt: Date.now() },
    catalogue: null,
    capture: {
      counters: {
        'exchange-a': { frames: 10, records: o.records, controls: 0, deadLetters: 0, lastFrameAt: Date.now() },
        'exchange-b': { frames: 0, records: 0, controls: 0, deadLetters: 0, lastFrameAt: null },
      },
      producer: { buffered: 0, sent: 0, flushes: 0, errors: 0 },
      sources: [
        { venue: 'exchange-a', resolving: false, lastError: null, feeds: { venue: 'exchange-a', enabled: true, markets: 6, connections: 2, connected: o.connectedA, framesReceived: 10, dataFramesReceived: 10, reconnects: 1, lastDataAt: now, feeds: [] } },
        { venue: 'exchange-b', enabled: false, offReason: 'no_credentials', markets: 0, connections: 0, connected: 0, framesReceived: 0, dataFramesReceived: 0, reconnects: 0, lastDataAt: null, feeds: [] },
      ],
    },
  } as unknown as IngestorHealth;
}

/** A rollup worker's liveness beat, live for the whole file unless removed. */
const workerBeat = (prefix: string, instance: string, intervalMs = 600_000) =>
  writeRollupWorkerBeat(t.redis, prefix, { v: 1, instance, started_at: new Date().toISOString(), published_at: new Date().toISOString(), interval_ms: intervalMs, concurrency: 1 });

beforeAll(async () => {
  t = await startTestApi({ rollupQueuePrefix: queuePrefix });
  await workerBeat(queuePrefix, 'mon-test-rollup');
  closedPort = await freePort();
});
afterAll(async () => {
  await deleteRedisPrefix(t.redis, `${queuePrefix}:`);
  await t?.close();
});

describe('ingestor reports → /monitoring/status', () => {
  it('nothing reporting: 200, degraded, venues unknown, stores up; OpenAPI describes the answer', async () => {
    const s = await status(t.app);
    expect(s.status, JSON.stringify(s.reasons)).toBe('degraded');
    expect(s.venues.map((v) => [v.venue, v.state])).toEqual([
      ['exchange-a', 'unknown'],
      ['exchange-b', 'unknown'],
    ]);
    expect(s.stores).toMatchObject({ clickhouse: { ok: true }, redis: { ok: true } });
    const doc = (await t.app.inject({ url: '/api/v1/openapi.json' })).json();
    expect(doc.paths['/api/v1/monitoring/status'].get.responses['200']).toBeDefined();
    expect(JSON.stringify(doc.components.schemas.MonitoringStatus)).toContain('consumer_lag');
  });

  it('the real publisher (capture + sink, Kafka lag) is read by the API, and a clean stop removes it', async () => {
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'monitoring-test' }, silentLogger());
    const topics = topicNames(`${uniqueId('mon')}.`);
    await ensureTopics(kafka, topics, 1);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.raw['exchange-a'], messages: [{ key: 'm', value: '[]' }, { key: 'm', value: '[]' }] });
    await producer.disconnect();
    // The records keep growing, as a live capture's do: the rate is taken per report interval,
    // so a count set once would show a rate only in the first report, which may go out before
    // a fresh broker lets the lag be read (the test then waited for both in vain).
    let connectedA = 2;
    let records = 0;
    const publisher = createStatusPublisher({
      redis: t.redis,
      prefix: queuePrefix,
      log: silentLogger(),
      ingestor: { topics, health: () => captureHealth({ connectedA, stored: 600, records: (records += 100) }) },
      config: { roles: { capture: true, sink: true }, venues: { 'exchange-a': true, 'exchange-b': true }, sinkGroupId: uniqueId('mon-group'), platform: { workerId: 4 } },
      kafka,
      intervalMs: 300,
    });
    publisher.start();
    try {
      const s = (await waitFor('the report in the status', async () => {
        const x = await status(await fresh());
        return x.kafka.state === 'ok' && x.venues[0]!.events_per_second > 0 ? x : null;
      }, 90_000))!; // a fresh broker creates its group-offsets topic first
      expect(s.status).toBe('ok');
      expect(s.venues[0]).toMatchObject({ venue: 'exchange-a', state: 'up', connections: 2, connected: 2, markets: 6, reconnects: 1, kafka_lag: 2 });
      expect(s.venues[0]!.last_event_age_ms).toBeLessThan(10_000);
      // Why exchange B is off reaches the JSON and the page through the report.
      expect(s.venues[1]).toMatchObject({ venue: 'exchange-b', state: 'off', off_reason: 'no_credentials' });
      expect((await (await fresh()).inject({ url: '/status' })).body).toContain('no API credentials are configured');
      expect(s.kafka).toMatchObject({ state: 'ok', consumer_lag: 2 });
      expect(s.sink).toMatchObject({ state: 'ok', processes: 1, refused_records: 2 });
      expect((await (await fresh()).inject({ url: '/metrics' })).body).toMatch(/^booktape_sink_refused_records 2$/m);
      expect(s.processes).toEqual([expect.objectContaining({ worker_id: 4, roles: ['capture', 'sink'], live: true })]);
      // Public: no host name, instance id or group id in the answer.
      expect(JSON.stringify(s)).not.toContain(publisher.instance);

      connectedA = 1;
      const degraded = (await waitFor('a connection down', async () => {
        const x = await status(await fresh());
        return x.venues[0]!.state === 'degraded' ? x : null;
      }))!;
      expect(degraded.status).toBe('degraded');
      expect(degraded.reasons).toContain('Exchange A (Polymarket): 1 of 2 connections up');
    } finally {
      await publisher.stop();
    }
    const after = await status(await fresh());
    expect(after.venues[0]!.state).toBe('unknown');
    expect(after.processes).toEqual([]);
  }, 150_000);

  it('a process that stopped reporting shows as not reporting, and its venues as down', async () => {
    const keys = ingestorReportKeys(queuePrefix);
    const at = Date.now() - 45_000;
    const report = {
      v: 1,
      instance: 'gone-w9',
      worker_id: 9,
      roles: ['capture'],
      started_at: new Date(at - 600_000).toISOString(),
      published_at: new Date(at).toISOString(),
      interval_ms: 5000,
      capture: {
        venues: [{ venue: 'exchange-b', enabled: true, resolving: false, markets: 3, connections: 1, connected: 1, reconnects: 0, last_event_at: new Date(at - 1000).toISOString(), records_total: 50, events_per_second: 2, frames_total: 50, dead_letters_total: 0 }],
        producer_backlog: 0,
        producer_errors: 0,
      },
      sink: null,
    };
    await t.redis.set(keys.report('gone-w9'), JSON.stringify(report), 'PX', 60_000);
    await t.redis.zadd(keys.index, at, 'gone-w9');
    // Garbage under the same index is not trusted, and the status says it could not read it.
    await t.redis.set(keys.report('junk'), '{"v":1,"instance":"<script>"}', 'PX', 60_000);
    await t.redis.zadd(keys.index, Date.now(), 'junk');
    await t.redis.set(keys.report('not-json'), 'garbage{', 'PX', 60_000);
    await t.redis.zadd(keys.index, Date.now(), 'not-json');
    try {
      const s = await status(await fresh());
      expect(s.status).not.toBe('ok');
      expect(s.reasons).toContain('Capture: 2 ingestor status reports in Redis cannot be read (another version, or a corrupted value); the state shown may leave those processes out');
      expect(JSON.stringify(s)).not.toContain('<script>');
      expect(s.venues[1]).toMatchObject({ venue: 'exchange-b', state: 'down', detail: 'its capture process stopped reporting 45 s ago' });
      expect(s.venues[1]!.last_event_age_ms).toBeGreaterThanOrEqual(46_000);
      expect(s.processes).toEqual([expect.objectContaining({ worker_id: 9, live: false })]);
    } finally {
      await t.redis.del(keys.report('gone-w9'), keys.report('junk'), keys.report('not-json'));
      await t.redis.zrem(keys.index, 'gone-w9', 'junk', 'not-json');
    }
  });
});

describe('rollup backlog', () => {
  it('depth and the oldest pending asset, read as RollupQueue.stats() reads them', async () => {
    const queue = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix: queuePrefix, debounceMs: 600_000 });
    try {
      await queue.notify([
        { venue: 'exchange-a', market: '0xaaaa', asset: '111', date: '2026-03-01' },
        { venue: 'exchange-a', market: '0xaaaa', asset: '111', date: '2026-03-02' },
      ]);
      await new Promise((r) => setTimeout(r, 5));
      await queue.notify([{ venue: 'exchange-b', market: 'KXONE', asset: 'KXONE', date: '2026-03-02' }]);
      await queue.jobsAdded();
      const stats = await queue.stats();
      const mine = await readRollupBacklog(t.redis, queuePrefix);
      expect({ waiting: mine.waiting, active: mine.active, delayed: mine.delayed, failed: mine.failed, pendingAssets: mine.pendingAssets, oldestPendingMs: mine.oldest?.since ?? null }).toEqual(stats);
      expect(mine).toMatchObject({ delayed: 2, pendingAssets: 2, oldest: { venue: 'exchange-a', market: '0xaaaa', asset: '111', dates: ['2026-03-01', '2026-03-02'] } });

      const s = await status(await fresh());
      expect(s.rollup).toMatchObject({ state: 'ok', delayed: 2, pending_assets: 2, oldest_pending: { venue: 'exchange-a', market: '0xaaaa', dates: ['2026-03-01', '2026-03-02'] } });
      const strict = await status(await fresh({ monitoring: { maxEventAgeMs: 300_000, maxKafkaLag: 100_000, maxRollupDelayMs: 1000 } }));
      await new Promise((r) => setTimeout(r, 1100));
      const behind = await status(await fresh({ monitoring: { maxEventAgeMs: 300_000, maxKafkaLag: 100_000, maxRollupDelayMs: 1000 } }));
      expect(strict.rollup.state === 'behind' || behind.rollup.state === 'behind').toBe(true);
      expect(behind.reasons.some((r) => r.startsWith('Rollups: summaries are behind'))).toBe(true);
    } finally {
      await queue.queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await deleteRedisPrefix(t.redis, `${queuePrefix}:rollup:`);
    }
  });
});

describe('rollup worker liveness', () => {
  it('a running worker is live; a clean stop removes it; none running is down', async () => {
    const prefix = uniqueId('bt-mon-worker');
    const worker = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options: { queuePrefix: prefix, beatMs: 200, sweepEveryMs: 3_600_000 } });
    try {
      await worker.start();
      const live = (await waitFor('the worker live', async () => {
        const x = await status(await fresh({ rollupQueuePrefix: prefix }));
        return x.rollup.workers === 1 ? x : null;
      }))!;
      expect(live.rollup).toMatchObject({ state: 'ok', workers: 1, stopped_workers: 0 });
      await worker.stop();
      const gone = await status(await fresh({ rollupQueuePrefix: prefix }));
      expect(gone.rollup).toMatchObject({ state: 'down', workers: 0, stopped_workers: 0, detail: 'no rollup worker is running' });
      expect(gone.reasons).toContain('Rollups: no rollup worker is running; summaries are not being rolled up');
    } finally {
      await worker.stop().catch(() => undefined);
      await deleteRedisPrefix(t.redis, `${prefix}:`);
    }
  }, 60_000);

  it('a worker whose beat expired (died) shows as down, in the status, the page and the metrics', async () => {
    const prefix = uniqueId('bt-mon-dead');
    try {
      await workerBeat(prefix, 'dead-worker');
      // What expiry leaves behind: the index entry without its beat.
      await t.redis.del(rollupWorkerKeys(prefix).beat('dead-worker'));
      const app = await fresh({ rollupQueuePrefix: prefix });
      const s = await status(app);
      expect(s.rollup).toMatchObject({ state: 'down', workers: 0, stopped_workers: 1 });
      expect(s.rollup.detail).toMatch(/^no rollup worker is running, the last stopped reporting \d+ s ago/);
      expect(s.status).toBe('degraded');
      expect((await app.inject({ url: '/status' })).body).toMatch(/no rollup worker is running/);
      const metrics = (await app.inject({ url: '/metrics' })).body;
      expect(metrics).toMatch(/^booktape_rollup_workers\{state="live"\} 0$/m);
      expect(metrics).toMatch(/^booktape_rollup_workers\{state="stopped"\} 1$/m);
      // Another worker live again: up, the dead one still listed.
      await workerBeat(prefix, 'new-worker');
      const back = await status(await fresh({ rollupQueuePrefix: prefix }));
      expect(back.rollup).toMatchObject({ state: 'ok', workers: 1, stopped_workers: 1 });
      await removeRollupWorkerBeat(t.redis, prefix, 'new-worker');
    } finally {
      await deleteRedisPrefix(t.redis, `${prefix}:`);
    }
  });
});

describe('/metrics', () => {
  it('requests by route pattern (never the raw URL) and status, status gauges, process metrics', async () => {
    const app = await fresh();
    await app.inject({ url: '/api/v1/exchange-a/market/data?condition_id=0xabc&date=2026-03-01' });
    await app.inject({ url: '/api/v1/exchange-a/market/data?condition_id=0xdef&date=2026-03-02' });
    await app.inject({ url: '/api/v1/keys/some-key-id', method: 'DELETE' });
    await app.inject({ url: '/no/such/path/12345' });
    await app.inject({ url: '/api/v1/monitoring/status' });
    const res = await app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body;
    expect(text).toContain('booktape_http_requests_total{method="GET",route="/api/v1/exchange-a/market/data",status_code="401"} 2');
    expect(text).toContain('booktape_http_requests_total{method="DELETE",route="/api/v1/keys/:key_id",status_code="400"} 1');
    expect(text).toContain('booktape_http_requests_total{method="GET",route="unmatched",status_code="404"} 1');
    expect(text).toMatch(/booktape_http_request_duration_seconds_bucket\{le="0\.5",method="GET",route="\/api\/v1\/monitoring\/status",status_code="200"\} 1/);
    expect(text).not.toContain('0xabc');
    expect(text).not.toContain('12345');
    expect(text).toContain('booktape_venue_state{venue="exchange-a",state="unknown"} 1');
    expect(text).toContain('booktape_venue_state{venue="exchange-a",state="up"} 0');
    expect(text).toContain('booktape_status{status="degraded"} 1');
    expect(text).toContain('booktape_store_up{store="clickhouse"} 1');
    expect(text).toContain('booktape_store_up{store="redis"} 1');
    expect(text).toMatch(/^booktape_rollup_queue_jobs\{state="waiting"\} \d+$/m);
    expect(text).toMatch(/^booktape_rollup_pending_assets \d+$/m);
    expect(text).toContain('# TYPE process_cpu_seconds_total counter');
    expect(text).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
    // Unknown values are left out rather than reported as 0.
    expect(text).not.toMatch(/^booktape_kafka_consumer_lag_messages /m);
  });

  it('an open service (BOOKTAPE_ALLOW_OPEN=1 off loopback): publicly only a short flag; the warning in words at start and to an authenticated /monitoring/status', async () => {
    const env = { HOST: '0.0.0.0', BOOKTAPE_ALLOW_OPEN: '1', BOOKTAPE_DATA_DIR: dataDir };
    const warning = apiConfigFromEnv(parseEnv(apiEnvSchema, env), env).openServiceWarning!;
    expect(warning).toContain('ADMIN_TOKEN is unset');
    const app = await fresh({ openServiceWarning: warning });
    // Anyone: the flag, not the text (which names the address and what anyone can do there).
    expect(await status(app)).toMatchObject({ operator_routes_open: true, warnings: [] });
    const page = (await app.inject({ url: '/status' })).body;
    expect(page).toContain('Operator routes are open');
    expect(page).not.toContain('Open service');
    expect(page).not.toContain('0.0.0.0');
    // A valid API key: the text too. A wrong one is still a 200, without it.
    const created = await app.inject({ method: 'POST', url: '/api/v1/keys?name=mon&user_id=mon-user' });
    expect(created.statusCode).toBe(200);
    const key = (created.json() as { data: { api_key: string } }).data.api_key;
    const withKey = await app.inject({ url: '/api/v1/monitoring/status', headers: { authorization: `Bearer ${key}` } });
    expect(withKey.json()).toMatchObject({ operator_routes_open: true, warnings: [warning] });
    for (const authorization of ['Bearer bt_live_not-a-key-at-all', 'garbage']) {
      const wrong = await app.inject({ url: '/api/v1/monitoring/status', headers: { authorization } });
      expect([wrong.statusCode, wrong.json().warnings]).toEqual([200, []]);
    }
    // The usual (loopback) service warns of nothing.
    expect(await status(await fresh())).toMatchObject({ operator_routes_open: false, warnings: [] });
    expect((await (await fresh()).inject({ url: '/status' })).body).not.toContain('Operator routes are open');

    // And the log says it once the API listens (on loopback here: what is logged is the config's).
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) });
    const api = createApi({ ch: t.ch, log, redis: t.redis, config: testConfig({ openServiceWarning: warning, redisKeyPrefix: `${uniqueId('bt-open')}:` }) }, { host: '127.0.0.1', port: 0 });
    await api.start();
    await api.stop();
    const warned = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.msg === warning);
    expect(warned).toHaveLength(1);
    expect(warned[0]!.level).toBe(40);
  });

  it('with ADMIN_TOKEN set: 401 without the token, 200 with X-Admin-Token or Bearer; status and page stay public', async () => {
    const app = await fresh({ adminToken: ADMIN });
    const none = await app.inject({ url: '/metrics' });
    expect(none.statusCode).toBe(401);
    expect(none.json().error.code).toBe('unauthorized');
    expect((await app.inject({ url: '/metrics', headers: { 'x-admin-token': 'wrong-token-0123456789' } })).statusCode).toBe(401);
    expect((await app.inject({ url: '/metrics', headers: { 'x-admin-token': ADMIN } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN}` } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/api/v1/monitoring/status' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/status' })).statusCode).toBe(200);
  });
});

describe('storage footprint', () => {
  /** The status once the footprint has been read (the first status may not wait for it). */
  async function measured(app: FastifyInstance): Promise<MonitoringStatus> {
    return (await waitFor('the footprint', async () => {
      const x = await status(app);
      return x.footprint.state === 'ok' ? x : null;
    }))!;
  }
  const tableOf = (s: MonitoringStatus, name: string) => s.footprint.tables.find((x) => x.table === name);

  it('stored rows are counted per table, with bytes on disk and per row; the page and /metrics show them', async () => {
    const before = await measured(await fresh());
    expect(before.footprint.scope).toBe('database');
    const a0 = tableOf(before, 'raw_exchange_a')!;
    const b0 = tableOf(before, 'raw_exchange_b')!;
    // Every MergeTree table is listed, an empty one as 0; the views hold no parts and are not.
    expect(before.footprint.tables.map((x) => x.table)).toEqual(expect.arrayContaining(['raw_exchange_a', 'raw_exchange_b', 'summary_days', 'book_checkpoints', 'schema_migrations']));
    expect(before.footprint.tables.map((x) => x.table)).not.toContain('market_dates_exchange_a_mv');
    expect(tableOf(before, 'schema_migrations')!.rows).toBeGreaterThan(0);

    const ts = Date.UTC(2026, 2, 3, 10);
    await t.filler.insert('exchange-a', Array.from({ length: 7 }, (_, i) => aMessage({ market: conditionId(4242), ts: ts + i, hash: `0xfootprint${i}`, kind: i === 0 ? 'book' : 'price_change' })));
    await t.filler.insert('exchange-b', Array.from({ length: 3 }, (_, i) => bMessage({ ticker: 'KXFOOTPRINT', ms: ts + i, seq: i + 1 })));

    const app = await fresh();
    const s = await measured(app);
    const a = tableOf(s, 'raw_exchange_a')!;
    const b = tableOf(s, 'raw_exchange_b')!;
    expect(a.rows - a0.rows).toBe(7);
    expect(b.rows - b0.rows).toBe(3);
    for (const [x, x0] of [[a, a0], [b, b0]] as const) {
      expect(x.raw).toBe(true);
      expect(x.bytes_on_disk).toBeGreaterThan(x0.bytes_on_disk);
      expect(x.data_uncompressed_bytes).toBeGreaterThan(x0.data_uncompressed_bytes);
      expect(x.parts).toBeGreaterThanOrEqual(1);
      expect(x.bytes_per_row).toBe(Math.round((x.bytes_on_disk / x.rows) * 10) / 10);
    }
    expect(tableOf(s, 'summary_days')).toMatchObject({ raw: false, bytes_per_row: null });
    expect(s.footprint.raw).toMatchObject({ rows: a.rows + b.rows, bytes_on_disk: a.bytes_on_disk + b.bytes_on_disk });
    expect(s.footprint.total!.bytes_on_disk).toBe(s.footprint.tables.reduce((n, x) => n + x.bytes_on_disk, 0));
    // The footprint does not make the status worse or better.
    expect(s.reasons.join()).not.toMatch(/footprint/i);

    const metrics = (await app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/^booktape_footprint_up 1$/m);
    expect(metrics).toContain(`booktape_table_rows{table="raw_exchange_a"} ${a.rows}`);
    expect(metrics).toContain(`booktape_table_bytes_on_disk{table="raw_exchange_b"} ${b.bytes_on_disk}`);
    expect(metrics).toContain(`booktape_table_bytes_per_row{table="raw_exchange_a"} ${a.bytes_per_row}`);
    expect(metrics).not.toMatch(/^booktape_table_bytes_per_row\{table="summary_days"\}/m);
    const page = (await app.inject({ url: '/status' })).body;
    expect(page).toContain('<table id="footprint" data-state="ok">');
    expect(page).toMatch(new RegExp(`data-table="raw_exchange_a">\\s*<th scope="row">raw_exchange_a</th>\\s*<td class="num">${a.rows.toLocaleString('en-US')}</td>`));
  });

  it('a footprint read that fails: status still 200 with everything else, the footprint unavailable with a reason (no error text)', async () => {
    const failing = await createApp({
      ch: t.ch,
      log: silentLogger(),
      redis: t.redis,
      config: { ...t.config, rollupQueuePrefix: queuePrefix },
      footprint: { read: () => Promise.reject(new Error('Code: 497. DB::Exception: secret-host.internal: not enough privileges')) },
    });
    try {
      const s = await status(failing);
      expect(s.footprint).toEqual({ state: 'unavailable', detail: 'the footprint query failed', scope: null, measured_at: null, tables: [], total: null, raw: null });
      expect(s.stores.clickhouse.ok).toBe(true);
      expect(s.rollup.state).toBe('ok');
      expect(JSON.stringify(s)).not.toContain('secret-host');
      const metrics = await failing.inject({ url: '/metrics' });
      expect(metrics.statusCode).toBe(200);
      expect(metrics.body).toMatch(/^booktape_footprint_up 0$/m);
      expect(metrics.body).not.toContain('booktape_table_rows');
      const page = await failing.inject({ url: '/status' });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Not available: the footprint query failed.');
    } finally {
      await failing.close();
    }
  });

  it('a footprint read that never answers: status answers without waiting for it', async () => {
    const hung = await createApp({ ch: t.ch, log: silentLogger(), redis: t.redis, config: { ...t.config, rollupQueuePrefix: queuePrefix }, footprint: { read: () => new Promise(() => undefined) } });
    try {
      const started = Date.now();
      const s = await status(hung);
      // The check's own bound is 2.5 s; the footprint waits 1 s of it at most, in parallel.
      expect(Date.now() - started).toBeLessThan(2000);
      expect(s.footprint).toMatchObject({ state: 'unavailable', detail: 'the footprint is being measured (the query is slow to answer)' });
      expect(s.stores.clickhouse.ok).toBe(true);
    } finally {
      await hung.close();
    }
  });
});

describe('backing services down: answers, never a 500', () => {
  let deadRedis: Redis;
  beforeAll(() => {
    deadRedis = createRedis(`redis://127.0.0.1:${closedPort}`);
    deadRedis.on('error', () => undefined);
  });
  afterAll(() => deadRedis?.disconnect());

  it('Redis unreachable: status down within about a second, page and metrics still answer', async () => {
    const app = await fresh({}, deadRedis);
    const started = Date.now();
    const s = await status(app);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(s.status).toBe('down');
    expect(s.stores).toEqual({ clickhouse: { ok: true, latency_ms: expect.any(Number) }, redis: { ok: false, latency_ms: null } });
    expect(s.venues.map((v) => v.state)).toEqual(['unknown', 'unknown']);
    expect(s.rollup.state).toBe('unknown');
    const page = await app.inject({ url: '/status' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Service disruption');
    const metrics = await app.inject({ url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('booktape_store_up{store="redis"} 0');
    expect(metrics.body).toContain('booktape_status{status="down"} 1');
  });

  it('ClickHouse unreachable: status down, the rest still read', async () => {
    const client = createClient({ url: `http://127.0.0.1:${closedPort}`, request_timeout: 2000, log: { level: ClickHouseLogLevel.OFF } });
    const dead: ClickHouse = { client, database: 'booktape_test', mode: 'server', cluster: undefined, embeddedPath: undefined, table: (n) => `booktape_test.${n}`, close: () => client.close() };
    const app = await createApp({ ch: dead, log: silentLogger(), redis: t.redis, config: { ...t.config, rollupQueuePrefix: queuePrefix } });
    try {
      const started = Date.now();
      const s = await status(app);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(s.status).toBe('down');
      expect(s.stores.clickhouse).toEqual({ ok: false, latency_ms: null });
      expect(s.stores.redis.ok).toBe(true);
      expect(s.rollup.state).toBe('ok');
      expect(s.reasons[0]).toMatch(/^ClickHouse is not reachable/);
      expect(s.footprint).toMatchObject({ state: 'unavailable', detail: 'ClickHouse is not reachable', tables: [] });
      expect((await app.inject({ url: '/status' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/metrics' })).body).toContain('booktape_store_up{store="clickhouse"} 0');
    } finally {
      await app.close();
    }
  });

  it('Kafka unreachable: the sink reports no lag, and the status says so', async () => {
    const deadKafka = createKafka({ brokers: [`127.0.0.1:${closedPort}`], clientId: 'monitoring-dead-kafka' }, silentLogger());
    const publisher = createStatusPublisher({
      redis: t.redis,
      prefix: queuePrefix,
      log: silentLogger(),
      ingestor: { topics: topicNames('nowhere.'), health: () => captureHealth({ connectedA: 2, stored: 0, records: 0 }) },
      config: { roles: { capture: true, sink: true }, venues: { 'exchange-a': true, 'exchange-b': true }, sinkGroupId: 'g', platform: { workerId: 5 } },
      kafka: deadKafka,
      intervalMs: 500,
      instance: 'dead-kafka',
    });
    publisher.start();
    try {
      const s = (await waitFor('the report', async () => {
        const x = await status(await fresh());
        return x.processes.length > 0 ? x : null;
      }))!;
      expect(s.kafka.state).toBe('unknown');
      expect(s.status).toBe('degraded');
      expect(s.reasons).toContain('Kafka: the consumer lag cannot be read (is Kafka reachable?)');
    } finally {
      await publisher.stop();
    }
  });
});
