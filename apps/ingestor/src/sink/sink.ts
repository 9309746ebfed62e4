import { Partitioners, type Kafka, type Consumer, type EachBatchPayload, type Producer } from 'kafkajs';
import type { Logger } from '@booktape/config';
import type { CaptureGap, RawMessage, Venue } from '@booktape/domain';
import { CaptureGapsRepository, RawEventsRepository, badDataRefusal, type ClickHouse, type StoredMessage } from '@booktape/storage';
import { InsertGroup } from './insert-group.ts';
import { deadLetterFrame, deadLetterText, decodeCaptureGap, decodeRawMessages, encodeRawMessages, partitionsOf, type PartitionRef, type Topics } from '@booktape/messaging';

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
  restartInitialMs: 1_000,
  restartMaxMs: 30_000,
};

export interface SinkStats {
  /** Kafka batches stored and committed (one per partition and fetch). */
  batches: number;
  /** Raw inserts acknowledged by ClickHouse: batches of several partitions share one (insert-group.ts). */
  inserts: number;
  stored: number;
  deadLettered: number;
  /**
   * Records ClickHouse refused as bad data (a value the engine cannot parse): split out of
   * their batch and dead-lettered (also counted in `deadLettered`), the rest stored.
   */
  refusedRecords: number;
  /** Inserts that failed for any other reason (each retried with back-off). */
  insertFailures: number;
  /** True while ClickHouse refuses inserts and the sink is holding its partitions. */
  paused: boolean;
  lastStoredAt: number | null;
  /** Stored-partition notifications that failed or timed out (each is retried). */
  notifyFailures: number;
  /** Partitions dropped from the notification backlog when it was full (the sweep finds them). */
  notifyDropped: number;
  /** Consumer crashes since start (each followed by a restart). */
  crashes: number;
}

/**
 * Where the Kafka consumer is:
 * - `joining`: started, not in its group yet (after a crash of the previous process, Kafka
 *   holds its slot until its session times out); nothing is wrong, storing starts soon;
 * - `running`: in the group, consuming;
 * - `restarting`: it crashed and is being brought back: nothing is stored meanwhile;
 * - `stopped`: not started, or stopped.
 */
export type ConsumerState = 'joining' | 'running' | 'restarting' | 'stopped';

export interface SinkHealth extends SinkStats {
  ok: boolean;
  consumer: ConsumerState;
  /** Why it is not ok (or not running yet); null when all is well. */
  reason: string | null;
  /** Partitions waiting to be notified to the rollup queue. */
  notifyPending: number;
}

export interface ConsumerView {
  state: ConsumerState;
  /** The last crash or failed start, if any. */
  lastError: string | null;
  groupId: string;
  /** How long it has been joining (0 unless `joining`). */
  joiningForMs: number;
  /** Joining longer than this is not the dead process's session running out: Kafka is unreachable or refuses. */
  joinGraceMs: number;
}

/**
 * The sink's health (pure). Not ok: a crashed (restarting) or stopped consumer, a paused
 * store, or a join that takes longer than any session timeout explains.
 */
export function sinkHealth(stats: SinkStats, c: ConsumerView, notifyPending: number): SinkHealth {
  let reason: string | null = null;
  let ok = !stats.paused && (c.state === 'running' || c.state === 'joining');
  const last = c.lastError ? `; last attempt: ${c.lastError}` : '';
  if (c.state === 'restarting') reason = `the Kafka consumer crashed (${c.lastError ?? 'unknown error'}) and is restarting; nothing is stored meanwhile`;
  else if (c.state === 'stopped') reason = 'the Kafka consumer is stopped; nothing is stored';
  else if (stats.paused) reason = 'ClickHouse refuses inserts; the sink holds its batch and retries';
  else if (c.state === 'joining' && c.joiningForMs > c.joinGraceMs) {
    ok = false;
    reason = `the Kafka consumer has not joined group ${c.groupId} for ${Math.round(c.joiningForMs / 1000)} s${last}; nothing is stored`;
  } else if (c.state === 'joining') reason = `joining consumer group ${c.groupId} (a crashed process may hold its slot until its session times out)${last}`;
  return { ok, consumer: c.state, reason, notifyPending, ...stats };
}

type InsertOutcome = { kind: 'stored' } | { kind: 'refused'; refusal: string; message: string } | { kind: 'abandoned' };

const partitionKey = (p: StoredPartition) => `${p.venue}\u0000${p.market}\u0000${p.asset}\u0000${p.date}`;

/**
 * Kafka → ClickHouse. A batch is inserted with a deduplication token derived from its
 * offsets, and offsets are committed only after ClickHouse acknowledged the insert. While
 * ClickHouse is down the sink holds the batch and retries with back-off (it stops fetching,
 * so nothing piles up in memory). A record ClickHouse refuses as bad data is split out of
 * its batch and dead-lettered, the rest stored (storeSplitting). A crash between insert and
 * commit re-delivers the batch: the token (same boundaries) or the table's ReplacingMergeTree
 * key (other boundaries) keeps it from showing twice.
 */
export function createSink(deps: SinkDeps) {
  const opts = { ...DEFAULTS, ...deps.options };
  const { log } = deps;
  const raw = new RawEventsRepository(deps.ch);
  const isBadData = (e: unknown) => badDataRefusal(e) !== null;
  const rawGroups = {
    'exchange-a': new InsertGroup<StoredMessage>((rows, token) => raw.insert('exchange-a', rows, token).then(() => (stats.inserts += 1)), isBadData),
    'exchange-b': new InsertGroup<StoredMessage>((rows, token) => raw.insert('exchange-b', rows, token).then(() => (stats.inserts += 1)), isBadData),
  } satisfies Record<Venue, InsertGroup<StoredMessage>>;
  const gapsRepo = new CaptureGapsRepository(deps.ch);
  const venueOfTopic = new Map<string, Venue>(Object.entries(deps.topics.raw).map(([v, t]) => [t, v as Venue]));
  const stats: SinkStats = { batches: 0, inserts: 0, stored: 0, deadLettered: 0, refusedRecords: 0, insertFailures: 0, paused: false, lastStoredAt: null, notifyFailures: 0, notifyDropped: 0, crashes: 0 };
  let consumer: Consumer | undefined;
  let dlq: Producer | undefined;
  let dlqConnected: Promise<void> | undefined;
  let stopping = false;
  let state: ConsumerState = 'stopped';
  let lastCrash: string | null = null;
  let joiningSince = 0;
  const retired = new WeakSet<Consumer>();
  let restartTimer: NodeJS.Timeout | undefined;
  let restartDelay = opts.restartInitialMs;
  let joined: (() => void) | undefined;
  const pending = new Map<string, StoredPartition>();
  let notifying: Promise<void> | undefined;
  /** The last notification attempt failed: batches then commit without waiting for Redis. */
  let notifyFailing = false;

  /**
   * One insert, retried with back-off while ClickHouse fails it for a reason that may pass.
   * `refused`: ClickHouse refused the rows as bad data (retrying would never help);
   * `abandoned`: the sink stops or lost the partition, and the batch is left uncommitted.
   */
  async function withRetry(what: string, p: EachBatchPayload, fn: () => Promise<void>): Promise<InsertOutcome> {
    let delay = opts.retryInitialMs;
    for (;;) {
      try {
        await fn();
        if (stats.paused) log.info({ what }, 'clickhouse accepts inserts again; resuming');
        stats.paused = false;
        return { kind: 'stored' };
      } catch (e) {
        const refusal = badDataRefusal(e);
        if (refusal !== null) {
          // Answered, so ClickHouse is up: whatever held the sink before has passed.
          stats.paused = false;
          return { kind: 'refused', refusal, message: (e as Error).message };
        }
        stats.insertFailures += 1;
        stats.paused = true;
        log.warn({ err: (e as Error).message, what, retryInMs: delay }, 'insert failed; holding the batch and retrying');
        if (stopping || !p.isRunning() || p.isStale()) return { kind: 'abandoned' };
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, opts.retryMaxMs);
        try {
          await p.heartbeat();
        } catch {
          return { kind: 'abandoned' }; // rebalanced away: another member will take the batch from the last commit
        }
      }
    }
  }

  /**
   * Stores `items` in order. When ClickHouse refuses them as bad data, the batch is split in
   * halves, each stored the same way, down to the single items it refuses: those are
   * returned (to be dead-lettered), every other item is stored, so one bad record can no
   * longer hold its partition forever. The halves go in their original order; which copy
   * of a duplicate is kept does not depend on it anyway (the raw tables keep the highest
   * row_version = MAX - ingest_seq, migration 008; equal ingest_seq is the same record
   * again). A refusal of anything but bad data is retried as before, at any depth. Null:
   * abandoned (stop, rebalance), nothing committed.
   *
   * Each part carries its own `part` suffix for the deduplication token, the same for the
   * same rows on a re-delivery with the same boundaries (the split is deterministic).
   */
  async function storeSplitting<T>(what: string, p: EachBatchPayload, items: T[], insert: (items: T[], part: string) => Promise<void>): Promise<Array<{ item: T; reason: string }> | null> {
    const refused: Array<{ item: T; reason: string }> = [];
    const store = async (lo: number, hi: number): Promise<boolean> => {
      const whole = lo === 0 && hi === items.length;
      const outcome = await withRetry(what, p, () => insert(items.slice(lo, hi), whole ? '' : `#${lo}-${hi - 1}`));
      if (outcome.kind !== 'refused') return outcome.kind === 'stored';
      if (whole && items.length > 1) log.warn({ what, records: items.length, refusal: outcome.refusal }, 'clickhouse refused the batch as bad data; splitting it to store the good records');
      if (hi - lo === 1) {
        refused.push({ item: items[lo]!, reason: `clickhouse refused the record (${outcome.refusal}): ${outcome.message.slice(0, 500)}` });
        return true;
      }
      const mid = lo + Math.ceil((hi - lo) / 2);
      return (await store(lo, mid)) && (await store(mid, hi));
    };
    if (items.length === 0 || (await store(0, items.length))) return refused;
    return null;
  }

  /** A message (or one record of it) to the dead-letter topic, with where it came from. */
  async function deadLetter(venue: Venue | null, reason: string, value: Buffer | null, topic: string, partition: number, offset: string) {
    stats.deadLettered += 1;
    log.warn({ topic, partition, offset, reason }, 'message sent to the dead-letter topic');
    // A value near the broker's limit would not fit again once wrapped (JSON escaping
    // grows it) and its send would fail the batch forever: keep its head and say so.
    // A binary raw value is kept in base64 (`frame_encoding` says so): as UTF-8 it would be lost.
    const text = value === null ? null : deadLetterText(value);
    const cut = text === null ? null : deadLetterFrame(text.text);
    await dlqReady();
    await dlq!.send({
      topic: deps.topics.deadLetter,
      messages: [
        {
          key: `${topic}/${partition}/${offset}`,
          value: JSON.stringify({ venue, received_at: new Date().toISOString(), reason: cut?.truncated ? `${reason}; ${cut.truncated}` : reason, frame: cut?.frame ?? null, ...(text?.encoding === 'base64' ? { frame_encoding: 'base64' } : {}), source: { topic, partition, offset } }),
        },
      ],
    });
  }

  /** The dead-letter producer, connected (again, after a failed attempt). */
  function dlqReady(): Promise<void> {
    dlqConnected ??= dlq!.connect().catch((e: Error) => {
      dlqConnected = undefined;
      throw e;
    });
    return dlqConnected;
  }

  async function eachBatch(p: EachBatchPayload, c: Consumer): Promise<void> {
    const { batch } = p;
    if (batch.messages.length === 0) return;
    const first = batch.messages[0]!.offset;
    const last = batch.lastOffset();
    const token = `${batch.topic}/${batch.partition}/${first}-${last}`;

    if (batch.topic === deps.topics.gaps) {
      const gaps: Array<{ gap: CaptureGap; value: Buffer | null; offset: string }> = [];
      for (const m of batch.messages) {
        const decoded = decodeCaptureGap(m.value);
        if (decoded.ok) gaps.push({ gap: decoded.gap, value: m.value, offset: m.offset });
        else await deadLetter(null, decoded.reason, m.value, batch.topic, batch.partition, m.offset);
      }
      const refused = await storeSplitting('capture gaps', p, gaps, (part) => gapsRepo.insert(part.map((g) => g.gap)));
      if (refused === null) return;
      for (const { item, reason } of refused) {
        stats.refusedRecords += 1;
        await deadLetter(null, reason, item.value, batch.topic, batch.partition, item.offset);
      }
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
      // The whole batch goes through the group; once it was refused as bad data, its halves go
      // alone (grouped, each halving step would make other partitions' batches retry alone too).
      const refused = await storeSplitting(`${venue} raw batch`, p, rows, (part, suffix) =>
        suffix === '' ? rawGroups[venue].submit(part, token) : raw.insert(venue, part, token + suffix).then(() => void (stats.inserts += 1)),
      );
      if (refused === null) return;
      // Only the refused record goes: the other records of its Kafka message are stored.
      for (const { item, reason } of refused) {
        stats.refusedRecords += 1;
        await deadLetter(venue, reason, Buffer.from(encodeRawMessages([item.message])), batch.topic, batch.partition, item.position.offset);
      }
      const bad = new Set(refused.map((x) => x.item));
      const stored = bad.size === 0 ? rows : rows.filter((r) => !bad.has(r));
      stats.stored += stored.length;
      stats.lastStoredAt = Date.now();
      if (deps.onStored && stored.length > 0) await notify(stored.map((r) => r.message));
    }
    await c.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
    p.resolveOffset(last);
    stats.batches += 1;
    await p.heartbeat().catch(() => undefined);
  }

  /**
   * Queues the partitions of stored messages for the rollup queue. While notifications go
   * through, waits (at most notifyTimeoutMs) until these are delivered: the queue then
   * hears of the data before its offsets are committed, which `replay --wait` relies on
   * (it waits for the commits, then for the dirty partitions to settle). While they fail
   * (Redis away) it does not wait at all: the consumer must never stall on Redis.
   */
  function notify(messages: RawMessage[]): Promise<void> {
    // The same date the raw row is partitioned under (eventTimeMs, utcDate).
    for (const p of partitionsOf(messages).values()) {
      const k = partitionKey(p);
      if (pending.has(k)) continue;
      if (pending.size >= opts.notifyMaxPending) stats.notifyDropped += 1;
      else pending.set(k, p);
    }
    const drain = (notifying ??= drainNotifications().finally(() => (notifying = undefined)));
    if (notifyFailing) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => (timer = setTimeout(r, opts.notifyTimeoutMs)));
    return Promise.race([drain, bound]).finally(() => clearTimeout(timer));
  }

  /**
   * Sends the queued partitions, one call at a time. A failed or timed-out call puts its
   * partitions back and waits (back-off): during a Redis outage nothing piles up but the
   * deduplicated set, and the consumer never waits on Redis (it used to, past its session
   * timeout, and crashed). Whatever is still lost is found again by the rollup sweep.
   */
  async function drainNotifications(): Promise<void> {
    let delay = opts.retryInitialMs;
    while (pending.size > 0) {
      const parts = [...pending.values()];
      pending.clear();
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(() => deps.onStored!(parts)),
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${opts.notifyTimeoutMs} ms`)), opts.notifyTimeoutMs))),
        ]);
        if (notifyFailing) log.info({ partitions: parts.length }, 'stored-partition notifications delivered again');
        notifyFailing = false;
        delay = opts.retryInitialMs;
      } catch (e) {
        stats.notifyFailures += 1;
        for (const p of parts) {
          const k = partitionKey(p);
          if (pending.has(k)) continue;
          if (pending.size >= opts.notifyMaxPending) stats.notifyDropped += 1;
          else pending.set(k, p);
        }
        if (!notifyFailing) log.warn({ err: (e as Error).message, partitions: parts.length }, 'stored-partition notification failed; the sink stores on and sends it again');
        notifyFailing = true;
        if (stopping) return; // left to the sweep
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, opts.retryMaxMs);
        if (stopping) return;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /**
   * A new consumer in the group. kafkajs restarts a crashed consumer itself only after some
   * errors (and then at a fixed pace); after the others it stays down, which used to stop
   * ingestion silently until the process was restarted. Here kafkajs never restarts it
   * (`restartOnFailure`): every crash gets a fresh consumer, with back-off.
   */
  async function launch(): Promise<void> {
    const c = deps.kafka.consumer({
      groupId: deps.groupId,
      minBytes: opts.minBytes,
      maxWaitTimeInMs: opts.maxWaitMs,
      maxBytesPerPartition: opts.maxBytesPerPartition,
      sessionTimeout: opts.sessionTimeoutMs,
      heartbeatInterval: Math.max(500, Math.floor(opts.sessionTimeoutMs / 10)),
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 300, maxRetryTime: 10_000, restartOnFailure: async () => false },
    });
    consumer = c;
    // Events of a consumer already replaced (or being replaced) are ignored.
    const current = () => c === consumer && !retired.has(c) && !stopping;
    c.on(c.events.GROUP_JOIN, () => {
      if (!current()) return;
      if (state !== 'running') log.info({ groupId: deps.groupId }, lastCrash ? 'sink consuming again' : 'sink consuming');
      state = 'running';
      restartDelay = opts.restartInitialMs;
      joined?.();
    });
    c.on(c.events.CRASH, ({ payload }) => {
      if (!current()) return;
      stats.crashes += 1;
      lastCrash = payload.error?.message ?? String(payload.error);
      state = 'restarting';
      log.error({ err: lastCrash, retryInMs: restartDelay }, 'sink consumer crashed; starting a new one');
      relaunch();
    });
    try {
      await c.connect();
      await c.subscribe({ topics: [...Object.values(deps.topics.raw), deps.topics.gaps], fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: opts.partitionsConcurrently,
        eachBatch: (p) => eachBatch(p, c),
      });
    } catch (e) {
      if (!current()) return;
      lastCrash = (e as Error).message;
      if (state === 'running') state = 'restarting';
      log.warn({ err: lastCrash, retryInMs: restartDelay }, 'sink consumer failed to start; trying again');
      relaunch();
    }
  }

  /** Lets the current consumer go and starts a new one after back-off. */
  function relaunch() {
    if (restartTimer || stopping) return;
    const old = consumer;
    if (old) retired.add(old);
    const wait = restartDelay;
    restartDelay = Math.min(restartDelay * 2, opts.restartMaxMs);
    restartTimer = setTimeout(() => {
      void (async () => {
        await old?.disconnect().catch(() => undefined);
        restartTimer = undefined;
        if (!stopping) await launch();
      })();
    }, wait);
  }

  return {
    stats,
    /**
     * Starts consuming in the background: resolves once the consumer has joined its group
     * (or the sink is stopped). It never fails: a consumer that cannot start or crashes is
     * brought back with back-off, and `health()` says where it is meanwhile.
     */
    async start(): Promise<void> {
      stopping = false;
      lastCrash = null;
      state = 'joining';
      joiningSince = Date.now();
      restartDelay = opts.restartInitialMs;
      const ready = new Promise<void>((resolve) => (joined = resolve));
      dlq = deps.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
      // Connected in the background; a dead-letter send waits for it (and retries a failed connect).
      dlqConnected = undefined;
      dlqReady().catch((e: Error) => log.warn({ err: e.message }, 'dead-letter producer failed to connect; tried again on send'));
      void launch();
      await ready;
    },
    async stop(): Promise<void> {
      stopping = true;
      state = 'stopped';
      clearTimeout(restartTimer);
      restartTimer = undefined;
      joined?.();
      await consumer?.disconnect().catch(() => undefined);
      await dlq?.disconnect().catch(() => undefined);
      // A notification under way gets a bounded moment to finish (the sweep covers the rest).
      if (notifying) await Promise.race([notifying, new Promise((r) => setTimeout(r, opts.notifyTimeoutMs).unref())]);
      consumer = undefined;
      dlq = undefined;
      dlqConnected = undefined;
    },
    health: (): SinkHealth =>
      sinkHealth(
        stats,
        { state, lastError: lastCrash, groupId: deps.groupId, joiningForMs: state === 'joining' ? Date.now() - joiningSince : 0, joinGraceMs: 2 * opts.sessionTimeoutMs + 30_000 },
        pending.size,
      ),
  };
}

export type Sink = ReturnType<typeof createSink>;
