import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import type { Logger } from '@booktape/config';
import type { Venue } from '@booktape/domain';
import { deadLetterFrame, deadLetterText } from '@booktape/messaging';

/** Where a dead-lettered message came from. */
export interface DeadLetterSource {
  topic: string;
  partition: number;
  offset: string;
}

/** The text a dead letter keeps, and how it is encoded (a binary value goes in base64). */
export interface DeadLetterFrame {
  text: string;
  encoding: 'utf8' | 'base64';
}

export interface DeadLetter {
  venue: Venue | null;
  reason: string;
  /** Null for a message without a value. */
  frame: DeadLetterFrame | null;
  source: DeadLetterSource;
}

/** A Kafka value as a dead letter keeps it (deadLetterText: a binary value in base64). */
export function frameOfValue(value: Buffer | null): DeadLetterFrame | null {
  return value === null ? null : deadLetterText(value);
}

/**
 * The dead letter's Kafka message (pure). A value near the broker's limit would not fit again
 * once wrapped (JSON escaping grows it) and its send would fail the batch forever: its head is
 * kept and the reason says so.
 */
export function deadLetterMessage(d: DeadLetter, at: Date): { key: string; value: string } {
  const cut = d.frame === null ? null : deadLetterFrame(d.frame.text);
  const reason = cut?.truncated ? `${d.reason}; ${cut.truncated}` : d.reason;
  const { topic, partition, offset } = d.source;
  return {
    key: `${topic}/${partition}/${offset}`,
    value: JSON.stringify({
      venue: d.venue,
      received_at: at.toISOString(),
      reason,
      frame: cut?.frame ?? null,
      ...(d.frame?.encoding === 'base64' ? { frame_encoding: 'base64' } : {}),
      source: { topic, partition, offset },
    }),
  };
}

/**
 * Sends dead letters to the dead-letter topic through its own producer, connected in the
 * background at start; a send waits for the connection (and tries again after a failed one).
 * A failed send rejects: the batch then stays uncommitted and is read again.
 */
export class DeadLetterSender {
  private producer: Producer | undefined;
  private connected: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly log: Logger,
    private readonly onSent: () => void = () => undefined,
  ) {}

  start(): void {
    this.producer = this.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    this.connected = undefined;
    this.ready().catch((e: Error) => this.log.warn({ err: e.message }, 'dead-letter producer failed to connect; tried again on send'));
  }

  async send(d: DeadLetter): Promise<void> {
    this.onSent();
    this.log.warn({ ...d.source, reason: d.reason }, 'message sent to the dead-letter topic');
    await this.ready();
    await this.producer!.send({ topic: this.topic, messages: [deadLetterMessage(d, new Date())] });
  }

  async stop(): Promise<void> {
    await this.producer?.disconnect().catch(() => undefined);
    this.producer = undefined;
    this.connected = undefined;
  }

  private ready(): Promise<void> {
    if (!this.producer) return Promise.reject(new Error('the dead-letter producer is not started'));
    this.connected ??= this.producer.connect().catch((e: Error) => {
      this.connected = undefined;
      throw e;
    });
    return this.connected;
  }
}
