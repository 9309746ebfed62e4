import { MAX_EVENT_MS, receiveTimeError, type CaptureLine, type ExchangeAEvent, type PriceChange } from '@booktape/domain';

/**
 * A fast path for the capture lines replay meets nearly always: the frame shapes capture
 * writes for the hot messages (exchange A `price_change`, list and older per-asset shape;
 * exchange B `orderbook_delta`, dollar and cents shapes), in the venues' key order, every
 * string free of escapes, every value in a spelling the normalisers keep as it is. Such a
 * line is matched by one pattern (no object graph built by JSON.parse, no checks answered
 * value by value): exchange A's records are made here, exchange B's delta by its normaliser
 * from the matched texts (it keeps the sequence state); both are the records the normalisers
 * make of the parsed frame.
 *
 * Anything else (another shape or key order, an escape, a number where a string was, a
 * missing or extra field, another spelling of a value, white space, a BOM) does not match
 * and takes the general path (parseCaptureLine): the fast path only ever answers for lines
 * it is sure of. capture-scan.test.ts compares both paths line by line.
 *
 * Why a match is safe: the patterns admit only JSON texts (strings without `"`, `\` or
 * control characters, numbers in JSON's grammar), every key exactly once; such a text
 * parses to exactly the texts matched, so the values equal what JSON.parse would give.
 */

/** Which shape a ScannedFrame matched. */
export const SHAPE_A = 1;
export const SHAPE_B_DELTA = 3;
export const SHAPE_B_DELTA_CENTS = 4;

/**
 * A frame of a capture line the fast path matched, with what the normaliser needs of it:
 * exchange A's records themselves (stateless; made here), or the texts of an exchange B
 * delta's values (`parts`: sid, seq, market_ticker, price_dollars, delta_fp, side, then
 * ts_ms (dollar shape) or ts (cents shape), then market_id (dollar shape)), which the
 * normaliser makes a record of with its sequence state. `value()` (and JSON.stringify, via
 * toJSON) give the parsed frame, what the general path had: the normaliser falls back to it
 * for any value its checks refuse, and a dead letter writes it.
 */
export class ScannedFrame {
  constructor(
    /** The whole capture line; the frame is its text from `start` to the line's last `}`. */
    private readonly line: string,
    private readonly start: number,
    readonly shape: number,
    readonly parts: readonly string[],
    readonly records: ExchangeAEvent[] | null,
  ) {}

  /** The frame parsed (JSON.parse of its text). */
  value(): unknown {
    return JSON.parse(this.line.slice(this.start, this.line.length - 1)) as unknown;
  }

  toJSON(): unknown {
    return this.value();
  }
}

/*
 * The values are matched in the spellings the normalisers keep as they are, so that a match
 * is the record's value itself: a JSON string without escapes (its text is its value); a
 * non-negative plain decimal ("0.48", "154", no sign, no exponent, no leading zero: venueDecimal
 * keeps it, and it is not negative), bounded well below the decimals' length limit; the side
 * in capitals; a condition id in lower case (normaliseConditionId keeps it); a timestamp of 12
 * or 13 digits (milliseconds, no leading zero; checked against the last date the store holds);
 * a safe non-negative integer without leading zeros (JSON.parse gives exactly Number of it).
 */
const S = '([^"\\\\\\u0000-\\u001f]*)';
const TEXT = '([^"\\\\\\u0000-\\u001f]+)';
const DEC = '((?:0|[1-9]\\d{0,30})(?:\\.\\d{1,30})?)';
const SIGNED_DEC = '(-?(?:0|[1-9]\\d{0,30})(?:\\.\\d{1,30})?)';
const SIDE = '(BUY|SELL)';
const MARKET = '(0x[0-9a-f]{64})';
const TIMESTAMP = '([1-9]\\d{11,12})';
const N = '(0|[1-9]\\d{0,14})';
/** Any JSON number (the cents shape's numbers, which the normaliser does not read). */
const NUM = '-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d+)?';
/** A ticker as normaliseTicker keeps it (upper case, its rule). */
const TICKER = '([A-Z0-9][A-Z0-9._-]{0,127})';

const envelope = (venue: string): string => `^\\{"venue":"${venue}","received_at":"${S}","frame":`;

/** price_change since 2025-09-15, up to its list: received_at, market, timestamp. */
const A_LIST = new RegExp(`${envelope('exchange-a')}\\{"event_type":"price_change","market":"${MARKET}","timestamp":"${TIMESTAMP}","price_changes":\\[`);
/** One entry of the list and what follows it (`,` or the end of the line). */
const A_LIST_ENTRY = new RegExp(`\\{"asset_id":"${TEXT}","price":"${DEC}","size":"${DEC}","side":"${SIDE}","hash":"${TEXT}","best_bid":"${DEC}","best_ask":"${DEC}"\\}(,|\\]\\}\\}$)`, 'y');
/** price_change before: received_at, asset_id, market, timestamp, hash. */
const A_CHANGES = new RegExp(`${envelope('exchange-a')}\\{"event_type":"price_change","asset_id":"${TEXT}","market":"${MARKET}","timestamp":"${TIMESTAMP}","hash":"${TEXT}","changes":\\[`);
/** One change (price, then size and side in either order) and what follows it. */
const A_CHANGE = new RegExp(`\\{"price":"${DEC}",(?:"size":"${DEC}","side":"${SIDE}"|"side":"${SIDE}","size":"${DEC}")\\}(,|\\]\\}\\}$)`, 'y');
/** orderbook_delta, dollar shape: received_at, sid, seq, market_ticker, market_id, price_dollars, delta_fp, side, ts_ms. */
const B_DELTA = new RegExp(
  `${envelope('exchange-b')}\\{"type":"orderbook_delta","sid":${N},"seq":${N},"msg":\\{"market_ticker":"${TICKER}","market_id":"${S}","price_dollars":"${DEC}","delta_fp":"${SIGNED_DEC}","side":"(yes|no)","ts_ms":${N}\\}\\}\\}$`,
);
/** orderbook_delta, cents beside dollars: received_at, sid, seq, market_ticker, price_dollars, delta_fp, side, ts. */
const B_DELTA_CENTS = new RegExp(
  `${envelope('exchange-b')}\\{"type":"orderbook_delta","sid":${N},"seq":${N},"msg":\\{"market_ticker":"${TICKER}","price":${NUM},"price_dollars":"${DEC}","delta":${NUM},"delta_fp":"${SIGNED_DEC}","side":"(yes|no)","ts":"${S}"\\}\\}\\}$`,
);
/** A negative zero ("-0.00"), which venueDecimal stores as "0": left to the general path. */
const NEGATIVE_ZERO = /^-0(?:\.0+)?$/;

const A_PREFIX = '{"venue":"exchange-a","received_at":"';
const B_PREFIX = '{"venue":"exchange-b","received_at":"';
/** Where the frame starts: after the envelope's prefix (the same length for both venues), the receive time and `","frame":`. */
const frameStart = (receivedAt: string): number => A_PREFIX.length + receivedAt.length + '","frame":'.length;

/**
 * The capture line of `text` when it is one of the hot shapes (see above), else null (then
 * parseCaptureLine, which gives the same line or the same error). The receive time is checked
 * as parseCaptureLine checks it.
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

/** The normaliser's timestamp check, for 12 or 13 digits: at least 1e11 by the pattern, below 1e14, not after the store's last date. */
const timestampOk = (t: string): boolean => Number(t) <= MAX_EVENT_MS;

/**
 * Exchange A's records, as the normaliser makes them of the parsed frame: one per asset of
 * a list in order of first appearance (its changes in entry order, with their own hash and
 * claims; its hash the first entry's), or the one record of the older shape. No other fields,
 * so no `extra`.
 */
function scanA(text: string): CaptureLine | null {
  const list = A_LIST.exec(text);
  if (list !== null) {
    const market = list[2]!;
    const timestamp = list[3]!;
    if (!timestampOk(timestamp)) return null;
    const records: ExchangeAEvent[] = [];
    A_LIST_ENTRY.lastIndex = list[0].length;
    for (;;) {
      const e = A_LIST_ENTRY.exec(text);
      if (e === null) return null;
      const asset = e[1]!;
      const change: PriceChange = { price: e[2]!, side: e[4] as 'BUY' | 'SELL', size: e[3]!, hash: e[5]!, best_bid: e[6]!, best_ask: e[7]! };
      let record: ExchangeAEvent | undefined;
      for (let i = 0; i < records.length; i++) if (records[i]!.asset_id === asset) record = records[i];
      if (record === undefined) records.push({ market, asset_id: asset, timestamp, hash: change.hash!, event_type: 'price_change', changes: [change] });
      else record.changes!.push(change);
      if (e[8] !== ',') break;
    }
    return line('exchange-a', list[1]!, new ScannedFrame(text, frameStart(list[1]!), SHAPE_A, NO_PARTS, records));
  }
  const head = A_CHANGES.exec(text);
  if (head === null) return null;
  const timestamp = head[4]!;
  if (!timestampOk(timestamp)) return null;
  const changes: PriceChange[] = [];
  A_CHANGE.lastIndex = head[0].length;
  for (;;) {
    const c = A_CHANGE.exec(text);
    if (c === null) return null;
    changes.push(c[2] !== undefined ? { price: c[1]!, side: c[3] as 'BUY' | 'SELL', size: c[2] } : { price: c[1]!, side: c[4] as 'BUY' | 'SELL', size: c[5]! });
    if (c[6] !== ',') break;
  }
  const records: ExchangeAEvent[] = [{ market: head[3]!, asset_id: head[2]!, timestamp, hash: head[5]!, event_type: 'price_change', changes }];
  return line('exchange-a', head[1]!, new ScannedFrame(text, frameStart(head[1]!), SHAPE_A, NO_PARTS, records));
}

const NO_PARTS: readonly string[] = [];

function scanB(text: string): CaptureLine | null {
  const d = B_DELTA.exec(text);
  if (d !== null) {
    if (NEGATIVE_ZERO.test(d[7]!)) return null;
    const parts = [d[2]!, d[3]!, d[4]!, d[6]!, d[7]!, d[8]!, d[9]!, d[5]!];
    return line('exchange-b', d[1]!, new ScannedFrame(text, frameStart(d[1]!), SHAPE_B_DELTA, parts, null));
  }
  const c = B_DELTA_CENTS.exec(text);
  if (c === null || NEGATIVE_ZERO.test(c[6]!)) return null;
  const parts = [c[2]!, c[3]!, c[4]!, c[5]!, c[6]!, c[7]!, c[8]!];
  return line('exchange-b', c[1]!, new ScannedFrame(text, frameStart(c[1]!), SHAPE_B_DELTA_CENTS, parts, null));
}
