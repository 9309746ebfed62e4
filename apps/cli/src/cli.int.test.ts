import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, silentLogger } from '@booktape/config';
import { createKafka, ensureTopics, topicNames } from '@booktape/messaging';
import { RawEventsRepository, SummariesRepository } from '@booktape/storage';
import { createSink } from '@booktape/ingestor';
import { createRollupWorker } from '@booktape/rollup-worker';
import { requireEnv, tempClickHouse, uniqueId } from '@booktape/testkit';

const BIN = path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'booktape-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, encoding: 'utf8', timeout: 120_000 });
}

/** The CLI in a child process without blocking this one (a worker in this process must run meanwhile). */
function runAsync(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env } });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (status) => resolve({ status, stderr })));
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

  it('rejects unknown commands and bad options with usage help', () => {
    const r = run(['frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown command');
    expect(run(['replay']).status).toBe(2);
    expect(run(['simulate', '--rate', 'fast']).stderr).toContain('--rate must be a positive integer');
  });

  it('replay --wait sends a capture file through Kafka and returns once the sink stored it and its summaries are rebuilt, reporting bad lines', async () => {
    const t = await tempClickHouse();
    const prefix = `${uniqueId('cli')}.`;
    const group = uniqueId('cli-g');
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'cli-test' }, silentLogger());
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 2);
    const queuePrefix = uniqueId('cli-rollup');
    const worker = createRollupWorker({ ch: t.ch, redisUrl: requireEnv('REDIS_URL'), log: silentLogger(), options: { queuePrefix, debounceMs: 100 } });
    await worker.start();
    const sink = createSink({ kafka, topics, ch: t.ch, log: silentLogger(), groupId: group, onStored: (parts) => worker.queue?.notify(parts) });
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
        env: { ...process.env, LOG_LEVEL: 'warn', KAFKA_TOPIC_PREFIX: prefix, SINK_GROUP_ID: group, KAFKA_PARTITIONS: '2', ROLLUP_QUEUE_PREFIX: queuePrefix },
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

      const r = await runAsync(['rollup', '--venue', 'b', '--market', 'kxfill-1', '--from', '2026-05-01', '--to', '2026-05-03', '--wait', '--timeout', '60'], env);
      expect(r.stderr).toContain('back-fill done: 2 asset-days over 1 asset(s)');
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
