import { isoMs, type ExchangeAMessage, type ExchangeBMessage, type PriceChange, type PriceLevel } from '@booktape/domain';
import type { RowBinaryWriter } from './row-binary.ts';

/**
 * The typed raw tables (migration 012): a stored record is its typed columns, and the
 * served record is rebuilt from them. This module turns a message into the row the sink
 * inserts, and holds the JavaScript twin of the served record's SQL (served-record-sql.ts; the rebuild
 * the engine runs on every read), so that the insert can check, record by record, that the
 * columns give back the record byte for byte.
 *
 * Lossless by construction: where the rebuild is not exact (a number spelled as the
 * format cannot spell it, a string that JSON must escape, an unusual key order, a shape
 * this codec does not know), the row keeps the record's JSON text in `residue`, which the
 * table serves instead; the typed columns still hold what could be read, for typed readers.
 * On venue traffic `residue` is empty (tests check every shape of docs/rules/venue-frames.md).
 *
 * Decimals are an Int64 mantissa and a UInt8 count of decimals: "0.50" is (50, 2), "-50.00"
 * is (-5000, 2), "30" is (30, 0). That keeps the venue's spelling (trailing zeros) exactly, at
 * the cost of one scale byte per value, which compresses to next to nothing (a column is
 * mostly one value). Scale 255 marks an absent value, 254 a JSON null (B's null payloads).
 */

export const SCALE_ABSENT = 255;

/** raw_exchange_a's record hash in SQL: its `hash` column is '' where it is the first change's. */
export const A_HASH_SQL = `if(hash = '' AND notEmpty(chg_hash), chg_hash[1], hash)`;
export const SCALE_NULL = 254;
/** 15 digits: every mantissa is a safe JavaScript integer, so JSON numbers carry it exactly. */
const MAX_DIGITS = 15;
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

export interface Scaled {
  m: number;
  s: number;
}

/** A decimal text as (mantissa, scale); null where the text is no plain decimal that fits. */
export function scaled(text: string): Scaled | null {
  const d = DECIMAL.exec(text);
  if (!d) return null;
  const digits = (d[2]! + (d[3] ?? '')).replace(/^0+(?=\d)/, '');
  if (digits.length > MAX_DIGITS) return null;
  const m = Number(digits);
  return { m: d[1] === '-' ? -m : m, s: d[3]?.length ?? 0 };
}

/** The twin of the SQL formatting of (m, s) in migration 012. */
export function formatScaled(m: number, s: number): string {
  if (s === 0) return String(m);
  const sign = m < 0 ? '-' : '';
  const a = Math.abs(m);
  const p = 10 ** s;
  return `${sign}${Math.floor(a / p)}.${String(a % p).padStart(s, '0')}`;
}

/** A decimal field's columns: a failed parse stores (0, 0), which cannot rebuild the text. */
function dec(text: string | null | undefined): Scaled {
  if (text === undefined) return { m: 0, s: SCALE_ABSENT };
  if (text === null) return { m: 0, s: SCALE_NULL };
  const v = scaled(text);
  return v !== null && v.s <= 18 ? v : { m: 0, s: 0 };
}

function decText(v: Scaled): string | null | undefined {
  if (v.s === SCALE_ABSENT) return undefined;
  if (v.s === SCALE_NULL) return null;
  return formatScaled(v.m, v.s);
}

/** A JSON string as the table builds it: quotes around the text, nothing escaped. */
function q(text: string): string {
  return `"${text}"`;
}

interface ScaledColumns {
  price: number[];
  price_scale: number[];
  size: number[];
  size_scale: number[];
}

function levelColumns(levels: readonly PriceLevel[] | readonly [string, string][] | null | undefined): ScaledColumns {
  const out: ScaledColumns = { price: [], price_scale: [], size: [], size_scale: [] };
  for (const lv of levels ?? []) {
    const [pt, st] = Array.isArray(lv) ? lv : [(lv as PriceLevel).price, (lv as PriceLevel).size];
    const p = dec(pt);
    const z = dec(st);
    out.price.push(p.m);
    out.price_scale.push(p.s);
    out.size.push(z.m);
    out.size_scale.push(z.s);
  }
  return out;
}

function zipLevels(c: ScaledColumns, each: (price: string, size: string) => string): string {
  return c.price.map((m, i) => each(formatScaled(m, c.price_scale[i]!), formatScaled(c.size[i]!, c.size_scale[i]!))).join(',');
}

/** Where a message sat in Kafka: part of the stored lineage. */
export interface KafkaPosition {
  partition: number;
  offset: string;
}

// ---------------------------------------------------------------- exchange A

/** The interface's 2.1 record: the event with venue extras flattened in, without lineage. */
export function exchangeAPayload(m: ExchangeAMessage): string {
  const { extra, ...event } = m.event;
  return JSON.stringify(extra ? { ...extra, ...event } : event);
}

/** The typed columns of an exchange A record (migration 012), lineage aside. */
export interface TypedA {
  market: string;
  event_ts: number;
  asset_id: string;
  event_type: string;
  /** The venue's hash; '' where it is the first change's hash (the newer list shape), stored once. */
  hash: string;
  /** The venue fields 2.1 does not name, as JSON members without braces; '' when none. */
  extra: string;
  bid: ScaledColumns;
  ask: ScaledColumns;
  chg_price: number[];
  chg_price_scale: number[];
  /** 'BUY', 'SELL', or '' for any other side (the record then keeps a residue). */
  chg_side: string[];
  chg_size: number[];
  chg_size_scale: number[];
  chg_hash: string[];
  chg_best_bid: number[];
  chg_best_bid_scale: number[];
  chg_best_ask: number[];
  chg_best_ask_scale: number[];
}

export function typedA(m: ExchangeAMessage): TypedA {
  const e = m.event;
  const t: TypedA = {
    market: e.market,
    event_ts: Number(e.timestamp),
    asset_id: e.asset_id,
    event_type: e.event_type,
    hash: e.hash,
    extra: e.extra && Object.keys(e.extra).length > 0 ? JSON.stringify(e.extra).slice(1, -1) : '',
    bid: levelColumns(e.bids),
    ask: levelColumns(e.asks),
    chg_price: [],
    chg_price_scale: [],
    chg_side: [],
    chg_size: [],
    chg_size_scale: [],
    chg_hash: [],
    chg_best_bid: [],
    chg_best_bid_scale: [],
    chg_best_ask: [],
    chg_best_ask_scale: [],
  };
  for (const c of e.changes ?? []) pushChange(t, c);
  // A record of the price_changes list takes its hash from its first entry: stored once.
  if (t.chg_hash.length > 0 && t.chg_hash[0] !== '' && t.hash === t.chg_hash[0]) t.hash = '';
  return t;
}

/** The record's hash from the typed columns: '' means the first change's (typedA). */
function hashOf(t: TypedA): string {
  return t.hash === '' && t.chg_hash.length > 0 ? t.chg_hash[0]! : t.hash;
}

function pushChange(t: TypedA, c: PriceChange): void {
  const p = dec(c.price);
  const z = dec(c.size);
  const bb = dec(c.best_bid);
  const ba = dec(c.best_ask);
  t.chg_price.push(p.m);
  t.chg_price_scale.push(p.s);
  // The column is an enum: another side (a record stored as it came) is '' there, and the
  // record's own text goes to the residue.
  t.chg_side.push(c.side === 'BUY' || c.side === 'SELL' ? c.side : '');
  t.chg_size.push(z.m);
  t.chg_size_scale.push(z.s);
  t.chg_hash.push(c.hash ?? '');
  t.chg_best_bid.push(bb.m);
  t.chg_best_bid_scale.push(bb.s);
  t.chg_best_ask.push(ba.m);
  t.chg_best_ask_scale.push(ba.s);
}

/** The twin of raw_exchange_a's served record SQL (served-record-sql.ts) for a row without residue. */
export function rebuildA(t: TypedA): string {
  let body = '';
  if (t.event_type === 'book') {
    const level = (price: string, size: string) => `{"price":${q(price)},"size":${q(size)}}`;
    body = `,"bids":[${zipLevels(t.bid, level)}],"asks":[${zipLevels(t.ask, level)}]`;
  } else if (t.event_type === 'price_change') {
    const changes = t.chg_price.map((pm, i) => {
      const bb = decText({ m: t.chg_best_bid[i]!, s: t.chg_best_bid_scale[i]! });
      const ba = decText({ m: t.chg_best_ask[i]!, s: t.chg_best_ask_scale[i]! });
      const h = t.chg_hash[i]!;
      return (
        `{"price":${q(formatScaled(pm, t.chg_price_scale[i]!))},"side":${q(t.chg_side[i]!)},"size":${q(formatScaled(t.chg_size[i]!, t.chg_size_scale[i]!))}` +
        `${h === '' ? '' : `,"hash":${q(h)}`}${typeof bb === 'string' ? `,"best_bid":${q(bb)}` : ''}${typeof ba === 'string' ? `,"best_ask":${q(ba)}` : ''}}`
      );
    });
    body = `,"changes":[${changes.join(',')}]`;
  }
  return (
    `{${t.extra === '' ? '' : `${t.extra},`}"market":${q(t.market)},"asset_id":${q(t.asset_id)},"timestamp":${q(String(t.event_ts))}` +
    `,"hash":${q(hashOf(t))},"event_type":${q(t.event_type)}${body}}`
  );
}

/** '' when the typed columns give the record back byte for byte, else the record's JSON text. */
export function residueA(m: ExchangeAMessage, t: TypedA = typedA(m)): string {
  const payload = exchangeAPayload(m);
  return rebuildA(t) === payload ? '' : payload;
}

/** raw_exchange_a's columns as the sink writes them (RowBinary), in order. */
export const A_BINARY_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['market', 'String'], ['event_date', 'Date'], ['event_ts', "DateTime64(3, 'UTC')"], ['asset_id', 'String'],
  ['event_type', 'String'], ['dedup_id', 'String'], ['ingest_seq', 'UInt64'], ['hash', 'String'], ['extra', 'String'],
  ['bid_price', 'Array(Int64)'], ['bid_price_scale', 'Array(UInt8)'], ['bid_size', 'Array(Int64)'], ['bid_size_scale', 'Array(UInt8)'],
  ['ask_price', 'Array(Int64)'], ['ask_price_scale', 'Array(UInt8)'], ['ask_size', 'Array(Int64)'], ['ask_size_scale', 'Array(UInt8)'],
  ['chg_price', 'Array(Int64)'], ['chg_price_scale', 'Array(UInt8)'], ['chg_side', "Array(Enum8('' = 0, 'BUY' = 1, 'SELL' = 2))"],
  ['chg_size', 'Array(Int64)'], ['chg_size_scale', 'Array(UInt8)'], ['chg_hash', 'Array(String)'],
  ['chg_best_bid', 'Array(Int64)'], ['chg_best_bid_scale', 'Array(UInt8)'], ['chg_best_ask', 'Array(Int64)'], ['chg_best_ask_scale', 'Array(UInt8)'],
  ['residue', 'String'], ['received_at', "DateTime64(3, 'UTC')"], ['worker_id', 'UInt32'], ['kafka_partition', 'Int32'], ['kafka_offset', 'Int64'],
];

/**
 * Writes one exchange A row the general way: the typed columns as arrays, and the residue
 * decided by rebuilding the record's text from them and comparing it with its JSON text.
 * Every record can take this way; writeA takes it for those its quick check does not vouch for.
 */
export function writeARebuilt(w: RowBinaryWriter, m: ExchangeAMessage, pos: KafkaPosition): void {
  const t = typedA(m);
  const lineage = checkedLineage(m, pos);
  const ts = checkedTime('timestamp', t.event_ts);
  w.string(text('market', t.market));
  w.u16(days(ts));
  w.i64(ts);
  w.string(text('asset_id', t.asset_id));
  w.string(text('event_type', t.event_type));
  w.string(lineage.dedup_id);
  inRange('ingest_seq', () => w.u64Text(lineage.ingest_seq));
  w.string(text('hash', t.hash));
  w.string(t.extra);
  for (const c of [t.bid, t.ask]) {
    w.i64Array(c.price);
    w.u8Array(c.price_scale);
    w.i64Array(c.size);
    w.u8Array(c.size_scale);
  }
  w.i64Array(t.chg_price);
  w.u8Array(t.chg_price_scale);
  w.arrayLength(t.chg_side.length);
  for (const sd of t.chg_side) w.u8(sd === 'SELL' ? 2 : sd === 'BUY' ? 1 : 0);
  w.i64Array(t.chg_size);
  w.u8Array(t.chg_size_scale);
  w.stringArray(t.chg_hash.map((h) => text('changes.hash', h)));
  w.i64Array(t.chg_best_bid);
  w.u8Array(t.chg_best_bid_scale);
  w.i64Array(t.chg_best_ask);
  w.u8Array(t.chg_best_ask_scale);
  w.string(residueA(m, t));
  writeLineage(w, lineage);
}

/**
 * Writes one exchange A row (A_BINARY_COLUMNS); throws RowRefusal for a value no column holds.
 *
 * The same bytes as writeARebuilt, quicker for the records venues send: one pass over the
 * record checks, field by field, what makes the table's rebuild give back its JSON text
 * byte for byte (its keys in the order the rebuild writes them, strings JSON writes as they
 * are, decimals spelled the way the columns spell them back), parsing its decimals into
 * reused scratch columns on the way. Such a record has no residue, and neither text is
 * built. Any other record (an unusual spelling, key order or shape) goes the general way,
 * which decides its residue by comparing the texts.
 */
export function writeA(w: RowBinaryWriter, m: ExchangeAMessage, pos: KafkaPosition): void {
  const e = m.event;
  if (!plainA(e)) return writeARebuilt(w, m, pos);
  const lineage = checkedLineage(m, pos);
  const ts = checkedTime('timestamp', Number(e.timestamp));
  w.string(e.market);
  w.u16(days(ts));
  w.i64(ts);
  w.string(e.asset_id);
  w.string(e.event_type);
  w.string(lineage.dedup_id);
  inRange('ingest_seq', () => w.u64Text(lineage.ingest_seq));
  const changes = e.changes;
  const nc = changes === undefined ? 0 : changes.length;
  w.string(nc > 0 && e.hash === changes![0]!.hash ? '' : e.hash);
  w.string(plainExtra);
  const nb = e.bids === undefined ? 0 : e.bids.length;
  const na = e.asks === undefined ? 0 : e.asks.length;
  for (const [start, n] of [[0, nb], [2 * nb, na]] as const) {
    w.i64Strided(scratchM, start, n, 2);
    w.u8Strided(scratchS, start, n, 2);
    w.i64Strided(scratchM, start + 1, n, 2);
    w.u8Strided(scratchS, start + 1, n, 2);
  }
  const c0 = 2 * (nb + na);
  w.i64Strided(scratchM, c0, nc, 4);
  w.u8Strided(scratchS, c0, nc, 4);
  w.arrayLength(nc);
  for (let i = 0; i < nc; i++) w.u8(changes![i]!.side === 'SELL' ? 2 : 1);
  w.i64Strided(scratchM, c0 + 1, nc, 4);
  w.u8Strided(scratchS, c0 + 1, nc, 4);
  w.arrayLength(nc);
  for (let i = 0; i < nc; i++) w.string(changes![i]!.hash ?? '');
  w.i64Strided(scratchM, c0 + 2, nc, 4);
  w.u8Strided(scratchS, c0 + 2, nc, 4);
  w.i64Strided(scratchM, c0 + 3, nc, 4);
  w.u8Strided(scratchS, c0 + 3, nc, 4);
  w.string('');
  writeLineage(w, lineage);
}

/**
 * Scratch columns of the record being written: its decimals as (mantissa, scale), bids then
 * asks (price, size per level), then changes (price, size, best_bid, best_ask per change).
 */
let scratchM = new Float64Array(256);
let scratchS = new Uint8Array(256);

/** Room for `n` slots, keeping what the slots hold (a record's sides are parsed one after the other). */
function scratchRoom(n: number): void {
  if (n <= scratchM.length) return;
  let size = scratchM.length * 2;
  while (size < n) size *= 2;
  const m = new Float64Array(size);
  const sc = new Uint8Array(size);
  m.set(scratchM);
  sc.set(scratchS);
  scratchM = m;
  scratchS = sc;
}

/**
 * A decimal text the columns spell back exactly (an optional minus, an integer part without
 * leading zeros, optional decimals, at most 15 digits and 18 decimals, not a negative zero),
 * parsed into scratch slot `i`: the (mantissa, scale) `dec` gives it. False for anything
 * else, which then takes the general way.
 */
function plainDecimal(text: unknown, i: number): boolean {
  if (typeof text !== 'string') return false;
  const n = text.length;
  let k = 0;
  let neg = false;
  if (n > 0 && text.charCodeAt(0) === 45) {
    neg = true;
    k = 1;
  }
  if (k >= n) return false;
  let c = text.charCodeAt(k);
  let m = 0;
  if (c === 48) k += 1;
  else {
    if (c < 49 || c > 57) return false;
    for (; k < n; k++) {
      c = text.charCodeAt(k);
      if (c === 46) break;
      if (c < 48 || c > 57) return false;
      m = m * 10 + (c - 48);
    }
    if (m >= 1e15) return false;
  }
  let s = 0;
  if (k < n) {
    if (text.charCodeAt(k) !== 46 || k + 1 === n) return false;
    for (k += 1; k < n; k++) {
      c = text.charCodeAt(k);
      if (c < 48 || c > 57) return false;
      m = m * 10 + (c - 48);
      s += 1;
    }
    if (m >= 1e15 || s > 18) return false;
  }
  if (neg && m === 0) return false;
  scratchM[i] = neg ? -m : m;
  scratchS[i] = s;
  return true;
}

/** A string JSON.stringify writes as it is (nothing escaped), as the table's rebuild writes it. */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;
const plainText = (v: unknown): boolean => typeof v === 'string' && !ESCAPED.test(v);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
const isPlainArray = (v: unknown): v is unknown[] => Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype;

/** The record's own keys, in the order the rebuild writes them (extra aside). */
const A_HEAD = ['market', 'asset_id', 'timestamp', 'hash', 'event_type'];
const A_BOOK = [...A_HEAD, 'bids', 'asks'];
const A_CHANGE = [...A_HEAD, 'changes'];
const A_KEYS = new Set([...A_HEAD, 'bids', 'asks', 'changes']);
const CHANGE_KEYS = ['price', 'side', 'size', 'hash', 'best_bid', 'best_ask'];

/** The `extra` column of the record plainA last vouched for. */
let plainExtra = '';

/**
 * Whether the record's typed columns give back its JSON text byte for byte, checked on the
 * record's own fields (never false for such a record of venue traffic; false is always safe:
 * the caller then compares the texts). On true, the decimals are in the scratch columns and
 * the extra column in plainExtra.
 */
export function plainA(e: ExchangeAMessage['event']): boolean {
  if (!isPlainObject(e)) return false;
  const type = e.event_type;
  const keys = type === 'book' ? A_BOOK : type === 'price_change' ? A_CHANGE : A_HEAD;
  let i = 0;
  for (const k in e) {
    if (k === 'extra') continue;
    if (k !== keys[i]) return false;
    i += 1;
  }
  if (i !== keys.length) return false;
  if (!plainText(e.market) || !plainText(e.asset_id) || !plainText(e.hash) || !plainText(type)) return false;
  const stamp = e.timestamp;
  if (typeof stamp !== 'string' || String(Number(stamp)) !== stamp) return false;
  const extra = e.extra as unknown;
  if (extra === undefined) plainExtra = '';
  else {
    if (!isPlainObject(extra)) return false;
    let n = 0;
    for (const k in extra) {
      if (A_KEYS.has(k)) return false;
      n += 1;
    }
    plainExtra = n > 0 ? JSON.stringify(extra).slice(1, -1) : '';
  }
  const bids = e.bids as unknown;
  const asks = e.asks as unknown;
  const changes = e.changes as unknown;
  // The key check let only this type's lists in; each must be a list (a key whose value is
  // undefined is left out of the JSON text, but the rebuild writes an empty list).
  const nb = type !== 'book' ? 0 : isPlainArray(bids) ? bids.length : -1;
  const na = type !== 'book' ? 0 : isPlainArray(asks) ? asks.length : -1;
  const nc = type !== 'price_change' ? 0 : isPlainArray(changes) ? changes.length : -1;
  if (nb < 0 || na < 0 || nc < 0) return false;
  scratchRoom(2 * (nb + na) + 4 * nc);
  for (let j = 0; j < nb; j++) if (!plainLevel((bids as unknown[])[j], 2 * j)) return false;
  for (let j = 0; j < na; j++) if (!plainLevel((asks as unknown[])[j], 2 * (nb + j))) return false;
  const c0 = 2 * (nb + na);
  for (let j = 0; j < nc; j++) if (!plainChange((changes as unknown[])[j], c0 + 4 * j)) return false;
  // The hash column is '' where the record's hash is its first change's: an empty record
  // hash with a first change's hash would come back as that hash.
  if (e.hash === '' && nc > 0 && (changes as PriceChange[])[0]!.hash !== undefined) return false;
  return true;
}

function plainLevel(lv: unknown, i: number): boolean {
  if (!isPlainObject(lv)) return false;
  let n = 0;
  for (const k in lv) {
    if (k !== (n === 0 ? 'price' : n === 1 ? 'size' : '')) return false;
    n += 1;
  }
  return n === 2 && plainDecimal(lv.price, i) && plainDecimal(lv.size, i + 1);
}

function plainChange(c: unknown, i: number): boolean {
  if (!isPlainObject(c)) return false;
  // price, side, size, then any of hash, best_bid, best_ask in that order.
  let at = 0;
  for (const k in c) {
    while (at < CHANGE_KEYS.length && CHANGE_KEYS[at] !== k) {
      if (at < 3) return false;
      at += 1;
    }
    if (at === CHANGE_KEYS.length) return false;
    at += 1;
  }
  if (at < 3) return false;
  const side = c.side;
  if (side !== 'BUY' && side !== 'SELL') return false;
  if (!plainDecimal(c.price, i) || !plainDecimal(c.size, i + 1)) return false;
  const h = c.hash;
  if (h !== undefined && (h === '' || !plainText(h))) return false;
  if ('hash' in c && h === undefined) return false;
  for (const [f, slot] of [['best_bid', i + 2], ['best_ask', i + 3]] as const) {
    const v = c[f];
    if (v === undefined) {
      if (f in c) return false;
      scratchM[slot] = 0;
      scratchS[slot] = SCALE_ABSENT;
    } else if (!plainDecimal(v, slot)) return false;
  }
  return true;
}

// ---------------------------------------------------------------- exchange B

/** The interface's 2.2 record, without lineage. */
export function exchangeBPayload(m: ExchangeBMessage): string {
  return JSON.stringify(m.record);
}

export interface TypedB {
  ticker: string;
  event_ts: number;
  record_type: string;
  sid: number | null;
  seq: number | null;
  /** 1 where the snapshot side was a JSON null (the book is unknown). */
  yes_null: number;
  yes: ScaledColumns;
  no_null: number;
  no: ScaledColumns;
  side: string;
  price: Scaled;
  delta: Scaled;
  venue_ts: number | null;
  market_id: string | null;
  expected_seq: number | null;
  /** A ticker / trade record's venue `msg`, as JSON text; '' otherwise. */
  data: string;
}

export function typedB(m: ExchangeBMessage): TypedB {
  const r = m.record;
  const vts = r.venue_ts === undefined || r.venue_ts === null ? null : Date.parse(r.venue_ts);
  return {
    ticker: r.ticker,
    event_ts: r.epoch_ms,
    record_type: r.type,
    sid: r.sid,
    seq: r.seq,
    yes_null: r.yes === null ? 1 : 0,
    yes: levelColumns(r.yes),
    no_null: r.no === null ? 1 : 0,
    no: levelColumns(r.no),
    side: r.side ?? '',
    price: dec(r.price),
    delta: dec(r.delta),
    venue_ts: vts !== null && Number.isFinite(vts) ? vts : null,
    market_id: r.market_id ?? null,
    expected_seq: r.expected_seq ?? null,
    data: r.data === undefined ? '' : JSON.stringify(r.data),
  };
}

function nullable(v: string | null, quote: boolean): string {
  return v === null ? 'null' : quote ? q(v) : v;
}

/** The twin of raw_exchange_b's served record SQL (served-record-sql.ts) for a row without residue. */
export function rebuildB(t: TypedB): string {
  const side = (isNull: number, c: ScaledColumns) => (isNull ? 'null' : `[${zipLevels(c, (p, z) => `[${q(p)},${q(z)}]`)}]`);
  const vts = nullable(t.venue_ts === null ? null : isoMs(t.venue_ts), true);
  const mid = nullable(t.market_id, true);
  let body: string;
  if (t.record_type === 'snapshot') body = `,"yes":${side(t.yes_null, t.yes)},"no":${side(t.no_null, t.no)},"venue_ts":${vts},"market_id":${mid}`;
  else if (t.record_type === 'delta') {
    const p = decText(t.price);
    const d = decText(t.delta);
    body = `,"side":${q(t.side)},"price":${nullable(p ?? null, true)},"delta":${nullable(d ?? null, true)},"venue_ts":${vts},"market_id":${mid}`;
  } else if (t.record_type === 'gap') body = t.expected_seq === null ? '' : `,"expected_seq":${t.expected_seq}`;
  else body = `,"venue_ts":${vts},"data":${t.data}`;
  return (
    `{"type":${q(t.record_type)},"ticker":${q(t.ticker)},"timestamp":${q(isoMs(t.event_ts))},"epoch_ms":${t.event_ts}` +
    `,"sid":${nullable(t.sid === null ? null : String(t.sid), false)},"seq":${nullable(t.seq === null ? null : String(t.seq), false)}${body}}`
  );
}

/** '' when the typed columns give the record back byte for byte, else the record's JSON text. */
export function residueB(m: ExchangeBMessage, t: TypedB = typedB(m)): string {
  const payload = exchangeBPayload(m);
  return rebuildB(t) === payload ? '' : payload;
}

/** raw_exchange_b's columns as the sink writes them (RowBinary), in order. */
export const B_BINARY_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['ticker', 'String'], ['event_date', 'Date'], ['event_ts', "DateTime64(3, 'UTC')"], ['record_type', 'String'],
  ['dedup_id', 'String'], ['ingest_seq', 'UInt64'], ['sid', 'Nullable(Int64)'], ['seq', 'Nullable(Int64)'],
  ['yes_null', 'UInt8'], ['yes_price', 'Array(Int64)'], ['yes_price_scale', 'Array(UInt8)'], ['yes_size', 'Array(Int64)'], ['yes_size_scale', 'Array(UInt8)'],
  ['no_null', 'UInt8'], ['no_price', 'Array(Int64)'], ['no_price_scale', 'Array(UInt8)'], ['no_size', 'Array(Int64)'], ['no_size_scale', 'Array(UInt8)'],
  ['side', 'String'], ['price', 'Int64'], ['price_scale', 'UInt8'], ['delta', 'Int64'], ['delta_scale', 'UInt8'],
  ['venue_ts', "Nullable(DateTime64(3, 'UTC'))"], ['market_id', 'Nullable(String)'], ['expected_seq', 'Nullable(Int64)'], ['data', 'String'],
  ['residue', 'String'], ['received_at', "DateTime64(3, 'UTC')"], ['worker_id', 'UInt32'], ['kafka_partition', 'Int32'], ['kafka_offset', 'Int64'],
];

/** Writes one exchange B row the general way (writeARebuilt's twin). */
export function writeBRebuilt(w: RowBinaryWriter, m: ExchangeBMessage, pos: KafkaPosition): void {
  const t = typedB(m);
  const lineage = checkedLineage(m, pos);
  const ts = checkedTime('epoch_ms', t.event_ts);
  w.string(text('ticker', t.ticker));
  w.u16(days(ts));
  w.i64(ts);
  w.string(text('type', t.record_type));
  w.string(lineage.dedup_id);
  inRange('ingest_seq', () => w.u64Text(lineage.ingest_seq));
  w.nullableI64(int64OrNull('sid', t.sid));
  w.nullableI64(int64OrNull('seq', t.seq));
  for (const [isNull, c] of [[t.yes_null, t.yes], [t.no_null, t.no]] as const) {
    w.u8(isNull);
    w.i64Array(c.price);
    w.u8Array(c.price_scale);
    w.i64Array(c.size);
    w.u8Array(c.size_scale);
  }
  w.string(text('side', t.side));
  w.i64(t.price.m);
  w.u8(t.price.s);
  w.i64(t.delta.m);
  w.u8(t.delta.s);
  w.nullableI64(t.venue_ts === null ? null : checkedTime('venue_ts', t.venue_ts));
  w.nullableString(t.market_id === null ? null : text('market_id', t.market_id));
  w.nullableI64(int64OrNull('expected_seq', t.expected_seq));
  w.string(t.data);
  w.string(residueB(m, t));
  writeLineage(w, lineage);
}

// ---------------------------------------------------------------- values checked on the way in

/**
 * A value no column can hold: the same refusal the engine gives a text row it cannot parse
 * (insert-refusal.ts), so the sink sets the record aside as bad data instead of retrying it.
 */
export class RowRefusal extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = 'RowRefusal';
  }
}

function refuse(type: string, message: string): never {
  throw new RowRefusal(type, message);
}

const UINT64 = /^(0|[1-9]\d{0,19})$/;
const INT64 = /^-?(0|[1-9]\d{0,18})$/;
const MAX_DATE_MS = 65_535 * 86_400_000;

function text(field: string, v: unknown): string {
  return typeof v === 'string' ? v : refuse('CANNOT_PARSE_INPUT_ASSERTION_FAILED', `${field} is not a string`);
}

function int64OrNull(field: string, v: unknown): number | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : refuse('CANNOT_PARSE_NUMBER', `${field}: ${String(v)} is not an integer the column holds`);
}

function checkedTime(field: string, ms: unknown): number {
  return typeof ms === 'number' && Number.isSafeInteger(ms) && ms >= 0 && ms < MAX_DATE_MS ? ms : refuse('CANNOT_PARSE_DATETIME', `${field}: ${String(ms)} is not a time the store holds`);
}

function days(ms: number): number {
  return Math.floor(ms / 86_400_000);
}

interface Lineage {
  dedup_id: string;
  ingest_seq: string;
  received_ms: number;
  worker_id: number;
  partition: number;
  offset: string;
}

function checkedLineage(m: ExchangeAMessage | ExchangeBMessage, pos: KafkaPosition): Lineage {
  const ingest = String(m.ingest_seq);
  if (!UINT64.test(ingest)) refuse('CANNOT_PARSE_NUMBER', `ingest_seq: ${ingest} is not a UInt64`);
  const offset = String(pos.offset);
  if (!INT64.test(offset)) refuse('CANNOT_PARSE_NUMBER', `kafka_offset: ${offset} is not an Int64`);
  const w = m.worker_id;
  if (typeof w !== 'number' || !Number.isInteger(w) || w < 0 || w > 0xffff_ffff) refuse('CANNOT_PARSE_NUMBER', `worker_id: ${String(w)} is not a UInt32`);
  const p = pos.partition;
  if (!Number.isInteger(p) || p < -(2 ** 31) || p >= 2 ** 31) refuse('CANNOT_PARSE_NUMBER', `kafka_partition: ${String(p)} is not an Int32`);
  return { dedup_id: text('dedup_id', m.dedup_id), ingest_seq: ingest, received_ms: checkedTime('received_at', receivedMs(m.received_at)), worker_id: w, partition: p, offset };
}

/** Date.parse of a receive time: the records of a frame, and often of frames, share theirs. */
let lastReceived: unknown;
let lastReceivedMs = Number.NaN;
function receivedMs(text: string): number {
  if (text !== lastReceived || typeof text !== 'string') {
    lastReceivedMs = Date.parse(text);
    lastReceived = text;
  }
  return lastReceivedMs;
}

function writeLineage(w: RowBinaryWriter, l: Lineage): void {
  w.i64(l.received_ms);
  w.u32(l.worker_id);
  w.i32(l.partition);
  // Kafka offsets are small: a safe integer goes without BigInt.
  const o = Number(l.offset);
  if (Number.isSafeInteger(o)) w.i64(o);
  else inRange('kafka_offset', () => w.i64Text(l.offset));
}

/** Runs a write whose value may not fit its column: a RangeError becomes a refusal. */
function inRange(field: string, write: () => void): void {
  try {
    write();
  } catch (e) {
    if (e instanceof RangeError) refuse('CANNOT_PARSE_NUMBER', `${field}: out of range`);
    throw e;
  }
}

/**
 * Writes one exchange B row (B_BINARY_COLUMNS); throws RowRefusal for a value no column holds.
 * The same bytes as writeBRebuilt, quicker for venue records: writeA's way.
 */
export function writeB(w: RowBinaryWriter, m: ExchangeBMessage, pos: KafkaPosition): void {
  const r = m.record;
  if (!plainB(r)) return writeBRebuilt(w, m, pos);
  const lineage = checkedLineage(m, pos);
  const ts = checkedTime('epoch_ms', r.epoch_ms);
  w.string(r.ticker);
  w.u16(days(ts));
  w.i64(ts);
  w.string(r.type);
  w.string(lineage.dedup_id);
  inRange('ingest_seq', () => w.u64Text(lineage.ingest_seq));
  w.nullableI64(r.sid);
  w.nullableI64(r.seq);
  const ny = r.yes === undefined || r.yes === null ? 0 : r.yes.length;
  const nn = r.no === undefined || r.no === null ? 0 : r.no.length;
  for (const [isNull, start, n] of [[r.yes === null ? 1 : 0, 0, ny], [r.no === null ? 1 : 0, 2 * ny, nn]] as const) {
    w.u8(isNull);
    w.i64Strided(scratchM, start, n, 2);
    w.u8Strided(scratchS, start, n, 2);
    w.i64Strided(scratchM, start + 1, n, 2);
    w.u8Strided(scratchS, start + 1, n, 2);
  }
  const d0 = 2 * (ny + nn);
  w.string(r.side ?? '');
  w.i64(scratchM[d0]!);
  w.u8(scratchS[d0]!);
  w.i64(scratchM[d0 + 1]!);
  w.u8(scratchS[d0 + 1]!);
  w.nullableI64(plainVenueMs);
  w.nullableString(r.market_id ?? null);
  w.nullableI64(r.expected_seq ?? null);
  w.string(plainData);
  w.string('');
  writeLineage(w, lineage);
}

/** The record's keys in the order the rebuild writes them, by record type. */
const B_HEAD = ['type', 'ticker', 'timestamp', 'epoch_ms', 'sid', 'seq'];
const B_KEYS: Record<string, readonly string[]> = {
  snapshot: [...B_HEAD, 'yes', 'no', 'venue_ts', 'market_id'],
  delta: [...B_HEAD, 'side', 'price', 'delta', 'venue_ts', 'market_id'],
  gap: [...B_HEAD, 'expected_seq'],
};
const B_OTHER = [...B_HEAD, 'venue_ts', 'data'];

/** venue_ts (ms, or null) and the data column of the record plainB last vouched for. */
let plainVenueMs: number | null = null;
let plainData = '';
let venueText = '';
let venueMs = 0;

const safeIntOrNull = (v: unknown): boolean => v === null || (typeof v === 'number' && Number.isSafeInteger(v));

/** plainA's twin for exchange B: the decimals go to the scratch columns (yes, no, then price and delta). */
export function plainB(r: ExchangeBMessage['record']): boolean {
  if (!isPlainObject(r)) return false;
  const type = r.type as unknown;
  if (!plainText(type)) return false;
  const keys = B_KEYS[type as string] ?? B_OTHER;
  let i = 0;
  for (const k in r) {
    // A gap's expected_seq is written only when there is one.
    if (k !== keys[i]) return false;
    i += 1;
  }
  if (i !== keys.length && !(type === 'gap' && i === keys.length - 1)) return false;
  if (!plainText(r.ticker)) return false;
  const ms = r.epoch_ms as unknown;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0 || ms >= MAX_DATE_MS || r.timestamp !== isoMs(ms)) return false;
  if (!safeIntOrNull(r.sid) || !safeIntOrNull(r.seq)) return false;
  if (type === 'gap') {
    noLevels();
    return r.expected_seq === undefined || (typeof r.expected_seq === 'number' && Number.isSafeInteger(r.expected_seq));
  }
  // A snapshot's sides are lists or null (an undefined side would be left out of the JSON text).
  if (type === 'snapshot' && (r.yes === undefined || r.no === undefined)) return false;
  const ny = plainPairs(r.yes, 0);
  if (ny < 0) return false;
  const nn = plainPairs(r.no, 2 * ny);
  if (nn < 0) return false;
  const d0 = 2 * (ny + nn);
  scratchRoom(d0 + 2);
  if (type === 'delta') {
    if (!plainText(r.side)) return false;
    if (!plainDecimalOrNull(r.price, d0) || !plainDecimalOrNull(r.delta, d0 + 1)) return false;
  } else absent(d0, 2);
  const vts = r.venue_ts as unknown;
  if (vts === null) plainVenueMs = null;
  else {
    if (typeof vts !== 'string') return false;
    if (vts !== venueText) {
      venueMs = Date.parse(vts);
      venueText = vts;
    }
    if (!Number.isSafeInteger(venueMs) || venueMs < 0 || venueMs >= MAX_DATE_MS || isoMs(venueMs) !== vts) return false;
    plainVenueMs = venueMs;
  }
  if (type === 'snapshot' || type === 'delta') {
    plainData = '';
    return r.market_id === null || plainText(r.market_id);
  }
  const data = JSON.stringify(r.data) as string | undefined;
  if (typeof data !== 'string') return false;
  plainData = data;
  return true;
}

/** A gap's columns besides its head: no levels, no price or delta, no venue time or data. */
function noLevels(): void {
  scratchRoom(2);
  absent(0, 2);
  plainVenueMs = null;
  plainData = '';
}

function absent(at: number, n: number): void {
  for (let j = at; j < at + n; j++) {
    scratchM[j] = 0;
    scratchS[j] = SCALE_ABSENT;
  }
}

function plainDecimalOrNull(v: unknown, slot: number): boolean {
  if (v !== null) return plainDecimal(v, slot);
  scratchM[slot] = 0;
  scratchS[slot] = SCALE_NULL;
  return true;
}

/** A snapshot side's levels ([price, size] pairs) into the scratch columns from `at`: their count, 0 for absent or null, -1 where not plain. */
function plainPairs(v: unknown, at: number): number {
  if (v === undefined || v === null) return 0;
  if (!isPlainArray(v)) return -1;
  const n = v.length;
  scratchRoom(at + 2 * n + 2);
  for (let j = 0; j < n; j++) {
    const lv = v[j];
    if (!isPlainArray(lv) || lv.length !== 2 || !plainDecimal(lv[0], at + 2 * j) || !plainDecimal(lv[1], at + 2 * j + 1)) return -1;
  }
  return n;
}
