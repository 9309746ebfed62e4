import { bookAt, type BookReader } from '@booktape/summaries';
import type { WebSocket } from 'ws';
import type { ReplayRepository } from '@booktape/storage';
import { ExchangeAFrameWriter, openingBook, type OutFrame } from './exchange-a.frames.ts';
import { ReplaySocket, type ReplayOutcome, type ReplayWindow, type VenueReplay } from './replay-socket.ts';

/**
 * One exchange A replay on an open websocket (issue 25): the market channel as the venue
 * speaks it (docs/rules/venue-frames.md). The client subscribes with
 * `{"assets_ids": [...], "type": "market"}` (any case; `asset_ids` too); then it gets one
 * array of `book`s, the book of each asset at the window's start (assets whose book is
 * unknown then get none: their first stored `book` comes in its time), then every stored
 * event of those assets, and their markets' market-level events, in serving order, and
 * a close 1000 after the window's last event. `PING` is answered `PONG`; `operation:
 * unsubscribe` stops an asset's events; a later `subscribe` adds nothing to a running
 * replay (its read is chosen at the start). A message that is neither gets the text
 * `INVALID OPERATION`, and the socket stays open for a good one.
 */

/** Asset ids one replay may name (the venue's practical limit is a few hundred a connection). */
export const MAX_ASSETS = 500;
/** Levels a side of the opening books: all of them. */
const FULL_DEPTH = 1_000_000;

export interface ExchangeADeps {
  books: BookReader;
  replay: ReplayRepository;
  assetMarkets: { marketOfAsset(asset: string): Promise<string | null> };
}

type Subscribe = { op: 'subscribe' | 'unsubscribe'; assets: string[] };

/** A market channel message: subscribe (first message or `operation`), unsubscribe, or null when it is neither. */
export function parseSubscribe(text: string): Subscribe | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const m = v as Record<string, unknown>;
  const ids = m.assets_ids ?? m.asset_ids;
  if (!Array.isArray(ids) || !ids.every((a) => typeof a === 'string' && a !== '' && a.length <= 128)) return null;
  const op = typeof m.operation === 'string' ? m.operation.toLowerCase() : undefined;
  const type = typeof m.type === 'string' ? m.type.toLowerCase() : undefined;
  if (op === 'unsubscribe') return { op, assets: ids as string[] };
  if (op === 'subscribe' || (op === undefined && (type === 'market' || type === undefined))) return { op: 'subscribe', assets: ids as string[] };
  return null;
}

export function runExchangeA(ws: WebSocket, w: ReplayWindow, deps: ExchangeADeps): Promise<ReplayOutcome> {
  const s = new ReplaySocket(ws, w);
  let subscribed: Set<string> | null = null;
  s.onText((text) => {
    if (text.trim().toUpperCase() === 'PING') return s.control('PONG');
    const sub = parseSubscribe(text);
    if (sub === null) return s.control('INVALID OPERATION');
    if (sub.op === 'unsubscribe') {
      for (const a of sub.assets) subscribed?.delete(a);
      return;
    }
    if (subscribed !== null) return; // a running replay reads what it was started with
    subscribed = new Set(sub.assets);
    s.start(() => stream([...subscribed!]));
  });

  async function stream(assets: string[]): Promise<void> {
    if (assets.length > MAX_ASSETS) return s.finish('refused', 1008, `at most ${MAX_ASSETS} asset ids per replay`);
    const markets = await marketsOf(assets);
    if (markets.size === 0) return s.finish('refused', 1008, 'no stored data for these asset ids');
    const opening = [];
    for (const a of assets) {
      const market = markets.get(a);
      if (market === undefined) continue;
      const b = await bookAt(deps.books, { venue: 'exchange-a', market, asset: a }, w.fromMs - 1, FULL_DEPTH);
      if (b.known) opening.push(openingBook(a, market, b.sides[0], b.sides[1], b.asOfMs ?? w.fromMs - 1));
    }
    const enc = new ExchangeAFrameWriter();
    const out: OutFrame[] = [];
    let next = 0;
    /** Sends the frames written so far while they may go at once (trySend); false: the rest must wait (sendRest). */
    const sendNow = (): boolean => {
      for (; next < out.length; next++) if (!s.trySend(out[next]!.text, out[next]!.ts)) return false;
      out.length = 0;
      next = 0;
      return true;
    };
    const sendRest = async (): Promise<void> => {
      for (; next < out.length; next++) await s.sendAt(out[next]!.text, out[next]!.ts);
      out.length = 0;
      next = 0;
    };
    // Typed reads: each record's frame is written here from its columns (exchange-a.frames.ts).
    const batches = deps.replay.recordsA([...new Set(markets.values())], w.fromMs, w.toMs, { assets: [...markets.keys()], signal: s.signal });
    try {
      // The first rows are read before the clock starts: a paced replay starts on time.
      let b = await batches.next();
      await s.send(JSON.stringify(opening));
      s.clockStarts();
      for (; !b.done; b = await batches.next()) {
        const records = b.value;
        for (let i = 0; i < records.length; i++) {
          const rec = records[i]!;
          const pause = s.breathe();
          if (pause) await pause;
          // Checked record by record: an unsubscribe stops an asset's events from the next one on.
          if (rec.asset !== '' && !subscribed!.has(rec.asset)) continue;
          enc.push(rec, out);
          if (out.length > 0 && !sendNow()) await sendRest();
        }
      }
    } finally {
      // Ends the read (no further sub-read starts) on every way out.
      await batches.return(undefined);
    }
    enc.end(out);
    await sendRest();
    s.finish('done', 1000, 'end of the replay window');
  }

  /** asset → market: the rollups know rolled-up assets; the rest from the window's raw records. */
  async function marketsOf(assets: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const unique = [...new Set(assets)];
    const known = await Promise.all(unique.map((a) => deps.assetMarkets.marketOfAsset(a)));
    unique.forEach((a, i) => known[i] && out.set(a, known[i]!));
    const rest = unique.filter((a) => !out.has(a));
    if (rest.length > 0) for (const [a, m] of await deps.replay.marketsOfAssets(rest, w.fromMs, w.toMs)) out.set(a, m);
    return out;
  }

  return s.outcome;
}

export const exchangeAReplay: VenueReplay<ExchangeADeps> = {
  venue: 'exchange-a',
  path: '/exchange-a/replay/ws/market',
  summary: 'Exchange A replay over the market channel websocket protocol',
  description:
    'A websocket (upgrade this GET) that replays stored history the way the venue sends it live: send the market channel subscribe message ' +
    '`{"assets_ids": [...], "type": "market"}`; the answer is one array of `book`s (each asset\'s full book at `from`, where known), then every stored event of those assets ' +
    '(book, price_change, last_trade_price, tick_size_change, …) in serving order in the venue\'s shapes, then a close with code 1000. `PING` is answered `PONG`.',
  run: runExchangeA,
};
