import { ExchangeBBook } from '@booktape/book';
import { normaliseTicker, type ExchangeBRecord } from '@booktape/domain';
import { bookAt, type BookReader } from '@booktape/summaries';
import type { WebSocket } from 'ws';
import type { ReplayRepository } from '@booktape/storage';
import {
  ascendingPairs,
  channelFrame,
  deltaFrame,
  ERR,
  errorFrame,
  okFrame,
  parseCommand,
  snapshotFrame,
  storedSnapshotFrame,
  subscribedFrame,
  unsubscribedFrame,
  type Channel,
} from './exchange-b.frames.ts';
import { ReplaySocket, type ReplayOutcome, type ReplayWindow, type VenueReplay } from './replay-socket.ts';

/**
 * One exchange B replay on an open websocket (issue 25): trade-api v2 as the venue speaks it
 * (docs/rules/venue-frames.md). The client sends `subscribe` commands (channels
 * `orderbook_delta`, `trade`, `ticker`; `market_tickers`, or `market_ticker`); each channel
 * is answered `subscribed` with its own `sid`. The replay starts GATHER_MS after the first
 * accepted subscribe (commands sent back to back all count); then each `orderbook_delta` sid
 * gets an `orderbook_snapshot` per ticker whose book is known at the window's start (`seq`
 * 1, 2, …), and every sid the stored records of its tickers and channel in serving order with
 * continuous `seq`, then a close 1000 after the window's last record.
 *
 * Gaps. A stored `gap` record (the first capture lost a message: the book is unknown) is
 * passed on the venue's way: the sids of its ticker skip one `seq` (the client sees a gap,
 * as it would have live), and right after the skip every other ticker of the sid whose book
 * is known gets a fresh snapshot (the skip made the client forget it). A ticker whose book the
 * client has never been sent gets no deltas (the venue never sends a delta before the first
 * snapshot of a subscription); its next stored snapshot is its first. A ticker the client has
 * had a book of gets every stored delta, known or not, as the venue sent them live after the
 * lost message: so the skip is seen at the next delta even where no snapshot follows before
 * the window ends, and the client's book is unknown exactly where the stored one is. `update_subscription` `get_snapshot` is
 * answered with the current books (one that is unknown now gets its snapshot when the stored
 * data has one), `delete_markets` with `ok`; `unsubscribe` with `unsubscribed`. Bad commands
 * get the venue's `error` message and the socket stays open. Pings are answered (the
 * websocket library does) and sent every 10 s, as the venue does.
 */

/** Tickers one replay may name. */
export const MAX_TICKERS = 500;
/** After the first accepted subscribe, how long further commands are awaited before the replay starts. */
export const GATHER_MS = 100;
/** Commands waiting for an answer beyond which the client is sending faster than it reads. */
const MAX_WAITING_COMMANDS = 64;
/** Levels a side of a snapshot: all of them. */
const FULL_DEPTH = 1_000_000;
const PING_EVERY_MS = 10_000;

export interface ExchangeBDeps {
  books: BookReader;
  replay: ReplayRepository;
}

interface Sub {
  sid: number;
  channel: Channel;
  tickers: Set<string>;
  /** The last seq sent on the sid. */
  seq: number;
  /** A stored gap of one of its tickers is still to be shown (a skipped seq, then fresh snapshots). */
  gapPending: boolean;
  /** Tickers the client has been sent a snapshot of on this sid: their deltas are sent, known or not. */
  had: Set<string>;
}

const isBook = (r: ExchangeBRecord) => r.type === 'snapshot' || r.type === 'delta' || r.type === 'gap';

export function runExchangeB(ws: WebSocket, w: ReplayWindow, deps: ExchangeBDeps): Promise<ReplayOutcome> {
  const s = new ReplaySocket(ws, w, { pingEveryMs: PING_EVERY_MS });
  const subs = new Map<number, Sub>();
  let nextSid = 1;
  /** open: subscribes accepted; started: the replay's tickers are fixed. */
  let started = false;
  /** The start is scheduled (once: the first accepted subscribe). */
  let scheduled = false;
  /** The books as the client has them (tracked from the window's start); null until the replay sends. */
  let books: Map<string, ExchangeBBook> | null = null;
  let chain: Promise<void> = Promise.resolve();
  let waiting = 0;

  s.onText((text) => {
    if (++waiting > MAX_WAITING_COMMANDS) return s.finish('refused', 1008, `more than ${MAX_WAITING_COMMANDS} commands waiting for an answer: read the answers`);
    chain = chain
      .then(() => command(text))
      .then(
        () => void waiting--,
        (e: unknown) => s.fail(e),
      );
  });

  const answer = (text: string) => s.send(text);
  const error = (id: number | null, code: number, msg: string) => answer(errorFrame(id, code, msg));

  async function command(text: string): Promise<void> {
    if (s.ended) return;
    const c = parseCommand(text);
    switch (c.kind) {
      case 'error':
        return error(c.id, c.code, c.msg);
      case 'subscribe':
        return subscribe(c.id, c.channels, c.tickers);
      case 'unsubscribe': {
        for (const raw of c.sids) {
          const sub = typeof raw === 'number' ? subs.get(raw) : undefined;
          if (!sub) {
            await error(c.id, ERR.unknownSid, 'Unknown subscription ID');
            continue;
          }
          subs.delete(sub.sid);
          await answer(unsubscribedFrame(c.id, sub.sid));
        }
        if (started && subs.size === 0) s.finish('client_left', 1000, 'no subscriptions left');
        return;
      }
      case 'update': {
        const sub = subs.get(c.sid);
        if (!sub) return error(c.id, ERR.unknownSid, 'Unknown subscription ID');
        if (c.tickers === null) return error(c.id, ERR.ticker, 'Market Ticker required');
        const tickers: string[] = [];
        for (const raw of c.tickers) {
          const t = normaliseTicker(raw);
          if (t === null || !sub.tickers.has(t)) return error(c.id, ERR.market, `Not subscribed to ${raw}`);
          tickers.push(t);
        }
        if (c.action === 'get_snapshot') {
          if (sub.channel !== 'orderbook_delta') return error(c.id, ERR.action, 'Unsupported action');
          // Before the replay sends, its opening snapshots are the answer.
          if (books === null) return;
          const out = sub.gapPending ? flush(sub) : { frames: [], sent: new Set<string>() };
          for (const t of new Set(tickers)) {
            const b = books.get(t);
            if (b?.isKnown() && !out.sent.has(t)) out.frames.push(bookSnapshot(sub, t, b));
          }
          return s.sendAll(out.frames);
        }
        if (c.action === 'delete_markets') {
          for (const t of tickers) sub.tickers.delete(t);
          return answer(okFrame(c.id, sub.sid, ++sub.seq, tickers));
        }
        // add_markets would need a read the running replay does not have.
        return error(c.id, ERR.action, c.action === 'add_markets' ? 'Unsupported action: a replay reads the tickers it was subscribed to before it started' : 'Unsupported action');
      }
    }
  }

  async function subscribe(id: number | null, channels: Channel[], raw: string[]): Promise<void> {
    if (started) return error(id, ERR.process, 'Unable to process message: the replay has started; subscribe to every channel and ticker before it does (within the first 100 ms)');
    const tickers: string[] = [];
    for (const r of raw) {
      const t = normaliseTicker(r);
      if (t === null) return error(id, ERR.market, `Market not found: ${r}`);
      if (!tickers.includes(t)) tickers.push(t);
    }
    const all = new Set([...[...subs.values()].flatMap((x) => [...x.tickers]), ...tickers]);
    if (all.size > MAX_TICKERS) return error(id, ERR.process, `Unable to process message: at most ${MAX_TICKERS} market tickers per replay`);
    const stored = await deps.replay.tickersStored(tickers, w.toMs);
    const missing = raw.find((r) => !stored.has(normaliseTicker(r)!));
    if (missing !== undefined) return error(id, ERR.market, `Market not found: ${missing} (no stored data up to the window's end)`);
    if (s.ended) return;
    const frames: string[] = [];
    for (const channel of channels) {
      const sid = nextSid++;
      subs.set(sid, { sid, channel, tickers: new Set(tickers), seq: 0, gapPending: false, had: new Set() });
      frames.push(subscribedFrame(id, channel, sid));
    }
    s.subscribed();
    await s.sendAll(frames);
    if (!scheduled) {
      scheduled = true;
      setTimeout(() => {
        // Behind every command received until now (a subscribe being checked included).
        chain = chain.then(() => {
          started = true;
          if (!s.ended) s.start(stream);
        });
      }, GATHER_MS).unref();
    }
  }

  function bookSnapshot(sub: Sub, ticker: string, b: ExchangeBBook): string {
    const [yes, no] = b.bestLevels(FULL_DEPTH);
    sub.had.add(ticker);
    return snapshotFrame(sub.sid, ++sub.seq, ticker, ascendingPairs(yes), ascendingPairs(no));
  }

  /** A pending gap shown: one seq skipped, then a fresh snapshot of every known book of the sid. */
  function flush(sub: Sub): { frames: string[]; sent: Set<string> } {
    sub.gapPending = false;
    sub.seq++;
    const frames: string[] = [];
    const sent = new Set<string>();
    for (const t of sub.tickers) {
      const b = books?.get(t);
      if (b?.isKnown()) {
        frames.push(bookSnapshot(sub, t, b));
        sent.add(t);
      }
    }
    return { frames, sent };
  }

  /** The frames one stored record gives, in order; the tracked book follows it. */
  function dispatch(r: ExchangeBRecord): string[] {
    const out: string[] = [];
    if (isBook(r)) {
      const book = books!.get(r.ticker);
      const targets: Sub[] = [];
      for (const sub of subs.values()) {
        if (sub.channel !== 'orderbook_delta' || !sub.tickers.has(r.ticker)) continue;
        if (r.type === 'gap') sub.gapPending = true;
        else {
          // The skip and the fresh snapshots of the books as they were before this record.
          if (sub.gapPending) out.push(...flush(sub).frames);
          targets.push(sub);
        }
      }
      book?.apply(r);
      for (const sub of targets) {
        if (r.type === 'snapshot') {
          sub.had.add(r.ticker);
          out.push(storedSnapshotFrame(sub.sid, ++sub.seq, r));
        } else if (sub.had.has(r.ticker)) out.push(deltaFrame(sub.sid, ++sub.seq, r));
        // else: a delta before the client's first snapshot of the ticker is not sent (that snapshot is).
      }
      return out;
    }
    for (const sub of subs.values()) {
      if (sub.channel === r.type && sub.tickers.has(r.ticker)) out.push(channelFrame(sub.sid, ++sub.seq, r));
    }
    return out;
  }

  async function stream(): Promise<void> {
    const all = new Set<string>();
    const bookTickers = new Set<string>();
    for (const sub of subs.values()) {
      for (const t of sub.tickers) {
        all.add(t);
        if (sub.channel === 'orderbook_delta') bookTickers.add(t);
      }
    }
    if (all.size === 0) return s.finish('refused', 1008, 'no subscription left to replay');
    // Each book just before the window, as the client will have it.
    const tracked = new Map<string, ExchangeBBook>();
    for (const t of bookTickers) {
      const b = await bookAt(deps.books, { venue: 'exchange-b', market: t, asset: t }, w.fromMs - 1, FULL_DEPTH);
      const book = new ExchangeBBook();
      if (b.known) {
        const pairs = (side: { price: string; size: string }[]): [string, string][] => side.map((l) => [l.price, l.size] as [string, string]).reverse();
        book.apply({ type: 'snapshot', ticker: t, timestamp: new Date(w.fromMs - 1).toISOString(), epoch_ms: w.fromMs - 1, sid: null, seq: null, yes: pairs(b.sides[0]), no: pairs(b.sides[1]) });
      }
      tracked.set(t, book);
    }
    // Typed reads: each record as stored, from its columns (no JSON made by the engine and parsed here).
    const batches = deps.replay.recordsB([...all], w.fromMs, w.toMs, { signal: s.signal });
    try {
      // The first rows are read before the clock starts: a paced replay starts on time.
      let b = await batches.next();
      if (b.done && ![...tracked.values()].some((x) => x.isKnown())) return s.finish('refused', 1008, 'no stored data for these tickers in the window');
      books = tracked;
      const opening: string[] = [];
      for (const sub of subs.values()) {
        if (sub.channel !== 'orderbook_delta') continue;
        for (const t of sub.tickers) {
          const book = tracked.get(t)!;
          if (book.isKnown()) opening.push(bookSnapshot(sub, t, book));
        }
      }
      await s.sendAll(opening);
      s.clockStarts();
      for (; !b.done; b = await batches.next()) {
        const records = b.value;
        for (let i = 0; i < records.length; i++) {
          const rec = records[i]!;
          const pause = s.breathe();
          if (pause) await pause;
          if (!s.due(rec.ts)) await s.waitUntil(rec.ts);
          // Dispatched when due: the tracked books (and get_snapshot's answers) follow the frames sent.
          const frames = dispatch(rec.record);
          if (!s.trySendAll(frames)) await s.sendAll(frames);
        }
      }
    } finally {
      // Ends the read (no further sub-read starts) on every way out.
      await batches.return(undefined);
    }
    // A gap at the very end: shown by the skip before the fresh snapshots (when a book is known).
    const last: string[] = [];
    for (const sub of subs.values()) if (sub.gapPending) last.push(...flush(sub).frames);
    await s.sendAll(last);
    s.finish('done', 1000, 'end of the replay window');
  }

  return s.outcome;
}

export const exchangeBReplay: VenueReplay<ExchangeBDeps> = {
  venue: 'exchange-b',
  path: '/exchange-b/replay/trade-api/ws/v2',
  summary: 'Exchange B replay over the trade-api v2 websocket protocol',
  description:
    'A websocket (upgrade this GET) that replays stored history the way the venue sends it live: send trade-api v2 `subscribe` commands ' +
    '(`{"id": 1, "cmd": "subscribe", "params": {"channels": ["orderbook_delta"], "market_tickers": [...]}}`; channels `orderbook_delta`, `trade`, `ticker`), answered `subscribed` with a `sid` per channel; ' +
    'then an `orderbook_snapshot` per ticker (its full book at `from`, where known; `seq` 1, 2, …), every stored delta (and trade / ticker message) in serving order with continuous `seq` per `sid`, ' +
    'a skipped `seq` and fresh snapshots where the stored data has a gap, then a close with code 1000. Bad commands get the venue\'s `error` message.',
  run: runExchangeB,
};
