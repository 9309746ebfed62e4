import { VENUES, type Venue } from '@booktape/domain';
import { venueModule } from '@booktape/venues';
import type { ReplayRow } from '@booktape/storage';
import type { GapMessage, Series, StreamBooks, StreamMessage } from './normalise.ts';

/**
 * The merged order of the stream (docs/api.md, "Merged replay stream"): each venue's stored
 * records come in their serving order (ReplayRepository: event time, ingest_seq, …); the two
 * are merged by (event time, ingest_seq as a number), and where both are equal, exchange A
 * first. Within a venue the serving order is kept as it is. Messages the stream makes go
 * between them by time: a gap marker before the records of its first millisecond; the
 * snapshots of an instant T after every record at or before T (they show the books after
 * them), one per series in the order the request named them.
 *
 * Memory: the heads of the two reads and the books; the reads hold at most two batches each.
 */

export interface VenueRows {
  it: AsyncIterator<ReplayRow>;
  first: IteratorResult<ReplayRow>;
}

export interface SnapshotPlan {
  first: number;
  intervalMs: number;
  count: number;
  depth: number;
}

/** ingest_seq order: UInt64 as decimal text without leading zeros. */
export function compareSeq(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}

/** Rank of what goes first at one time: gap markers, then records, then snapshots. */
const GAP = 0;
const RECORD = 1;
const SNAPSHOT = 2;

export async function* mergedMessages(o: {
  books: StreamBooks;
  rows: Partial<Record<Venue, VenueRows>>;
  /** Sorted by ts. */
  gaps: readonly GapMessage[];
  snapshots: SnapshotPlan | null;
}): AsyncGenerator<StreamMessage> {
  const { books } = o;
  const byName = new Map<string, Series>(books.all.map((s) => [s.name, s]));
  const heads = Object.fromEntries(VENUES.map((v) => [v, o.rows[v]?.first ?? null])) as Record<Venue, IteratorResult<ReplayRow> | null>;
  // A series is named by its token where the venue has outcome tokens (the row's first tie-break, asset_id), else by its market.
  const byToken = Object.fromEntries(VENUES.map((v) => [v, venueModule(v).tokens])) as Record<Venue, boolean>;
  let g = 0;
  let snapIndex = 0;

  /** The venue whose head record comes next (by time, then ingest_seq; a tie goes to the venue first in VENUES), or null when all are read. */
  const nextVenue = (): Venue | null => {
    let venue: Venue | null = null;
    let best: ReplayRow | null = null;
    for (const v of VENUES) {
      const h = heads[v];
      const r = h && !h.done ? h.value : null;
      if (r !== null && (best === null || r.ts < best.ts || (r.ts === best.ts && compareSeq(r.seq, best.seq) < 0))) [venue, best] = [v, r];
    }
    return venue;
  };

  for (;;) {
    const venue = nextVenue();
    const row = venue === null ? null : (heads[venue] as IteratorYieldResult<ReplayRow>).value;
    const recordTs = row === null ? Infinity : row.ts;
    const gapTs = g < o.gaps.length ? o.gaps[g]!.ts : Infinity;
    const snapTs = o.snapshots && snapIndex < o.snapshots.count ? o.snapshots.first + snapIndex * o.snapshots.intervalMs : Infinity;
    // The least of (time, rank).
    let pick = RECORD;
    let best = recordTs;
    if (gapTs < best || (gapTs === best && GAP < pick)) [pick, best] = [GAP, gapTs];
    if (snapTs < best) [pick, best] = [SNAPSHOT, snapTs];
    if (best === Infinity) return;
    if (pick === GAP) {
      yield o.gaps[g++]!;
    } else if (pick === SNAPSHOT) {
      for (const s of books.all) yield books.snapshot(s, snapTs, o.snapshots!.depth);
      snapIndex++;
    } else {
      const v = venue!;
      const r = row!;
      const name = `${v}:${byToken[v] ? r.tie : r.market}`;
      const series = byName.get(name);
      if (series !== undefined) {
        const m = books.record(series, r.ts, r.seq, JSON.parse(r.payload) as Record<string, unknown>);
        if (m !== null) yield m;
      }
      heads[v] = await o.rows[v]!.it.next();
    }
  }
}
