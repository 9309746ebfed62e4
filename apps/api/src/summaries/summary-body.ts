import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { summaryBucketsCsvBytes, summaryBucketsJsonBytes, summaryBucketsNdjsonBytes, type ExactBucket } from '@booktape/book';

/**
 * A summary answer's bytes, written a slice of buckets at a time with a turn of the event loop
 * between slices: a whole day at R=1 is 86,400 buckets and about 37 MB of JSON, which written
 * in one go holds every other request of the process (the health check included) for as long
 * as it takes. The bytes are exactly those the one-go writers give (tested).
 */
export const SLICE_BUCKETS = 1024;

export type SummaryFormat = 'json' | 'ndjson' | 'csv';

async function slices(buckets: readonly ExactBucket[], write: (slice: readonly ExactBucket[], k: number) => Buffer, size: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (let k = 0, at = 0; at < buckets.length || k === 0; k++, at += size) {
    if (k > 0) await yieldToLoop();
    out.push(write(buckets.slice(at, at + size), k));
  }
  return out;
}

/**
 * `format` body of `buckets` as its parts in order (their concatenation is the body); for
 * json, `head` and `tail` around the bucket array (see summaryBucketsJsonBytes). Joining
 * them is a copy of the whole answer (37 MB for a day at R=1, most of its writing time
 * again in page faults and memcpy): a large answer is sent part by part instead.
 */
export async function summaryBodyParts(buckets: readonly ExactBucket[], format: SummaryFormat, head = '', tail = '', size = SLICE_BUCKETS): Promise<Buffer[]> {
  if (format === 'csv') return slices(buckets, (s, k) => summaryBucketsCsvBytes(s, k === 0), size);
  if (format === 'ndjson') return slices(buckets, (s) => summaryBucketsNdjsonBytes(s), size);
  // Each slice is written as an array, "[…]": its items go between the commas.
  const items = (await slices(buckets, (s) => summaryBucketsJsonBytes(s), size)).filter((b) => b.length > 2).map((b) => b.subarray(1, -1));
  const parts: Buffer[] = [Buffer.from(`${head}[`)];
  const comma = Buffer.from(',');
  items.forEach((b, i) => {
    if (i > 0) parts.push(comma);
    parts.push(b);
  });
  parts.push(Buffer.from(`]${tail}`));
  return parts;
}
