import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';
import { eventTimeMs } from '@booktape/venues';
import type { PartitionRef, Topics } from '@booktape/messaging';
import { CaptureGapsRepository, RawEventsRepository, badDataRefusal, type ClickHouse, type StoredMessage } from '@booktape/storage';
import { handleBatch, type BatchLease, type BatchPorts } from './batch-handler.ts';
import { SupersedeGate } from './supersede-gate.ts';
import { ConsumerSupervisor } from './consumer-supervisor.ts';
import { DeadLetterSender } from './dead-letter.ts';
import { emptyStats, sinkHealth, type SinkHealth, type SinkStats } from './health.ts';
import { InsertGroup } from './insert-group.ts';
import { insertWithRetry, type PartitionLease } from './insert-retry.ts';
import { StoredNotifier } from './notifier.ts';

export { sinkHealth, type ConsumerState, type ConsumerView, type SinkHealth, type SinkStats } from './health.ts';

/** Every record's event time is before `ms` (none: false). */
function allOlderThan(rows: readonly StoredMessage[], ms: number): boolean {
  if (rows.length === 0) return false;
  for (const r of rows) if (!(eventTimeMs(r.message) < ms)) return false;
  return true;
}

/** A (venue, market, asset, date) that received data: what the rollup queue needs to hear. */
export type StoredPartition = PartitionRef;

export interface SinkDeps {
  kafka: Kafka;
  topics: Topics;
  ch: ClickHouse;
  log: Logger;
  groupId: string;
  /**
   * Told which partitions got data, after they are stored. Called in the background, one
   * call at a time, never holding up the consumer: while it fails or hangs (Redis away) the
   * partitions are kept (deduplicated) and sent again with back-off.
   */
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
  /** A stored-partition notification slower than this counts as failed and is sent again. */
  notifyTimeoutMs: number;
  /** Partitions kept for notification while it fails; beyond, they are left to the rollup sweep. */
  notifyMaxPending: number;
  /**
   * Inserts of records older than `pacedAgeMs` (a replay, an import through the sink) from
   * batches that left nothing behind in their partition start at most once per this long
   * per venue (insert-group.ts): fewer, larger inserts. 0: never paced. Live records are
   * never paced, nor a sink that is behind (it fetches as fast as it stores).
   */
  pacedInsertMs: number;
  pacedAgeMs: number;
  /** Back-off between attempts to bring a crashed consumer back. */
  restartInitialMs: number;
  restartMaxMs: number;
}

const DEFAULTS: SinkOptions = {
  minBytes: 64 * 1024,
  maxWaitMs: 250,
  maxBytesPerPartition: 8 * 1024 * 1024,
  // All partitions of both raw topics at once (8 each by default; the ingestor passes twice
  // KAFKA_PARTITIONS), so that one fetch's batches of a venue share one insert (insert-group.ts).
  partitionsConcurrently: 16,
  sessionTimeoutMs: 30_000,
  retryInitialMs: 200,
  retryMaxMs: 10_000,
  notifyTimeoutMs: 5_000,
  notifyMaxPending: 100_000,
  pacedInsertMs: 1000,
  pacedAgeMs: 600_000,
  restartInitialMs: 1_000,
  restartMaxMs: 30_000,
};

/**
 * Kafka → ClickHouse, put together from units with one job each:
 * - ConsumerSupervisor (consumer-supervisor.ts): one consumer in the group, brought back
 *   with back-off after any crash;
 * - handleBatch (batch-handler.ts): one partition's batch, decoded (batch-decode.ts), stored,
 *   its offsets committed only after the engine acknowledged it (offsets.ts);
 * - InsertGroup (insert-group.ts): the batches of several partitions waiting at once share
 *   one insert;
 * - insertWithRetry (insert-retry.ts): an insert held and retried with back-off while the
 *   engine is down (the sink stops fetching meanwhile, so nothing piles up in memory);
 * - storeBisecting (bisect.ts): a batch the engine refuses as bad data split down to the
 *   refused records, the rest stored;
 * - DeadLetterSender (dead-letter.ts): what cannot be stored, to the dead-letter topic;
 * - StoredNotifier (notifier.ts): the rollup queue told which partitions got data.
 * A crash between insert and commit re-delivers the batch: the deduplication token (same
 * boundaries) or the table's ReplacingMergeTree key (other boundaries) keeps it from showing
 * twice, and the first copy is the one kept (migration 008).
 */
export function createSink(deps: SinkDeps) {
  const opts = { ...DEFAULTS, ...deps.options };
  const { log } = deps;
  const stats: SinkStats = emptyStats();
  const raw = new RawEventsRepository(deps.ch);
  const gapsRepo = new CaptureGapsRepository(deps.ch);
  const isBadData = (e: unknown) => badDataRefusal(e) !== null;
  const insertRaw = (venue: Venue, rows: StoredMessage[], token: string) => raw.insert(venue, rows, token).then(() => void (stats.inserts += 1));
  const rawGroups = Object.fromEntries(VENUES.map((v) => [v, new InsertGroup<StoredMessage>((rows, token) => insertRaw(v, rows, token), isBadData, undefined, opts.pacedInsertMs)])) as Record<Venue, InsertGroup<StoredMessage>>;
  const venueOfTopic = new Map<string, Venue>(Object.entries(deps.topics.raw).map(([v, t]) => [t, v as Venue]));
  const deadLetters = new DeadLetterSender(deps.kafka, deps.topics.deadLetter, log, () => void (stats.deadLettered += 1));
  // Before the rollup hears of them: imported copies of events just captured are replaced by
  // the capture's (docs/rules/imports.md#which-copy-wins). This runs in the notification, which
  // a batch's commit waits for (at most notifyTimeoutMs): one read of a partition's sources
  // every QUIET_MS at most. A failure is only logged: the rollup of the partition does it again
  // before reading it.
  const onStored = deps.onStored;
  const supersede = new SupersedeGate(deps.ch, log);
  const notifier = onStored
    ? new StoredNotifier(
        async (parts) => {
          await supersede.run(parts);
          await onStored(parts);
        },
        opts,
        log,
        stats,
      )
    : undefined;
  const supervisor: ConsumerSupervisor = new ConsumerSupervisor(
    deps.kafka,
    { ...opts, groupId: deps.groupId, topics: [...Object.values(deps.topics.raw), deps.topics.gaps] },
    eachBatch,
    log,
    () => void (stats.crashes += 1),
  );

  const ports: BatchPorts = {
    gapsTopic: deps.topics.gaps,
    venueOfTopic: (topic) => venueOfTopic.get(topic),
    insertGrouped: (venue, rows, token, paced) => rawGroups[venue].submit(rows, token, paced),
    paced: (batch, rows) => opts.pacedInsertMs > 0 && batch.offsetLag?.() === '0' && allOlderThan(rows, Date.now() - opts.pacedAgeMs),
    insertAlone: insertRaw,
    insertGaps: (gaps) => gapsRepo.insert(gaps),
    attempt: (what, lease, insert) => insertWithRetry(insert, { what, log, stats, retryInitialMs: opts.retryInitialMs, retryMaxMs: opts.retryMaxMs, lease }),
    deadLetter: (d) => deadLetters.send(d),
    ...(notifier ? { notify: (messages) => notifier.notify(messages) } : {}),
    stats,
    log,
  };

  async function eachBatch(p: EachBatchPayload, c: Consumer): Promise<void> {
    const { batch } = p;
    const held: PartitionLease = { held: () => !supervisor.isStopping && p.isRunning() && !p.isStale(), heartbeat: () => p.heartbeat() };
    const lease: BatchLease = {
      ...held,
      async commit(offset) {
        await c.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset }]);
        p.resolveOffset(batch.lastOffset());
      },
    };
    if ((await handleBatch(batch, lease, ports)) === 'committed') await p.heartbeat().catch(() => undefined);
  }

  return {
    stats,
    /**
     * Starts consuming in the background: resolves once the consumer has joined its group
     * (or the sink is stopped). It never fails: a consumer that cannot start or crashes is
     * brought back with back-off, and `health()` says where it is meanwhile.
     */
    async start(): Promise<void> {
      deadLetters.start();
      notifier?.start();
      await supervisor.start();
    },
    async stop(): Promise<void> {
      // Failed notifications stop being retried at once; one under way gets a bounded moment
      // to finish (the rollup sweep covers the rest).
      const notified = notifier?.stop();
      await supervisor.stop();
      await deadLetters.stop();
      await notified;
    },
    health: (): SinkHealth =>
      sinkHealth(
        stats,
        { state: supervisor.state, lastError: supervisor.lastError, groupId: deps.groupId, joiningForMs: supervisor.joiningForMs(), joinGraceMs: 2 * opts.sessionTimeoutMs + 30_000 },
        notifier?.size ?? 0,
      ),
  };
}

export type Sink = ReturnType<typeof createSink>;
