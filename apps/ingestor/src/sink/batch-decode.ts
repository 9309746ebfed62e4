import type { CaptureGap, Venue } from '@booktape/domain';
import { decodeCaptureGap, decodeRawMessages } from '@booktape/messaging';
import type { StoredMessage } from '@booktape/storage';

/** A Kafka message of one partition's batch, as the sink reads it. */
export interface BatchMessage {
  offset: string;
  value: Buffer | null;
}

/** A message that cannot be stored as it came, and why: it goes to the dead-letter topic. */
export interface Rejected {
  offset: string;
  value: Buffer | null;
  reason: string;
}

/**
 * The rows of one partition's batch of a raw topic, in Kafka order, each with its position
 * (partition, offset: the table's first-copy key needs it), and the messages refused whole
 * (a value that does not decode, or a record that breaks the rules of values). JSON and
 * binary values alike, mixed (docs/rules/kafka-records.md).
 */
export function decodeRawBatch(venue: Venue, partition: number, messages: readonly BatchMessage[]): { rows: StoredMessage[]; rejected: Rejected[] } {
  const rows: StoredMessage[] = [];
  const rejected: Rejected[] = [];
  for (const m of messages) {
    const decoded = decodeRawMessages(venue, m.value);
    if (!decoded.ok) {
      rejected.push({ offset: m.offset, value: m.value, reason: decoded.reason });
      continue;
    }
    const position = { partition, offset: m.offset };
    for (const message of decoded.messages) rows.push({ message, position });
  }
  return { rows, rejected };
}

export interface GapRow {
  gap: CaptureGap;
  value: Buffer | null;
  offset: string;
}

/** The capture gaps of one partition's batch of the gaps topic, and the messages refused. */
export function decodeGapBatch(messages: readonly BatchMessage[]): { gaps: GapRow[]; rejected: Rejected[] } {
  const gaps: GapRow[] = [];
  const rejected: Rejected[] = [];
  for (const m of messages) {
    const decoded = decodeCaptureGap(m.value);
    if (decoded.ok) gaps.push({ gap: decoded.gap, value: m.value, offset: m.offset });
    else rejected.push({ offset: m.offset, value: m.value, reason: decoded.reason });
  }
  return { gaps, rejected };
}
