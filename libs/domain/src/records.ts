/**
 * The records that flow from capture through Kafka into ClickHouse.
 *
 * A venue frame (one websocket message) is normalised into zero or more records. Every
 * record carries its lineage, so that any stored row can be traced to the frame and the
 * capture process that produced it, and a deterministic dedup id, so that a replayed file
 * or a re-consumed Kafka batch stores nothing twice.
 */

export type Venue = 'exchange-a' | 'exchange-b';
export const VENUES: readonly Venue[] = ['exchange-a', 'exchange-b'];

/** A price level as the interface shows it: exact decimal strings, never floats. */
export interface PriceLevel {
  price: string;
  size: string;
}

export interface PriceChange {
  price: string;
  side: 'BUY' | 'SELL';
  size: string;
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
 * Prices are dollars and sizes contracts, both canonical decimal strings.
 * `type`: `snapshot`, `delta`, or `gap` (capture saw a `seq` gap on the subscription, so the
 * book of this ticker is unknown until the next snapshot; see DESIGN §4 rule 4).
 */
export interface ExchangeBRecord {
  type: 'snapshot' | 'delta' | 'gap';
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
  /** Deterministic identity used for deduplication (venue hash for A, content hash for B). */
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

/** What capture produces to Kafka, one message per record, keyed by market. */
export type RawMessage = ExchangeAMessage | ExchangeBMessage;

export function marketKey(m: RawMessage): string {
  return m.venue === 'exchange-a' ? m.event.market : m.record.ticker;
}

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

/** One line of a capture file (DESIGN §6). */
export interface CaptureLine {
  venue: Venue;
  received_at: string;
  frame: unknown;
}

/** Event time in Unix ms (DESIGN §3): A, the venue's timestamp; B, the capture's receive time. */
export function eventTimeMs(m: RawMessage): number {
  return m.venue === 'exchange-a' ? Number(m.event.timestamp) : m.record.epoch_ms;
}
