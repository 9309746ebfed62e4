import {
  normaliseConditionId,
  type ExchangeAEvent,
  type PriceChange,
  type PriceLevel,
} from '@booktape/domain';
import { contentHash } from './content-hash.ts';
import { canonicalDecimal } from './decimal.ts';
import {
  bad,
  excerpt,
  frameText,
  isRecord,
  kindOf,
  ok,
  parseJson,
  type Parsed,
} from './frame-text.ts';
import type { ExchangeAResult } from './normalise.types.ts';

/**
 * Exchange A (Polymarket CLOB market channel) frames to 2.1 events. Pure: no state, the
 * same frame always gives the same result.
 *
 * Decisions (see VENUE-FRAMES.md for the shapes):
 * - Levels keep the venue's order (bids ascending, asks descending, best last). Nothing
 *   downstream may rely on it; keeping it makes the stored record the frame as sent.
 * - Prices and sizes are canonical decimals; a level or change whose price or size is
 *   missing, null, negative or not a decimal makes the whole frame invalid.
 * - `extra` holds every venue field that 2.1 does not name, with the venue's values
 *   untouched (tick_size "0.01", last_trade_price "0.500", best_bid, …).
 * - All or nothing: if any event of an array is invalid the whole frame is invalid, so
 *   the dead-letter topic keeps it whole rather than half of it being stored.
 * - `timestamp` must be integer milliseconds (number or digit string) in
 *   [1e11, 1e14): below is seconds (or 1970), above is micro- or nanoseconds. Stored
 *   without leading zeros.
 */

const CONTROL_TEXT = new Set(['PING', 'PONG']);
const MIN_TIMESTAMP_MS = 100_000_000_000; // 1973-03-03: smaller values are seconds
const MAX_TIMESTAMP_MS = 100_000_000_000_000; // year 5138: larger values are µs or ns

export function normaliseExchangeA(frame: unknown, _receivedAt: Date): ExchangeAResult {
  let value: unknown = frame;
  const text = frameText(frame);
  if (text !== undefined) {
    const t = text.trim();
    if (CONTROL_TEXT.has(t.toUpperCase())) return { kind: 'control', name: t.toLowerCase() };
    if (t === '') return { kind: 'invalid', reason: 'empty frame' };
    const parsed = parseJson(t);
    if (!parsed.ok) return { kind: 'invalid', reason: parsed.reason };
    value = parsed.value;
  }

  const isArray = Array.isArray(value);
  const events: unknown[] = isArray ? (value as unknown[]) : [value];
  if (!isArray && !isRecord(value)) {
    return { kind: 'invalid', reason: `JSON ${kindOf(value)} is neither an event nor an array of events` };
  }

  const records: ExchangeAEvent[] = [];
  for (let i = 0; i < events.length; i++) {
    const ev = events[i];
    const where = isArray ? `event[${i}]` : 'event';
    if (!isRecord(ev)) return { kind: 'invalid', reason: `${where} is a JSON ${kindOf(ev)}, not an object` };
    const type = ev['event_type'];
    if (typeof type !== 'string' || type === '') {
      return { kind: 'invalid', reason: `${where}: event_type missing or not a string` };
    }
    const r = normaliseEvent(type, ev);
    if (!r.ok) return { kind: 'invalid', reason: `${where} (${type}): ${r.reason}` };
    records.push(...r.value);
  }
  return { kind: 'records', records };
}

function normaliseEvent(type: string, ev: Record<string, unknown>): Parsed<ExchangeAEvent[]> {
  const market = marketOf(ev);
  if (!market.ok) return market;
  const timestamp = timestampOf(ev);
  if (!timestamp.ok) return timestamp;
  const base = { market: market.value, timestamp: timestamp.value };

  if (type === 'book') return book(ev, base);
  if (type === 'price_change') {
    return ev['price_changes'] !== undefined ? priceChangeList(ev, base) : priceChangeOld(ev, base);
  }
  return other(type, ev, base);
}

interface Base {
  market: string;
  timestamp: string;
}

function marketOf(ev: Record<string, unknown>): Parsed<string> {
  const raw = ev['market'];
  if (raw === undefined || raw === null || raw === '') return bad('market missing');
  if (typeof raw !== 'string') return bad(`market is a ${kindOf(raw)}, not a string`);
  const id = normaliseConditionId(raw);
  return id === null ? bad(`market is not a condition id: ${excerpt(raw)}`) : ok(id);
}

function timestampOf(ev: Record<string, unknown>): Parsed<string> {
  const raw = ev['timestamp'];
  if (raw === undefined || raw === null || raw === '') return bad('timestamp missing');
  let ms: number;
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw)) return bad(`timestamp is not integer milliseconds: ${raw}`);
    ms = raw;
  } else if (typeof raw === 'string' && /^\d{1,20}$/.test(raw)) {
    ms = Number(raw);
  } else {
    return bad(`timestamp is not a number of milliseconds: ${typeof raw === 'string' ? excerpt(raw) : kindOf(raw)}`);
  }
  if (ms < MIN_TIMESTAMP_MS || ms >= MAX_TIMESTAMP_MS) {
    return bad(`timestamp ${String(raw)} is not milliseconds since the epoch`);
  }
  return ok(String(ms));
}

/** The asset id where the event type needs one. */
function requiredAsset(v: unknown, field = 'asset_id'): Parsed<string> {
  if (v === undefined || v === null || v === '') return bad(`${field} missing`);
  if (typeof v !== 'string') return bad(`${field} is a ${kindOf(v)}, not a string`);
  return ok(v);
}

/** A venue hash: a non-empty string, or undefined when absent. */
function venueHash(v: unknown, field: string): Parsed<string | undefined> {
  if (v === undefined || v === null || v === '') return ok(undefined);
  if (typeof v !== 'string') return bad(`${field} is a ${kindOf(v)}, not a string`);
  return ok(v);
}

function decimalField(v: unknown, what: string): Parsed<string> {
  if (v === undefined || v === null) return bad(`${what} is ${v === null ? 'null' : 'missing'}`);
  const d = canonicalDecimal(v);
  if (!d.ok) return bad(`${what}: ${d.reason}`);
  if (d.value.startsWith('-')) return bad(`${what} is negative: ${d.value}`);
  return ok(d.value);
}

function levels(v: unknown, what: string): Parsed<PriceLevel[]> {
  if (!Array.isArray(v)) return bad(`${what} is ${v === undefined ? 'missing' : `a ${kindOf(v)}, not an array`}`);
  const out: PriceLevel[] = [];
  for (let i = 0; i < v.length; i++) {
    const lv: unknown = v[i];
    if (!isRecord(lv)) return bad(`${what}[${i}] is not an object`);
    const price = decimalField(lv['price'], `${what}[${i}].price`);
    if (!price.ok) return price;
    const size = decimalField(lv['size'], `${what}[${i}].size`);
    if (!size.ok) return size;
    out.push({ price: price.value, size: size.value });
  }
  return ok(out);
}

function side(v: unknown, what: string): Parsed<'BUY' | 'SELL'> {
  const s = typeof v === 'string' ? v.toUpperCase() : v;
  if (s === 'BUY' || s === 'SELL') return ok(s);
  return bad(`${what} is ${v === undefined ? 'missing' : `not BUY or SELL: ${excerpt(String(v))}`}`);
}

function change(v: unknown, what: string): Parsed<PriceChange> {
  if (!isRecord(v)) return bad(`${what} is not an object`);
  const price = decimalField(v['price'], `${what}.price`);
  if (!price.ok) return price;
  const sd = side(v['side'], `${what}.side`);
  if (!sd.ok) return sd;
  const size = decimalField(v['size'], `${what}.size`);
  if (!size.ok) return size;
  return ok({ price: price.value, side: sd.value, size: size.value });
}

/** The event's fields other than `mapped`, in the venue's key order. */
function extraOf(ev: Record<string, unknown>, mapped: readonly string[]): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(ev)) if (!mapped.includes(k)) extra[k] = v;
  return extra;
}

function withExtra(event: ExchangeAEvent, extra: Record<string, unknown>): ExchangeAEvent {
  return Object.keys(extra).length > 0 ? { ...event, extra } : event;
}

function book(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const asset = requiredAsset(ev['asset_id']);
  if (!asset.ok) return asset;
  const hash = venueHash(ev['hash'], 'hash');
  if (!hash.ok) return hash;
  // Early captures name the sides buys/sells; read them as bids/asks.
  const bidKey = ev['bids'] === undefined && ev['buys'] !== undefined ? 'buys' : 'bids';
  const askKey = ev['asks'] === undefined && ev['sells'] !== undefined ? 'sells' : 'asks';
  const bids = levels(ev[bidKey], bidKey);
  if (!bids.ok) return bids;
  const asks = levels(ev[askKey], askKey);
  if (!asks.ok) return asks;
  const extra = extraOf(ev, ['event_type', 'market', 'asset_id', 'timestamp', 'hash', bidKey, askKey]);
  return ok([
    withExtra(
      {
        market: base.market,
        asset_id: asset.value,
        timestamp: base.timestamp,
        hash: hash.value ?? contentHash(ev),
        event_type: 'book',
        bids: bids.value,
        asks: asks.value,
      },
      extra,
    ),
  ]);
}

/** `price_change` before 2025-09-15: one asset, its `changes`. */
function priceChangeOld(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const asset = requiredAsset(ev['asset_id']);
  if (!asset.ok) return asset;
  const hash = venueHash(ev['hash'], 'hash');
  if (!hash.ok) return hash;
  const raw = ev['changes'];
  if (!Array.isArray(raw)) {
    return bad(raw === undefined ? 'neither price_changes nor changes present' : 'changes is not an array');
  }
  const changes: PriceChange[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = change(raw[i], `changes[${i}]`);
    if (!c.ok) return c;
    changes.push(c.value);
  }
  const extra = extraOf(ev, ['event_type', 'market', 'asset_id', 'timestamp', 'hash', 'changes']);
  return ok([
    withExtra(
      {
        market: base.market,
        asset_id: asset.value,
        timestamp: base.timestamp,
        hash: hash.value ?? contentHash(ev),
        event_type: 'price_change',
        changes,
      },
      extra,
    ),
  ]);
}

interface AssetGroup {
  changes: PriceChange[];
  hashes: string[];
  firstHash: string | undefined;
  last: Record<string, unknown>;
}

/**
 * `price_change` since 2025-09-15: entries of several assets. One record per asset, in the
 * order the assets first appear; the record's hash is the asset's first entry hash, its
 * best_bid/best_ask the asset's last entry's (the venue's top after all of them).
 */
function priceChangeList(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const raw = ev['price_changes'];
  if (!Array.isArray(raw)) return bad('price_changes is not an array');
  const groups = new Map<string, AssetGroup>();
  for (let i = 0; i < raw.length; i++) {
    const entry: unknown = raw[i];
    const where = `price_changes[${i}]`;
    if (!isRecord(entry)) return bad(`${where} is not an object`);
    const asset = requiredAsset(entry['asset_id'], `${where}.asset_id`);
    if (!asset.ok) return asset;
    const c = change(entry, where);
    if (!c.ok) return c;
    const hash = venueHash(entry['hash'], `${where}.hash`);
    if (!hash.ok) return hash;
    let g = groups.get(asset.value);
    if (!g) {
      g = { changes: [], hashes: [], firstHash: hash.value, last: entry };
      groups.set(asset.value, g);
    }
    g.changes.push(c.value);
    if (hash.value !== undefined) g.hashes.push(hash.value);
    g.last = entry;
  }

  const shared = extraOf(ev, ['event_type', 'market', 'timestamp', 'price_changes']);
  const records: ExchangeAEvent[] = [];
  for (const [assetId, g] of groups) {
    const extra: Record<string, unknown> = { ...shared };
    if (g.last['best_bid'] !== undefined) extra['best_bid'] = g.last['best_bid'];
    if (g.last['best_ask'] !== undefined) extra['best_ask'] = g.last['best_ask'];
    // Every entry hash of the asset, when it had several: the record's hash is only the first.
    if (g.hashes.length > 1) extra['entry_hashes'] = g.hashes;
    records.push(
      withExtra(
        {
          market: base.market,
          asset_id: assetId,
          timestamp: base.timestamp,
          hash: g.firstHash ?? contentHash({ asset_id: assetId, event: ev }),
          event_type: 'price_change',
          changes: g.changes,
        },
        extra,
      ),
    );
  }
  return ok(records);
}

/**
 * Every other event type (tick_size_change, last_trade_price, best_bid_ask, new_market,
 * market_resolved, and types yet unknown): stored as it came. `hash` is the venue's hash,
 * else `transaction_hash` (kept in `extra` too, which tells the sequencer that it is not
 * an event identity), else the content hash of the event.
 */
function other(type: string, ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const a = ev['asset_id'];
  if (a !== undefined && a !== null && typeof a !== 'string') return bad(`asset_id is a ${kindOf(a)}, not a string`);
  const hash = venueHash(ev['hash'], 'hash');
  if (!hash.ok) return hash;
  const tx = venueHash(ev['transaction_hash'], 'transaction_hash');
  if (!tx.ok) return tx;
  const extra = extraOf(ev, ['event_type', 'market', 'asset_id', 'timestamp', 'hash']);
  return ok([
    withExtra(
      {
        market: base.market,
        asset_id: typeof a === 'string' ? a : '',
        timestamp: base.timestamp,
        hash: hash.value ?? tx.value ?? contentHash(ev),
        event_type: type,
      },
      extra,
    ),
  ]);
}
