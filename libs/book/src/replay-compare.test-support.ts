import type { ExchangeBRecord } from '@booktape/domain';
import { referenceBookB, ReferenceBookStepperB, type ReferenceBook } from './reference.test-support.ts';

/**
 * An exchange B replay's copy against its source (issue 25): the records a capture made of
 * the replay (`copy`, one ticker, one connection) and the stored records it replayed
 * (`before` the window and `window`, the ticker's, in serving order). The copy's sid, seq,
 * times and extra snapshots are its own, so its deltas are matched to the source's by
 * content (side, price, delta, venue time), in order; after each matched delta, and at the
 * end, both reference books must be equal. Every delta the source stored once the client had
 * the ticker's book (known at the window's start, or a snapshot of it stored since) must be in
 * the copy: after a gap the deltas come as the venue sent them, on a book both sides know is unknown.
 */
export interface CopyComparison {
  /** Deltas of the copy matched to the source's. */
  deltas: number;
  /** Deltas of the window stored once the client had the ticker's book. */
  applied: number;
  /** The first difference, or null. */
  mismatch: { what: string; copy?: ReferenceBook; source?: ReferenceBook } | null;
}

const deltaKey = (r: ExchangeBRecord) => `${r.side}|${r.price}|${r.delta}|${r.venue_ts}`;

export function compareReplayedBooksB(before: readonly ExchangeBRecord[], window: readonly ExchangeBRecord[], copy: readonly ExchangeBRecord[]): CopyComparison {
  const theirs = new ReferenceBookStepperB();
  const got = new ReferenceBookStepperB();
  for (const r of before) theirs.apply(r);
  let j = 0;
  let deltas = 0;
  let mismatch: CopyComparison['mismatch'] = null;
  const differ = (what: string) => {
    const [c, s] = [got.current(), theirs.current()];
    return JSON.stringify(c) === JSON.stringify(s) ? null : { what, copy: c, source: s };
  };
  for (const r of copy) {
    got.apply(r);
    if (r.type !== 'delta') continue;
    while (j < window.length && !(window[j]!.type === 'delta' && deltaKey(window[j]!) === deltaKey(r))) theirs.apply(window[j++]!);
    if (j >= window.length) return { deltas, applied: -1, mismatch: { what: `copy delta ${deltas + 1} (${deltaKey(r)}) is not the source's next` } };
    theirs.apply(window[j++]!);
    deltas++;
    mismatch = differ(`book after copy delta ${deltas}`);
    if (mismatch) return { deltas, applied: -1, mismatch };
  }
  while (j < window.length) theirs.apply(window[j++]!);
  mismatch = differ('book at the end');
  // The venue sends a subscription no delta before its first snapshot, and every delta after
  // it, the book known or not (after a lost message or a null payload): the client has had
  // the book once it was known at the window's start or a snapshot of it was stored since.
  let had = referenceBookB(before).known;
  let applied = 0;
  for (const r of window) {
    if (r.type === 'delta' && had) applied++;
    if (r.type === 'snapshot') had = true;
  }
  return { deltas, applied, mismatch };
}
