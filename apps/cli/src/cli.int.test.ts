import { spawnSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { createKafka, decodeRawMessages, ensureTopics, topicNames } from '@booktape/messaging';
import { RawEventsRepository, SummariesRepository, type ClickHouse } from '@booktape/storage';
import { createSink } from '@booktape/ingestor';
import { createRollupWorker } from '@booktape/rollup-worker';
import { requireEnv, tempClickHouse, uniqueId, waitFor } from '@booktape/testkit';
import { bMessage, bearer, startTestApi } from '@booktape/api/testing';
import { BIN, runCli } from './cli.test-support.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, encoding: 'utf8', timeout: 120_000 });
}

/** The CLI in a child process without blocking this one (a worker in this process must run meanwhile). */
const runAsync = (args: string[], env: Record<string, string> = {}) => runCli(args, env);

/**
 * What `replay --wait` talks to, on fresh topics, group and queue: a started rollup worker and
 * a sink the test starts when it wants; `env` points the CLI at them.
 */
async function replayTarget(ch: ClickHouse, name: string, debounceMs: number) {
  const prefix = `${uniqueId(name)}.`;
  const group = uniqueId(`${name}-g`);
  const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: name }, silentLogger());
  const topics = topicNames(prefix);
  await ensureTopics(kafka, topics, 2);
  const queuePrefix = uniqueId(`${name}-rollup`);
  const worker = createRollupWorker({ ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options: { queuePrefix, debounceMs } });
  await worker.start();
  const sink = createSink({ kafka, topics, ch, log: silentLogger(), groupId: group, onStored: (parts) => worker.queue?.notify(parts) });
  const env = { KAFKA_TOPIC_PREFIX: prefix, SINK_GROUP_ID: group, KAFKA_PARTITIONS: '2', ROLLUP_QUEUE_PREFIX: queuePrefix };
  return { worker, sink, env };
}

describe('booktape command line', () => {
  it('refuses a malformed variable with a message that names it, and no stack trace', () => {
    const r = run(['ingest'], { KAFKA_BROKERS: 'not a broker list', WORKER_ID: '-3' });
    expect(r.status).toBe(2);
    const out = r.stdout + r.stderr;
    expect(out).toContain('KAFKA_BROKERS');
    expect(out).toContain('WORKER_ID');
    expect(out).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/);
  });

  it('rejects unknown commands and bad options in one line and the hint to --help', () => {
    const r = run(['frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("booktape: unknown command: frobnicate\nRun 'booktape --help' for usage.\n");
    expect(run(['replay']).status).toBe(2);
    expect(run(['simulate', '--rate', 'fast']).stderr).toContain('--rate must be a positive integer');
  });

  it('replay --wait sends a capture file through Kafka and returns once the sink stored it and its summaries are rebuilt, reporting bad lines', async () => {
    const t = await tempClickHouse();
    const { worker, sink, env } = await replayTarget(t.ch, 'cli', 100);
    await sink.start();
    try {
      const market = '0x' + 'ab'.repeat(32);
      const ts = Date.UTC(2026, 5, 1, 10);
      const lines = [
        { venue: 'exchange-a', received_at: new Date(ts).toISOString(), frame: [{ event_type: 'book', asset_id: '111', market, bids: [{ price: '0.48', size: '30' }], asks: [{ price: '0.52', size: '25' }], timestamp: String(ts), hash: '0xb1' }] },
        { venue: 'exchange-a', received_at: new Date(ts + 5).toISOString(), frame: { event_type: 'price_change', market, timestamp: String(ts + 4), price_changes: [{ asset_id: '111', price: '0.49', size: '10', side: 'BUY', hash: 'p1', best_bid: '0.49', best_ask: '0.52' }, { asset_id: '222', price: '0.51', size: '10', side: 'SELL', hash: 'p2', best_bid: '0.48', best_ask: '0.51' }] } },
        { venue: 'exchange-b', received_at: new Date(ts + 6).toISOString(), frame: { type: 'orderbook_snapshot', sid: 1, seq: 1, msg: { market_ticker: 'kxtest-1', yes_dollars_fp: [['0.4100', '20.00']], no_dollars_fp: [['0.5400', '200.00']] } } },
      ].map((l) => JSON.stringify(l));
      const file = path.join(dir, 'capture.ndjson');
      writeFileSync(file, [...lines, '{not json', ''].join('\n'));
      const child = spawn(process.execPath, [BIN, 'replay', file, '--wait', '--timeout', '60'], {
        env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(stderr).toContain('4 frames → 4 records');
      expect(stderr).toContain('1 malformed lines');
      expect(stderr).toContain('everything replayed is stored');
      expect(stderr).toContain('waiting for the summaries of 3 partition(s)');
      expect(stderr).toContain('summaries rebuilt');
      expect(code).toBe(3); // bad lines reported in the exit status, good ones stored
      const repo = new RawEventsRepository(t.ch);
      expect(await repo.count('exchange-a')).toBe(3);
      expect(await repo.count('exchange-b')).toBe(1);
      // Rebuilt when replay returned, not later.
      const summaries = new SummariesRepository(t.ch);
      expect((await summaries.day({ venue: 'exchange-a', market, asset: '111' }, '2026-06-01'))?.events).toBe(2);
      expect((await summaries.day({ venue: 'exchange-a', market, asset: '222' }, '2026-06-01'))?.events).toBe(1);
      expect((await summaries.day({ venue: 'exchange-b', market: 'KXTEST-1', asset: 'KXTEST-1' }, '2026-06-01'))?.events).toBe(1);
    } finally {
      await sink.stop();
      await worker.stop();
      await t.cleanup();
    }
  });

  it('rollup --wait back-fills a date range through the running worker with progress, and refuses bad arguments', async () => {
    const t = await tempClickHouse();
    const queuePrefix = uniqueId('cli-backfill');
    const worker = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options: { queuePrefix } });
    await worker.start();
    try {
      const repo = new RawEventsRepository(t.ch);
      const day1 = Date.UTC(2026, 4, 1, 12);
      const b = (seq: number, ms: number) => ({
        venue: 'exchange-b' as const,
        received_at: new Date(ms).toISOString(),
        worker_id: 1,
        ingest_seq: String(seq),
        dedup_id: `1:${seq}`,
        record: { ticker: 'KXFILL-1', timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq, type: 'snapshot' as const, yes: [['0.4', '10']] as [string, string][], no: [['0.5', '3']] as [string, string][] },
      });
      await repo.insert('exchange-b', [b(1, day1), b(2, day1 + 86_400_000), b(3, day1 + 3 * 86_400_000)].map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), 'fill-cli');
      const env = { ROLLUP_QUEUE_PREFIX: queuePrefix };
      const bad = run(['rollup', '--venue', 'b', '--market', 'KXFILL-1', '--from', '2026-05-04', '--to', '2026-05-01'], env);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('--from 2026-05-04 is after --to 2026-05-01');
      expect(run(['rollup', '--venue', 'a', '--market', 'nope', '--from', '2026-05-01', '--to', '2026-05-01'], env).stderr).toContain('is not a condition id');

      expect(run(['rollup', '--venue', 'a', '--market', '0xabc', '--from', '2026-05-01', '--to', '2026-05-01'], env).stderr).toContain('"0xabc" is not a condition id (0x + 64 hex digits)');

      // --dry-run: the job, where it would go, the asset-days; nothing enqueued.
      const backfills = async () => (await worker.queue!.queue.getJobs(['waiting', 'active', 'completed', 'delayed', 'failed'])).filter((j) => j.name === 'backfill').length;
      const dry = await runAsync(['rollup', '--venue', 'kalshi', '--market', 'kxfill-1', '--from', '2026-05-01', '--to', '2026-05-03', '--dry-run'], env);
      expect(dry.status).toBe(0);
      expect(await backfills()).toBe(0);
      // Which Redis, and why that one: the project's own port when REDIS_URL is unset (nothing is contacted in a dry run).
      const projectPort: Record<string, string> = { ...(process.env as Record<string, string>), LOG_LEVEL: 'warn', ...env, BOOKTAPE_REDIS_PORT: '16999' };
      delete projectPort.REDIS_URL;
      const dryOut = spawnSync(process.execPath, [BIN, 'rollup', '--venue', 'b', '--market', 'KXFILL-1', '--from', '2026-05-01', '--to', '2026-05-02', '--dry-run'], { env: projectPort, encoding: 'utf8' });
      expect(dryOut.status).toBe(0);
      expect(dryOut.stdout.split('\n')).toEqual([
        `dry run, nothing enqueued: would enqueue on Redis redis://127.0.0.1:16999 (the project's own Redis, BOOKTAPE_REDIS_PORT=16999), queue prefix ${queuePrefix}`,
        'back-fill {"kind":"backfill","venue":"exchange-b","market":"KXFILL-1","from":"2026-05-01","to":"2026-05-02"}',
        'asset-days: up to 2 (asset KXFILL-1 × 2 day(s)); the worker rebuilds those with stored data, then later days whose carried state changed',
        'KXFILL-1 2026-05-01',
        'KXFILL-1 2026-05-02',
        '',
      ]);

      const r = await runAsync(['rollup', '--venue', 'b', '--market', 'kxfill-1', '--from', '2026-05-01', '--to', '2026-05-03', '--wait', '--timeout', '60'], env);
      expect(r.stderr).toContain(`rollup: Redis ${requireEnv('REDIS_URL')} (REDIS_URL), queue prefix ${queuePrefix}`);
      expect(r.stderr).toContain('back-fill done: 2 asset-days over 1 asset(s)');
      expect(await backfills()).toBe(1);
      expect(r.status).toBe(0);
      const summaries = new SummariesRepository(t.ch);
      const key = { venue: 'exchange-b' as const, market: 'KXFILL-1', asset: 'KXFILL-1' };
      expect((await summaries.days(key, '2026-05-01', '2026-05-31')).map((d) => d.date)).toEqual(['2026-05-01', '2026-05-02', '2026-05-04']);
      // Later days follow a back-filled day whose final state changed: 05-04 came from the ripple.
    } finally {
      await worker.stop();
      await t.cleanup();
    }
  });
});

/** The records of an exchange A raw value (binary or JSON), as the sink reads them. */
function rawRecordsA(v: Buffer): unknown {
  const d = decodeRawMessages('exchange-a', v);
  if (!d.ok) throw new Error(d.reason);
  return d.messages;
}

/**
 * Every message of a topic (a fresh group reads it from the start): parsed JSON values, or
 * with `decode`, what it makes of each raw value.
 */
async function readTopic(kafka: ReturnType<typeof createKafka>, topic: string, atLeast: number, decode = (v: Buffer): unknown => JSON.parse(v.toString())): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  const consumer = kafka.consumer({ groupId: uniqueId('cli-read') });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void out.push(decode(message.value!) as Record<string, unknown>) });
  try {
    await waitFor(`${atLeast} message(s) on ${topic}`, () => out.length >= atLeast, 30_000);
    await new Promise((r) => setTimeout(r, 500)); // and nothing more
  } finally {
    await consumer.disconnect();
  }
  return out;
}

function aLine(ts: number, frame: unknown) {
  return JSON.stringify({ venue: 'exchange-a', received_at: new Date(ts + 3).toISOString(), frame });
}

describe('booktape replay edge cases', () => {
  it('refuses a missing or unreadable file at once with a clear error and a non-zero exit, sending nothing', async () => {
    const good = path.join(dir, 'ok.ndjson');
    writeFileSync(good, aLine(Date.UTC(2026, 5, 1), { event_type: 'book', asset_id: '1', market: '0x' + 'ab'.repeat(32), bids: [], asks: [], timestamp: String(Date.UTC(2026, 5, 1)), hash: '0x1' }) + '\n');
    const aDir = path.join(dir, 'a-directory.ndjson');
    mkdirSync(aDir, { recursive: true });
    const missing = path.join(dir, 'no-such-capture.ndjson');
    const started = Date.now();
    // A broker nobody listens on: the check must come before any connection attempt.
    const r = await runAsync(['replay', good, missing, aDir, '--wait'], { KAFKA_BROKERS: '127.0.0.1:1' });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${missing}: no such file`);
    expect(r.stderr).toContain(`${aDir}: not a regular file`);
    expect(r.stderr).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/);
  });

  it('counts a frame too large for Kafka, dead-letters it with its reason, stores the rest and exits 5', async () => {
    const prefix = `${uniqueId('cli-big')}.`;
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'cli-big' }, silentLogger());
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 1);
    const market = '0x' + 'cd'.repeat(32);
    const ts = Date.UTC(2026, 5, 2, 10);
    const book = (asset: string, hash: string, levels: number) => ({
      event_type: 'book', asset_id: asset, market, timestamp: String(ts), hash,
      bids: Array.from({ length: levels }, (_, i) => ({ price: '0.48', size: String(i + 1) })), asks: [{ price: '0.52', size: '5' }],
    });
    const file = path.join(dir, 'big.ndjson');
    // Two small books around one of ~1.3 MB as a binary Kafka value (the broker's limit is 1 MiB).
    writeFileSync(file, [aLine(ts, [book('111', '0xsmall1', 2)]), aLine(ts + 1, [book('222', '0xbig', 120_000)]), aLine(ts + 2, [book('333', '0xsmall2', 2)])].join('\n') + '\n');
    const r = await runAsync(['replay', file], { KAFKA_TOPIC_PREFIX: prefix, KAFKA_PARTITIONS: '1' });
    expect(r.stderr).toContain('3 frames → 3 records');
    expect(r.stderr).toContain('1 record(s) in 1 message(s) larger than Kafka accepts were NOT stored');
    expect(r.status).toBe(5);

    const raw = await readTopic(kafka, topics.raw['exchange-a'], 1, rawRecordsA);
    const assets = raw.flatMap((v) => (v as unknown as Array<{ event: { asset_id: string } }>).map((m) => m.event.asset_id));
    expect(assets).toEqual(['111', '333']);
    const [dl, ...more] = await readTopic(kafka, topics.deadLetter, 1);
    expect(more).toEqual([]);
    expect(dl!.venue).toBe('exchange-a');
    expect(String(dl!.reason)).toMatch(/kafka refused a message of \d+ bytes \(1 record\(s\)\) as larger than the broker accepts; frame truncated to its first 65536/);
    // The binary value's head, in base64.
    expect(dl!.frame_encoding).toBe('base64');
    expect(String(dl!.frame)).toHaveLength(65_536);
    expect(Buffer.from(String(dl!.frame), 'base64').includes('0xbig')).toBe(true);
  });

  it('exits 6 and says how many when frames were refused and dead-lettered (a timestamp out of range, a bad exchange B ts)', async () => {
    const prefix = `${uniqueId('cli-refused')}.`;
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'cli-refused' }, silentLogger());
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 1);
    const market = '0x' + '7e'.repeat(32);
    const ts = Date.UTC(2026, 5, 4, 10);
    const book = (asset: string, timestamp: string) => ({ event_type: 'book', asset_id: asset, market, bids: [], asks: [], timestamp, hash: '0x' + asset });
    const bLine = (msg: Record<string, unknown>) =>
      JSON.stringify({ venue: 'exchange-b', received_at: new Date(ts + 9).toISOString(), frame: { type: 'orderbook_delta', sid: 1, seq: 1, msg } });
    const file = path.join(dir, 'refused.ndjson');
    writeFileSync(
      file,
      [
        aLine(ts, [book('1', String(ts))]),
        aLine(ts + 1, [book('2', '6000000000000')]),
        bLine({ market_ticker: 'KXREFUSED', price: 46, delta: -50, side: 'yes', ts: 'yesterday-ish' }),
      ].join('\n') + '\n',
    );
    const r = await runAsync(['replay', file], { KAFKA_TOPIC_PREFIX: prefix, KAFKA_PARTITIONS: '1' });
    expect(r.stderr).toContain('2 frame(s) refused as bad data were NOT stored');
    expect(r.stderr).toContain(`${file}:2 (exchange-a)`);
    expect(r.stderr).toContain(`${file}:3 (exchange-b)`);
    expect(r.status).toBe(6);
    const dls = await readTopic(kafka, topics.deadLetter, 2);
    expect(dls.map((d) => d.venue).sort()).toEqual(['exchange-a', 'exchange-b']);
  });

  it('reaches the project Kafka through BOOKTAPE_KAFKA_PORT when KAFKA_BROKERS is unset', async () => {
    const [host, port] = requireEnv('KAFKA_BROKERS').split(',')[0]!.split(':');
    // A port forwarder in front of the broker: a connection to it proves the port was used.
    let connections = 0;
    const proxy = net.createServer((client) => {
      connections += 1;
      const upstream = net.connect(Number(port), host);
      client.pipe(upstream).pipe(client);
      const end = () => (client.destroy(), upstream.destroy());
      client.on('error', end);
      upstream.on('error', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const proxyPort = (proxy.address() as net.AddressInfo).port;
    try {
      const prefix = `${uniqueId('cli-port')}.`;
      const ts = Date.UTC(2026, 5, 3);
      const file = path.join(dir, 'port.ndjson');
      writeFileSync(file, aLine(ts, [{ event_type: 'book', asset_id: '1', market: '0x' + 'ef'.repeat(32), bids: [], asks: [], timestamp: String(ts), hash: '0x1' }]) + '\n');
      const env: Record<string, string> = { ...(process.env as Record<string, string>), LOG_LEVEL: 'warn', KAFKA_TOPIC_PREFIX: prefix, KAFKA_PARTITIONS: '1', BOOKTAPE_KAFKA_PORT: String(proxyPort) };
      delete env.KAFKA_BROKERS;
      const child = spawn(process.execPath, [BIN, 'replay', file], { env });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(stderr).toContain('1 frames → 1 records');
      expect(code).toBe(0);
      expect(connections).toBeGreaterThan(0);
      const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'cli-port' }, silentLogger());
      expect(await readTopic(kafka, topicNames(prefix).raw['exchange-a'], 1, rawRecordsA)).toHaveLength(1);
    } finally {
      proxy.close();
    }
  });

  it('replay --wait ends with the timeout status, not a wait forever, when Redis cannot be reached', async () => {
    const t = await tempClickHouse();
    const prefix = `${uniqueId('cli-noredis')}.`;
    const group = uniqueId('cli-noredis-g');
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'cli-noredis' }, silentLogger());
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 1);
    const sink = createSink({ kafka, topics, ch: t.ch, log: silentLogger(), groupId: group });
    await sink.start();
    try {
      const ts = Date.UTC(2026, 5, 5);
      const file = path.join(dir, 'noredis.ndjson');
      writeFileSync(file, aLine(ts, [{ event_type: 'book', asset_id: '1', market: '0x' + '9a'.repeat(32), bids: [], asks: [], timestamp: String(ts), hash: '0x1' }]) + '\n');
      const started = Date.now();
      const r = await runAsync(['replay', file, '--wait', '--timeout', '15'], { KAFKA_TOPIC_PREFIX: prefix, SINK_GROUP_ID: group, KAFKA_PARTITIONS: '1', REDIS_URL: 'redis://127.0.0.1:1' });
      expect(r.stderr).toContain('everything replayed is stored');
      expect(r.stderr).toContain('no answer from Redis (redis://127.0.0.1:1) before the timeout');
      expect(r.status).toBe(4);
      expect(Date.now() - started).toBeLessThan(45_000);
    } finally {
      await sink.stop();
      await t.cleanup();
    }
  });

  it('replay --wait returns only once every replayed record is visible to the API, cached answers included', async () => {
    const cacheMs = 4_000;
    const api = await startTestApi({ resultCacheMs: cacheMs });
    const { worker, sink, env } = await replayTarget(api.ch, 'cli-vis', 50);
    try {
      const key = await api.newKey();
      const ticker = 'KXVIS-1';
      const ts = Date.UTC(2026, 5, 4, 9);
      const n = 200;
      const lines = [{ type: 'orderbook_snapshot', sid: 1, seq: 1, msg: { market_ticker: ticker, yes_dollars_fp: [['0.4100', '20.00']], no_dollars_fp: [['0.5400', '200.00']] } }];
      for (let i = 2; i <= n; i++) lines.push({ type: 'orderbook_delta', sid: 1, seq: i, msg: { market_ticker: ticker, price_dollars: '0.4100', delta_fp: '1.00', side: 'yes' } } as never);
      const file = path.join(dir, 'visible.ndjson');
      writeFileSync(file, lines.map((frame, i) => JSON.stringify({ venue: 'exchange-b', received_at: new Date(ts + i).toISOString(), frame })).join('\n') + '\n');
      const child = spawn(process.execPath, [BIN, 'replay', file, '--wait', '--timeout', '90'], {
        env: { ...process.env, LOG_LEVEL: 'warn', ...env, API_RESULT_CACHE_MS: String(cacheMs) },
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((r) => child.once('exit', r));
      const total = async () => {
        const res = await api.app.inject({ method: 'GET', url: `/api/v1/exchange-b/market/data?ticker=${ticker}&date=2026-06-04&limit=10`, headers: bearer(key) });
        expect(res.statusCode).toBe(200);
        return (res.json() as { pagination: { total_count: number } }).pagination.total_count;
      };
      // Everything is in Kafka and nothing stored yet: a client reads (and the API caches) the count…
      await waitFor('replay waiting for the sink', () => stderr.includes('waiting for the sink'), 60_000);
      expect(await total()).toBe(0);
      // …then the sink stores it all, well within the cache's lifetime.
      await sink.start();
      const code = await exited;
      // Right after --wait returned: every record, not the cached answer from before.
      expect(await total()).toBe(n);
      expect(stderr).toContain('everything replayed is visible');
      expect(code).toBe(0);
    } finally {
      await sink.stop();
      await worker.stop();
      await api.close();
    }
  });
});

describe('booktape export', () => {
  it('downloads a bulk export from the running API into --out, and leaves no file when the API refuses', async () => {
    const api = await startTestApi();
    try {
      const ticker = 'KXCLIEXPORT-1';
      const day = Date.UTC(2026, 2, 5);
      await api.filler.insert('exchange-b', Array.from({ length: 40 }, (_, i) => bMessage({ ticker, ms: day + i * 1000, seq: i + 1, kind: i === 0 ? 'snapshot' : 'delta' })));
      const key = await api.newKey();
      const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
      const out = path.join(dir, 'export.csv.gz');
      const args = ['export', '--venue', 'kalshi', '--market', ticker.toLowerCase(), '--from', '2026-03-05', '--to', '2026-03-05', '--out', out, '--api', address];
      const ok = await runAsync(args, { BOOKTAPE_API_KEY: key });
      expect(ok.status, ok.stderr).toBe(0);
      expect(ok.stderr).toMatch(/wrote .*export\.csv\.gz .*1 days/);
      const direct = await api.app.inject({ method: 'GET', url: `/api/v1/exchange-b/market/export?ticker=${ticker}&start_date=2026-03-05&end_date=2026-03-05`, headers: bearer(key) });
      const csv = gunzipSync(readFileSync(out)).toString('utf8');
      expect(csv).toBe(gunzipSync(direct.rawPayload).toString('utf8'));
      expect(csv.split('\n').filter((l) => l !== '')).toHaveLength(1 + 3 + 39); // header, the snapshot's 2 yes and 1 no levels, 39 deltas
      // A refused export (a wrong key) exits 1 and writes nothing.
      const bad = path.join(dir, 'refused.csv.gz');
      const refused = await runAsync([...args.slice(0, -4), '--out', bad, '--api', address], { BOOKTAPE_API_KEY: 'bt_live_nope' });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(/refused the export \(401\)/);
      expect(existsSync(bad) || existsSync(`${bad}.partial`)).toBe(false);
    } finally {
      await api.close();
    }
  });

  it('--all-markets --date downloads the daily file of every market of the venue', async () => {
    const api = await startTestApi();
    try {
      const day = Date.UTC(2026, 2, 6);
      const tickers = ['KXCLIDAY-1', 'KXCLIDAY-2'];
      await api.filler.insert('exchange-b', tickers.flatMap((ticker, k) => Array.from({ length: 10 }, (_, i) => bMessage({ ticker, ms: day + k * 60_000 + i * 1000, seq: i + 1, kind: i === 0 ? 'snapshot' : 'delta' }))));
      const key = await api.newKey();
      const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
      const out = path.join(dir, 'day.csv.gz');
      const ok = await runAsync(['export', '--venue', 'kalshi', '--all-markets', '--date', '2026-03-06', '--format', 'csv', '--out', out, '--api', address], { BOOKTAPE_API_KEY: key });
      expect(ok.status, ok.stderr).toBe(0);
      expect(ok.stderr).toMatch(/wrote .*day\.csv\.gz .*every market of 2026-03-06/);
      const direct = await api.app.inject({ method: 'GET', url: '/api/v1/exchange-b/daily/raw?date=2026-03-06&format=csv.gz', headers: bearer(key) });
      expect(readFileSync(out).equals(direct.rawPayload)).toBe(true);
      const lines = gunzipSync(readFileSync(out)).toString('utf8').split('\n');
      // One hour, as a Parquet file (the format from --out's name): the bytes the API serves.
      const hourOut = path.join(dir, 'hour.parquet');
      const hour = await runAsync(['export', '--venue', 'b', '--all-markets', '--date', '2026-03-06', '--hour', '0', '--out', hourOut, '--api', address], { BOOKTAPE_API_KEY: key });
      expect(hour.status, hour.stderr).toBe(0);
      const hourDirect = await api.app.inject({ method: 'GET', url: '/api/v1/exchange-b/daily/raw?date=2026-03-06&hour=0', headers: bearer(key) });
      expect(readFileSync(hourOut).equals(hourDirect.rawPayload)).toBe(true);
      expect(new Set(lines.slice(1).filter((l) => l !== '').map((l) => l.split(',')[1]))).toEqual(new Set(tickers));
    } finally {
      await api.close();
    }
  });

  it('checks its arguments before any request (exit 2)', () => {
    for (const [args, message] of [
      [['export', '--venue', 'b', '--all-markets', '--out', 'f', '--key', 'k'], /--all-markets needs --date/],
      [['export', '--venue', 'b', '--all-markets', '--market', 'X', '--date', '2026-03-01', '--out', 'f', '--key', 'k'], /--market does not go with --all-markets/],
      [['export', '--venue', 'b', '--all-markets', '--date', '2026-3-1', '--out', 'f', '--key', 'k'], /--date must be a UTC date/],
      [['export', '--venue', 'b', '--market', 'X', '--date', '2026-03-01', '--out', 'f', '--key', 'k'], /--date goes with --all-markets/],
      [['export', '--venue', 'b', '--all-markets', '--date', '2026-03-01', '--hour', '24', '--out', 'f', '--key', 'k'], /--hour must be a UTC hour from 0 to 23/],
      [['export', '--venue', 'c', '--market', 'X', '--from', '2026-03-01', '--to', '2026-03-01', '--out', 'f', '--key', 'k'], /--venue must be one of a, b, exchange-a, exchange-b, polymarket, kalshi/],
      [['export', '--venue', 'a', '--market', '0xabc', '--from', '2026-03-01', '--to', '2026-03-01', '--out', 'f', '--key', 'k'], /--market "0xabc" is not a condition id \(0x \+ 64 hex digits\)/],
      [['export', '--venue', 'b', '--market', 'X', '--from', '2026-3-1', '--to', '2026-03-01', '--out', 'f', '--key', 'k'], /--from must be a UTC date/],
      [['export', '--venue', 'b', '--market', 'X', '--from', '2026-03-01', '--to', '2026-03-01', '--key', 'k'], /needs --out/],
      [['export', '--venue', 'b', '--market', 'X', '--from', '2026-03-01', '--to', '2026-03-01', '--out', 'f', '--resolution', '60', '--key', 'k'], /--resolution is for --kind summary/],
    ] as const) {
      const r = run([...args], { BOOKTAPE_API_KEY: '' });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});
