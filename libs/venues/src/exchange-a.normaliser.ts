import {
  MAX_EVENT_DATE,
  MAX_EVENT_MS,
  normaliseConditionId,
  type ExchangeAEvent,
  type PriceChange,
  type PriceLevel,
} from '@booktape/domain';
import { venueDecimal } from '@booktape/decimal';
import { contentHash } from './content-hash.ts';
import { ScannedFrame } from './capture-scan.ts';
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
 * Decisions (see docs/rules/venue-frames.md for the shapes):
 * - Levels keep the venue's order (bids ascending, asks descending, best last). Nothing
 *   downstream may rely on it; keeping it makes the stored record the frame as sent.
 * - Prices and sizes keep the venue's text ("0.50" stays "0.50"; a JSON number becomes its
 *   shortest decimal text; see venueDecimal). They are validated all the same: a level or
 *   change whose price or size is missing, null, negative or not a decimal makes the whole
 *   frame invalid.
 * - `price_change` comes in three shapes: the list (`price_changes`, since 2025-09-15, one
 *   record per asset), the per-asset `changes` (before), and the flat one-level event of
 *   2024 (`price`/`side`/`size` at the top). List entries and the flat event keep their own
 *   `hash` / `best_bid` / `best_ask` on the change: the venue's claim of the top of book
 *   after that entry, which the rollup checks against the rebuilt book.
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
  // A line of a hot shape, matched by the capture reader: its records are made already, as
  // below from the parsed frame (capture-scan.ts); anything else it carries is parsed here.
  if (frame instanceof ScannedFrame) {
    if (frame.records !== null) return { kind: 'records', records: frame.records };
    frame = frame.value();
  }
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
    if (ev['price_changes'] !== undefined) return priceChangeList(ev, base);
    if (ev['changes'] === undefined && ev['price'] !== undefined) return priceChangeFlat(ev, base);
    return priceChangeOld(ev, base);
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
  if (ms > MAX_EVENT_MS) return bad(`timestamp ${String(raw)} is after ${MAX_EVENT_DATE}, the last date the store holds`);
  // The venue's digits are String(ms) already unless they start with a zero (the range
  // keeps ms below 2^53): no number is written out again for nearly every event.
  return ok(typeof raw === 'string' && raw[0] !== '0' ? raw : String(ms));
}

/** The asset id where the event type needs one. */
function requiredAsset(v: unknown): Parsed<string> {
  if (v === undefined || v === null || v === '') return bad('asset_id missing');
  if (typeof v !== 'string') return bad(`asset_id is a ${kindOf(v)}, not a string`);
  return ok(v);
}

/** A venue hash: a non-empty string, or undefined when absent. */
function venueHash(v: unknown, field: string): Parsed<string | undefined> {
  if (v === undefined || v === null || v === '') return ok(undefined);
  if (typeof v !== 'string') return bad(`${field} is a ${kindOf(v)}, not a string`);
  return ok(v);
}

/** A non-negative decimal, validated, as the venue wrote it (see venueDecimal). */
function decimalField(v: unknown, what: string): Parsed<string> {
  if (v === undefined || v === null) return bad(`${what} is ${v === null ? 'null' : 'missing'}`);
  const d = venueDecimal(v);
  if (!d.ok) return bad(`${what}: ${d.reason}`);
  if (d.canonical.startsWith('-')) return bad(`${what} is negative: ${d.canonical}`);
  return ok(d.value);
}

/** An optional claim (best_bid / best_ask): absent when missing, null or "". */
function optionalDecimal(v: unknown, what: string): Parsed<string | undefined> {
  if (v === undefined || v === null || v === '') return ok(undefined);
  return decimalField(v, what);
}

/**
 * The checks of a level or change name their field alone ("price is null"); the caller puts
 * where it is in front only when one fails, rather than a name being written out for every
 * field of every event.
 */
function levels(v: unknown, what: string): Parsed<PriceLevel[]> {
  if (!Array.isArray(v)) return bad(`${what} is ${v === undefined ? 'missing' : `a ${kindOf(v)}, not an array`}`);
  const out: PriceLevel[] = [];
  for (let i = 0; i < v.length; i++) {
    const lv: unknown = v[i];
    if (!isRecord(lv)) return bad(`${what}[${i}] is not an object`);
    const price = decimalField(lv['price'], 'price');
    if (!price.ok) return bad(`${what}[${i}].${price.reason}`);
    const size = decimalField(lv['size'], 'size');
    if (!size.ok) return bad(`${what}[${i}].${size.reason}`);
    out.push({ price: price.value, size: size.value });
  }
  return ok(out);
}

function side(v: unknown, what: string): Parsed<'BUY' | 'SELL'> {
  // The venue's own spelling, upper case, needs no copy.
  if (v === 'BUY' || v === 'SELL') return ok(v);
  const s = typeof v === 'string' ? v.toUpperCase() : v;
  if (s === 'BUY' || s === 'SELL') return ok(s);
  return bad(`${what} is ${v === undefined ? 'missing' : `not BUY or SELL: ${excerpt(String(v))}`}`);
}

/** A change; reasons name its fields alone (see levels). */
function change(v: Record<string, unknown>): Parsed<PriceChange> {
  const price = decimalField(v['price'], 'price');
  if (!price.ok) return price;
  const sd = side(v['side'], 'side');
  if (!sd.ok) return sd;
  const size = decimalField(v['size'], 'size');
  if (!size.ok) return size;
  return ok({ price: price.value, side: sd.value, size: size.value });
}

/**
 * A change with the venue's per-entry claims (hash, best_bid, best_ask), each kept only
 * when present, as received. `hashField` false for the flat shape, whose hash is the event's.
 * Reasons name its fields alone (see levels).
 */
function claimedChange(v: Record<string, unknown>, hashField: boolean): Parsed<PriceChange> {
  const c = change(v);
  if (!c.ok) return c;
  const out: PriceChange = c.value;
  if (hashField) {
    const hash = venueHash(v['hash'], 'hash');
    if (!hash.ok) return hash;
    if (hash.value !== undefined) out.hash = hash.value;
  }
  const bid = optionalDecimal(v['best_bid'], 'best_bid');
  if (!bid.ok) return bid;
  if (bid.value !== undefined) out.best_bid = bid.value;
  const ask = optionalDecimal(v['best_ask'], 'best_ask');
  if (!ask.ok) return ask;
  if (ask.value !== undefined) out.best_ask = ask.value;
  return ok(out);
}

/** The event's fields other than `mapped`, in the venue's key order. */
function extraOf(ev: Record<string, unknown>, mapped: readonly string[]): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  // for-in, not Object.entries (an array of pairs per event): events are JSON.parse's plain
  // objects, with no enumerable inherited keys, and for-in keeps the same key order.
  for (const k in ev) if (!mapped.includes(k)) extra[k] = ev[k];
  return extra;
}

function withExtra(event: ExchangeAEvent, extra: Record<string, unknown>): ExchangeAEvent {
  return Object.keys(extra).length > 0 ? { ...event, extra } : event;
}

/** The asset and hash of an event about one asset, checked before its body. */
interface AssetHead {
  asset: string;
  hash: string | undefined;
}

function assetHead(ev: Record<string, unknown>): Parsed<AssetHead> {
  const asset = requiredAsset(ev['asset_id']);
  if (!asset.ok) return asset;
  const hash = venueHash(ev['hash'], 'hash');
  if (!hash.ok) return hash;
  return ok({ asset: asset.value, hash: hash.value });
}

/**
 * The one record of an event about one asset: `body` after the common fields (key order is
 * the stored record's), and in `extra` every venue field but those and the `read` ones the
 * body came from.
 */
function assetRecord(
  ev: Record<string, unknown>,
  base: Base,
  head: AssetHead,
  body: Pick<ExchangeAEvent, 'event_type' | 'bids' | 'asks' | 'changes'>,
  read: readonly string[],
): Parsed<ExchangeAEvent[]> {
  const extra = extraOf(ev, ['event_type', 'market', 'asset_id', 'timestamp', 'hash', ...read]);
  return ok([
    withExtra(
      {
        market: base.market,
        asset_id: head.asset,
        timestamp: base.timestamp,
        hash: head.hash ?? contentHash(ev),
        ...body,
      },
      extra,
    ),
  ]);
}

function book(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const head = assetHead(ev);
  if (!head.ok) return head;
  // Early captures name the sides buys/sells; read them as bids/asks.
  const bidKey = ev['bids'] === undefined && ev['buys'] !== undefined ? 'buys' : 'bids';
  const askKey = ev['asks'] === undefined && ev['sells'] !== undefined ? 'sells' : 'asks';
  const bids = levels(ev[bidKey], bidKey);
  if (!bids.ok) return bids;
  const asks = levels(ev[askKey], askKey);
  if (!asks.ok) return asks;
  return assetRecord(ev, base, head.value, { event_type: 'book', bids: bids.value, asks: asks.value }, [bidKey, askKey]);
}

/** `price_change` before 2025-09-15: one asset, its `changes`. */
function priceChangeOld(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const head = assetHead(ev);
  if (!head.ok) return head;
  const raw = ev['changes'];
  if (!Array.isArray(raw)) {
    return bad(raw === undefined ? 'neither price_changes nor changes present' : 'changes is not an array');
  }
  const changes: PriceChange[] = [];
  for (let i = 0; i < raw.length; i++) {
    const entry: unknown = raw[i];
    if (!isRecord(entry)) return bad(`changes[${i}] is not an object`);
    const c = change(entry);
    if (!c.ok) return bad(`changes[${i}].${c.reason}`);
    changes.push(c.value);
  }
  return assetRecord(ev, base, head.value, { event_type: 'price_change', changes }, ['changes']);
}

/**
 * `price_change` of 2024: one level, flat, no list:
 * `{"event_type":"price_change","asset_id","market","price","side","size","hash","timestamp"}`.
 * A one-change record; a `best_bid` / `best_ask` it carries becomes the change's claim.
 */
function priceChangeFlat(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const head = assetHead(ev);
  if (!head.ok) return head;
  const c = claimedChange(ev, false);
  if (!c.ok) return c;
  const read = ['price', 'side', 'size', 'best_bid', 'best_ask'];
  return assetRecord(ev, base, head.value, { event_type: 'price_change', changes: [c.value] }, read);
}

interface AssetGroup {
  changes: PriceChange[];
  firstHash: string | undefined;
}

/**
 * `price_change` since 2025-09-15: entries of several assets. One record per asset, in the
 * order the assets first appear, its changes in entry order, each with its own hash and
 * best_bid/best_ask claim; the record's hash is the asset's first entry hash.
 */
function priceChangeList(ev: Record<string, unknown>, base: Base): Parsed<ExchangeAEvent[]> {
  const raw = ev['price_changes'];
  if (!Array.isArray(raw)) return bad('price_changes is not an array');
  const groups = new Map<string, AssetGroup>();
  for (let i = 0; i < raw.length; i++) {
    const entry: unknown = raw[i];
    if (!isRecord(entry)) return bad(`price_changes[${i}] is not an object`);
    const asset = requiredAsset(entry['asset_id']);
    if (!asset.ok) return bad(`price_changes[${i}].${asset.reason}`);
    const c = claimedChange(entry, true);
    if (!c.ok) return bad(`price_changes[${i}].${c.reason}`);
    let g = groups.get(asset.value);
    if (!g) {
      g = { changes: [], firstHash: c.value.hash };
      groups.set(asset.value, g);
    }
    g.changes.push(c.value);
  }

  const extra = extraOf(ev, ['event_type', 'market', 'timestamp', 'price_changes']);
  const records: ExchangeAEvent[] = [];
  for (const [assetId, g] of groups) {
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
        { ...extra },
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
