import type { Venue } from '@booktape/domain';
import { venueModules } from '@booktape/venues';
import { LIMITS, parseTicker, show, type Parsed } from '../http/params.ts';

/**
 * Parameters of the merged replay stream (docs/api.md, "Merged replay stream"): pure rules.
 */

/** Series one stream may name. */
export const STREAM_MAX_MARKETS = 100;
/** Snapshot instants one stream may hold (window / snapshot_interval). */
export const STREAM_MAX_SNAPSHOT_INSTANTS = 100_000;
export const STREAM_MAX_DEPTH = 100;
export const STREAM_DEFAULT_DEPTH = 10;
const MIN_INTERVAL_MS = 1_000;
const MAX_INTERVAL_MS = 86_400_000;
const ID_MAX = LIMITS.idMaxLength;

export interface StreamMarket {
  venue: Venue;
  /** Exchange A: the asset (outcome token) id; exchange B: the ticker, upper-cased. */
  id: string;
  /** `exchange-a:<asset_id>` / `exchange-b:<TICKER>`. */
  name: string;
}

/** Prefixes a market may be named with: the venue, or its own name (as the path aliases). */
const PREFIXES = new Map<string, Venue>(venueModules().flatMap((m) => [[m.venue, m.venue] as const, [m.ownName, m.venue] as const]));

/**
 * What names one series of each venue, keyed by venue: a venue with outcome tokens (exchange
 * A) a token id, decimal digits; exchange B a ticker (normalised). The id, or why `rest` is not one.
 */
const SERIES_ID: { readonly [V in Venue]: (item: string, rest: string) => { id: string } | { message: string } } = {
  'exchange-a': (item, rest) =>
    !/^\d+$/.test(rest) || rest.length > ID_MAX ? { message: `${show(item)}: an exchange A market is an outcome token (asset) id, 1 to ${ID_MAX} decimal digits` } : { id: rest },
  'exchange-b': (item, rest) => {
    const t = parseTicker(rest);
    return t.ok ? { id: t.value } : { message: `${show(item)}: an exchange B market is a ticker of A-Z, 0-9, '.', '_' and '-', at most ${ID_MAX} characters` };
  },
};

/**
 * `markets`, repeated and/or comma-separated: `exchange-a:<asset_id>` (an outcome token id,
 * decimal digits) and `exchange-b:<ticker>`; a market named twice counts once, at its first place.
 */
export function parseMarkets(raw: string | readonly string[] | undefined): Parsed<StreamMarket[]> {
  const values = raw === undefined ? [] : typeof raw === 'string' ? [raw] : raw;
  const items = values.flatMap((v) => v.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) return { ok: false, message: 'must name at least one market, as exchange-a:<asset_id> or exchange-b:<ticker>' };
  const out: StreamMarket[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    const colon = item.indexOf(':');
    const prefix = colon < 0 ? '' : item.slice(0, colon).toLowerCase();
    const venue = PREFIXES.get(prefix);
    if (venue === undefined) return { ok: false, message: `${show(item)}: a market is exchange-a:<asset_id> or exchange-b:<ticker> (polymarket: and kalshi: too)` };
    const rest = item.slice(colon + 1).trim();
    const parsed = SERIES_ID[venue](item, rest);
    if ('message' in parsed) return { ok: false, message: parsed.message };
    const { id } = parsed;
    const name = `${venue}:${id}`;
    if (seen.has(name)) continue;
    seen.add(name);
    out.push({ venue, id, name });
  }
  if (out.length > STREAM_MAX_MARKETS) return { ok: false, message: `names ${out.length} markets: at most ${STREAM_MAX_MARKETS} per stream` };
  return { ok: true, value: out };
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `snapshot_interval`: a whole number with a unit (`500ms` no: 1 s at least; `60s`, `5m`, `1h`), or plain seconds. */
export function parseInterval(raw: string): Parsed<number> {
  const m = /^\s*(\d{1,9})\s*(ms|s|m|h)?\s*$/i.exec(raw);
  const bad = `must be a duration like 60s, 5m or 1h (a number alone is seconds), from 1s to 24h, got ${show(raw)}`;
  if (!m) return { ok: false, message: bad };
  const ms = Number(m[1]) * UNITS[(m[2] ?? 's').toLowerCase()]!;
  if (ms < MIN_INTERVAL_MS || ms > MAX_INTERVAL_MS) return { ok: false, message: bad };
  return { ok: true, value: ms };
}

/** The snapshot instants of a window: the multiples of `intervalMs` since the epoch in [fromMs, toMs]. */
export function snapshotInstants(fromMs: number, toMs: number, intervalMs: number): { first: number; count: number } {
  const first = Math.ceil(fromMs / intervalMs) * intervalMs;
  return { first, count: first > toMs ? 0 : Math.floor((toMs - first) / intervalMs) + 1 };
}
