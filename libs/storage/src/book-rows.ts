import type { BookRecord } from '@booktape/book';
import type { ExchangeAEvent, ExchangeBRecord, PriceChange, PriceLevel, Venue } from '@booktape/domain';
import { A_HASH_SQL, formatScaled, SCALE_ABSENT, SCALE_NULL } from './raw-codec.ts';

/**
 * What the book readers (the rollup, the book at any instant) read of a raw row: the typed
 * columns a book and its cross-checks need, as one compact JSON array per row, and not the
 * served `payload`, whose rebuild in the engine costs more than the read itself (an
 * asset-day of 200,000 rows: 0.34 s for these columns against 1.8 s for the rebuilt payload
 * and 0.8 s for the JSON text the tables held before migration 012). A row with a residue
 * carries it, and is read from it.
 *
 * Queries that select BOOK_ROW_SQL end with BOOK_ROW_SETTINGS: mantissas are Int64, which
 * JSON would otherwise quote (clickhouse.ts sets that for every query).
 */
export const BOOK_ROW_SETTINGS = 'output_format_json_quote_64bit_integers = 0';

const LEVELS = (side: string) => `${side}_price, ${side}_price_scale, ${side}_size, ${side}_size_scale`;

export const BOOK_ROW_SQL: Record<Venue, string> = {
  'exchange-a': `toJSONString(tuple(toUnixTimestamp64Milli(event_ts), event_type, ${A_HASH_SQL}, residue, ${LEVELS('bid')}, ${LEVELS('ask')},
    chg_price, chg_price_scale, CAST(chg_side AS Array(Int8)), chg_size, chg_size_scale, chg_hash,
    chg_best_bid, chg_best_bid_scale, chg_best_ask, chg_best_ask_scale))`,
  'exchange-b': `toJSONString(tuple(toUnixTimestamp64Milli(event_ts), record_type, residue, sid, seq, expected_seq,
    yes_null, ${LEVELS('yes')}, no_null, ${LEVELS('no')}, side, price, price_scale, delta, delta_scale))`,
};

type Scales = [number[], number[], number[], number[]];

/**
 * Decimal texts by (mantissa, scale): a book's prices and sizes repeat all day, and making
 * the text again for every level of every row is most of what reading a row costs. Bounded:
 * cleared when full.
 */
const TEXTS = new Map<number, string>();
const TEXTS_MAX = 1 << 16;

function decimalText(m: number, s: number): string {
  // Exact as a key while |m| < 2^44 (a key is m · 512 + s); larger mantissas are not cached.
  if (m >= 2 ** 44 || m <= -(2 ** 44)) return formatScaled(m, s);
  const key = m * 512 + s;
  let t = TEXTS.get(key);
  if (t === undefined) {
    if (TEXTS.size >= TEXTS_MAX) TEXTS.clear();
    t = formatScaled(m, s);
    TEXTS.set(key, t);
  }
  return t;
}

function levels([p, ps, z, zs]: Scales): PriceLevel[] {
  const out: PriceLevel[] = new Array(p.length);
  for (let i = 0; i < p.length; i++) out[i] = { price: decimalText(p[i]!, ps[i]!), size: decimalText(z[i]!, zs[i]!) };
  return out;
}

function pairs([p, ps, z, zs]: Scales): [string, string][] {
  const out: [string, string][] = new Array(p.length);
  for (let i = 0; i < p.length; i++) out[i] = [decimalText(p[i]!, ps[i]!), decimalText(z[i]!, zs[i]!)];
  return out;
}

function claim(m: number, s: number): string | undefined {
  return s === SCALE_ABSENT ? undefined : decimalText(m, s);
}

const SIDES = ['', 'BUY', 'SELL'] as const;

/**
 * One exchange A row (BOOK_ROW_SQL) as the record the book engine and the checks read: the
 * record's own fields, not the venue's extras (no book reads them). `market` and `asset` are
 * the ones the read was for.
 */
export function exchangeABookRecord(text: string, market: string, asset: string): ExchangeAEvent {
  const r = JSON.parse(text) as unknown[];
  if (r[3] !== '') return JSON.parse(r[3] as string) as ExchangeAEvent;
  const ev: ExchangeAEvent = { market, asset_id: asset, timestamp: String(r[0]), hash: r[2] as string, event_type: r[1] as string };
  if (ev.event_type === 'book') {
    ev.bids = levels(r.slice(4, 8) as Scales);
    ev.asks = levels(r.slice(8, 12) as Scales);
  } else if (ev.event_type === 'price_change') {
    const [p, ps, sd, z, zs, h, bb, bbs, ba, bas] = r.slice(12, 22) as [number[], number[], number[], number[], number[], string[], number[], number[], number[], number[]];
    const changes: PriceChange[] = new Array(p.length);
    for (let i = 0; i < p.length; i++) {
      const c: PriceChange = { price: decimalText(p[i]!, ps[i]!), side: SIDES[sd[i]!] as 'BUY' | 'SELL', size: decimalText(z[i]!, zs[i]!) };
      if (h[i] !== '') c.hash = h[i]!;
      const bid = claim(bb[i]!, bbs[i]!);
      if (bid !== undefined) c.best_bid = bid;
      const ask = claim(ba[i]!, bas[i]!);
      if (ask !== undefined) c.best_ask = ask;
      changes[i] = c;
    }
    ev.changes = changes;
  }
  return ev;
}

/** One exchange B row (BOOK_ROW_SQL) as the record the book engine and the checks read. */
export function exchangeBBookRecord(text: string, ticker: string): ExchangeBRecord {
  const r = JSON.parse(text) as unknown[];
  if (r[2] !== '') return JSON.parse(r[2] as string) as ExchangeBRecord;
  const ms = r[0] as number;
  const rec: ExchangeBRecord = { type: r[1] as ExchangeBRecord['type'], ticker, timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: r[3] as number | null, seq: r[4] as number | null };
  if (rec.type === 'snapshot') {
    rec.yes = r[6] === 1 ? null : pairs(r.slice(7, 11) as Scales);
    rec.no = r[11] === 1 ? null : pairs(r.slice(12, 16) as Scales);
  } else if (rec.type === 'delta') {
    rec.side = r[16] as 'yes' | 'no';
    rec.price = (r[18] as number) >= SCALE_NULL ? null : decimalText(r[17] as number, r[18] as number);
    rec.delta = (r[20] as number) >= SCALE_NULL ? null : decimalText(r[19] as number, r[20] as number);
  } else if (rec.type === 'gap' && r[5] !== null) {
    rec.expected_seq = r[5] as number;
  }
  return rec;
}

/** A row of `venue` (BOOK_ROW_SQL) as its book record. */
export function bookRecordOf(venue: Venue, text: string, market: string, asset: string): BookRecord {
  return venue === 'exchange-a' ? exchangeABookRecord(text, market, asset) : exchangeBBookRecord(text, market);
}
