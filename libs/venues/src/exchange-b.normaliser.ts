import { isoMs, normaliseTicker, type ExchangeBRecord } from '@booktape/domain';
import { canonicalDecimal, centsToDollars, type DecimalResult } from './decimal.ts';
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

/**
 * Exchange B (Kalshi websocket v2) frames to 2.2 records. Stateful: one instance per
 * capture stream (one connection, or one capture file replayed in order), because `seq`
 * gaps are found across messages.
 *
 * Decisions:
 * - Event time is the receive time (DESIGN §3); the venue's own `ts_ms` / `ts` is kept as
 *   `venue_ts`. `ts` numbers below 1e11 are seconds, otherwise milliseconds.
 * - Price fields fall back `*_dollars_fp` → `*_dollars` → cents, skipping fields that are
 *   absent or null; when every present field is null the payload is null (`yes: null`,
 *   `price: null`: the book is unknown until the next snapshot). A snapshot level whose
 *   price is null makes that side null too. A snapshot side with no field at all is an
 *   empty side (Kalshi omits empty sides). Levels keep the venue's order (ascending).
 * - Seq tracking follows every message that carries a `sid` and a `seq` (including `ok`).
 *   A message that is invalid does not advance it, so the next good message shows a gap:
 *   a lost delta leaves the book unknown, which is what the gap records say.
 * - A control message (e.g. `ok`) that reveals a gap is answered with the gap records
 *   (kind `records`) rather than `control`: the gap is data and must be stored.
 * - An unknown message type that carries a `market_ticker` is invalid (dead-letter keeps
 *   it whole); without market data it is control.
 */

interface SidState {
  last: number;
  tickers: string[];
}

const MIN_TS_MS = 100_000_000_000;

export class ExchangeBNormaliser {
  private readonly sids = new Map<number, SidState>();

  /** Forget every subscription: call when a new connection starts a new capture stream. */
  reset(): void {
    this.sids.clear();
  }

  /** Tickers seen on a subscription since its `subscribed` (for snapshot requests after a gap). */
  tickersOf(sid: number): readonly string[] {
    return this.sids.get(sid)?.tickers ?? [];
  }

  normalise(frame: unknown, receivedAt: Date): ExchangeBResult {
    const epochMs = receivedAt.getTime();
    if (!Number.isFinite(epochMs)) return { kind: 'invalid', reason: 'receivedAt is not a valid date' };

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
        // A new subscription numbers its messages from 1 again.
        this.sids.delete(sid);
        return { kind: 'control', name: 'subscribed', detail: { sid, channel: body['channel'] ?? null, id: value['id'] ?? null } };
      }
      case 'unsubscribed': {
        const sid = toInteger(value['sid'] ?? (isRecord(msg) ? msg['sid'] : undefined));
        if (sid !== undefined) this.sids.delete(sid);
        return { kind: 'control', name: 'unsubscribed', detail: { sid: sid ?? null, id: value['id'] ?? null } };
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
      default: {
        if (isRecord(msg) && msg['market_ticker'] !== undefined) {
          return { kind: 'invalid', reason: `unsupported message type ${excerpt(type)} with market data` };
        }
        const seqd = this.sequence(value);
        if (!seqd.ok) return { kind: 'invalid', reason: seqd.reason };
        const gaps = this.track(seqd.value, null, time);
        if (gaps.length > 0) return { kind: 'records', records: gaps };
        const detail: Record<string, unknown> = { id: value['id'] ?? null };
        if (seqd.value.sid !== null) detail['sid'] = seqd.value.sid;
        if (seqd.value.seq !== null) detail['seq'] = seqd.value.seq;
        if (msg !== undefined) detail['msg'] = msg;
        return { kind: 'control', name: type, detail };
      }
    }
  }

  private sequence(value: Record<string, unknown>): Parsed<{ sid: number | null; seq: number | null }> {
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

  /**
   * Advance the subscription's seq; when it skipped, one gap record per ticker seen so far
   * on the sid. `ticker` (the message's own) joins the sid's tickers after the check.
   */
  private track(
    s: { sid: number | null; seq: number | null },
    ticker: string | null,
    time: { timestamp: string; epoch_ms: number },
  ): ExchangeBRecord[] {
    if (s.sid === null || s.seq === null) return [];
    const gaps: ExchangeBRecord[] = [];
    let state = this.sids.get(s.sid);
    if (state === undefined) {
      state = { last: s.seq, tickers: [] };
      this.sids.set(s.sid, state);
    } else {
      if (s.seq !== state.last + 1) {
        for (const t of state.tickers) {
          gaps.push({
            type: 'gap',
            ticker: t,
            timestamp: time.timestamp,
            epoch_ms: time.epoch_ms,
            sid: s.sid,
            seq: s.seq,
            expected_seq: state.last + 1,
          });
        }
      }
      state.last = s.seq;
    }
    if (ticker !== null && !state.tickers.includes(ticker)) state.tickers.push(ticker);
    return gaps;
  }

  private bookMessage(
    type: 'orderbook_snapshot' | 'orderbook_delta',
    value: Record<string, unknown>,
    time: { timestamp: string; epoch_ms: number },
  ): ExchangeBResult {
    const r = type === 'orderbook_snapshot' ? snapshot(value, time) : delta(value, time);
    if (!r.ok) return { kind: 'invalid', reason: `${type}: ${r.reason}` };
    const gaps = this.track({ sid: r.value.sid, seq: r.value.seq }, r.value.ticker, time);
    return { kind: 'records', records: [...gaps, r.value] };
  }
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
  const out: Header = { ticker, sid: null, seq: null, msg };
  for (const key of ['sid', 'seq'] as const) {
    const v = value[key];
    if (v === undefined || v === null) continue;
    const n = toInteger(v);
    if (n === undefined || n < 0) return bad(`${key} is not a non-negative integer: ${excerpt(String(v))}`);
    out[key] = n;
  }
  return ok(out);
}

function venueTs(msg: Record<string, unknown>): Parsed<string | null> {
  const ms = msg['ts_ms'];
  if (ms !== undefined && ms !== null) {
    const n = toInteger(ms);
    if (n === undefined || n < 0) return bad(`ts_ms is not integer milliseconds: ${excerpt(String(ms))}`);
    return ok(isoMs(n));
  }
  const ts = msg['ts'];
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

/** The first present, non-null field of `keys`; null when all present ones are null. */
function pick(
  msg: Record<string, unknown>,
  keys: readonly (readonly [string, Unit])[],
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

function price(v: unknown, unit: Unit): DecimalResult {
  return unit === 'cents' ? centsToDollars(v) : canonicalDecimal(v);
}

function snapshotSide(msg: Record<string, unknown>, side: 'yes' | 'no'): Parsed<[string, string][] | null> {
  const p = pick(msg, [
    [`${side}_dollars_fp`, 'dollars'],
    [`${side}_dollars`, 'dollars'],
    [side, 'cents'],
  ]);
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
    if (pr.value.startsWith('-')) return bad(`${p.key}[${i}] price is negative`);
    const sz = canonicalDecimal(lv[1]);
    if (!sz.ok) return bad(`${p.key}[${i}] size: ${sz.reason}`);
    if (sz.value.startsWith('-')) return bad(`${p.key}[${i}] size is negative`);
    out.push([pr.value, sz.value]);
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

  const p = pick(msg, [
    ['price_dollars', 'dollars'],
    ['price', 'cents'],
  ]);
  if (!p.present) return bad('price missing (neither price_dollars nor price)');
  let priceValue: string | null = null;
  if (p.value !== null) {
    const pr = price(p.value, p.unit);
    if (!pr.ok) return bad(`${p.key}: ${pr.reason}`);
    if (pr.value.startsWith('-')) return bad(`${p.key} is negative`);
    priceValue = pr.value;
  }

  const d = pick(msg, [
    ['delta_fp', 'dollars'],
    ['delta', 'dollars'],
  ]);
  if (!d.present) return bad('delta missing (neither delta_fp nor delta)');
  let deltaValue: string | null = null;
  if (d.value !== null) {
    const dv = canonicalDecimal(d.value);
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
