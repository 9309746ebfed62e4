import { createPublicKey } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExchangeAVenue } from './exchange-a.venue.ts';
import { ExchangeBVenue } from './exchange-b.venue.ts';
import { handleGamma } from './gamma.routes.ts';
import { Rng, deriveSeed } from './prng.ts';
import { newCounters, rejectUpgrade, type VenueCounters } from './venue-common.ts';
import { buildWorld, type MarketsOption } from './world.ts';

export type SimVenue = 'exchange-a' | 'exchange-b';

export interface SimulatorOptions {
  /** Loopback only by default. */
  host?: string;
  /** 0 = any free port. */
  port?: number;
  markets?: MarketsOption;
  /** Events generated per second across both venues (spread evenly over subscribed markets). Default 100. */
  eventsPerSecond?: number;
  /** Seed of every random choice: markets, ids, books and each market's event sequence. Default 1. */
  seed?: number;
  /** When both are given, the exchange B endpoint requires a valid RSA-PSS signature (else HTTP 401). */
  kalshiKeyId?: string;
  kalshiPublicKeyPem?: string;
  /** Largest accepted age of a signed timestamp. Default 5 min. */
  kalshiMaxSkewMs?: number;
  /** Mix in the venues' older shapes (A: per-asset `changes`; B: integer cents, `*_dollars`). */
  legacyShapes?: boolean;
  /** Exchange A drops connections that sent no PING for this long. Default 120 s. */
  idleMs?: number;
  /** Exchange B server ping interval. Default 10 s. */
  pingIntervalMs?: number;
  /** Emission tick. Default 10 ms. */
  tickMs?: number;
  /** Exchange A: most events batched into one array frame. Default 100. */
  maxEventsPerFrame?: number;
  /** Close (1013) a connection whose unsent data exceeds this. Default 64 MiB. */
  slowConsumerBytes?: number;
  /** Clock for event timestamps and signature checks. Default Date.now. */
  now?: () => number;
}

export interface SimulatedMarketA {
  conditionId: string;
  tokenIds: [string, string];
  slug: string;
  question: string;
  eventSlug: string;
  active: boolean;
  closed: boolean;
  enableOrderBook: boolean;
}

export interface SimulatedMarketB {
  ticker: string;
  marketId: string;
  /** Price tick in dollars. */
  tick: string;
}

export interface SimulatorStats {
  exchangeA: VenueCounters;
  exchangeB: VenueCounters;
  /** Market-level events generated since start (before fan-out to subscribers). */
  eventsGenerated: number;
  eventsPerSecond: number;
  uptimeMs: number;
}

export interface Simulator {
  urls: { exchangeA: string; exchangeB: string; gamma: string };
  markets: { exchangeA: SimulatedMarketA[]; exchangeB: SimulatedMarketB[] };
  stats(): SimulatorStats;
  setRate(eventsPerSecond: number): void;
  /** Closes every websocket abruptly (no close frame); returns how many. */
  dropConnections(venue?: SimVenue): number;
  /** Exchange B: every current subscription skips one seq on its next delta; returns how many. */
  injectSeqGap(): number;
  /** Sends a frame that is not a valid venue message to every connection. */
  injectGarbage(venue?: SimVenue): void;
  /** While stalled the venues send nothing at all (no events, PONG or pings): a half-open link. */
  stall(on: boolean): void;
  close(): Promise<void>;
}

const PATH_A = '/ws/market';
const PATH_B = '/trade-api/ws/v2';

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const host = opts.host ?? '127.0.0.1';
  const seed = opts.seed ?? 1;
  const now = opts.now ?? Date.now;
  const legacyShapes = opts.legacyShapes ?? false;
  const idleMs = opts.idleMs ?? 120_000;
  const tickMs = opts.tickMs ?? 10;
  let rate = validRate(opts.eventsPerSecond ?? 100);
  let stalled = false;

  const world = buildWorld(seed, opts.markets, legacyShapes);
  const slowConsumerBytes = opts.slowConsumerBytes ?? 64 * 1024 * 1024;
  const a = new ExchangeAVenue(
    world,
    {
      idleMs,
      maxEventsPerFrame: Math.max(1, opts.maxEventsPerFrame ?? 100),
      legacyShapes,
      slowConsumerBytes,
      now,
      isStalled: () => stalled,
    },
    newCounters(),
  );
  const auth =
    opts.kalshiKeyId !== undefined && opts.kalshiPublicKeyPem !== undefined
      ? { keyId: opts.kalshiKeyId, publicKey: createPublicKey(opts.kalshiPublicKeyPem), maxSkewMs: opts.kalshiMaxSkewMs ?? 300_000 }
      : null;
  const b = new ExchangeBVenue(world, { legacyShapes, slowConsumerBytes, auth, now }, newCounters());
  /** The simulated venues, keyed by venue; `servers(undefined)` is all of them, in venue order. */
  const byVenue: Record<SimVenue, { dropAll(): number; garbage(): void }> = { 'exchange-a': a, 'exchange-b': b };
  const servers = (venue?: SimVenue) => (venue === undefined ? Object.values(byVenue) : [byVenue[venue]]);

  const server: Server = createServer((req, res) => {
    try {
      if (handleGamma(world, req, res)) return;
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not found' }));
    } catch {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad request' }));
    }
  });
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => undefined);
    const path = new URL(req.url ?? '/', 'http://simulator').pathname;
    if (path === PATH_A) a.upgrade(req, socket, head);
    else if (path === PATH_B) b.upgrade(req, socket, head, path);
    else rejectUpgrade(socket, 404, 'Not Found', `no websocket at ${path}`);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const hostPart = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const base = `${hostPart}:${addr.port}`;

  // Emission: every tick turns the elapsed time into an event budget, spends it on randomly
  // chosen subscribed markets (each market equally likely), then flushes one batch per socket.
  const select = new Rng(deriveSeed(seed, 'select'));
  const startedAt = Date.now();
  let last = performance.now();
  let carry = 0;
  let generated = 0;
  const tick = (): void => {
    const t = performance.now();
    const dt = Math.min(t - last, 250); // after a stall, do not burst the backlog
    last = t;
    const nA = a.active.size;
    const nB = b.active.size;
    if (stalled || nA + nB === 0 || rate === 0) {
      carry = 0;
      return;
    }
    let budget = carry + (rate * dt) / 1000;
    const ms = now();
    const ts = String(ms);
    const itemsA = a.active.items;
    const itemsB = b.active.items;
    while (budget >= 1) {
      const i = select.int(nA + nB);
      const used = i < nA ? a.emit(itemsA[i]!, ts) : b.emit(itemsB[i - nA]!, ms);
      budget -= used;
      generated += used;
    }
    carry = budget;
    a.flush();
    b.flush();
  };
  const tickTimer = setInterval(tick, tickMs);
  const idleTimer = setInterval(() => a.sweepIdle(now()), Math.max(10, Math.min(1000, idleMs / 4)));
  const pingTimer = setInterval(() => {
    if (!stalled) b.pingAll();
  }, opts.pingIntervalMs ?? 10_000);

  let closing: Promise<void> | null = null;
  return {
    urls: { exchangeA: `ws://${base}${PATH_A}`, exchangeB: `ws://${base}${PATH_B}`, gamma: `http://${base}` },
    markets: {
      exchangeA: world.a.map((m) => ({
        conditionId: m.conditionId,
        tokenIds: [m.tokenIds[0], m.tokenIds[1]],
        slug: m.slug,
        question: m.question,
        eventSlug: m.event.slug,
        active: m.active,
        closed: m.closed,
        enableOrderBook: m.enableOrderBook,
      })),
      exchangeB: world.b.map((m) => ({ ticker: m.ticker, marketId: m.marketId, tick: m.book.params.tick === 1 ? '0.001' : '0.01' })),
    },
    stats: () => ({
      exchangeA: { ...a.counters },
      exchangeB: { ...b.counters },
      eventsGenerated: generated,
      eventsPerSecond: rate,
      uptimeMs: Date.now() - startedAt,
    }),
    setRate: (n) => {
      rate = validRate(n);
    },
    dropConnections: (venue) => servers(venue).reduce((n, s) => n + s.dropAll(), 0),
    injectSeqGap: () => b.injectSeqGap(),
    injectGarbage: (venue) => {
      for (const s of servers(venue)) s.garbage();
    },
    stall: (on) => {
      stalled = on;
    },
    close: () => {
      closing ??= (async () => {
        clearInterval(tickTimer);
        clearInterval(idleTimer);
        clearInterval(pingTimer);
        a.close();
        b.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}

function validRate(n: number): number {
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`eventsPerSecond must be a finite number >= 0, got ${n}`);
  return n;
}
