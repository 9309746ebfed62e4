import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Kafka } from 'kafkajs';
import type { RawMessage, Venue } from '@booktape/domain';
import { marketKey } from '@booktape/venues';
import { BatchingProducer, concatRawMessages, createKafka, decodeRawMessages, ensureTopics, topicNames, type Topics } from '@booktape/messaging';
import { RawEventsRepository } from '@booktape/storage';
import { startPrivateKafka, tempClickHouse, uniqueId, waitFor, type PrivateKafka, type TestClickHouse } from '@booktape/testkit';
import { CapturePipeline } from './capture-pipeline.ts';
import { waitUntilStored } from './replay/replay.ts';
import { createSink, type Sink } from './sink/sink.ts';

/**
 * Issue 16's fault suite, the Kafka restart: capture → Kafka → sink → ClickHouse runs on a
 * broker of its own (never the shared one), the broker is killed with SIGKILL in the middle
 * of a steady produce, capture keeps accepting frames while it is gone, and the broker is
 * restarted on the same data dir. Neither the producer nor the sink is restarted by the
 * test: they must find the broker again on their own, and every record capture accepted
 * must be in Kafka once, in its market's order, and stored once.
 */

// Warnings and errors are kept (not printed): counted for the summary, shown when the test fails.
const logLines: string[] = [];
const warnings: Record<string, number> = {};
const log = pino(
  { level: 'warn' },
  {
    write: (line: string) => {
      logLines.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
      let msg = '?';
      try {
        const o = JSON.parse(line) as { msg?: string; kafka?: string };
        msg = `${o.kafka ? `${o.kafka}: ` : ''}${String(o.msg).slice(0, 80)}`;
      } catch {
        /* not one JSON line */
      }
      warnings[msg] = (warnings[msg] ?? 0) + 1;
    },
  },
);

const A_MARKETS = ['0x' + 'a1'.repeat(32), '0x' + 'a2'.repeat(32), '0x' + 'a3'.repeat(32)];
const B_TICKERS = ['KXRESTART-26MAY21-T1', 'KXRESTART-26MAY21-T2'];
/** Frames per tick and the pause between ticks: about 1,000 frames a second. */
const FRAMES_PER_TICK = 10;
const TICK_MS = 10;
/** Well below the capture default (50,000): the outage must reach the back-pressure path too. */
const HIGH_WATER_MARK = 2_000;

/**
 * A synthetic live feed in the venues' real shapes (docs/rules/venue-frames.md), as websocket text:
 * exchange A `price_change` frames over three markets, several in one millisecond, each with
 * distinct content; exchange B one subscription (sid 1), a snapshot per ticker, then deltas
 * on one unbroken seq.
 */
function makeFeed() {
  let i = 0;
  let bSeq = 0;
  return (): { venue: Venue; text: string } => {
    const n = i++;
    if (n % 3 !== 2) {
      const market = A_MARKETS[n % A_MARKETS.length]!;
      return {
        venue: 'exchange-a',
        text: JSON.stringify({
          event_type: 'price_change',
          market,
          timestamp: String(Date.now()),
          price_changes: [{ asset_id: `${market.slice(2, 6)}${n % 2}`, price: n % 2 ? '0.49' : '0.51', size: `${n}.5`, side: n % 2 ? 'BUY' : 'SELL', hash: `0x${n.toString(16)}`, best_bid: '0.49', best_ask: '0.51' }],
        }),
      };
    }
    bSeq += 1;
    const ticker = B_TICKERS[bSeq % B_TICKERS.length]!;
    if (bSeq <= B_TICKERS.length) {
      return { venue: 'exchange-b', text: JSON.stringify({ type: 'orderbook_snapshot', sid: 1, seq: bSeq, msg: { market_ticker: ticker, market_id: '', yes_dollars_fp: [['0.4100', '20.00']], no_dollars_fp: [['0.5400', '200.00']] } }) };
    }
    return {
      venue: 'exchange-b',
      text: JSON.stringify({ type: 'orderbook_delta', sid: 1, seq: bSeq, msg: { market_ticker: ticker, market_id: '', price_dollars: '0.4100', delta_fp: bSeq % 2 ? '1.00' : '-1.00', side: 'yes', ts_ms: Date.now() } }),
    };
  };
}

/** The store's order (RawEventsRepository.dump): by market, event time, then ingest sequence. */
function storeOrder(messages: RawMessage[]): string[] {
  const eventMs = (m: RawMessage) => (m.venue === 'exchange-a' ? Number(m.event.timestamp) : m.record.epoch_ms);
  return [...messages]
    .sort((a, b) => {
      const ka = marketKey(a);
      const kb = marketKey(b);
      return (ka < kb ? -1 : ka > kb ? 1 : 0) || eventMs(a) - eventMs(b) || (BigInt(a.ingest_seq) < BigInt(b.ingest_seq) ? -1 : 1);
    })
    .map((m) => `${m.dedup_id}@${m.ingest_seq}`);
}

/** Every message of a venue's raw topic, read back from the broker, in each partition's log order. */
async function readLog(kafka: Kafka, topics: Topics, venue: Venue): Promise<RawMessage[][]> {
  const topic = topics.raw[venue];
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  await admin.disconnect();
  const byPartition = new Map<number, RawMessage[]>([...ends.keys()].map((p) => [p, []]));
  const next = new Map<number, bigint>([...ends.keys()].map((p) => [p, 0n]));
  const consumer = kafka.consumer({ groupId: uniqueId('restart-read') });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const decoded = decodeRawMessages(venue, message.value);
        if (!decoded.ok) throw new Error(`undecodable message at ${topic}/${partition}/${message.offset}: ${decoded.reason}`);
        byPartition.get(partition)!.push(...decoded.messages);
        next.set(partition, BigInt(message.offset) + 1n);
      },
    });
    await waitFor(`read ${topic} to its end`, () => [...ends].every(([p, high]) => (next.get(p) ?? 0n) >= high), 30_000);
  } finally {
    await consumer.disconnect();
  }
  return [...byPartition.values()];
}

/** Resolves with `p`, or with undefined after `ms`: cleanup must not hang on a dead broker. */
function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let expire: (v: undefined) => void = () => undefined;
  const late = new Promise<undefined>((r) => (expire = r));
  const timer = setTimeout(() => expire(undefined), ms);
  return Promise.race([p.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}

describe('Kafka restart (broker SIGKILLed mid-stream)', () => {
  let broker: PrivateKafka | undefined;
  let t: TestClickHouse | undefined;
  let kafka: Kafka;
  let sink: Sink | undefined;
  let producer: BatchingProducer | undefined;
  let producing = false;
  const prefix = `${uniqueId('restart')}.`;
  const topics = topicNames(prefix);
  const groupId = uniqueId('restart-g');

  beforeAll(async () => {
    // The JVM's start is part of the bound: on two busy cores it takes 10–40 s.
    broker = await startPrivateKafka({ timeoutMs: 90_000 });
    t = await tempClickHouse();
    kafka = createKafka({ brokers: broker.brokers, clientId: 'restart-test' }, log);
    await ensureTopics(kafka, topics, 4);
    sink = createSink({ kafka, topics, ch: t.ch, log, groupId, options: { sessionTimeoutMs: 6_000 } });
    await sink.start();
  }, 150_000);

  afterAll(async () => {
    producing = false;
    await within(sink?.stop() ?? Promise.resolve(), 15_000);
    await within(producer?.disconnect() ?? Promise.resolve(), 10_000);
    await broker?.cleanup();
    await t?.cleanup();
  }, 60_000);

  it('loses, doubles and reorders nothing; producer and sink recover by themselves', async () => {
    const tooLarge: string[] = [];
    producer = new BatchingProducer(kafka, log, {
      // The capture's settings (ingestor.ts), with a lower high-water mark.
      lingerMs: 50,
      maxMessages: 20_000,
      highWaterMark: HIGH_WATER_MARK,
      coalesce: concatRawMessages,
      coalesceTopics: new Set(Object.values(topics.raw)),
      onTooLarge: (m) => void tooLarge.push(m.topic),
    });
    await producer.connect();
    const accepted: RawMessage[] = [];
    let pendingFrame: RawMessage[] = [];
    const pipeline = new CapturePipeline({ producer, topics, workerId: 7, log, onMessages: (m) => void pendingFrame.push(...m) });
    pipeline.handleBoundary('exchange-b', { kind: 'connect', connection_id: 'restart-b-1' }, new Date());

    // The steady produce: one frame at a time, as a feed hands them over. A frame counts as
    // accepted once handleFrame resolved (it is then the producer's to deliver).
    const nextFrame = makeFeed();
    const failures: string[] = [];
    const phase = { name: 'up' as 'up' | 'down' | 'restarting' | 'back', acceptedIn: { up: 0, down: 0, restarting: 0, back: 0 } };
    let maxBacklogWhileDown = 0;
    let longestWaitMs = 0;
    producing = true;
    const loop = (async () => {
      while (producing) {
        for (let k = 0; k < FRAMES_PER_TICK && producing; k++) {
          const f = nextFrame();
          pendingFrame = [];
          const t0 = Date.now();
          try {
            const { kind } = await pipeline.handleFrame(f.venue, f.text, new Date());
            if (kind !== 'records') failures.push(`frame not taken as records (${kind}): ${f.text.slice(0, 200)}`);
            accepted.push(...pendingFrame);
            phase.acceptedIn[phase.name] += pendingFrame.length;
          } catch (e) {
            failures.push(`handleFrame threw: ${(e as Error).message}`);
          }
          longestWaitMs = Math.max(longestWaitMs, Date.now() - t0);
          if (phase.name !== 'up' && phase.name !== 'back') maxBacklogWhileDown = Math.max(maxBacklogWhileDown, pipeline.backlog);
        }
        await new Promise((r) => setTimeout(r, TICK_MS));
      }
    })();

    const started = Date.now();
    let summary = '';
    try {
      // End to end first: the sink stores while frames flow.
      await waitFor('the sink storing live data', () => sink!.stats.stored >= 1_000, 60_000);
      const storedBeforeKill = sink!.stats.stored;

      phase.name = 'down';
      const killedPid = broker!.pid();
      await broker!.kill();
      // Capture goes on without a broker for a while: buffering, then back-pressure.
      await new Promise((r) => setTimeout(r, 4_000));
      phase.name = 'restarting';
      const restartAt = Date.now();
      await broker!.start();
      const restartMs = Date.now() - restartAt;
      expect(broker!.pid()).not.toBe(killedPid);
      phase.name = 'back';

      // The same producer and sink, never reconnected by us, deliver again.
      const sentAtRestart = producer.stats.sent;
      await waitFor('the producer delivering again', () => producer!.stats.sent > sentAtRestart, 60_000);
      const storedAtRestart = sink!.stats.stored;
      await waitFor('the sink storing again', () => sink!.stats.stored > storedAtRestart, 60_000);
      await new Promise((r) => setTimeout(r, 2_000));
      producing = false;
      await loop;

      await waitFor('the producer backlog drained', () => producer!.buffered === 0, 60_000);
      await producer.flush();
      await waitUntilStored(kafka, topics, groupId, { timeoutMs: 60_000 });
      summary =
        `accepted ${accepted.length} records (up ${phase.acceptedIn.up}, broker down ${phase.acceptedIn.down}, ` +
        `restarting ${phase.acceptedIn.restarting}, back ${phase.acceptedIn.back}); stored before kill ${storedBeforeKill}; ` +
        `broker restart ${(restartMs / 1000).toFixed(1)} s; max backlog while down ${maxBacklogWhileDown}; ` +
        `longest handleFrame ${(longestWaitMs / 1000).toFixed(1)} s; producer errors ${producer.stats.errors}; ` +
        `sink stored ${sink!.stats.stored} rows; total ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `warnings ${JSON.stringify(warnings)}`;
      console.log(`[kafka-restart] ${summary}`);

      // Capture never failed a frame, and really ran through the outage.
      expect(failures).toEqual([]);
      expect(phase.acceptedIn.down + phase.acceptedIn.restarting).toBeGreaterThan(0);
      expect(maxBacklogWhileDown).toBeGreaterThan(0);
      expect(producer.error).toBeUndefined();

      // Nothing was dead-lettered, anywhere.
      expect(pipeline.counters['exchange-a'].deadLetters + pipeline.counters['exchange-b'].deadLetters).toBe(0);
      expect(tooLarge).toEqual([]);
      expect(sink!.stats.deadLettered).toBe(0);
      const admin = kafka.admin();
      await admin.connect();
      const dlq = (await admin.fetchTopicOffsets(topics.deadLetter)).reduce((s, p) => s + Number(p.high), 0);
      await admin.disconnect();
      expect(dlq).toBe(0);

      // The broker's log: every accepted record exactly once, each market in accept order
      // (idempotence: a retried request across the restart neither doubles nor reorders).
      for (const venue of ['exchange-a', 'exchange-b'] as const) {
        const partitions = await readLog(kafka, topics, venue);
        const inLog = partitions.flat();
        const mine = accepted.filter((m) => m.venue === venue);
        expect(new Set(inLog.map((m) => m.dedup_id)).size).toBe(inLog.length);
        expect(inLog.length).toBe(mine.length);
        for (const part of partitions) {
          const lastSeq = new Map<string, bigint>();
          for (const m of part) {
            const prev = lastSeq.get(marketKey(m));
            if (prev !== undefined && BigInt(m.ingest_seq) <= prev) throw new Error(`${venue} ${marketKey(m)}: ingest_seq ${m.ingest_seq} after ${prev} in the log`);
            lastSeq.set(marketKey(m), BigInt(m.ingest_seq));
          }
        }
      }

      // The store: every accepted record once, in the store's order, nothing else.
      const repo = new RawEventsRepository(t!.ch);
      for (const venue of ['exchange-a', 'exchange-b'] as const) {
        const stored = (await repo.dump(venue)).map((r) => `${String(r.dedup_id)}@${String(r.ingest_seq)}`);
        expect(stored).toEqual(storeOrder(accepted.filter((m) => m.venue === venue)));
      }
      expect(sink!.health().ok).toBe(true);
    } catch (e) {
      producing = false;
      console.error(`[kafka-restart] failed after ${((Date.now() - started) / 1000).toFixed(1)} s; ${summary}\nproducer ${JSON.stringify(producer.stats)} backlog ${producer.buffered}; sink ${JSON.stringify(sink?.stats)}\nlast warnings/errors:\n${logLines.slice(-40).join('')}`);
      throw e;
    } finally {
      producing = false;
      await within(loop, 5_000);
    }
  }, 150_000);
});
