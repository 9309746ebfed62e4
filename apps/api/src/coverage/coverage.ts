import { BookChecker, type BookChecks } from '@booktape/book';
import type { Venue } from '@booktape/domain';
import { venueModule } from '@booktape/venues';
import type { AssetDayChecks, CaptureGapSpan, DeclaredOutage, RawAssetDay, RawSourceDay } from '@booktape/storage';

/**
 * The coverage map (issue 9 point 7): per UTC day of one market, what was stored, where it
 * is known to have holes, and what the rollup's cross-checks found. A pure function of
 * what the route read, so the rules are tested without a store.
 */

/** Where the rollup's stored per asset-day checks come from (SummariesRepository.checksForMarket). */
export interface MarketChecksSource {
  checksForMarket(venue: Venue, market: string, fromDate: string, toDate: string): Promise<AssetDayChecks[]>;
}

export const DAY_MS = 86_400_000;
/** Longest range of one coverage request, in days. */
export const COVERAGE_MAX_DAYS = 31;

export type GapKind = 'disconnect' | 'sequence_gap' | 'unknown_book' | 'outage';
export interface CoverageGap {
  kind: GapKind;
  start_ms: number;
  end_ms: number;
  detail: string;
}

export interface CoverageChecks {
  book_events: number;
  venue_best_checked: number;
  venue_best_mismatches: number;
  first_mismatch_ms: number | null;
  crossed_observations: number;
  unknown_book_ms: number;
}

/** One source's share of a day (docs/rules/imports.md#provenance). */
export interface CoverageSource {
  /** As the raw endpoints serve it (`include=source`): `capture:worker-<id>` or `import:<format>:<file>`. */
  source: string;
  imported: boolean;
  events: number;
  first_event_ms: number;
  last_event_ms: number;
  /** UTC hours (0–23) of the event times this source holds records in, ascending. */
  hours: number[];
}

export interface CoverageDay {
  date: string;
  status: 'complete' | 'partial' | 'missing';
  events: number;
  first_event_ms: number | null;
  last_event_ms: number | null;
  gaps: CoverageGap[];
  checks: CoverageChecks;
  /**
   * Every asset (exchange B: the ticker) with records that day has cross-checks covering the
   * whole day. False while the day is open or the rollup has not reached it: `checks` then
   * counts only what was checked so far (zeros when nothing was).
   */
  checks_complete: boolean;
  /** The sources that contributed records this day, by name; empty when there is none. */
  sources: CoverageSource[];
  /** The day has records and every one of them came from an import. */
  imported_only: boolean;
}

export interface CoverageInput {
  venue: Venue;
  /** Dates to answer, ascending, YYYY-MM-DD. */
  dates: string[];
  raw: RawAssetDay[];
  /** The same records by source and hour; absent: none known. */
  sources?: RawSourceDay[];
  captureGaps: CaptureGapSpan[];
  checks: AssetDayChecks[];
  outages: DeclaredOutage[];
  /** Open capture gaps end here. */
  now: number;
}

/** The dates from `start` to `end` inclusive (both valid YYYY-MM-DD, start ≤ end). */
export function datesBetween(start: string, end: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${start}T00:00:00Z`), e = Date.parse(`${end}T00:00:00Z`); t <= e; t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** [start, end) ∩ [lo, hi), or null when empty. */
function clip(start: number, end: number, lo: number, hi: number): [number, number] | null {
  const s = Math.max(start, lo);
  const e = Math.min(end, hi);
  return e > s ? [s, e] : null;
}

/**
 * A stored checks state as of the end of what it covers: the whole day for a closed day,
 * else covered_until. null when absent or malformed (the day then counts as not checked).
 */
export function checksOf(venue: Venue, row: AssetDayChecks, dayStart: number): BookChecks | null {
  if (row.checks === null || row.checks === undefined) return null;
  try {
    const until = row.complete ? dayStart + DAY_MS : Math.min(Math.max(row.coveredUntil, dayStart), dayStart + DAY_MS);
    return BookChecker.resume(venue, row.checks).checksAt(until);
  } catch {
    return null;
  }
}

export function coverageDays(input: CoverageInput): CoverageDay[] {
  const { venue } = input;
  // A spell's detail names its outcome token where a market has several (exchange A); a B ticker is the market's one book.
  const assetPrefix = (asset: string) => (venueModule(venue).tokens ? `asset ${asset}: ` : '');
  const rawByDate = new Map<string, RawAssetDay[]>();
  for (const r of input.raw) rawByDate.set(r.date, [...(rawByDate.get(r.date) ?? []), r]);
  const sourcesByDate = new Map<string, RawSourceDay[]>();
  for (const s of input.sources ?? []) sourcesByDate.set(s.date, [...(sourcesByDate.get(s.date) ?? []), s]);
  const checksByDate = new Map<string, AssetDayChecks[]>();
  for (const c of input.checks) checksByDate.set(c.date, [...(checksByDate.get(c.date) ?? []), c]);

  return input.dates.map((date) => {
    const dayStart = Date.parse(`${date}T00:00:00Z`);
    const dayEnd = dayStart + DAY_MS;
    const raw = rawByDate.get(date) ?? [];
    const events = raw.reduce((s, r) => s + r.events, 0);
    const gaps: CoverageGap[] = [];

    for (const g of input.captureGaps) {
      const open = g.ended_ms === null;
      const span = clip(g.started_ms, g.ended_ms ?? input.now, dayStart, dayEnd);
      if (!span) continue;
      // exchange B's 'seq gap' rows: the venue skipped a sequence number; the books of the
      // subscription are unknown until its fresh snapshots arrive.
      const kind: GapKind = g.reason === 'seq gap' ? 'sequence_gap' : 'disconnect';
      gaps.push({ kind, start_ms: span[0], end_ms: span[1], detail: `capture: ${g.reason} on connection ${g.connection_id}${open ? ' (still open)' : ''}` });
    }

    const sum: CoverageChecks = { book_events: 0, venue_best_checked: 0, venue_best_mismatches: 0, first_mismatch_ms: null, crossed_observations: 0, unknown_book_ms: 0 };
    const checked = new Set<string>();
    for (const row of checksByDate.get(date) ?? []) {
      const c = checksOf(venue, row, dayStart);
      if (!c) continue;
      if (row.complete) checked.add(row.asset);
      sum.book_events += c.book_events;
      sum.venue_best_checked += c.venue_best_checked;
      sum.venue_best_mismatches += c.venue_best_mismatches;
      if (c.first_mismatch_ms !== null && (sum.first_mismatch_ms === null || c.first_mismatch_ms < sum.first_mismatch_ms)) sum.first_mismatch_ms = c.first_mismatch_ms;
      sum.crossed_observations += c.crossed_observations;
      sum.unknown_book_ms += c.unknown_book_ms;
      for (const s of c.spells) {
        const span = clip(s.start_ms, s.end_ms, dayStart, dayEnd);
        if (!span) continue;
        gaps.push({ kind: s.kind, start_ms: span[0], end_ms: span[1], detail: `${assetPrefix(row.asset)}${s.detail}` });
      }
      if (c.spells_dropped > 0) {
        // The checker keeps the first spells of a day only; the rest are counted. Their
        // times are unknown, so the whole day is marked rather than left looking clean.
        gaps.push({ kind: 'unknown_book', start_ms: dayStart, end_ms: dayEnd, detail: `${assetPrefix(row.asset)}${c.spells_dropped} more unknown-book spells this day (their times were not kept; unknown_book_ms counts them)` });
      }
    }

    for (const o of input.outages) {
      if (o.venue !== venue) continue;
      const span = clip(o.start_ms, o.end_ms, dayStart, dayEnd);
      if (span) gaps.push({ kind: 'outage', start_ms: span[0], end_ms: span[1], detail: `declared outage ${o.id}: ${o.reason}` });
    }
    gaps.sort((a, b) => a.start_ms - b.start_ms || a.end_ms - b.end_ms || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0) || (a.detail < b.detail ? -1 : 1));

    const sources: CoverageSource[] = [...(sourcesByDate.get(date) ?? [])]
      .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0))
      .map((s) => ({ source: s.source, imported: s.imported, events: s.events, first_event_ms: s.first_ms, last_event_ms: s.last_ms, hours: [...s.hours].sort((x, y) => x - y) }));
    const status: CoverageDay['status'] = events === 0 ? 'missing' : gaps.length > 0 || sum.venue_best_mismatches > 0 || sum.crossed_observations > 0 ? 'partial' : 'complete';
    return {
      date,
      status,
      events,
      first_event_ms: events === 0 ? null : Math.min(...raw.map((r) => r.first_ms)),
      last_event_ms: events === 0 ? null : Math.max(...raw.map((r) => r.last_ms)),
      gaps,
      checks: sum,
      checks_complete: raw.every((r) => checked.has(r.asset)),
      sources,
      imported_only: sources.length > 0 && sources.every((s) => s.imported),
    };
  });
}
