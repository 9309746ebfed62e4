import type { Logger } from '@booktape/config';
import { VENUES, type CaptureBoundary, type CaptureGap, type DeadLetter, type RawMessage, type Venue } from '@booktape/domain';
import { rawValueEncoder, type BatchingProducer, type RawValueFormat, type Topics } from '@booktape/messaging';
import { Sequencer, marketKey, venueModule, type CaptureFileWriter, type VenueNormaliser } from '@booktape/venues';

/** What became of one frame: records sent, a control message, or refused (dead-lettered) and why. */
export type HandledFrame = { kind: 'records' | 'control' } | { kind: 'invalid'; reason: string };

const RECORDS: HandledFrame = Object.freeze({ kind: 'records' });
const CONTROL: HandledFrame = Object.freeze({ kind: 'control' });

/** The market of all `messages` (at least one), or null when they span several. */
function oneMarket(messages: readonly RawMessage[]): string | null {
  const key = marketKey(messages[0]!);
  for (let i = 1; i < messages.length; i++) if (marketKey(messages[i]!) !== key) return null;
  return key;
}

export interface VenueCounters {
  frames: number;
  records: number;
  controls: number;
  deadLetters: number;
  lastFrameAt: number | null;
}

/** What the pipeline asks of its producer: the Kafka one, or capture import's, which keeps nothing. */
export type PipelineProducer = Pick<BatchingProducer, 'send' | 'buffered'>;

export interface CapturePipelineDeps {
  producer: PipelineProducer;
  topics: Topics;
  workerId: number;
  log: Logger;
  /** Capture files (docs/rules/capture-files.md), one writer per venue, when capture-to-file is on. */
  files?: Partial<Record<Venue, CaptureFileWriter>>;
  /** Sees every stamped record before it is sent (replay --wait notes the partitions it touches). */
  onMessages?: (messages: readonly RawMessage[]) => void;
  /** How raw values are written (KAFKA_RAW_VALUE_FORMAT): binary unless told json, for a rollback. */
  rawValueFormat?: RawValueFormat;
  /** The producer discards the raw topics' values (capture import takes the records from onMessages): they are not encoded. */
  discardsRawValues?: boolean;
}

/**
 * One frame's way from the socket (or a capture file) to Kafka: written to the capture
 * file first (the file is the venue's truth, parsable or not), normalised, stamped with
 * lineage, grouped by market (one Kafka message per market and frame keeps a market's order
 * on its partition), produced. An unparsable frame goes whole to the dead-letter topic and
 * is counted; nothing here throws on venue input.
 *
 * Live capture and replay both run through this class, in frame order, so a replayed file
 * yields exactly the records (and ingest sequence numbers) it yielded live.
 */
export class CapturePipeline {
  private readonly sequencer: Sequencer;
  /** Each venue's normaliser (the venue registry's), kept for the pipeline's life: exchange B's holds sequence state per connection. */
  private readonly normalisers = Object.fromEntries(VENUES.map((v) => [v, venueModule(v).normaliser()])) as Record<Venue, VenueNormaliser>;
  private readonly encode: (messages: RawMessage[]) => string | Buffer;
  readonly counters = Object.fromEntries(VENUES.map((v) => [v, { frames: 0, records: 0, controls: 0, deadLetters: 0, lastFrameAt: null }])) as Record<Venue, VenueCounters>;

  constructor(private readonly deps: CapturePipelineDeps) {
    this.sequencer = new Sequencer(deps.workerId);
    this.encode = deps.discardsRawValues === true ? () => '' : rawValueEncoder(deps.rawValueFormat ?? 'binary');
  }

  /** Messages accepted but not yet acknowledged by Kafka. */
  get backlog(): number {
    return this.deps.producer.buffered;
  }

  /** A new connection of `venue` starts a new capture stream: exchange B's seq state (sid numbering) starts over; a no-op for exchange A. */
  resetConnection(venue: Venue): void {
    this.normalisers[venue].reset();
  }

  /**
   * A feed's websocket connected or dropped. Written to the capture file first (in frame
   * order: call it synchronously from the feed's event, like handleFrame), so that replay
   * can reset sequence state where the live capture did; an exchange B `connect` resets
   * the seq stream. Not a frame: counters do not move.
   */
  handleBoundary(venue: Venue, boundary: CaptureBoundary, at: Date, opts: { writeFile?: boolean } = {}): void {
    const file = opts.writeFile === false ? undefined : this.deps.files?.[venue];
    if (file) {
      file.appendBoundary(venue, at, boundary).catch((e: Error) => this.deps.log.error({ err: e.message, venue }, 'capture file write failed'));
    }
    if (boundary.kind === 'connect') this.resetConnection(venue);
  }

  /**
   * `frame` is the websocket text (live) or the parsed JSON of a capture line (replay).
   * Resolves once the records are buffered in the producer (back-pressure included), with
   * what became of the frame: replay names each refused frame and its reason.
   */
  async handleFrame(venue: Venue, frame: unknown, receivedAt: Date, opts: { writeFile?: boolean } = {}): Promise<HandledFrame> {
    const c = this.counters[venue];
    c.frames += 1;
    c.lastFrameAt = receivedAt.getTime();
    const file = opts.writeFile === false ? undefined : this.deps.files?.[venue];
    if (file) {
      const write = typeof frame === 'string' ? file.appendFrame(venue, receivedAt, frame) : file.append({ venue, received_at: receivedAt.toISOString(), frame });
      write.catch((e: Error) => this.deps.log.error({ err: e.message, venue }, 'capture file write failed'));
    }
    const result = this.normalisers[venue].normalise(frame, receivedAt);
    if (result.kind === 'control') {
      c.controls += 1;
      if (result.name === 'subscribed') this.deps.log.info({ detail: result.detail }, `${venueModule(venue).label} subscribed`);
      return CONTROL;
    }
    if (result.kind === 'invalid') {
      await this.deadLetter(venue, receivedAt, result.reason, frame);
      return { kind: 'invalid', reason: result.reason };
    }
    const messages: RawMessage[] = this.sequencer.stamp(receivedAt, result.records, venue);
    c.records += messages.length;
    this.deps.onMessages?.(messages);
    const topic = this.deps.topics.raw[venue];
    // Every message is buffered synchronously, before any await: a later frame's messages
    // can then never overtake this frame's on the same market.
    const key = messages.length > 0 ? oneMarket(messages) : null;
    if (key !== null) {
      // Nearly every frame: one market, one message, no grouping.
      await this.deps.producer.send({ topic, key, value: this.encode(messages) });
      return RECORDS;
    }
    const byMarket = new Map<string, RawMessage[]>();
    for (const m of messages) {
      const k = marketKey(m);
      let list = byMarket.get(k);
      if (!list) byMarket.set(k, (list = []));
      list.push(m);
    }
    const sends: Promise<void>[] = [];
    for (const [k, list] of byMarket) sends.push(this.deps.producer.send({ topic, key: k, value: this.encode(list) }));
    await Promise.all(sends);
    return RECORDS;
  }

  /**
   * A capture gap (a dropped connection, a seq gap), opened and again when closed: written
   * to the capture file (so a replay reproduces the coverage live capture recorded) and
   * produced to the gaps topic.
   */
  async handleGap(gap: CaptureGap, opts: { writeFile?: boolean; at?: Date } = {}): Promise<void> {
    const file = opts.writeFile === false ? undefined : this.deps.files?.[gap.venue];
    if (file) file.appendGap(opts.at ?? new Date(), gap).catch((e: Error) => this.deps.log.error({ err: e.message, venue: gap.venue }, 'capture file write failed'));
    await this.deps.producer.send({ topic: this.deps.topics.gaps, key: gap.connection_id, value: JSON.stringify(gap) });
  }

  private async deadLetter(venue: Venue, receivedAt: Date, reason: string, frame: unknown): Promise<void> {
    this.counters[venue].deadLetters += 1;
    const text = typeof frame === 'string' ? frame : JSON.stringify(frame);
    const dl: DeadLetter = { venue, received_at: receivedAt.toISOString(), reason, frame: text };
    this.deps.log.warn({ venue, reason, frame: text.slice(0, 200) }, 'unparsable frame sent to the dead-letter topic');
    await this.deps.producer.send({ topic: this.deps.topics.deadLetter, key: venue, value: JSON.stringify(dl) });
  }
}
