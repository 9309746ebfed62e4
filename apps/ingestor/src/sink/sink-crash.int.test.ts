import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ExchangeBMessage } from '@booktape/domain';
import { REPO_ROOT, silentLogger } from '@booktape/config';
import { BatchingProducer, createKafka, ensureTopics, topicNames } from '@booktape/messaging';
import { RawEventsRepository, openClickHouse } from '@booktape/storage';
import { requireEnv, uniqueId, waitFor } from '@booktape/testkit';
import { waitUntilStored } from '../replay/replay.ts';
import { encodeRawMessages } from './message-codec.ts';

const log = silentLogger();

function bMessage(i: number): ExchangeBMessage {
  const ms = Date.UTC(2026, 4, 20) + Math.floor(i / 3);
  return {
    venue: 'exchange-b',
    received_at: new Date(ms).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ms) * 2n ** 23n + BigInt(i % 3) * 2048n).toString(),
    dedup_id: `crash-${i}`,
    record: { type: 'delta', ticker: `KX-${i % 5}`, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq: i + 1, side: 'yes', price: '0.5', delta: '1' },
  };
}

/**
 * The sink runs as its own process (`booktape ingest` with INGESTOR_ROLES=sink) and is
 * killed with SIGKILL in the middle of its work, again and again, while messages flow.
 * Whatever it had inserted but not committed is re-delivered after the restart: the
 * stored data must still hold every message exactly once.
 */
describe('sink crash safety', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'booktape-crash-'));
  const prefix = `${uniqueId('crash')}.`;
  const groupId = uniqueId('crash-g');
  const env = {
    ...process.env,
    INGESTOR_ROLES: 'sink',
    EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '0', // no metadata API here
    BOOKTAPE_DATA_DIR: dataDir,
    KAFKA_TOPIC_PREFIX: prefix,
    KAFKA_PARTITIONS: '4',
    SINK_GROUP_ID: groupId,
    SINK_SESSION_TIMEOUT_MS: '6000',
    LOG_LEVEL: 'warn',
  };
  let child: ChildProcess | undefined;

  function startSink(): ChildProcess {
    const c = spawn(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'ingest'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    child = c;
    return c;
  }

  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses nothing and doubles nothing across repeated SIGKILLs', async () => {
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'crash-test' }, log);
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 4);
    const producer = new BatchingProducer(kafka, log, { maxMessages: 500, lingerMs: 5, highWaterMark: 5000 });
    await producer.connect();

    const total = 30_000;
    let produced = 0;
    const producing = (async () => {
      while (produced < total) {
        for (let k = 0; k < 500 && produced < total; k++, produced++) {
          const m = bMessage(produced);
          await producer.send({ topic: topics.raw['exchange-b'], key: m.record.ticker, value: encodeRawMessages([m]) });
        }
        await producer.flush();
        await new Promise((r) => setTimeout(r, 350)); // ~20 s of flow: it spans every kill
      }
    })();

    const admin = kafka.admin();
    await admin.connect();
    const committed = async () => {
      let sum = 0;
      for (const t of await admin.fetchOffsets({ groupId, topics: [topics.raw['exchange-b']] })) for (const p of t.partitions) sum += Math.max(0, Number(p.offset));
      return sum;
    };
    const progress: number[] = [];
    let kills = 0;
    for (let round = 0; round < 4; round++) {
      const c = startSink();
      // Let it join, consume and insert for a while, then kill it mid-flight.
      await new Promise((r) => setTimeout(r, 5_000 + round * 700));
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
      kills += 1;
      progress.push(await committed());
    }
    await admin.disconnect();
    // The sink was really working when it was killed: it had committed more each round,
    // while messages were still flowing (so each kill hit a live consumer).
    // (A slow machine may need the first round just to start and join: ask for progress
    // somewhere, not in a given round.)
    expect(progress.some((p) => p > 0 && p < total)).toBe(true);
    expect(progress.filter((p) => p < total).length).toBeGreaterThanOrEqual(2);
    await producing;
    await producer.disconnect();

    const last = startSink();
    await waitUntilStored(kafka, topics, groupId, { timeoutMs: 150_000 });
    last.kill('SIGTERM');
    await new Promise((r) => last.once('exit', r));

    const ch = await openClickHouse({ database: 'booktape', embeddedPath: path.join(dataDir, 'clickhouse') });
    try {
      const repo = new RawEventsRepository(ch);
      expect(kills).toBe(4);
      await waitFor('rows readable', async () => (await repo.count('exchange-b')) > 0);
      expect(await repo.count('exchange-b')).toBe(total);
      const rs = await ch.client.query({
        query: `SELECT count() AS n, uniqExact(dedup_id) AS u, min(seq) AS lo, max(seq) AS hi FROM ${ch.table('raw_exchange_b')} FINAL`,
        format: 'JSONEachRow',
      });
      const [row] = await rs.json<{ n: string; u: string; lo: string; hi: string }>();
      expect(Number(row!.n)).toBe(total);
      expect(Number(row!.u)).toBe(total);
      expect([Number(row!.lo), Number(row!.hi)]).toEqual([1, total]);
    } finally {
      await ch.close();
    }
  });
});
