import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage } from '@booktape/domain';
import { REPO_ROOT, silentLogger } from '@booktape/config';
import { BatchingProducer, concatRawMessages, createKafka, encodeRawMessages, ensureTopics, topicNames } from '@booktape/messaging';
import { RawEventsRepository, openClickHouse } from '@booktape/storage';
import { Sequencer, normaliseExchangeA } from '@booktape/venues';
import { requireEnv, uniqueId, waitFor, removeTempDir } from '@booktape/testkit';
import { waitUntilStored } from '../replay/replay.ts';

const log = silentLogger();

const B_DAY = Date.UTC(2026, 4, 20);
/** Every 50th exchange B record is received again 2 ms later: same record, later lineage. */
const B_RESEND_EVERY = 50;

function bMessage(i: number, resent = false): ExchangeBMessage {
  const ms = B_DAY + Math.floor(i / 3);
  const received = resent ? ms + 2 : ms;
  return {
    venue: 'exchange-b',
    received_at: new Date(received).toISOString(),
    worker_id: 1,
    // The re-send takes a later slot of its receive millisecond: a higher ingest_seq.
    ingest_seq: (BigInt(received) * 2n ** 23n + BigInt(i % 3) * 2048n + (resent ? 1024n : 0n)).toString(),
    dedup_id: `crash-${i}`,
    record: { type: 'delta', ticker: `KX-${i % 5}`, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 1, seq: i + 1, side: 'yes', price: '0.5', delta: '1' },
  };
}

const A_MARKETS = ['0x' + 'c1'.repeat(32), '0x' + 'c2'.repeat(32), '0x' + 'c3'.repeat(32)];

/**
 * An exchange A stream through the real normaliser and sequencer: four frames per venue
 * millisecond, venue hashes repeated on different content (as in a real trade burst),
 * and every 7th frame re-sent byte-identically two frames later (received later, so a
 * higher ingest_seq, often in the same merged Kafka message as its original).
 * Yields one frame's messages (one market) at a time, in receive order.
 */
function* aFrames(n: number): Generator<ExchangeAMessage[]> {
  const sequencer = new Sequencer(1);
  const base = Date.UTC(2026, 4, 21, 9);
  const pending: Array<{ at: number; frame: unknown }> = [];
  const emit = (frame: unknown, at: number) => {
    const r = normaliseExchangeA(frame, new Date(at));
    if (r.kind !== 'records') throw new Error(`frame not accepted: ${JSON.stringify(r)}`);
    return sequencer.stamp(new Date(at), r.records, 'exchange-a');
  };
  for (let i = 0; i < n; i++) {
    const ts = base + Math.floor(i / 4);
    const frame = {
      event_type: 'price_change',
      market: A_MARKETS[i % 3],
      timestamp: String(ts),
      price_changes: [{ asset_id: String(100 + (i % 2)), price: i % 2 ? '0.49' : '0.51', size: String(i % 9), side: i % 2 ? 'BUY' : 'SELL', hash: `0x${(i % 4).toString(16)}`, best_bid: '0.49', best_ask: '0.51' }],
    };
    const at = ts + 1;
    while (pending.length > 0 && pending[0]!.at <= at) {
      const p = pending.shift()!;
      yield emit(p.frame, p.at);
    }
    yield emit(frame, at);
    if (i % 7 === 3) pending.push({ at: at + 1, frame: JSON.parse(JSON.stringify(frame)) });
  }
  for (const p of pending) yield emit(p.frame, p.at);
}

/** The stored order a correct store gives: the first received copy of each event, by (market, time, ingest_seq). */
function firstCopyOrder(messages: RawMessage[]): string[] {
  const first = new Map<string, RawMessage>();
  for (const m of messages) {
    const id = m.venue === 'exchange-a' ? JSON.stringify(m.event) : m.dedup_id;
    const seen = first.get(id);
    if (!seen || BigInt(m.ingest_seq) < BigInt(seen.ingest_seq)) first.set(id, m);
  }
  const key = (m: RawMessage) => (m.venue === 'exchange-a' ? ([m.event.market, Number(m.event.timestamp)] as const) : ([m.record.ticker, m.record.epoch_ms] as const));
  return [...first.values()]
    .sort((a, b) => {
      const [ma, ta] = key(a);
      const [mb, tb] = key(b);
      return (ma < mb ? -1 : ma > mb ? 1 : 0) || ta - tb || (BigInt(a.ingest_seq) < BigInt(b.ingest_seq) ? -1 : 1);
    })
    .map((m) => `${m.dedup_id}@${m.ingest_seq}`);
}

/**
 * The sink runs as its own process (`booktape ingest` with INGESTOR_ROLES=sink) and is
 * killed with SIGKILL in the middle of its work, again and again, while messages flow.
 * Whatever it had inserted but not committed is re-delivered after the restart: the
 * stored data must still hold every message exactly once, and in the first-copy order
 * (issue 9): same-millisecond events in receive order, each re-sent duplicate collapsed
 * into its first copy's position and content, for both venues.
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
  const ROUNDS = 4;
  let kills = 0;

  function startSink(): ChildProcess {
    const c = spawn(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'ingest'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    child = c;
    return c;
  }

  afterAll(async () => {
    child?.kill('SIGKILL');
    await removeTempDir(dataDir);
  });

  it('loses nothing and doubles nothing across repeated SIGKILLs', async () => {
    const kafka = createKafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), clientId: 'crash-test' }, log);
    const topics = topicNames(prefix);
    await ensureTopics(kafka, topics, 4);
    // The capture's producer settings: consecutive values of a market merged into one Kafka
    // message, so an original and its re-sent duplicate often share one offset.
    const producer = new BatchingProducer(kafka, log, { maxMessages: 500, lingerMs: 5, highWaterMark: 5000, coalesce: concatRawMessages, coalesceTopics: new Set(Object.values(topics.raw)) });
    await producer.connect();

    const total = 30_000;
    const aTotalFrames = 12_000;
    const sentA: RawMessage[] = [];
    const sentB: RawMessage[] = [];
    const framesA = aFrames(aTotalFrames);
    let produced = 0;
    const producing = (async () => {
      let aDone = false;
      while (produced < total) {
        // The last fifth trickles until the last kill, however slowly the sinks start: every
        // sink then has new messages to commit, and every kill hits one with more to come.
        const chunk = produced >= total * 0.8 && kills < ROUNDS ? 20 : 500;
        for (let k = 0; k < chunk && produced < total; k++, produced++) {
          const m = bMessage(produced);
          sentB.push(m);
          await producer.send({ topic: topics.raw['exchange-b'], key: m.record.ticker, value: encodeRawMessages([m]) });
          if (produced % B_RESEND_EVERY === 7) {
            const again = bMessage(produced, true);
            sentB.push(again);
            await producer.send({ topic: topics.raw['exchange-b'], key: again.record.ticker, value: encodeRawMessages([again]) });
          }
          if (!aDone && k % 2 === 0) {
            const next = framesA.next();
            if (next.done) aDone = true;
            else {
              sentA.push(...next.value);
              await producer.send({ topic: topics.raw['exchange-a'], key: next.value[0]!.event.market, value: encodeRawMessages(next.value) });
            }
          }
        }
        await producer.flush();
        await new Promise((r) => setTimeout(r, 350)); // ~20 s of flow on a quick machine
      }
      for (let next = framesA.next(); !next.done; next = framesA.next()) {
        sentA.push(...next.value);
        await producer.send({ topic: topics.raw['exchange-a'], key: next.value[0]!.event.market, value: encodeRawMessages(next.value) });
      }
      await producer.flush();
    })();

    const admin = kafka.admin();
    await admin.connect();
    const committed = async () => {
      let sum = 0;
      for (const t of await admin.fetchOffsets({ groupId, topics: Object.values(topics.raw) })) for (const p of t.partitions) sum += Math.max(0, Number(p.offset));
      return sum;
    };
    const progress: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const c = startSink();
      // Let it join, consume and commit (more than the sinks before it), then kill it
      // mid-flight a moment later. Waiting for its first commit, not a fixed time, keeps the
      // kill inside its work on a slow machine too (a cold start can take many seconds).
      const before = round === 0 ? 0 : progress[round - 1]!;
      await waitFor(`sink ${round + 1} to commit`, async () => (await committed()) > before, 120_000, 200);
      await new Promise((r) => setTimeout(r, 300 + round * 400));
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
      expect(kills).toBe(ROUNDS);
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

      // Order, not only counts: the stored sequence is the first-copy reference, row by row.
      expect(sentB.length).toBeGreaterThan(total);
      const storedB = (await repo.dump('exchange-b')).map((r) => `${String(r.dedup_id)}@${String(r.ingest_seq)}`);
      expect(storedB).toEqual(firstCopyOrder(sentB));
      const expectedA = firstCopyOrder(sentA);
      expect(sentA.length).toBeGreaterThan(aTotalFrames); // the re-sends were sent
      expect(expectedA.length).toBe(aTotalFrames); // repeated hashes on other content stay distinct events
      const storedA = (await repo.dump('exchange-a')).map((r) => `${String(r.dedup_id)}@${String(r.ingest_seq)}`);
      expect(storedA.length).toBe(expectedA.length);
      expect(storedA).toEqual(expectedA);
    } finally {
      await ch.close();
    }
  });
});
