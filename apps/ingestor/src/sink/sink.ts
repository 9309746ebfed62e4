import { Partitioners, type Kafka, type Consumer, type EachBatchPayload, type Producer } from 'kafkajs';
import type { Logger } from '@booktape/config';
import type { CaptureGap, RawMessage, Venue } from '@booktape/domain';
import { CaptureGapsRepository, RawEventsRepository, type ClickHouse, type StoredMessage } from '@booktape/storage';
import { partitionsOf, type PartitionRef, type Topics } from '@booktape/messaging';
import { decodeCaptureGap, decodeRawMessages } from './message-codec.ts';

/** A (venue, market, asset, date) that received data: what the rollup queue needs to hear. */
export type StoredPartition = PartitionRef;

export interface SinkDeps {
  kafka: Kafka;
  topics: Topics;
  ch: ClickHouse;
  log: Logger;
  groupId: string;
  /** Called after a batch is stored and its offsets committed. */
  onStored?: (partitions: StoredPartition[]) => Promise<void> | void;
  options?: Partial<SinkOptions>;
}

export interface SinkOptions {
  /** Fetch waits for this many bytes… */
  minBytes: number;
  /** …or this long, whichever comes first: batching by size and by time. */
  maxWaitMs: number;
  maxBytesPerPartition: number;
  partitionsConcurrently: number;
  /** Consumer group session timeout: how long a crashed sink holds its partitions. */
  sessionTimeoutMs: number;
  /** Back-off while ClickHouse refuses inserts. */
  retryInitialMs: number;
  retryMaxMs: number;
}

const DEFAULTS: SinkOptions = {
  minBytes: 64 * 1024,
  maxWaitMs: 250,
  maxBytesPerPartition: 8 * 1024 * 1024,
  partitionsConcurrently: 4,
  sessionTimeoutMs: 30_000,
  retryInitialMs: 200,
  retryMaxMs: 10_000,
};

export interface SinkStats {
  batches: number;
  stored: number;
  deadLettered: number;
  insertFailures: number;
  /** True while ClickHouse refuses inserts and the sink is holding its partitions. */
  paused: boolean;
  lastStoredAt: number | null;
}

/**
 * Kafka → ClickHouse. A batch is inserted with a deduplication token derived from its
 * offsets, and offsets are committed only after ClickHouse acknowledged the insert. While
 * ClickHouse is down the sink holds the batch and retries with back-off (it stops fetching,
 * so nothing piles up in memory). A crash between insert and commit re-delivers the batch:
 * the token (same boundaries) or the table's ReplacingMergeTree key (other boundaries)
 * keeps it from showing twice.
 */
export function createSink(deps: SinkDeps) {
  const opts = { ...DEFAULTS, ...deps.options };
  const { log } = deps;
  const raw = new RawEventsRepository(deps.ch);
  const gapsRepo = new CaptureGapsRepository(deps.ch);
  const venueOfTopic = new Map<string, Venue>(Object.entries(deps.topics.raw).map(([v, t]) => [t, v as Venue]));
  const stats: SinkStats = { batches: 0, stored: 0, deadLettered: 0, insertFailures: 0, paused: false, lastStoredAt: null };
  let consumer: Consumer | undefined;
  let dlq: Producer | undefined;
  let stopping = false;

  async function withRetry(what: string, p: EachBatchPayload, fn: () => Promise<void>): Promise<boolean> {
    let delay = opts.retryInitialMs;
    for (;;) {
      try {
        await fn();
        if (stats.paused) log.info({ what }, 'clickhouse accepts inserts again; resuming');
        stats.paused = false;
        return true;
      } catch (e) {
        stats.insertFailures += 1;
        stats.paused = true;
        log.warn({ err: (e as Error).message, what, retryInMs: delay }, 'insert failed; holding the batch and retrying');
        if (stopping || !p.isRunning() || p.isStale()) return false;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, opts.retryMaxMs);
        try {
          await p.heartbeat();
        } catch {
          return false; // rebalanced away: another member will take the batch from the last commit
        }
      }
    }
  }

  async function deadLetter(venue: Venue | null, reason: string, value: Buffer | null, topic: string, partition: number, offset: string) {
    stats.deadLettered += 1;
    log.warn({ topic, partition, offset, reason }, 'undecodable message sent to the dead-letter topic');
    await dlq!.send({
      topic: deps.topics.deadLetter,
      messages: [{ key: `${topic}/${partition}/${offset}`, value: JSON.stringify({ venue, received_at: new Date().toISOString(), reason, frame: value?.toString('utf8') ?? null, source: { topic, partition, offset } }) }],
    });
  }

  async function eachBatch(p: EachBatchPayload): Promise<void> {
    const { batch } = p;
    if (batch.messages.length === 0) return;
    const first = batch.messages[0]!.offset;
    const last = batch.lastOffset();
    const token = `${batch.topic}/${batch.partition}/${first}-${last}`;

    if (batch.topic === deps.topics.gaps) {
      const gaps: CaptureGap[] = [];
      for (const m of batch.messages) {
        const decoded = decodeCaptureGap(m.value);
        if (decoded.ok) gaps.push(decoded.gap);
        else await deadLetter(null, decoded.reason, m.value, batch.topic, batch.partition, m.offset);
      }
      if (!(await withRetry('capture gaps', p, () => gapsRepo.insert(gaps)))) return;
    } else {
      const venue = venueOfTopic.get(batch.topic);
      if (!venue) return;
      const rows: StoredMessage[] = [];
      for (const m of batch.messages) {
        const decoded = decodeRawMessages(venue, m.value);
        if (!decoded.ok) {
          await deadLetter(venue, decoded.reason, m.value, batch.topic, batch.partition, m.offset);
          continue;
        }
        for (const message of decoded.messages) rows.push({ message, position: { partition: batch.partition, offset: m.offset } });
      }
      if (!(await withRetry(`${venue} raw batch`, p, () => raw.insert(venue, rows, token).then(() => undefined)))) return;
      stats.stored += rows.length;
      stats.lastStoredAt = Date.now();
      if (deps.onStored && rows.length > 0) await notify(rows.map((r) => r.message));
    }
    await consumer!.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
    p.resolveOffset(last);
    stats.batches += 1;
    await p.heartbeat().catch(() => undefined);
  }

  async function notify(messages: RawMessage[]) {
    // The same date the raw row is partitioned under (eventTimeMs, utcDate).
    const seen = partitionsOf(messages);
    try {
      await deps.onStored!([...seen.values()]);
    } catch (e) {
      // The data is stored; a lost notification is caught by the rollup sweep.
      log.warn({ err: (e as Error).message }, 'stored-partition notification failed');
    }
  }

  return {
    stats,
    async start(): Promise<void> {
      stopping = false;
      dlq = deps.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
      await dlq.connect();
      consumer = deps.kafka.consumer({
        groupId: deps.groupId,
        minBytes: opts.minBytes,
        maxWaitTimeInMs: opts.maxWaitMs,
        maxBytesPerPartition: opts.maxBytesPerPartition,
        sessionTimeout: opts.sessionTimeoutMs,
        heartbeatInterval: Math.max(500, Math.floor(opts.sessionTimeoutMs / 10)),
        retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 300, maxRetryTime: 10_000 },
      });
      await consumer.connect();
      await consumer.subscribe({ topics: [...Object.values(deps.topics.raw), deps.topics.gaps], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: opts.partitionsConcurrently,
        eachBatch,
      });
      log.info({ groupId: deps.groupId }, 'sink consuming');
    },
    async stop(): Promise<void> {
      stopping = true;
      await consumer?.disconnect().catch(() => undefined);
      await dlq?.disconnect().catch(() => undefined);
      consumer = undefined;
      dlq = undefined;
    },
    health: () => ({ ok: !stats.paused, ...stats }),
  };
}

export type Sink = ReturnType<typeof createSink>;
