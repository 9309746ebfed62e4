/**
 * Offsets of a partition's batch: the deduplication token its insert carries, and the offset
 * committed once everything in it is stored or dead-lettered (the next one to read).
 */

/** The same batch boundaries give the same token, so a re-delivered batch's insert is dropped by the engine. */
export function batchToken(topic: string, partition: number, firstOffset: string, lastOffset: string): string {
  return `${topic}/${partition}/${firstOffset}-${lastOffset}`;
}

/** Kafka commits the offset of the next message to read. Offsets are 64-bit: text, added as BigInt. */
export function nextOffset(lastOffset: string): string {
  return (BigInt(lastOffset) + 1n).toString();
}
