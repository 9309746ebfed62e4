import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { BinaryBook } from './binary-book.ts';
import { Rng, deriveSeed } from './prng.ts';
import { VenueConnection } from './venue-common.ts';

/*
 * The simulated markets and the connections subscribed to them. Markets and subscriptions
 * point at each other, so both live here and the venues only import this module.
 */

/** An exchange A (Polymarket) market to simulate; every field missing is generated from the seed. */
export interface ExchangeAMarketSpec {
  conditionId?: string;
  /** [YES token, NO token]. */
  tokenIds?: [string, string];
  slug?: string;
  question?: string;
  eventSlug?: string;
  eventTitle?: string;
  active?: boolean;
  closed?: boolean;
  enableOrderBook?: boolean;
  negRisk?: boolean;
}

/** An exchange B (Kalshi) market to simulate. */
export interface ExchangeBMarketSpec {
  ticker: string;
  /** Price tick in dollars (default 0.01). */
  tick?: 0.01 | 0.001;
  /** Fractional contract sizes (default false). */
  fractional?: boolean;
}

export interface MarketsOption {
  /** A count (generated markets) or explicit markets. Default 4. */
  exchangeA?: number | ExchangeAMarketSpec[];
  /** A count (generated tickers) or explicit tickers. Default 4. */
  exchangeB?: number | Array<string | ExchangeBMarketSpec>;
}

export class SimMarketA {
  /** Subscribed connections and which tokens they follow (bit 1 = YES, bit 2 = NO). */
  readonly subscribers = new Map<ExchangeAConnection, number>();
  /** Subscribers that follow only one of the two tokens (they need filtered frames). */
  partialSubscribers = 0;
  /** Position in the venue's list of markets with subscribers, -1 when none. */
  activeIndex = -1;
  tickSize: '0.01' | '0.001' = '0.01';
  /** Last trade price of the YES token in thousandths. */
  lastTrade: number;
  /**
   * Randomness used on subscription (book hashes), kept apart from `rng` so that a market's
   * event sequence does not depend on when or how often clients subscribe.
   */
  readonly aux: Rng;

  constructor(
    readonly index: number,
    readonly id: string,
    readonly conditionId: string,
    readonly tokenIds: [string, string],
    readonly slug: string,
    readonly question: string,
    readonly event: SimEventA,
    readonly active: boolean,
    readonly closed: boolean,
    readonly enableOrderBook: boolean,
    readonly negRisk: boolean,
    readonly book: BinaryBook,
    readonly rng: Rng,
  ) {
    this.aux = new Rng(rng.u32());
    const [bid, ask] = book.yesTop();
    this.lastTrade = bid > 0 && ask < 1000 ? Math.round((bid + ask) / 20) * 10 : 500;
  }
}

export interface SimEventA {
  id: string;
  slug: string;
  title: string;
  markets: SimMarketA[];
}

export class SimMarketB {
  readonly subscriptions = new Set<ExchangeBSubscription>();
  activeIndex = -1;
  /** Randomness used on subscription (snapshot shape), apart from the event sequence's `rng`. */
  readonly aux: Rng;

  constructor(
    readonly index: number,
    readonly ticker: string,
    readonly marketId: string,
    readonly book: BinaryBook,
    readonly rng: Rng,
  ) {
    this.aux = new Rng(rng.u32());
  }
}

export class ExchangeAConnection extends VenueConnection {
  readonly assets = new Set<string>();

  constructor(
    id: number,
    ws: WebSocket,
    socket: Duplex,
    public lastPingAt: number,
  ) {
    super(id, ws, socket);
  }
}

export class ExchangeBSubscription {
  seq = 0;
  /** Skip one seq number on the next delta (fault injection). */
  skipNext = false;
  readonly markets = new Set<SimMarketB>();

  constructor(
    readonly sid: number,
    readonly conn: ExchangeBConnection,
  ) {}
}

export class ExchangeBConnection extends VenueConnection {
  readonly subs = new Map<number, ExchangeBSubscription>();
}

export interface World {
  a: SimMarketA[];
  events: SimEventA[];
  b: SimMarketB[];
  /** token id → [market, 0 = YES | 1 = NO] */
  tokens: Map<string, [SimMarketA, 0 | 1]>;
  tickers: Map<string, SimMarketB>;
}

function uuid(rng: Rng): string {
  const h = rng.hex(32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

export function buildWorld(seed: number, markets: MarketsOption | undefined, legacyShapes: boolean): World {
  const gen = new Rng(deriveSeed(seed, 'world'));
  const specsA: ExchangeAMarketSpec[] =
    typeof markets?.exchangeA === 'object' ? markets.exchangeA : new Array(markets?.exchangeA ?? 4).fill(0).map(() => ({}));
  const specsB: ExchangeBMarketSpec[] =
    typeof markets?.exchangeB === 'object'
      ? markets.exchangeB.map((m) => (typeof m === 'string' ? { ticker: m } : m))
      : new Array(markets?.exchangeB ?? 4).fill(0).map((_, i) => ({
          ticker: `KXSIM-26DEC31-T${100 + i}`,
          // One generated market in four ticks at $0.001 with fractional sizes (the 2026 shapes).
          ...(i % 4 === 3 && !legacyShapes ? { tick: 0.001 as const, fractional: true } : {}),
        }));

  const events: SimEventA[] = [];
  const eventsBySlug = new Map<string, SimEventA>();
  const a: SimMarketA[] = [];
  const tokens = new Map<string, [SimMarketA, 0 | 1]>();
  let generatedLeft = 0; // markets left in the current generated event
  let current: SimEventA | null = null;

  specsA.forEach((spec, i) => {
    let event: SimEventA;
    if (spec.eventSlug !== undefined) {
      const found = eventsBySlug.get(spec.eventSlug);
      if (found) event = found;
      else {
        event = { id: String(90000 + events.length), slug: spec.eventSlug, title: spec.eventTitle ?? spec.eventSlug, markets: [] };
        events.push(event);
        eventsBySlug.set(event.slug, event);
      }
    } else {
      if (current === null || generatedLeft === 0) {
        const k = events.length;
        current = { id: String(90000 + k), slug: `sim-event-${k}`, title: `Simulated event ${k}`, markets: [] };
        events.push(current);
        eventsBySlug.set(current.slug, current);
        generatedLeft = 1 + gen.int(3);
      }
      generatedLeft--;
      event = current;
    }
    const conditionId = (spec.conditionId ?? `0x${gen.hex(64)}`).toLowerCase();
    const tokenIds: [string, string] = spec.tokenIds ?? [gen.digits(77), gen.digits(77)];
    const rng = new Rng(deriveSeed(seed, 'exchange-a', conditionId));
    const book = new BinaryBook({ tick: 10, fractional: true, targetLevels: 10 }, rng);
    const m = new SimMarketA(
      i,
      String(500000 + i),
      conditionId,
      tokenIds,
      spec.slug ?? `will-simulated-outcome-${i}-happen`,
      spec.question ?? `Will simulated outcome ${i} happen?`,
      event,
      spec.active ?? true,
      spec.closed ?? false,
      spec.enableOrderBook ?? true,
      spec.negRisk ?? false,
      book,
      rng,
    );
    event.markets.push(m);
    a.push(m);
    tokens.set(tokenIds[0], [m, 0]);
    tokens.set(tokenIds[1], [m, 1]);
  });

  const tickers = new Map<string, SimMarketB>();
  const b = specsB.map((spec, i) => {
    const ticker = spec.ticker.toUpperCase();
    const rng = new Rng(deriveSeed(seed, 'exchange-b', ticker));
    const fine = spec.tick === 0.001 && !legacyShapes;
    const book = new BinaryBook(
      { tick: fine ? 1 : 10, fractional: (spec.fractional ?? false) && !legacyShapes, targetLevels: 8 },
      rng,
    );
    const m = new SimMarketB(i, ticker, uuid(gen), book, rng);
    tickers.set(ticker, m);
    return m;
  });

  return { a, events, b, tokens, tickers };
}
