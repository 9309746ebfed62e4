import { Kafka, logLevel, CompressionTypes, Partitioners, type ICustomPartitioner, type Producer, type Message } from 'kafkajs';
import type { Logger } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';

export interface KafkaConfig {
  brokers: string[];
  clientId: string;
}

export interface Topics {
  raw: Record<Venue, string>;
  deadLetter: string;
  gaps: string;
}

export function topicNames(prefix: string): Topics {
  return {
    raw: Object.fromEntries(VENUES.map((v) => [v, `${prefix}raw.${v}`])) as Record<Venue, string>,
    deadLetter: `${prefix}raw.dead-letter`,
    gaps: `${prefix}capture.gaps`,
  };
}

/**
 * What kafkajs retries by itself, though it logs the failed attempt at error: a fresh broker
 * elects and loads its group coordinator (every first start of the local Kafka), a partition
 * leader is elected after topic creation, a group rebalances when a member joins. The
 * request succeeds a moment later, so logging each attempt as an error only alarms people.
 */
const RETRIED_BY_KAFKAJS = /The group coordinator is not available|The coordinator is loading|This is not the correct coordinator|There is no leader for this topic-partition|The group is rebalancing/;

export type KafkaLogLevel = 'error' | 'warn' | 'info' | 'debug';

/**
 * The level of one kafkajs log entry in our log: its own, except those expected retries
 * (debug). A consumer that crashed because they outlasted kafkajs's retries restarts
 * itself, so that crash and any restart are warnings; a crash for another cause stays an error.
 */
export function kafkaLogLevel(level: logLevel, message: string, error?: unknown): KafkaLogLevel {
  const own: KafkaLogLevel = level <= logLevel.ERROR ? 'error' : level === logLevel.WARN ? 'warn' : level === logLevel.INFO ? 'info' : 'debug';
  if (typeof error === 'string' && RETRIED_BY_KAFKAJS.test(error)) return 'debug';
  if (RETRIED_BY_KAFKAJS.test(message)) return message.startsWith('Crash:') ? (own === 'error' ? 'warn' : own) : 'debug';
  if (own === 'error' && message.startsWith('Restarting the consumer')) return 'warn';
  return own;
}

/** kafkajs logs through our logger, at warn and above: its info chatter is per rebalance. */
export function createKafka(cfg: KafkaConfig, log: Logger): Kafka {
  return new Kafka({
    clientId: cfg.clientId,
    brokers: cfg.brokers,
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log: entry }) => {
      const { message, ...rest } = entry;
      log[kafkaLogLevel(level, message, rest.error)]({ kafka: namespace, ...rest }, message);
    },
    retry: { initialRetryTime: 200, retries: 8, maxRetryTime: 10_000 },
  });
}

/** Raw topics get enough partitions for the sink to spread; one market always maps to one. */
export async function ensureTopics(kafka: Kafka, topics: Topics, partitions = 8): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted = [
      ...Object.values(topics.raw).map((t) => ({ topic: t, numPartitions: partitions })),
      { topic: topics.deadLetter, numPartitions: 1 },
      { topic: topics.gaps, numPartitions: 1 },
    ].filter((t) => !existing.has(t.topic));
    if (wanted.length > 0) {
      await admin.createTopics({ topics: wanted.map((t) => ({ ...t, replicationFactor: -1 })), waitForLeaders: true });
    }
  } finally {
    await admin.disconnect();
  }
}

/** Keys remembered per topic before the memory starts over (markets are bounded; this is a guard). */
const PARTITION_MEMO_KEYS = 100_000;

/**
 * `base` (a keyed partitioner), remembering each string key's partition per topic: kafkajs's
 * murmur2 works on 64-bit Long objects (some microseconds a key) and its partitioner copies the
 * partition list for every message. A key's partition depends only on the key and the topic's
 * partition count, so the memory starts over when that count changes.
 */
export function rememberingPartitioner(base: ICustomPartitioner): ICustomPartitioner {
  return () => {
    const partition = base();
    const topics = new Map<string, { partitions: number; keys: Map<string, number> }>();
    return (args) => {
      const { topic, partitionMetadata, message } = args;
      if (typeof message.key !== 'string' || (message.partition !== undefined && message.partition !== null)) return partition(args);
      let memo = topics.get(topic);
      if (memo === undefined || memo.partitions !== partitionMetadata.length || memo.keys.size >= PARTITION_MEMO_KEYS) {
        memo = { partitions: partitionMetadata.length, keys: new Map() };
        topics.set(topic, memo);
      }
      let p = memo.keys.get(message.key);
      if (p === undefined) {
        p = partition(args);
        memo.keys.set(message.key, p);
      }
      return p;
    };
  };
}

export interface BatchingProducerOptions {
  /** Flush when this many messages are buffered… */
  maxMessages: number;
  /** …or when the oldest buffered message is this old. */
  lingerMs: number;
  /** Above this many buffered messages, `send` waits for a flush (back-pressure). */
  highWaterMark: number;
  /** Most value bytes in one produce request (below the broker's message.max.bytes). */
  maxRequestBytes: number;
  /**
   * Merges the values of consecutive messages with the same topic and key into one
   * message. Kafka's cost is per message (framing, CRC, partitioner); at high rates one
   * message per market and flush instead of per frame divides it by the batch size, and
   * a market's records keep their order inside the merged value.
   */
  coalesce?: (values: Array<string | Buffer>) => string | Buffer;
  /** The topics whose messages `coalesce` may merge (their values must suit it). */
  coalesceTopics?: ReadonlySet<string>;
  /** A message the broker refuses as too large, even alone: it is not sent again. */
  onTooLarge?: (message: OutgoingMessage, error: Error) => void;
  /**
   * Messages sent while a request is out wait for the linger like any others, instead of
   * going out in the next request as soon as Kafka took this one. For a producer that is
   * never idle (replay): fewer, larger requests and messages, so less of kafkajs's cost per
   * message, at the price of latency that live capture does not pay.
   */
  lingerAfterRequest?: boolean;
}

function tooLarge(e: unknown): boolean {
  const type = (e as { type?: string; cause?: { type?: string } } | null)?.type ?? (e as { cause?: { type?: string } } | null)?.cause?.type;
  return type === 'MESSAGE_TOO_LARGE' || type === 'RECORD_LIST_TOO_LARGE' || /larger than the max message size/i.test(String((e as Error)?.message ?? ''));
}

export interface OutgoingMessage {
  topic: string;
  key: string;
  /** Text (JSON) or bytes (the binary raw value): `length` is what the request caps count. */
  value: string | Buffer;
}

/**
 * An idempotent producer that batches: capture calls `send` per frame; messages are
 * grouped by topic and written with one sendBatch per flush. Idempotence (acks=all,
 * one request in flight) means a retried request cannot duplicate or reorder a market's
 * messages; batching is what keeps the throughput despite one request in flight.
 */
export class BatchingProducer {
  private buffer: OutgoingMessage[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private lastError: Error | undefined;
  private unsent = 0; // taken by the running flush, not yet acknowledged
  readonly stats = { sent: 0, flushes: 0, errors: 0 };
  private readonly producer: Producer;
  private readonly opts: BatchingProducerOptions;

  constructor(
    kafka: Kafka,
    private readonly log: Logger,
    opts: Partial<BatchingProducerOptions> = {},
  ) {
    this.opts = { maxMessages: 5_000, lingerMs: 20, highWaterMark: 50_000, maxRequestBytes: 900 * 1024, ...opts };
    // Idempotence wants unlimited retries inside kafkajs; our flush loop adds its own on top.
    // The default (murmur2) partitioner is the Java client's, so keys map to the same
    // partitions whichever client produced them.
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: rememberingPartitioner(Partitioners.DefaultPartitioner),
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 200, maxRetryTime: 10_000 },
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
  }

  /** Buffers a message; resolves at once unless the buffer is over its high-water mark. */
  async send(msg: OutgoingMessage): Promise<void> {
    this.buffer.push(msg);
    if (this.buffer.length >= this.opts.maxMessages) this.scheduleFlush(0);
    else if (!this.timer) this.scheduleFlush(this.opts.lingerMs);
    if (this.buffer.length >= this.opts.highWaterMark) await this.flush();
  }

  private scheduleFlush(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.write(this.opts.lingerAfterRequest !== true).catch(() => undefined);
    }, ms);
  }

  /** Writes everything buffered so far; resolves once Kafka acknowledged it. */
  flush(): Promise<void> {
    return this.write(true);
  }

  /**
   * Writes the buffer; with `drain`, also what arrives meanwhile, until the buffer is empty.
   * Without, later messages wait for their own linger (a send schedules it).
   */
  private write(drain: boolean): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      for (let pass = 0; this.buffer.length > 0 && (drain || pass === 0); pass++) {
        // Take the whole buffer (O(1)); new sends go to a fresh one meanwhile.
        const pending = this.buffer;
        this.buffer = [];
        let i = 0;
        let oneByOne = false; // after the broker refused a request as too large
        this.unsent = pending.length;
        while (i < pending.length) {
          // A produce request carries one record batch per partition, and the broker
          // refuses a batch above its message.max.bytes (1 MiB by default): cap each
          // request's bytes.
          let j = i;
          let bytes = 0;
          while (j < pending.length && (j === i || (!oneByOne && bytes + pending[j]!.value.length < this.opts.maxRequestBytes))) {
            bytes += pending[j]!.value.length + pending[j]!.key.length + 64;
            j += 1;
          }
          const batch = pending.slice(i, j);
          const byTopic = new Map<string, Message[]>();
          for (const [topic, key, values] of this.group(batch)) {
            let list = byTopic.get(topic);
            if (!list) byTopic.set(topic, (list = []));
            if (this.opts.coalesce && values.length > 1 && this.opts.coalesceTopics?.has(topic)) list.push({ key, value: this.opts.coalesce(values) });
            else for (const value of values) list.push({ key, value });
          }
          const sent = await this.deliver([...byTopic].map(([topic, messages]) => ({ topic, messages })));
          if (sent === true) {
            this.stats.sent += batch.length;
            this.stats.flushes += 1;
            i = j;
            this.unsent = pending.length - i;
            continue;
          }
          // Too large: not transient, retrying the same request would stall every later
          // message. Resend one message per request; a single message the broker refuses
          // goes to onTooLarge (the dead-letter path) instead of blocking the stream.
          if (batch.length > 1) {
            oneByOne = true;
            continue;
          }
          this.stats.errors += 1;
          this.opts.onTooLarge?.(batch[0]!, sent);
          this.log.error({ topic: batch[0]!.topic, key: batch[0]!.key, bytes: batch[0]!.value.length }, 'message larger than the broker accepts; dead-lettered');
          i = j;
          this.unsent = pending.length - i;
        }
      }
    });
    return this.flushing;
  }

  /**
   * Sends one request until Kafka acknowledges it (true) or refuses it as too large (the error).
   * Anything else (kafkajs gave up: broker down, restarting) is retried after a pause with the
   * very same request. The broker may have written it before the connection died, and the
   * retry carries the same idempotence sequence numbers: the broker takes a request with a
   * sequence range it has as that duplicate whatever its content, and refuses one with the
   * same first number but another length as out of order. A regrouped retry (newer messages
   * merged in) would be lost or stall the producer for good. Capture never drops what it
   * accepted: this waits as long as the broker is away (send's back-pressure does the rest).
   */
  private async deliver(topicMessages: Array<{ topic: string; messages: Message[] }>): Promise<true | Error> {
    for (;;) {
      try {
        await this.producer.sendBatch({ topicMessages, acks: -1, compression: CompressionTypes.None });
        this.lastError = undefined;
        return true;
      } catch (e) {
        if (tooLarge(e)) return e as Error;
        this.stats.errors += 1;
        this.lastError = e as Error;
        this.log.error({ err: e, buffered: this.buffered }, 'kafka send failed; retrying the same request');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  /** Messages grouped by topic and key, each group in buffer order, the groups in order of first message. */
  private group(batch: OutgoingMessage[]): Array<[string, string, Array<string | Buffer>]> {
    // Keys looked up per topic: no text made per message to name its group.
    const out: Array<[string, string, Array<string | Buffer>]> = [];
    const byTopic = new Map<string, Map<string, Array<string | Buffer>>>();
    for (const m of batch) {
      let keys = byTopic.get(m.topic);
      if (!keys) byTopic.set(m.topic, (keys = new Map()));
      let values = keys.get(m.key);
      if (!values) {
        keys.set(m.key, (values = []));
        out.push([m.topic, m.key, values]);
      }
      values.push(m.value);
    }
    return out;
  }

  /** Messages accepted and not yet acknowledged by Kafka. */
  get buffered(): number {
    return this.buffer.length + this.unsent;
  }

  get error(): Error | undefined {
    return this.lastError;
  }

  async disconnect(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
    await this.producer.disconnect();
  }
}
