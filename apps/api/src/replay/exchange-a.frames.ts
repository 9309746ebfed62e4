import type { PriceChange, PriceLevel as Level } from '@booktape/domain';
import type { ReplayRecordA } from '@booktape/storage';
import { frameOfSeq } from '@booktape/venues';

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

export type Json = Record<string, unknown>;

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
export function isListShaped(r: Json): boolean {
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
export function listFrame(records: Json[]): Json {
  const first = records[0]!;
  const entries: Json[] = [];
  for (const r of records) {
    for (const c of r.changes as StoredChange[]) entries.push({ asset_id: r.asset_id, price: c.price, size: c.size, side: c.side, hash: c.hash, ...claims(c) });
  }
  return { event_type: 'price_change', market: first.market, timestamp: first.timestamp, price_changes: entries, ...extraOf(first) };
}

/** The records of one venue frame share the ingest sequence above its low 11 bits (the record-in-frame index). */
export function frameOf(seq: string): bigint {
  return frameOfSeq(BigInt(seq));
}

/** A frame: JSON text with its event time (ms), for pacing. */
export interface OutFrame {
  text: string;
  ts: number;
}

/**
 * The replay's frames, from the typed replay read (ReplayRepository.recordsA), the frames of
 * ExchangeAFrameEncoder (exchange-a.frames.test-support.ts, the rules above as plain objects)
 * and written as text directly: the same frames byte for byte (a property test compares the
 * two on records of every shape), without making each record's JSON in the engine, parsing
 * it here and stringifying the frame's object again, which was most of a fast replay's time.
 *
 * A record read from its typed columns with no venue extras (the usual case) is written with
 * string templates; any other (extras, or a residue: the record's own text) is made into the
 * stored record (`{...extra, ...record}`) and goes through venueEvent / listFrame.
 */
export class ExchangeAFrameWriter {
  private group: ReplayRecordA[] = [];
  private groupFrame = 0;
  private groupMarket = '';
  private groupTs = '';

  /** Appends to `out` the frames complete with this record (a list-shaped price_change waits for the rest of its frame). */
  push(rec: ReplayRecordA, out: OutFrame[]): void {
    const r = rec.record;
    if (isListShaped(r as unknown as Json)) {
      if (this.group.length > 0 && rec.frame === this.groupFrame && String(r.market) === this.groupMarket && String(r.timestamp) === this.groupTs && !this.group.some((g) => g.record.asset_id === r.asset_id)) {
        this.group.push(rec);
        return;
      }
      this.end(out);
      this.group.push(rec);
      this.groupFrame = rec.frame;
      this.groupMarket = String(r.market);
      this.groupTs = String(r.timestamp);
      return;
    }
    this.end(out);
    if (plain(rec)) out.push({ text: eventText(r), ts: rec.ts });
    else {
      const whole = stored(rec);
      out.push({ text: JSON.stringify(venueEvent(whole)), ts: Number(whole.timestamp) });
    }
  }

  /** Appends the frame held back, if any. */
  end(out: OutFrame[]): void {
    const g = this.group;
    if (g.length === 0) return;
    if (plain(g[0]!) && g.every((x) => !x.residue)) {
      const first = g[0]!.record;
      let entries = '';
      for (const x of g) {
        const a = id(x.record.asset_id);
        for (const c of x.record.changes!) entries += `${entries === '' ? '' : ','}{"asset_id":${a},"price":"${c.price}","size":"${c.size}","side":"${c.side}","hash":${str(c.hash!)}${claimsText(c)}}`;
      }
      out.push({ text: `{"event_type":"price_change","market":${id(first.market)},"timestamp":"${first.timestamp}","price_changes":[${entries}]}`, ts: g[0]!.ts });
    } else {
      const records = g.map(stored);
      out.push({ text: JSON.stringify(listFrame(records)), ts: Number(records[0]!.timestamp) });
    }
    this.group = [];
  }
}

/** A record read from its typed columns, with no venue extras: its frame is written from templates. */
const plain = (rec: ReplayRecordA): boolean => !rec.residue && rec.extra === '';

/** The stored record of a typed read's record, as the payload read parsed it. */
function stored(rec: ReplayRecordA): Json {
  const r = rec.record as unknown as Json;
  return rec.extra === '' ? r : { ...(JSON.parse(`{${rec.extra}}`) as Json), ...r };
}

/** Characters JSON.stringify escapes in a string. */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON: typed columns hold none that needs escaping (those rows keep a residue), but the writer does not rely on it. */
function str(s: string): string {
  return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** The last two ids quoted (ids): a replay's records repeat a few markets and assets. */
const quoted = { a: '', qa: '""', b: '', qb: '""' };

/** str() of a market or asset id, remembered for the next records. */
function id(s: string): string {
  if (s === quoted.a) return quoted.qa;
  if (s === quoted.b) return quoted.qb;
  const q = str(s);
  quoted.b = quoted.a;
  quoted.qb = quoted.qa;
  quoted.a = s;
  quoted.qa = q;
  return q;
}

/** A change's claims (best_bid, best_ask) as JSON members after a comma, where present. Decimal texts need no escaping. */
function claimsText(c: PriceChange): string {
  return `${c.best_bid === undefined ? '' : `,"best_bid":"${c.best_bid}"`}${c.best_ask === undefined ? '' : `,"best_ask":"${c.best_ask}"`}`;
}

function levelsText(levels: readonly Level[] | undefined): string {
  if (levels === undefined || levels.length === 0) return '';
  let t = `{"price":"${levels[0]!.price}","size":"${levels[0]!.size}"}`;
  for (let i = 1; i < levels.length; i++) t += `,{"price":"${levels[i]!.price}","size":"${levels[i]!.size}"}`;
  return t;
}

/** venueEvent's frame of a plain record (not list-shaped), as text. */
function eventText(r: ReplayRecordA['record']): string {
  const type = r.event_type;
  if (type === 'book') {
    return `{"event_type":"book","asset_id":${id(r.asset_id)},"market":${id(r.market)},"bids":[${levelsText(r.bids)}],"asks":[${levelsText(r.asks)}],"timestamp":"${r.timestamp}","hash":${str(r.hash)}}`;
  }
  if (type === 'price_change') {
    const changes = r.changes ?? [];
    const head = `{"event_type":"price_change","asset_id":${id(r.asset_id)},"market":${id(r.market)},`;
    const only = changes.length === 1 ? changes[0]! : undefined;
    if (only && only.hash === undefined && (only.best_bid !== undefined || only.best_ask !== undefined)) {
      return `${head}"price":"${only.price}","side":"${only.side}","size":"${only.size}"${claimsText(only)},"hash":${str(r.hash)},"timestamp":"${r.timestamp}"}`;
    }
    let list = '';
    for (let i = 0; i < changes.length; i++) {
      const c = changes[i]!;
      list += `${i === 0 ? '' : ','}{"price":"${c.price}","side":"${c.side}","size":"${c.size}"}`;
    }
    return `${head}"timestamp":"${r.timestamp}","hash":${str(r.hash)},"changes":[${list}]}`;
  }
  return `{"event_type":${str(type)},"market":${id(r.market)}${r.asset_id !== '' ? `,"asset_id":${id(r.asset_id)}` : ''},"timestamp":"${r.timestamp}","hash":${str(r.hash)}}`;
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
