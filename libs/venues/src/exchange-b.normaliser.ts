import { MAX_EVENT_DATE, MAX_EVENT_MS, isoMs, normaliseTicker, type ExchangeBRecord } from '@booktape/domain';
import { centsToDollars, venueDecimal } from '@booktape/decimal';
import {
  bad,
  excerpt,
  frameText,
  isRecord,
  kindOf,
  ok,
  parseJson,
  toInteger,
  type Parsed,
} from './frame-text.ts';
import type { ExchangeBResult } from './normalise.types.ts';
import { SHAPE_B_DELTA, SHAPE_B_DELTA_CENTS, ScannedFrame } from './capture-scan.ts';

/**
 * Exchange B (Kalshi websocket v2) frames to 2.2 records. Stateful: one instance per
 * capture stream (one connection, or one capture file replayed in order), because `seq`
 * gaps are found across messages.
 *
 * Decisions:
 * - Prices and sizes keep the venue's text where it sent decimal strings ("0.4200",
 *   "20.00", "-50.00"); JSON numbers become their shortest text; legacy integer cents are
 *   converted to dollars (a unit conversion, so canonical). Every value is validated.
 * - Event time is the receive time (docs/rules/data.md); the venue's own `ts_ms` / `ts` is kept as
 *   `venue_ts`. `ts` numbers below 1e11 are seconds, otherwise milliseconds.
 * - Price fields fall back `*_dollars_fp` → `*_dollars` → cents, skipping fields that are
 *   absent or null; when every present field is null the payload is null (`yes: null`,
 *   `price: null`: the book is unknown until the next snapshot). A snapshot level whose
 *   price is null makes that side null too. A snapshot side with no field at all is an
 *   empty side (Kalshi omits empty sides). Levels keep the venue's order (ascending).
 * - Seq tracking follows every message that carries a `sid` and a `seq`: book messages,
 *   `ok` acknowledgements, `unsubscribed`, `ticker` and `trade` all use up a number.
 *   A message that is invalid does not advance it, so the next good message shows a gap:
 *   a lost delta leaves the book unknown, which is what the gap records say. Only book
 *   messages make a ticker part of a sid's gap records (a gap on a ticker-channel sid does
 *   not make any book unknown).
 * - Sequence state belongs to a connection: reset() at each connection (and replay at each
 *   `connect` boundary and each file). A sid first met without its `subscribed` and at a
 *   seq other than 1 means the stream started mid-session: each ticker whose first message
 *   there is a delta gets one gap record before it (its book is unknown until a snapshot);
 *   a snapshot needs none. After that the sid is tracked as usual.
 * - `ticker` and `trade` channel messages are stored as non-book records with the venue's
 *   `msg` in `data`.
 * - A control message (e.g. `ok`) that reveals a gap is answered with the gap records
 *   (kind `records`) rather than `control`: the gap is data and must be stored.
 * - An unknown message type that carries a `market_ticker` is invalid (dead-letter keeps
 *   it whole); without market data it is control.
 */

interface SidState {
  /** The last seq seen; null right after `subscribed` (the first message sets it). */
  last: number | null;
  /**
   * Tickers of book messages seen on the sid (named in its gap records, in the order first
   * seen). A set: every book message looks its ticker up, and one sid can carry thousands.
   */
  tickers: Set<string>;
  /**
   * Started mid-session (see the class notes): tickers already met on the sid, each
   * reported or known from a snapshot. null for a sid whose start was seen.
   */
  midSession: Set<string> | null;
}

type Time = { timestamp: string; epoch_ms: number };
type MessageKind = 'book-snapshot' | 'book-delta' | 'other';

const MIN_TS_MS = 100_000_000_000;

export class ExchangeBNormaliser {
  private readonly sids = new Map<number, SidState>();

  /** Forget every subscription: call when a new connection starts a new capture stream. */
  reset(): void {
    this.sids.clear();
  }

  /** Tickers seen on a subscription since its `subscribed` (for snapshot requests after a gap). */
  tickersOf(sid: number): readonly string[] {
    return [...(this.sids.get(sid)?.tickers ?? [])];
  }

  normalise(frame: unknown, receivedAt: Date): ExchangeBResult {
    const epochMs = receivedAt.getTime();
    if (!Number.isFinite(epochMs)) return { kind: 'invalid', reason: 'receivedAt is not a valid date' };
    // Exchange B's event time is the receive time: it must fit the store's dates too.
    if (epochMs < 0 || epochMs > MAX_EVENT_MS) return { kind: 'invalid', reason: `receive time ${receivedAt.toISOString()} is outside 1970..${MAX_EVENT_DATE}, the dates the store holds` };

    if (frame instanceof ScannedFrame) {
      const time = { timestamp: isoMs(epochMs), epoch_ms: epochMs };
      const r = scannedDelta(frame, time);
      // As bookMessage does with a delta of the parsed frame.
      if (r !== null) return { kind: 'records', records: [...this.track({ sid: r.sid, seq: r.seq }, r.ticker, 'book-delta', time), r] };
      // A value its checks refuse: the general path on the parsed frame gives the reason.
      frame = frame.value();
    }
    let value: unknown = frame;
    const text = frameText(frame);
    if (text !== undefined) {
      const t = text.trim();
      if (t === '') return { kind: 'invalid', reason: 'empty frame' };
      const parsed = parseJson(t);
      if (!parsed.ok) return { kind: 'invalid', reason: parsed.reason };
      value = parsed.value;
    }
    if (!isRecord(value)) return { kind: 'invalid', reason: `JSON ${kindOf(value)} is not a message object` };

    const type = value['type'];
    if (typeof type !== 'string' || type === '') return { kind: 'invalid', reason: 'type missing or not a string' };
    const msg = value['msg'];
    const time = { timestamp: isoMs(epochMs), epoch_ms: epochMs };

    switch (type) {
      case 'subscribed': {
        const body = isRecord(msg) ? msg : {};
        const sid = toInteger(body['sid'] ?? value['sid']);
        if (sid === undefined) return { kind: 'invalid', reason: 'subscribed without an integer sid' };
        // A new subscription numbers its messages again; its start is seen, so no mid-session gap.
        this.sids.set(sid, { last: null, tickers: new Set(), midSession: null });
        return { kind: 'control', name: 'subscribed', detail: { sid, channel: body['channel'] ?? null, id: value['id'] ?? null } };
      }
      case 'unsubscribed': {
        // It may use up a seq of the sid: check it (a skipped number is still a gap), then forget the sid.
        const seqd = sequenceOf({ sid: value['sid'] ?? (isRecord(msg) ? msg['sid'] : undefined), seq: value['seq'] });
        if (!seqd.ok) return { kind: 'invalid', reason: seqd.reason };
        const gaps = this.track(seqd.value, null, 'other', time);
        if (seqd.value.sid !== null) this.sids.delete(seqd.value.sid);
        if (gaps.length > 0) return { kind: 'records', records: gaps };
        return { kind: 'control', name: 'unsubscribed', detail: { sid: seqd.value.sid, id: value['id'] ?? null } };
      }
      case 'error': {
        const body = isRecord(msg) ? msg : {};
        return {
          kind: 'control',
          name: 'error',
          detail: { id: value['id'] ?? null, code: body['code'] ?? null, msg: body['msg'] ?? null },
        };
      }
      case 'orderbook_snapshot':
      case 'orderbook_delta':
        return this.bookMessage(type, value, time);
      case 'ticker':
      case 'trade':
        return this.channelMessage(type, value, time);
      default: {
        if (isRecord(msg) && msg['market_ticker'] !== undefined) {
          return { kind: 'invalid', reason: `unsupported message type ${excerpt(type)} with market data` };
        }
        const seqd = sequenceOf(value);
        if (!seqd.ok) return { kind: 'invalid', reason: seqd.reason };
        const gaps = this.track(seqd.value, null, 'other', time);
        if (gaps.length > 0) return { kind: 'records', records: gaps };
        const detail: Record<string, unknown> = { id: value['id'] ?? null };
        if (seqd.value.sid !== null) detail['sid'] = seqd.value.sid;
        if (seqd.value.seq !== null) detail['seq'] = seqd.value.seq;
        if (msg !== undefined) detail['msg'] = msg;
        return { kind: 'control', name: type, detail };
      }
    }
  }

  /**
   * Advance the subscription's seq; when it skipped, one gap record per ticker seen so far
   * on the sid. On a sid that started mid-session, a ticker's first message being a delta
   * adds one gap record for that ticker. `ticker` (a book message's own) joins the sid's
   * tickers after the checks.
   */
  private track(s: { sid: number | null; seq: number | null }, ticker: string | null, kind: MessageKind, time: Time): ExchangeBRecord[] {
    if (s.sid === null || s.seq === null) return [];
    const gaps: ExchangeBRecord[] = [];
    let state = this.sids.get(s.sid);
    if (state === undefined) {
      // No `subscribed` for this sid since the reset: seq 1 is a start we saw, anything else
      // is the middle of a session whose earlier messages this stream does not hold.
      state = { last: null, tickers: new Set(), midSession: s.seq === 1 ? null : new Set() };
      this.sids.set(s.sid, state);
    }
    if (state.last !== null && s.seq !== state.last + 1) {
      for (const t of state.tickers) gaps.push(gapRecord(s, t, (state.last as number) + 1, time));
    }
    state.last = s.seq;
    if (ticker !== null) {
      if (state.midSession !== null && !state.midSession.has(ticker)) {
        state.midSession.add(ticker);
        // Already named by a seq gap just above: one record is enough.
        if (kind === 'book-delta' && !state.tickers.has(ticker)) gaps.push(gapRecord(s, ticker, null, time));
      }
      state.tickers.add(ticker);
    }
    return gaps;
  }

  private bookMessage(type: 'orderbook_snapshot' | 'orderbook_delta', value: Record<string, unknown>, time: Time): ExchangeBResult {
    const r = type === 'orderbook_snapshot' ? snapshot(value, time) : delta(value, time);
    if (!r.ok) return { kind: 'invalid', reason: `${type}: ${r.reason}` };
    const kind = type === 'orderbook_snapshot' ? 'book-snapshot' : 'book-delta';
    const gaps = this.track({ sid: r.value.sid, seq: r.value.seq }, r.value.ticker, kind, time);
    return { kind: 'records', records: [...gaps, r.value] };
  }

  /** `ticker` / `trade` channel: a non-book record; it uses up a seq but names no book in gaps. */
  private channelMessage(type: 'ticker' | 'trade', value: Record<string, unknown>, time: Time): ExchangeBResult {
    const h = header(value);
    if (!h.ok) return { kind: 'invalid', reason: `${type}: ${h.reason}` };
    const vts = venueTs(h.value.msg);
    if (!vts.ok) return { kind: 'invalid', reason: `${type}: ${vts.reason}` };
    const gaps = this.track({ sid: h.value.sid, seq: h.value.seq }, null, 'other', time);
    const record: ExchangeBRecord = {
      type,
      ticker: h.value.ticker,
      timestamp: time.timestamp,
      epoch_ms: time.epoch_ms,
      sid: h.value.sid,
      seq: h.value.seq,
      venue_ts: vts.value,
      data: h.value.msg,
    };
    return { kind: 'records', records: [...gaps, record] };
  }
}

/** A gap record of ticker `t` at message `s`: the seq it skipped to, and the one expected when known. */
function gapRecord(s: { sid: number | null; seq: number | null }, t: string, expected: number | null, time: Time): ExchangeBRecord {
  const r: ExchangeBRecord = { type: 'gap', ticker: t, timestamp: time.timestamp, epoch_ms: time.epoch_ms, sid: s.sid, seq: s.seq };
  if (expected !== null) r.expected_seq = expected;
  return r;
}

interface Header {
  ticker: string;
  sid: number | null;
  seq: number | null;
  msg: Record<string, unknown>;
}

function header(value: Record<string, unknown>): Parsed<Header> {
  const msg = value['msg'];
  if (!isRecord(msg)) return bad(msg === undefined ? 'msg missing' : 'msg is not an object');
  const raw = msg['market_ticker'];
  if (typeof raw !== 'string' || raw === '') return bad('market_ticker missing or not a string');
  const ticker = normaliseTicker(raw);
  if (ticker === null) return bad(`market_ticker is malformed: ${excerpt(raw)}`);
  const s = sequenceOf(value);
  if (!s.ok) return s;
  return ok({ ticker, sid: s.value.sid, seq: s.value.seq, msg });
}

/** A message's subscription id and seq, null where it carries none. */
function sequenceOf(value: Record<string, unknown>): Parsed<{ sid: number | null; seq: number | null }> {
  const out = { sid: null as number | null, seq: null as number | null };
  for (const key of ['sid', 'seq'] as const) {
    const raw = value[key];
    if (raw === undefined || raw === null) continue;
    const n = toInteger(raw);
    if (n === undefined || n < 0) return bad(`${key} is not a non-negative integer: ${excerpt(String(raw))}`);
    out[key] = n;
  }
  return ok(out);
}

function venueTs(msg: Record<string, unknown>): Parsed<string | null> {
  return venueTsOf(msg['ts_ms'], msg['ts']);
}

function venueTsOf(ms: unknown, ts: unknown): Parsed<string | null> {
  if (ms !== undefined && ms !== null) {
    const n = toInteger(ms);
    if (n === undefined || n < 0) return bad(`ts_ms is not integer milliseconds: ${excerpt(String(ms))}`);
    return ok(isoMs(n));
  }
  if (ts === undefined || ts === null) return ok(null);
  const n = toInteger(ts);
  if (n !== undefined && n >= 0) return ok(isoMs(n < MIN_TS_MS ? n * 1000 : n));
  if (typeof ts === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(ts)) {
    const parsed = Date.parse(ts);
    if (Number.isFinite(parsed)) return ok(isoMs(parsed));
  }
  return bad(`ts is neither ISO 8601 nor a Unix time: ${excerpt(String(ts))}`);
}

function marketId(msg: Record<string, unknown>): string | null {
  const v = msg['market_id'];
  return typeof v === 'string' && v !== '' ? v : null;
}

type Unit = 'dollars' | 'cents';
/** Fields that may hold one value, in the order they are tried, with the unit of each. */
type Fallbacks = readonly (readonly [string, Unit])[];

/** The first present, non-null field of `keys`; null when all present ones are null. */
function pick(
  msg: Record<string, unknown>,
  keys: Fallbacks,
): { present: false } | { present: true; value: unknown; key: string; unit: Unit } {
  let sawNull: { key: string; unit: Unit } | undefined;
  for (const [key, unit] of keys) {
    const v = msg[key];
    if (v === undefined) continue;
    if (v === null) {
      sawNull ??= { key, unit };
      continue;
    }
    return { present: true, value: v, key, unit };
  }
  return sawNull ? { present: true, value: null, ...sawNull } : { present: false };
}

/**
 * A price as stored: dollar text as sent, cents converted to dollars. `canonical` for sign
 * checks.
 */
function price(v: unknown, unit: Unit): Parsed<{ value: string; canonical: string }> {
  if (unit === 'dollars') {
    const d = venueDecimal(v);
    return d.ok ? ok({ value: d.value, canonical: d.canonical }) : bad(d.reason);
  }
  const c = centsToDollars(v);
  return c.ok ? ok({ value: c.value, canonical: c.value }) : bad(c.reason);
}

/** Where each field may be, newest shape first (pick's fallback order). */
const SIDE_FIELDS: Record<'yes' | 'no', Fallbacks> = {
  yes: [
    ['yes_dollars_fp', 'dollars'],
    ['yes_dollars', 'dollars'],
    ['yes', 'cents'],
  ],
  no: [
    ['no_dollars_fp', 'dollars'],
    ['no_dollars', 'dollars'],
    ['no', 'cents'],
  ],
};
const PRICE_FIELDS: Fallbacks = [
  ['price_dollars', 'dollars'],
  ['price', 'cents'],
];
const DELTA_FIELDS: Fallbacks = [
  ['delta_fp', 'dollars'],
  ['delta', 'dollars'],
];

function snapshotSide(msg: Record<string, unknown>, side: 'yes' | 'no'): Parsed<[string, string][] | null> {
  const p = pick(msg, SIDE_FIELDS[side]);
  if (!p.present) return ok([]);
  if (p.value === null) return ok(null);
  if (!Array.isArray(p.value)) return bad(`${p.key} is not an array`);
  const out: [string, string][] = [];
  for (let i = 0; i < p.value.length; i++) {
    const lv: unknown = p.value[i];
    if (!Array.isArray(lv) || lv.length !== 2) return bad(`${p.key}[${i}] is not a [price, size] pair`);
    if (lv[0] === null) return ok(null);
    const pr = price(lv[0], p.unit);
    if (!pr.ok) return bad(`${p.key}[${i}] price: ${pr.reason}`);
    if (pr.value.canonical.startsWith('-')) return bad(`${p.key}[${i}] price is negative`);
    const sz = venueDecimal(lv[1]);
    if (!sz.ok) return bad(`${p.key}[${i}] size: ${sz.reason}`);
    if (sz.canonical.startsWith('-')) return bad(`${p.key}[${i}] size is negative`);
    out.push([pr.value.value, sz.value]);
  }
  return ok(out);
}

function snapshot(value: Record<string, unknown>, time: { timestamp: string; epoch_ms: number }): Parsed<ExchangeBRecord> {
  const h = header(value);
  if (!h.ok) return h;
  const yes = snapshotSide(h.value.msg, 'yes');
  if (!yes.ok) return yes;
  const no = snapshotSide(h.value.msg, 'no');
  if (!no.ok) return no;
  const vts = venueTs(h.value.msg);
  if (!vts.ok) return vts;
  return ok({
    type: 'snapshot',
    ticker: h.value.ticker,
    timestamp: time.timestamp,
    epoch_ms: time.epoch_ms,
    sid: h.value.sid,
    seq: h.value.seq,
    yes: yes.value,
    no: no.value,
    venue_ts: vts.value,
    market_id: marketId(h.value.msg),
  });
}

function delta(value: Record<string, unknown>, time: { timestamp: string; epoch_ms: number }): Parsed<ExchangeBRecord> {
  const h = header(value);
  if (!h.ok) return h;
  const msg = h.value.msg;
  const rawSide = typeof msg['side'] === 'string' ? msg['side'].toLowerCase() : msg['side'];
  if (rawSide !== 'yes' && rawSide !== 'no') {
    return bad(`side is ${msg['side'] === undefined ? 'missing' : `not yes or no: ${excerpt(String(msg['side']))}`}`);
  }

  const p = pick(msg, PRICE_FIELDS);
  if (!p.present) return bad('price missing (neither price_dollars nor price)');
  let priceValue: string | null = null;
  if (p.value !== null) {
    const pr = price(p.value, p.unit);
    if (!pr.ok) return bad(`${p.key}: ${pr.reason}`);
    if (pr.value.canonical.startsWith('-')) return bad(`${p.key} is negative`);
    priceValue = pr.value.value;
  }

  const d = pick(msg, DELTA_FIELDS);
  if (!d.present) return bad('delta missing (neither delta_fp nor delta)');
  let deltaValue: string | null = null;
  if (d.value !== null) {
    const dv = venueDecimal(d.value);
    if (!dv.ok) return bad(`${d.key}: ${dv.reason}`);
    deltaValue = dv.value;
  }

  const vts = venueTs(msg);
  if (!vts.ok) return vts;
  return ok({
    type: 'delta',
    ticker: h.value.ticker,
    timestamp: time.timestamp,
    epoch_ms: time.epoch_ms,
    sid: h.value.sid,
    seq: h.value.seq,
    side: rawSide,
    price: priceValue,
    delta: deltaValue,
    venue_ts: vts.value,
    market_id: marketId(msg),
  });
}

/**
 * The delta record of a frame the capture reader matched (capture-scan.ts), as `delta` makes
 * it of the parsed frame: the pattern matched the values in the spellings `delta`'s checks
 * keep as they are (a ticker as normaliseTicker keeps it, the side in lower case, a
 * non-negative plain price, a plain delta other than a negative zero, safe non-negative
 * integers). The cents shape's `price` and `delta` numbers are not read (`price_dollars`
 * and `delta_fp` come first), and it has no market_id. null when its `ts` is refused: the
 * general path then answers, with its reason.
 */
function scannedDelta(frame: ScannedFrame, time: Time): ExchangeBRecord | null {
  const p = frame.parts;
  const dollars = frame.shape === SHAPE_B_DELTA;
  if (!dollars && frame.shape !== SHAPE_B_DELTA_CENTS) return null;
  const vts = dollars ? ok(isoMs(Number(p[6]))) : venueTsOf(undefined, p[6]);
  if (!vts.ok) return null;
  return {
    type: 'delta',
    ticker: p[2]!,
    timestamp: time.timestamp,
    epoch_ms: time.epoch_ms,
    sid: Number(p[0]),
    seq: Number(p[1]),
    side: p[5] as 'yes' | 'no',
    price: p[3]!,
    delta: p[4]!,
    venue_ts: vts.value,
    market_id: dollars && p[7] !== '' ? p[7]! : null,
  };
}
