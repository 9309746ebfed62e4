/**
 * The records that flow from capture through Kafka into ClickHouse.
 *
 * A venue frame (one websocket message) is normalised into zero or more records. Every
 * record carries its lineage, so that any stored row can be traced to the frame and the
 * capture process that produced it, and a deterministic dedup id, so that a replayed file
 * or a re-consumed Kafka batch stores nothing twice.
 */

import { receiveTimeError } from './ids.ts';

export type Venue = 'exchange-a' | 'exchange-b';
export const VENUES: readonly Venue[] = ['exchange-a', 'exchange-b'];

/**
 * A price level as the interface shows it: decimal strings exactly as the venue sent them
 * ("0.50" stays "0.50"; a JSON number becomes its shortest decimal text). Never floats.
 * The book engine normalises internally; raw records keep the venue's text.
 */
export interface PriceLevel {
  price: string;
  size: string;
}

/**
 * One changed level. Since 2025-09-15 every entry of a `price_change` list carries its own
 * `hash` and the venue's `best_bid` / `best_ask` after it: a claim the rollup checks against
 * the rebuilt book (docs/rules/data.md, cross-checks). Kept per entry, as received.
 */
export interface PriceChange {
  price: string;
  side: 'BUY' | 'SELL';
  size: string;
  hash?: string;
  best_bid?: string;
  best_ask?: string;
}

/**
 * Exchange A (Polymarket) raw event, interface section 2.1, without lineage.
 * `event_type` is `book` or `price_change` for book events; every other event type is
 * stored as it came (its remaining fields in `extra`).
 */
export interface ExchangeAEvent {
  market: string; // condition id, lower-case, 0x-prefixed
  asset_id: string; // '' for market-level events that name no asset
  timestamp: string; // event time, milliseconds since the epoch, as a decimal string
  hash: string; // venue hash, or a content hash where the venue sends none
  event_type: string;
  bids?: PriceLevel[];
  asks?: PriceLevel[];
  changes?: PriceChange[];
  /** Venue fields that are not part of 2.1 but worth keeping (tick_size, best_bid, …). */
  extra?: Record<string, unknown>;
}

/**
 * Exchange B (Kalshi) raw record, interface section 2.2, without lineage.
 * Prices are dollars and sizes contracts, decimal strings as the venue sent them where it
 * sent dollar strings (`"0.4200"`, `"20.00"`); legacy integer cents become dollars.
 * `type`: `snapshot`, `delta`, `gap` (capture saw a `seq` gap on the subscription, so the
 * book of this ticker is unknown until the next snapshot; see docs/rules/summaries.md, rule 4), or a
 * non-book message of another channel (`ticker`, `trade`), stored with its `msg` in `data`.
 */
export type ExchangeBRecordType = 'snapshot' | 'delta' | 'gap' | 'ticker' | 'trade';

export interface ExchangeBRecord {
  type: ExchangeBRecordType;
  ticker: string; // upper-case
  timestamp: string; // ISO 8601 with offset: the capture's receive time, the event time for B
  epoch_ms: number; // the same instant in Unix milliseconds
  sid: number | null;
  seq: number | null;
  /** snapshot: [price, size] pairs, best last; null when the venue's price payload was null. */
  yes?: [string, string][] | null;
  no?: [string, string][] | null;
  /** delta: the side, price and signed size change; price null when the payload was null. */
  side?: 'yes' | 'no';
  price?: string | null;
  delta?: string | null;
  /** the venue's own time where it sent one (`ts` or `ts_ms`), ISO 8601. */
  venue_ts?: string | null;
  market_id?: string | null;
  /** gap: the seq capture expected and the one that arrived. */
  expected_seq?: number;
  /** ticker / trade: the venue's `msg` as received (minus nothing). */
  data?: Record<string, unknown>;
}

/** Lineage common to both venues' stored records. */
export interface Lineage {
  /** ISO 8601 (UTC, milliseconds) time the capture received the frame. */
  received_at: string;
  worker_id: number;
  /**
   * Order in which capture received the records of one venue, deterministic for a frame:
   * received_ms * 2^23 + frameIndexWithinMs * 2^11 + recordIndexWithinFrame.
   * A replayed capture file therefore yields the same sequence numbers it had live.
   */
  ingest_seq: string; // UInt64 as a decimal string (exceeds 2^53)
  /**
   * Deterministic identity used for deduplication: A, a hash of the venue hash with the event's
   * content and time (one venue hash can carry different changes); B, a hash of the receive
   * time, sid, seq and content. A byte-identical re-send yields the same id.
   */
  dedup_id: string;
}

export interface ExchangeAMessage extends Lineage {
  venue: 'exchange-a';
  event: ExchangeAEvent;
}

export interface ExchangeBMessage extends Lineage {
  venue: 'exchange-b';
  record: ExchangeBRecord;
}

/**
 * One record as capture produces it. Kafka carries the records of one market and frame
 * together in one value keyed by market: binary, or a JSON array before issue 23
 * (docs/rules/kafka-records.md; message-codec in libs/messaging).
 */
export type RawMessage = ExchangeAMessage | ExchangeBMessage;


/** A frame that could not be parsed: goes to the dead-letter topic, never crashes capture. */
export interface DeadLetter {
  venue: Venue;
  received_at: string;
  reason: string;
  frame: string; // the raw text as received
}

/** A capture gap: a connection was down, or a venue sequence skipped. */
export interface CaptureGap {
  venue: Venue;
  connection_id: string;
  started_at: string; // ISO
  ended_at: string | null; // ISO, null while still open
  reason: string;
  markets: string[];
}

/**
 * A capture gap from outside (a Kafka message, a capture file line), checked field by field:
 * what the gaps table would refuse forever, or store as something else, is an error.
 * A missing `ended_at` is an open gap.
 */
export function parseCaptureGap(v: unknown): { gap: CaptureGap } | { error: string } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { error: `a JSON ${v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v}, not an object` };
  const g = v as Record<string, unknown>;
  const { venue, connection_id, reason, started_at, markets } = g;
  const ended_at = g['ended_at'] ?? null;
  if (!VENUES.includes(venue as Venue)) return { error: `unknown venue ${JSON.stringify(venue ?? null)}` };
  if (typeof connection_id !== 'string' || connection_id === '') return { error: 'connection_id missing or not a string' };
  if (typeof reason !== 'string') return { error: 'reason missing or not a string' };
  const time = receiveTimeError('started_at', started_at) ?? (ended_at === null ? null : receiveTimeError('ended_at', ended_at));
  if (time !== null) return { error: time };
  if (!Array.isArray(markets) || !markets.every((m) => typeof m === 'string')) return { error: 'markets is not a list of strings' };
  return { gap: { venue: venue as Venue, connection_id, started_at: started_at as string, ended_at: ended_at as string | null, reason, markets: markets as string[] } };
}

/**
 * A connection boundary in a capture file: sequence state (exchange B `sid`/`seq`) belongs
 * to a connection, so replay resets it here (and at the start of every file).
 */
export interface CaptureBoundary {
  kind: 'connect' | 'disconnect';
  connection_id: string;
  reason?: string;
}

/**
 * One line of a capture file (docs/rules/capture-files.md): a websocket frame; or (no `frame`) a connection
 * boundary `{"venue","received_at","boundary":{…}}`; or a capture gap as capture reported it
 * live `{"venue","received_at","gap":{…CaptureGap}}`, so that a replayed file reproduces the
 * coverage (disconnects) the live capture recorded.
 */
export interface CaptureLine {
  venue: Venue;
  received_at: string;
  frame?: unknown;
  boundary?: CaptureBoundary;
  gap?: CaptureGap;
}

