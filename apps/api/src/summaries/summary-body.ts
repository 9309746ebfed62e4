import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { CHUNK_BYTES, CSV_BUCKET_BYTES, JSON_BUCKET_BYTES, SummaryBytesWriter, seriesBuckets, type ColumnSeries, type ExactBucket } from '@booktape/book';

/**
 * A summary answer's bytes, written a slice of buckets at a time with a turn of the event loop
 * between slices: a whole day at R=1 is 86,400 buckets and about 37 MB of JSON, which written
 * in one go holds every other request of the process (the health check included) for as long
 * as it takes. The bytes are exactly those the one-go writers give (tested).
 */
export const SLICE_BUCKETS = 1024;

export type SummaryFormat = 'json' | 'ndjson' | 'csv';

/**
 * `format` body of `buckets` as its parts in order (their concatenation is the body); for
 * json, `head` and `tail` around the bucket array (see summaryBucketsJsonBytes). The parts
 * are the writer's Buffers of about 1 MiB, each filled to its end (SummaryBytesWriter); they
 * are not joined: that is a copy of the whole answer (37 MB for a day at R=1), so a large
 * answer is sent part by part instead.
 */
export async function summaryBodyParts(from: readonly ExactBucket[] | ColumnSeries, format: SummaryFormat, head = '', tail = '', size = SLICE_BUCKETS): Promise<Buffer[]> {
  // A series kept in columns is written straight from them (JSON, NDJSON); CSV from its objects.
  const series = 'columns' in from && format !== 'csv' ? from : null;
  const buckets = series === null ? ('columns' in from ? seriesBuckets(from) : from) : null;
  const n = series !== null ? series.n : buckets!.length;
  const expected = head.length + tail.length + 2 + n * (format === 'csv' ? CSV_BUCKET_BYTES : JSON_BUCKET_BYTES);
  const w = new SummaryBytesWriter(format, Math.min(expected, CHUNK_BYTES)).begin(head);
  for (let at = 0; at < n; at += size) {
    if (at > 0) await yieldToLoop();
    if (series !== null) w.series(series, at, Math.min(n, at + size));
    else w.buckets(buckets!, at, Math.min(n, at + size));
  }
  return w.end(tail).parts();
}
