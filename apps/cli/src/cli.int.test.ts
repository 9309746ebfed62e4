import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, silentLogger } from '@booktape/config';
import { createKafka, ensureTopics, topicNames } from '@booktape/messaging';
import { RawEventsRepository } from '@booktape/storage';
import { createSink } from '@booktape/ingestor';
import { requireEnv, tempClickHouse, uniqueId } from '@booktape/testkit';

const BIN = path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'booktape-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, encoding: 'utf8', timeout: 120_000 });
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

  it('replay --wait sends a capture file through Kafka and returns once the sink stored it, reporting bad lines', async () => {
    const t = await tempClickHouse();
    const prefix = `${uniqueId('cli')}.`;
    const group = uniqueId('cli-g');
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'cli-test' }, silentLogger());
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 2);
    const sink = createSink({ kafka, topics, ch: t.ch, log: silentLogger(), groupId: group });
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
        env: { ...process.env, LOG_LEVEL: 'warn', KAFKA_TOPIC_PREFIX: prefix, SINK_GROUP_ID: group, KAFKA_PARTITIONS: '2' },
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(stderr).toContain('4 frames → 4 records');
      expect(stderr).toContain('1 malformed lines');
      expect(stderr).toContain('everything replayed is stored');
      expect(code).toBe(3); // bad lines reported in the exit status, good ones stored
      const repo = new RawEventsRepository(t.ch);
      expect(await repo.count('exchange-a')).toBe(3);
      expect(await repo.count('exchange-b')).toBe(1);
    } finally {
      await sink.stop();
      await t.cleanup();
    }
  });
});
