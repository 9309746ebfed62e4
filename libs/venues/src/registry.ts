import {
  normaliseFullConditionId,
  normaliseTicker,
  VENUES,
  type ExchangeAEvent,
  type ExchangeAMessage,
  type ExchangeBMessage,
  type ExchangeBRecord,
  type RawMessage,
  type Venue,
} from '@booktape/domain';
import { normaliseExchangeA } from './exchange-a.normaliser.ts';
import { ExchangeBNormaliser } from './exchange-b.normaliser.ts';
import type { NormaliseResult } from './normalise.types.ts';

/**
 * The venue registry: everything that differs between the venues, in one entry per venue,
 * so that storage, the summary reader, the command line and the API look a venue up here
 * instead of comparing its name. A third venue is one more entry (and the parts keyed by
 * venue next to the code that needs them: the storage codec in libs/storage, the book
 * engines in libs/book, the API's parameter parsers in apps/api), and the type checker
 * names every place that lacks it.
 */

/** The stored message of a venue. */
export type MessageOf<V extends Venue> = Extract<RawMessage, { venue: V }>;
/** The record (2.1 event or 2.2 record) a venue's messages carry. */
export type RecordOf<V extends Venue> = V extends 'exchange-a' ? ExchangeAEvent : ExchangeBRecord;

/** One venue's normaliser: websocket frames in, stored records out (stateful for a venue with sequence streams). */
export interface VenueNormaliser<V extends Venue = Venue> {
  normalise(frame: unknown, receivedAt: Date): NormaliseResult<RecordOf<V>>;
  /** A new connection starts a new capture stream (a no-op for a venue without sequence state). */
  reset(): void;
}

export interface VenueModule<V extends Venue = Venue> {
  venue: V;
  /** The short name the command line takes (`a`). */
  short: string;
  /** The venue's own name (`polymarket`), accepted wherever the venue is named. */
  ownName: string;
  /** In sentences, as `exchange A`. */
  label: string;
  /**
   * A market holds one book per outcome token (asset), named apart from the market (exchange A,
   * token ids inside a condition). false: the market is its own one book, whose asset id is
   * the market id (exchange B: a ticker, with YES/NO sides).
   */
  tokens: boolean;
  /** How a market is named and checked. */
  market: {
    /** `condition id` / `ticker`. */
    noun: string;
    /** The rule in words, as error messages state it. */
    rule: string;
    /** The full id normalised, or null when `raw` is not one. */
    normalise(raw: string): string | null;
    /** What the start of a market id (a list's prefix) may be, and that rule in words. */
    prefix: RegExp;
    prefixRule: string;
  };
  /** The two level lists of a book, in the order answers show them. */
  bookSides: readonly [string, string];
  /** Records of this venue can also be imported (PMXT archives), and capture's copy supersedes them (docs/rules/imports.md). */
  imports: boolean;
  /** The raw table (one per venue) and its columns naming the market and the asset (a B ticker is both). */
  raw: { table: string; market: string; asset: string };
  /** A stored message's market, asset (book) and event time in Unix ms (docs/rules/data.md). */
  record: {
    market(m: MessageOf<V>): string;
    asset(m: MessageOf<V>): string;
    eventMs(m: MessageOf<V>): number;
  };
  /** A new normaliser (capture resets it when a new connection starts). */
  normaliser(): VenueNormaliser<V>;
  /** How the API names the venue's parts: parameters, answer fields, OpenAPI texts (apps/api adds the parsers and schemas). */
  api: {
    /** The query parameter naming a market, the answer's field naming it, and the list answer's field of many. */
    marketParam: string;
    marketField: string;
    marketListField: string;
    /** What the venue's raw records are called. */
    recordNoun: string;
    /** Data, range and summary routes are also served under `/market/…` (the interface's first paths). */
    legacyAliases: boolean;
    /** Markets are also found by their slug (the venue's metadata API: exchange A's Gamma). */
    slugs: boolean;
    /** The query and answer field naming an outcome token, with its description; only for a venue with tokens. */
    asset?: { param: string; description: string };
    summaryTitle: string;
  };
}

const exchangeA: VenueModule<'exchange-a'> = {
  venue: 'exchange-a',
  short: 'a',
  ownName: 'polymarket',
  label: 'exchange A',
  tokens: true,
  market: {
    noun: 'condition id',
    rule: 'a condition id (0x + 64 hex digits)',
    normalise: normaliseFullConditionId,
    prefix: /^(0x)?[0-9a-f]{0,64}$/i,
    prefixRule: 'the start of a condition id (hex digits, 0x optional)',
  },
  bookSides: ['bids', 'asks'],
  imports: true,
  raw: { table: 'raw_exchange_a', market: 'market', asset: 'asset_id' },
  record: {
    market: (m: ExchangeAMessage) => m.event.market,
    asset: (m: ExchangeAMessage) => m.event.asset_id,
    eventMs: (m: ExchangeAMessage) => Number(m.event.timestamp),
  },
  normaliser: () => ({ normalise: normaliseExchangeA, reset: () => undefined }),
  api: {
    marketParam: 'condition_id',
    marketField: 'market_condition_id',
    marketListField: 'market_condition_ids',
    recordNoun: 'events',
    legacyAliases: true,
    slugs: true,
    asset: { param: 'asset_id', description: 'Outcome token (CLOB token) id within the condition.' },
    summaryTitle: 'Exchange A order-book summary of one outcome token',
  },
};

const exchangeB: VenueModule<'exchange-b'> = {
  venue: 'exchange-b',
  short: 'b',
  ownName: 'kalshi',
  label: 'exchange B',
  tokens: false,
  market: {
    noun: 'ticker',
    rule: "a ticker (A-Z, 0-9, '.', '_', '-'; up to 128)",
    normalise: normaliseTicker,
    prefix: /^[A-Za-z0-9._-]{0,128}$/,
    prefixRule: 'the start of a ticker',
  },
  bookSides: ['yes', 'no'],
  imports: false,
  raw: { table: 'raw_exchange_b', market: 'ticker', asset: 'ticker' },
  record: {
    market: (m: ExchangeBMessage) => m.record.ticker,
    asset: (m: ExchangeBMessage) => m.record.ticker,
    eventMs: (m: ExchangeBMessage) => m.record.epoch_ms,
  },
  normaliser: () => new ExchangeBNormaliser(),
  api: {
    marketParam: 'ticker',
    marketField: 'market_ticker',
    marketListField: 'market_tickers',
    recordNoun: 'records',
    legacyAliases: false,
    slugs: false,
    summaryTitle: 'Exchange B order-book summary (YES bid; YES ask implied by the NO book)',
  },
};

/** Any one venue's module (a union: each keeps its own record types). */
export type AnyVenueModule = { [V in Venue]: VenueModule<V> }[Venue];

/** Every venue's module, keyed by venue. */
export const VENUE_MODULES: { readonly [V in Venue]: VenueModule<V> } = { 'exchange-a': exchangeA, 'exchange-b': exchangeB };

/** The module of a venue. */
export function venueModule<V extends Venue>(venue: V): VenueModule<V> {
  const m = VENUE_MODULES[venue] as VenueModule<V> | undefined;
  if (m === undefined) throw new RangeError(`unknown venue ${JSON.stringify(venue)}`);
  return m;
}

/** Every venue's module, in the order of VENUES. */
export const venueModules = (): AnyVenueModule[] => VENUES.map((v) => VENUE_MODULES[v]);

/** A string that names a venue exactly (`exchange-a`), narrowed; null otherwise. */
export function asVenue(raw: unknown): Venue | null {
  return typeof raw === 'string' && Object.hasOwn(VENUE_MODULES, raw) ? (raw as Venue) : null;
}

/** `a` / `exchange-a` → exchange-a (any case, trimmed): the short names and the interface's. */
export function venueFromShortName(raw: string): Venue | null {
  const v = raw.trim().toLowerCase();
  for (const m of venueModules()) if (v === m.short || v === m.venue) return m.venue;
  return null;
}

/** `a`, `exchange-a`, `polymarket` → exchange-a (and so on for every venue; any case), else null: every name a user may type. */
export function venueFromAnyName(raw: string): Venue | null {
  const v = raw.trim().toLowerCase();
  for (const m of venueModules()) if (v === m.short || v === m.venue || v === m.ownName) return m.venue;
  return null;
}

/** The accessors of a message's own venue, typed for any message (the one place the union is dispatched). */
const accessOf = (m: RawMessage) => VENUE_MODULES[m.venue].record as unknown as { market(m: RawMessage): string; asset(m: RawMessage): string; eventMs(m: RawMessage): number };

/** The market a message belongs to (condition id or ticker): its Kafka key. */
export const marketKey = (m: RawMessage): string => accessOf(m).market(m);
/** The asset (book) a message belongs to: an outcome token, or a B ticker (its own book). */
export const messageAsset = (m: RawMessage): string => accessOf(m).asset(m);
/** Event time in Unix ms (docs/rules/data.md): A, the venue's timestamp; B, the capture's receive time. */
export const eventTimeMs = (m: RawMessage): number => accessOf(m).eventMs(m);

/** Every venue name as a non-empty tuple, for schemas that list them (`z.enum(VENUE_ENUM)`), in the order of VENUES. */
export const VENUE_ENUM = VENUES as unknown as readonly [Venue, ...Venue[]];
