import type { PriceLevel as Level } from '@booktape/domain';

/**
 * Exchange A replay: stored records back into the market channel's frames
 * (docs/rules/venue-frames.md, ../shared VENUE-FRAMES). The stored record is the venue's
 * event as the normaliser kept it: `{...extra, market, asset_id, timestamp, hash, event_type,
 * bids?, asks?, changes?}` with every venue field it did not name in `extra`. The frames
 * are chosen so that the capture's normaliser, given them, stores the same records again:
 *
 * - `book`: the event as it came (sides under `bids` / `asks`, venue order, best last).
 * - `price_change` in the newer list shape (`price_changes`, one entry per changed level with
 *   its `asset_id`, `hash`, `best_bid`, `best_ask`) where every change kept its own hash,
 *   which only that shape gives. The records one venue frame became (one per asset, same
 *   ingest frame and time, consecutive) go out as that one frame again.
 * - Older shapes as stored: one change carrying a claim but no hash was the flat 2024
 *   event; anything else the per-asset `changes` shape.
 * - Other events (tick_size_change, last_trade_price, best_bid_ask, new_market,
 *   market_resolved, …) as stored, with their `hash` (the venue's, else the one the store
 *   gave them) so that the record's identity survives.
 */

type Json = Record<string, unknown>;

interface StoredChange {
  price: string;
  side: string;
  size: string;
  hash?: string;
  best_bid?: string;
  best_ask?: string;
}

/** The fields of a stored record that are not the venue's own extras. */
const NAMED = new Set(['market', 'asset_id', 'timestamp', 'hash', 'event_type', 'bids', 'asks', 'changes']);

function extraOf(r: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(r)) if (!NAMED.has(k)) out[k] = v;
  return out;
}

/** A stored price_change that came in the list shape (every change has its own hash). */
function isListShaped(r: Json): boolean {
  const c = r.changes as StoredChange[] | undefined;
  return r.event_type === 'price_change' && Array.isArray(c) && c.length > 0 && c.every((x) => typeof x.hash === 'string');
}

function claims(c: StoredChange): Json {
  const out: Json = {};
  if (c.best_bid !== undefined) out.best_bid = c.best_bid;
  if (c.best_ask !== undefined) out.best_ask = c.best_ask;
  return out;
}

/** One stored record (not list-shaped) as its venue event. */
export function venueEvent(r: Json): Json {
  const extra = extraOf(r);
  const head = { event_type: r.event_type, asset_id: r.asset_id, market: r.market };
  if (r.event_type === 'book') return { ...head, bids: r.bids ?? [], asks: r.asks ?? [], timestamp: r.timestamp, hash: r.hash, ...extra };
  if (r.event_type === 'price_change') {
    const changes = (r.changes as StoredChange[] | undefined) ?? [];
    const only = changes.length === 1 ? changes[0]! : undefined;
    if (only && only.hash === undefined && (only.best_bid !== undefined || only.best_ask !== undefined)) {
      return { ...head, price: only.price, side: only.side, size: only.size, ...claims(only), hash: r.hash, timestamp: r.timestamp, ...extra };
    }
    return { ...head, timestamp: r.timestamp, hash: r.hash, changes: changes.map((c) => ({ price: c.price, side: c.side, size: c.size })), ...extra };
  }
  const out: Json = { event_type: r.event_type, market: r.market };
  if (typeof r.asset_id === 'string' && r.asset_id !== '') out.asset_id = r.asset_id;
  return { ...out, timestamp: r.timestamp, hash: r.hash, ...extra };
}

/** List-shaped records of one venue frame as that frame. */
function listFrame(records: Json[]): Json {
  const first = records[0]!;
  const entries: Json[] = [];
  for (const r of records) {
    for (const c of r.changes as StoredChange[]) entries.push({ asset_id: r.asset_id, price: c.price, size: c.size, side: c.side, hash: c.hash, ...claims(c) });
  }
  return { event_type: 'price_change', market: first.market, timestamp: first.timestamp, price_changes: entries, ...extraOf(first) };
}

/** The records of one venue frame share the ingest sequence above its low 11 bits (the record-in-frame index). */
export function frameOf(seq: string): bigint {
  return BigInt(seq) >> 11n;
}

/**
 * Turns stored records, in serving order, into frames: `push` returns the frames complete
 * so far (a list-shaped price_change waits for the rest of its frame), `end` the last one.
 * Frames are JSON text with their event time (ms), for pacing.
 */
export interface OutFrame {
  text: string;
  ts: number;
}

export class ExchangeAFrameEncoder {
  private group: Json[] = [];
  private groupKey = '';

  push(record: Json, seq: string): OutFrame[] {
    if (isListShaped(record)) {
      const key = `${frameOf(seq)}\u0000${String(record.market)}\u0000${String(record.timestamp)}`;
      if (this.group.length > 0 && key === this.groupKey && !this.group.some((g) => g.asset_id === record.asset_id)) {
        this.group.push(record);
        return [];
      }
      const out = this.end();
      this.group = [record];
      this.groupKey = key;
      return out;
    }
    const out = this.end();
    out.push({ text: JSON.stringify(venueEvent(record)), ts: Number(record.timestamp) });
    return out;
  }

  end(): OutFrame[] {
    if (this.group.length === 0) return [];
    const frame = { text: JSON.stringify(listFrame(this.group)), ts: Number(this.group[0]!.timestamp) };
    this.group = [];
    return [frame];
  }

  /** Records held for a frame not complete yet. */
  get pending(): number {
    return this.group.length;
  }
}

/**
 * The `book` the replay opens with for one asset: the book at the window's start, in the
 * venue's order (bids ascending, asks descending: best last). `timestamp` is the time of
 * the book's last change. No venue hash exists for a rebuilt book: the field is left out
 * (the capture then derives one from the content).
 */
export function openingBook(asset: string, market: string, bidsBestFirst: readonly Level[], asksBestFirst: readonly Level[], asOfMs: number): Json {
  return {
    event_type: 'book',
    asset_id: asset,
    market,
    bids: [...bidsBestFirst].reverse().map((l) => ({ price: l.price, size: l.size })),
    asks: [...asksBestFirst].reverse().map((l) => ({ price: l.price, size: l.size })),
    timestamp: String(asOfMs),
  };
}
