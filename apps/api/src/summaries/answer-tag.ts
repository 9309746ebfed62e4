import { etagOf } from '../http/caching.ts';

/**
 * How summary answers are written, as a number: bump it with any change that alters the
 * bytes of an answer to the same stored buckets (the JSON, NDJSON or CSV writers, the head,
 * the reader's merge and forward-fill). answer-tag.test.ts pins the bytes of fixed answers,
 * so such a change fails there until this moves.
 */
export const SUMMARY_ANSWER_VERSION = 1;

/**
 * The strong ETag of a settled answer (SummaryReader.stamp), from what determines its bytes
 * instead of a digest of them: the request (`id`: venue, market, asset, window, resolution,
 * format, date), the stamp (the asset's summaries version and the version of every stored
 * day the answer reads) and SUMMARY_ANSWER_VERSION. The kept answers rest on the same rule
 * (answer-cache.ts). Hashing a whole day at R=1, 37 MB, was a tenth of its answer's time.
 */
export function settledAnswerTag(id: string, stamp: string): string {
  return etagOf('summary-settled', SUMMARY_ANSWER_VERSION, id, stamp);
}
