import type { Logger } from '@booktape/config';
import type { CaptureGap, RawMessage, Venue } from '@booktape/domain';
import { encodeRawMessages } from '@booktape/messaging';
import type { StoredMessage } from '@booktape/storage';
import { decodeGapBatch, decodeRawBatch, type BatchMessage, type Rejected } from './batch-decode.ts';
import { storeBisecting } from './bisect.ts';
import { frameOfValue, type DeadLetter } from './dead-letter.ts';
import type { SinkStats } from './health.ts';
import type { InsertOutcome, PartitionLease } from './insert-retry.ts';
import { batchToken, nextOffset } from './offsets.ts';

/** One partition's batch as kafkajs hands it over (its fields the sink reads). */
export interface PartitionBatch {
  topic: string;
  partition: number;
  messages: readonly BatchMessage[];
  lastOffset(): string;
  /** Messages of the partition after this batch (kafkajs: high watermark − last offset − 1). */
  offsetLag?(): string;
}

/** The batch's hold on its partition, and the commit of its offsets. */
export interface BatchLease extends PartitionLease {
  /** Commits `offset` (the next to read) for the batch's partition. */
  commit(offset: string): Promise<void>;
}

/** What the handler does its work with: each a unit of its own (or a fake in a test). */
export interface BatchPorts {
  gapsTopic: string;
  venueOfTopic(topic: string): Venue | undefined;
  /** A whole raw batch: goes through the venue's insert group (shared with other partitions' batches). */
  insertGrouped(venue: Venue, rows: StoredMessage[], token: string, paced: boolean): Promise<void>;
  /** Whether a raw batch's insert may wait to be paced (insert-group.ts); absent: never. */
  paced?(batch: PartitionBatch, rows: readonly StoredMessage[]): boolean;
  /** A part of a refused batch: alone. */
  insertAlone(venue: Venue, rows: StoredMessage[], token: string): Promise<void>;
  insertGaps(gaps: CaptureGap[]): Promise<void>;
  /** One insert with retry while the engine is down (insertWithRetry). */
  attempt(what: string, lease: PartitionLease, insert: () => Promise<void>): Promise<InsertOutcome>;
  deadLetter(d: DeadLetter): Promise<void>;
  /** Tells the rollup queue about stored records (absent: nobody listens). */
  notify?(messages: RawMessage[]): Promise<void>;
  stats: Pick<SinkStats, 'batches' | 'stored' | 'refusedRecords' | 'lastStoredAt'>;
  log: Logger;
}

export type BatchResult = 'committed' | 'abandoned' | 'ignored';

/**
 * One partition's batch, start to end: decode, dead-letter what does not decode, store the
 * rest (bisecting a batch the engine refuses as bad data down to the refused records, which
 * are dead-lettered alone), tell the rollup queue, and only then commit the offsets. At least
 * once: an abandoned batch (stop, rebalance) commits nothing and is read again; a re-delivered
 * batch carries the same deduplication token (same boundaries) or collapses in the table's
 * first-copy key (other boundaries).
 */
export async function handleBatch(batch: PartitionBatch, lease: BatchLease, ports: BatchPorts): Promise<BatchResult> {
  if (batch.messages.length === 0) return 'ignored';
  const last = batch.lastOffset();
  const token = batchToken(batch.topic, batch.partition, batch.messages[0]!.offset, last);
  const source = (offset: string) => ({ topic: batch.topic, partition: batch.partition, offset });
  const rejectAll = async (venue: Venue | null, rejected: readonly Rejected[]) => {
    for (const r of rejected) await ports.deadLetter({ venue, reason: r.reason, frame: frameOfValue(r.value), source: source(r.offset) });
  };
  const onSplit = (what: string, records: number) => (refusal: string) =>
    ports.log.warn({ what, records, refusal }, 'clickhouse refused the batch as bad data; splitting it to store the good records');

  if (batch.topic === ports.gapsTopic) {
    const { gaps, rejected } = decodeGapBatch(batch.messages);
    await rejectAll(null, rejected);
    const what = 'capture gaps';
    const refused = await storeBisecting(gaps, (part) => ports.attempt(what, lease, () => ports.insertGaps(part.map((g) => g.gap))), onSplit(what, gaps.length));
    if (refused === null) return 'abandoned';
    for (const { item, reason } of refused) {
      ports.stats.refusedRecords += 1;
      await ports.deadLetter({ venue: null, reason, frame: frameOfValue(item.value), source: source(item.offset) });
    }
  } else {
    const venue = ports.venueOfTopic(batch.topic);
    if (!venue) return 'ignored';
    const { rows, rejected } = decodeRawBatch(venue, batch.partition, batch.messages);
    await rejectAll(venue, rejected);
    // The whole batch goes through the group; once it was refused as bad data, its halves go
    // alone (grouped, each halving step would make other partitions' batches retry alone too).
    const what = `${venue} raw batch`;
    const paced = ports.paced?.(batch, rows) ?? false;
    const refused = await storeBisecting(
      rows,
      (part, suffix) => ports.attempt(what, lease, () => (suffix === '' ? ports.insertGrouped(venue, part, token, paced) : ports.insertAlone(venue, part, token + suffix))),
      onSplit(what, rows.length),
    );
    if (refused === null) return 'abandoned';
    // Only the refused record goes, as the JSON value of it alone (it can be fixed and sent
    // again): the other records of its Kafka message are stored.
    for (const { item, reason } of refused) {
      ports.stats.refusedRecords += 1;
      await ports.deadLetter({ venue, reason, frame: { text: encodeRawMessages([item.message]), encoding: 'utf8' }, source: source(item.position.offset) });
    }
    const bad = new Set(refused.map((x) => x.item));
    const stored = bad.size === 0 ? rows : rows.filter((r) => !bad.has(r));
    ports.stats.stored += stored.length;
    ports.stats.lastStoredAt = Date.now();
    if (ports.notify && stored.length > 0) await ports.notify(stored.map((r) => r.message));
  }
  await lease.commit(nextOffset(last));
  ports.stats.batches += 1;
  return 'committed';
}
