import type { InsertOutcome } from './insert-retry.ts';

export interface Refused<T> {
  item: T;
  reason: string;
}

/**
 * Stores `items` in order through `attempt`. When the engine refuses them as bad data, they
 * are split in halves, each stored the same way, down to the single items it refuses: those
 * are returned (to be dead-lettered), every other item is stored, so one bad record can no
 * longer hold its partition forever. The halves go in their original order; which copy of a
 * duplicate is kept does not depend on it anyway (the raw tables keep the highest
 * row_version = MAX - ingest_seq, migration 008; an equal ingest_seq is the same record
 * again). Null: an attempt was abandoned (stop, rebalance), and nothing may be committed.
 *
 * `part` names the slice for the deduplication token: '' for the whole, `#lo-hi` for a
 * part, the same for the same rows on a re-delivery with the same boundaries (the split is
 * deterministic). `onSplit` hears the first refusal of the whole (for a log line).
 */
export async function storeBisecting<T>(
  items: readonly T[],
  attempt: (items: T[], part: string) => Promise<InsertOutcome>,
  onSplit?: (refusal: string) => void,
): Promise<Array<Refused<T>> | null> {
  const refused: Array<Refused<T>> = [];
  const store = async (lo: number, hi: number): Promise<boolean> => {
    const whole = lo === 0 && hi === items.length;
    const outcome = await attempt(items.slice(lo, hi), whole ? '' : `#${lo}-${hi - 1}`);
    if (outcome.kind !== 'refused') return outcome.kind === 'stored';
    if (whole && items.length > 1) onSplit?.(outcome.refusal);
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
