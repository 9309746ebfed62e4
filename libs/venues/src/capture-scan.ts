import { receiveTimeError, type CaptureLine } from '@booktape/domain';

/**
 * A fast path for the capture lines replay meets nearly always: the frame shapes capture
 * writes for the hot messages (exchange A `price_change`, list and older per-asset shape;
 * exchange B `orderbook_delta`, dollar and cents shapes), in the venues' key order, every
 * string free of escapes. Such a line is matched by one pattern (no object graph built by
 * JSON.parse), its values kept as texts; the normaliser makes the records from them with
 * the same checks as from parsed JSON (exchange-a / exchange-b normalisers).
 *
 * Anything else (another shape or key order, an escape, a number where a string was, a
 * missing or extra field, white space, a BOM) does not match and takes the general path
 * (parseCaptureLine): the fast path only ever answers for lines it is sure of.
 *
 * Why a match is safe: the patterns admit only JSON texts (strings without `"`, `\` or
 * control characters, numbers in JSON's grammar), every key exactly once; such a text
 * parses to exactly the texts matched, so the values equal what JSON.parse would give.
 */

/** Which shape a ScannedFrame matched. */
export const SHAPE_A_LIST = 1;
export const SHAPE_A_CHANGES = 2;
export const SHAPE_B_DELTA = 3;
export const SHAPE_B_DELTA_CENTS = 4;

/**
 * A frame of a capture line the fast path matched: its shape and the texts of its values
 * (`parts`, laid out per shape: see scanCaptureLine). `value()` (and JSON.stringify, via
 * toJSON) give the parsed frame, what the general path had: the normaliser falls back to
 * it for any value its checks refuse, and a dead letter writes it.
 */
export class ScannedFrame {
  constructor(
    /** The whole capture line; the frame is its text from `start` to the line's last `}`. */
    private readonly line: string,
    private readonly start: number,
    readonly shape: number,
    readonly parts: readonly string[],
  ) {}

  /** The frame parsed (JSON.parse of its text). */
  value(): unknown {
    return JSON.parse(this.line.slice(this.start, this.line.length - 1)) as unknown;
  }

  toJSON(): unknown {
    return this.value();
  }
}

// A JSON string without escapes (its text is its value), a safe non-negative integer without
// leading zeros (JSON.parse gives exactly Number of it), and any JSON number.
const S = '([^"\\\\\\u0000-\\u001f]*)';
const N = '(0|[1-9]\\d{0,14})';
const NUM = '-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d+)?';

const envelope = (venue: string): string => `^\\{"venue":"${venue}","received_at":"${S}","frame":`;

/** price_change since 2025-09-15, up to its list: received_at, market, timestamp. */
const A_LIST = new RegExp(`${envelope('exchange-a')}\\{"event_type":"price_change","market":"${S}","timestamp":"${S}","price_changes":\\[`);
/** One entry of the list and what follows it (`,` or the end of the line). */
const A_LIST_ENTRY = new RegExp(`\\{"asset_id":"${S}","price":"${S}","size":"${S}","side":"${S}","hash":"${S}","best_bid":"${S}","best_ask":"${S}"\\}(,|\\]\\}\\}$)`, 'y');
/** price_change before: received_at, asset_id, market, timestamp, hash. */
const A_CHANGES = new RegExp(`${envelope('exchange-a')}\\{"event_type":"price_change","asset_id":"${S}","market":"${S}","timestamp":"${S}","hash":"${S}","changes":\\[`);
/** One change (price, then size and side in either order) and what follows it. */
const A_CHANGE = new RegExp(`\\{"price":"${S}",(?:"size":"${S}","side":"${S}"|"side":"${S}","size":"${S}")\\}(,|\\]\\}\\}$)`, 'y');
/** orderbook_delta, dollar shape: received_at, sid, seq, market_ticker, market_id, price_dollars, delta_fp, side, ts_ms. */
const B_DELTA = new RegExp(
  `${envelope('exchange-b')}\\{"type":"orderbook_delta","sid":${N},"seq":${N},"msg":\\{"market_ticker":"${S}","market_id":"${S}","price_dollars":"${S}","delta_fp":"${S}","side":"${S}","ts_ms":${N}\\}\\}\\}$`,
);
/** orderbook_delta, cents beside dollars: received_at, sid, seq, market_ticker, price_dollars, delta_fp, side, ts. */
const B_DELTA_CENTS = new RegExp(
  `${envelope('exchange-b')}\\{"type":"orderbook_delta","sid":${N},"seq":${N},"msg":\\{"market_ticker":"${S}","price":${NUM},"price_dollars":"${S}","delta":${NUM},"delta_fp":"${S}","side":"${S}","ts":"${S}"\\}\\}\\}$`,
);

const A_PREFIX = '{"venue":"exchange-a","received_at":"';
const B_PREFIX = '{"venue":"exchange-b","received_at":"';
/** Where the frame starts: after the envelope's prefix, the 24-character receive time (as capture writes it) and `","frame":`. */
const frameStart = (receivedAt: string): number => A_PREFIX.length + receivedAt.length + '","frame":'.length;

/**
 * The capture line of `text` when it is one of the hot shapes (see above), else null (then
 * parseCaptureLine, which gives the same line or the same error). The receive time is checked
 * as parseCaptureLine checks it.
 *
 * parts: A list: market, timestamp, then per entry asset_id, price, size, side, hash,
 * best_bid, best_ask. A changes: asset_id, market, timestamp, hash, then per change price,
 * side, size. B: sid, seq, market_ticker, price_dollars, delta_fp, side, ts_ms or ts, then
 * market_id (dollar shape only).
 */
export function scanCaptureLine(text: string): CaptureLine | null {
  if (text.startsWith(A_PREFIX)) return scanA(text);
  if (text.startsWith(B_PREFIX)) return scanB(text);
  return null;
}

function line(venue: 'exchange-a' | 'exchange-b', receivedAt: string, frame: ScannedFrame): CaptureLine | null {
  if (receiveTimeError('received_at', receivedAt) !== null) return null;
  return { venue, received_at: receivedAt, frame };
}

function scanA(text: string): CaptureLine | null {
  const list = A_LIST.exec(text);
  if (list !== null) {
    const parts: string[] = [list[2]!, list[3]!];
    A_LIST_ENTRY.lastIndex = list[0].length;
    for (;;) {
      const e = A_LIST_ENTRY.exec(text);
      if (e === null) return null;
      parts.push(e[1]!, e[2]!, e[3]!, e[4]!, e[5]!, e[6]!, e[7]!);
      if (e[8] !== ',') break;
    }
    return line('exchange-a', list[1]!, new ScannedFrame(text, frameStart(list[1]!), SHAPE_A_LIST, parts));
  }
  const head = A_CHANGES.exec(text);
  if (head === null) return null;
  const parts: string[] = [head[2]!, head[3]!, head[4]!, head[5]!];
  A_CHANGE.lastIndex = head[0].length;
  for (;;) {
    const c = A_CHANGE.exec(text);
    if (c === null) return null;
    // price, side, size
    if (c[2] !== undefined) parts.push(c[1]!, c[3]!, c[2]);
    else parts.push(c[1]!, c[4]!, c[5]!);
    if (c[6] !== ',') break;
  }
  return line('exchange-a', head[1]!, new ScannedFrame(text, frameStart(head[1]!), SHAPE_A_CHANGES, parts));
}

function scanB(text: string): CaptureLine | null {
  const d = B_DELTA.exec(text);
  if (d !== null) {
    const parts = [d[2]!, d[3]!, d[4]!, d[6]!, d[7]!, d[8]!, d[9]!, d[5]!];
    return line('exchange-b', d[1]!, new ScannedFrame(text, frameStart(d[1]!), SHAPE_B_DELTA, parts));
  }
  const c = B_DELTA_CENTS.exec(text);
  if (c === null) return null;
  const parts = [c[2]!, c[3]!, c[4]!, c[5]!, c[6]!, c[7]!, c[8]!];
  return line('exchange-b', c[1]!, new ScannedFrame(text, frameStart(c[1]!), SHAPE_B_DELTA_CENTS, parts));
}
