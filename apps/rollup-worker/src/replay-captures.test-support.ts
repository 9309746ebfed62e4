import { writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { CaptureLine, ExchangeAEvent, ExchangeBRecord, PriceChange, PriceLevel } from '@booktape/domain';
import { Rng } from '@booktape/simulator';

/**
 * Capture files for the replay acceptance test (issue 9, "Done when"), written from a tiny
 * venue model of our own: venue frames in the shapes of docs/rules/venue-frames.md, the records each
 * frame stands for (written here from the frame, not by the normalisers), and arrivals with
 * byte-identical re-sends. Deterministic for a seed.
 *
 * Exchange A: one market, two outcome tokens, each with a book of cent prices. Frames:
 * a `book` per token; newer-shape `price_change` lists whose entries carry a hash and the
 * top of book right after the entry; same-millisecond trade bursts (several frames at one
 * ms, one hash per asset, different changes; the book crosses inside the burst; every
 * claim shows the state after the whole burst), sometimes followed by a `book` at the same
 * ms carrying the burst's hash; the flat 2024 shape (no claims). Prices and sizes sometimes
 * have trailing zeros ("0.50", "309.00").
 *
 * Exchange B: two tickers on one subscription, dollar strings, `ok` acks and `ticker`
 * messages using up sequence numbers, a lost message (a real seq gap) followed by fresh
 * snapshots, an empty snapshot with market_id "", deltas with both ts and ts_ms, and a
 * reconnection (boundary lines; seq numbering restarts).
 */

/** Uniform numbers in [0, 1) from the simulator's seeded generator (mulberry32). */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

const pad2 = (n: number): string => String(n).padStart(2, '0');
const iso = (ms: number): string => new Date(ms).toISOString();

// ---------------------------------------------------------------------------------------
// Exchange A

export interface AFrame {
  ts: number;
  kind: 'book' | 'list' | 'flat';
  burst: boolean;
  /** The venue JSON at event time ts (the body may be moved to another time: see swapBodies). */
  body: (ts: number) => unknown;
  /** The records the frame stands for, as stored (2.1 event, venue extras in `extra`). */
  events: (ts: number) => ExchangeAEvent[];
}

interface Entry {
  asset: string;
  price: string;
  side: 'BUY' | 'SELL';
  size: string;
  hash: string;
  best_bid: string;
  best_ask: string;
}

type Levels = Map<number, string>; // cents → the venue's size text
interface TokenBook {
  bids: Levels;
  asks: Levels;
}

export interface AGenOptions {
  seed: number;
  market: string;
  tokens: [string, string];
  startMs: number;
  frames: number;
}

export function generateExchangeA(o: AGenOptions): AFrame[] {
  const r = rng(o.seed);
  const int = (n: number): number => Math.floor(r() * n);
  const hex = (n: number): string => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('');
  // "0.50" or "0.5": the venue writes both.
  const priceText = (c: number): string => {
    const full = `0.${pad2(c)}`;
    return c % 10 === 0 && r() < 0.5 ? full.replace(/0$/, '') : full;
  };
  const sizeText = (): string => {
    const n = 1 + int(400);
    const k = r();
    return k < 0.3 ? `${n}.00` : k < 0.45 ? `${n}.50` : String(n);
  };
  const zeroText = (): string => (r() < 0.2 ? '0.00' : '0');
  const books = new Map<string, TokenBook>();
  const top = (a: string): [number | null, number | null] => {
    const b = books.get(a)!;
    return [b.bids.size ? Math.max(...b.bids.keys()) : null, b.asks.size ? Math.min(...b.asks.keys()) : null];
  };
  const claims = (a: string): { best_bid: string; best_ask: string } => {
    const [bb, ba] = top(a);
    return { best_bid: bb === null ? '0' : priceText(bb), best_ask: ba === null ? '1' : priceText(ba) };
  };
  const apply = (a: string, side: 'BUY' | 'SELL', cents: number, size: string): void => {
    const b = books.get(a)!;
    const levels = side === 'BUY' ? b.bids : b.asks;
    if (Number(size) === 0) levels.delete(cents);
    else levels.set(cents, size);
  };
  /** A change that leaves the book uncrossed: bids below the best ask, asks above the best bid. */
  const normal = (a: string): { cents: number; side: 'BUY' | 'SELL'; size: string } | null => {
    const [bb, ba] = top(a);
    const side = r() < 0.5 ? 'BUY' : 'SELL';
    const lo = side === 'BUY' ? Math.max(1, (bb ?? 0) - 3) : (bb ?? 0) + 1;
    const hi = side === 'BUY' ? (ba ?? 100) - 1 : Math.min(99, (ba ?? 100) + 3);
    if (lo > hi) return null;
    const cents = lo + int(hi - lo + 1);
    const levels = side === 'BUY' ? books.get(a)!.bids : books.get(a)!.asks;
    return { cents, side, size: levels.has(cents) && r() < 0.35 ? zeroText() : sizeText() };
  };

  const frames: AFrame[] = [];
  const market = o.market;
  const listFrame = (entries: Entry[], burst: boolean): AFrame => {
    // The venue's entry: asset_id, price, size, side, hash, best_bid, best_ask (key order as sent).
    const venueEntries = entries.map((e) => ({ asset_id: e.asset, price: e.price, size: e.size, side: e.side, hash: e.hash, best_bid: e.best_bid, best_ask: e.best_ask }));
    return {
      ts: 0,
      kind: 'list',
      burst,
      body: (ts) => ({ event_type: 'price_change', market, timestamp: String(ts), price_changes: venueEntries }),
      events: (ts) => {
        // One record per asset, assets in order of first appearance, changes in entry order.
        const byAsset = new Map<string, PriceChange[]>();
        const firstHash = new Map<string, string>();
        for (const e of entries) {
          if (!byAsset.has(e.asset)) {
            byAsset.set(e.asset, []);
            firstHash.set(e.asset, e.hash);
          }
          byAsset.get(e.asset)!.push({ price: e.price, side: e.side, size: e.size, hash: e.hash, best_bid: e.best_bid, best_ask: e.best_ask });
        }
        return [...byAsset].map(([asset, changes]) => ({ market, asset_id: asset, timestamp: String(ts), hash: firstHash.get(asset)!, event_type: 'price_change', changes }));
      },
    };
  };
  const bookFrame = (assets: string[], hashes: string[], tick: boolean): AFrame => {
    const snap = assets.map((a, i) => {
      const b = books.get(a)!;
      // Bids ascend and asks descend: best last, as the venue sends them.
      const bids: PriceLevel[] = [...b.bids].sort((x, y) => x[0] - y[0]).map(([c, s]) => ({ price: priceText(c), size: s }));
      const asks: PriceLevel[] = [...b.asks].sort((x, y) => y[0] - x[0]).map(([c, s]) => ({ price: priceText(c), size: s }));
      return { asset: a, hash: hashes[i]!, bids, asks };
    });
    return {
      ts: 0,
      kind: 'book',
      burst: false,
      body: (ts) => snap.map((s) => ({ event_type: 'book', asset_id: s.asset, market, bids: s.bids, asks: s.asks, timestamp: String(ts), hash: s.hash, ...(tick ? { tick_size: '0.01' } : {}) })),
      events: (ts) => snap.map((s) => ({ market, asset_id: s.asset, timestamp: String(ts), hash: s.hash, event_type: 'book', bids: s.bids, asks: s.asks, ...(tick ? { extra: { tick_size: '0.01' } } : {}) })),
    };
  };
  const flatFrame = (a: string, c: { cents: number; side: 'BUY' | 'SELL'; size: string }, hash: string): AFrame => {
    const price = priceText(c.cents);
    return {
      ts: 0,
      kind: 'flat',
      burst: false,
      body: (ts) => ({ event_type: 'price_change', asset_id: a, market, price, side: c.side, size: c.size, hash, timestamp: String(ts) }),
      events: (ts) => [{ market, asset_id: a, timestamp: String(ts), hash, event_type: 'price_change', changes: [{ price, side: c.side, size: c.size }] }],
    };
  };
  const at = (f: AFrame, ts: number): AFrame => {
    f.ts = ts;
    frames.push(f);
    return f;
  };

  // Opening books (trailing zeros included: "0.50", "309.00").
  const [Y, N] = o.tokens;
  books.set(Y, { bids: new Map([[40, '100'], [45, '20.00'], [48, '309.00']]), asks: new Map([[50, '12.5'], [55, '40'], [60, '1000']]) });
  books.set(N, { bids: new Map([[42, '75.00'], [47, '10']]), asks: new Map([[52, '30'], [58, '309.00']]) });
  let ts = o.startMs;
  at(bookFrame([Y, N], [`0x${hex(40)}`, `0x${hex(40)}`], true), ts);

  while (frames.length < o.frames) {
    ts += 1 + int(25);
    const k = r();
    const a = r() < 0.5 ? Y : N;
    const other = a === Y ? N : Y;
    if (k < 0.15) {
      // A trade burst at one millisecond: the taker crosses the book, the maker level shrinks,
      // the taker's rest is removed. One hash per asset for the whole burst.
      const [bb, ba] = top(a);
      const sell = r() < 0.5;
      const p = sell ? bb : ba;
      if (p === null) continue;
      const hashes = new Map([[a, hex(40)], [other, hex(40)]]);
      const takerSide: 'BUY' | 'SELL' = sell ? 'SELL' : 'BUY';
      const makerSide: 'BUY' | 'SELL' = sell ? 'BUY' : 'SELL';
      const changes: Array<Array<{ asset: string; cents: number; side: 'BUY' | 'SELL'; size: string }>> = [
        [{ asset: a, cents: p, side: takerSide, size: sizeText() }],
        [{ asset: a, cents: p, side: makerSide, size: r() < 0.5 ? zeroText() : sizeText() }],
        [{ asset: a, cents: p, side: takerSide, size: zeroText() }],
      ];
      if (r() < 0.5) {
        // The other outcome moves in the same trade (its own hash), in one of the frames.
        const f = changes[int(3)]!;
        const c = normal(other);
        if (c) f.push({ asset: other, ...c });
      }
      for (const f of changes) for (const c of f) apply(c.asset, c.side, c.cents, c.size);
      // Every claim of the burst: the state after the whole burst.
      const end = new Map([[a, claims(a)], [other, claims(other)]]);
      for (const f of changes) {
        at(listFrame(f.map((c) => ({ asset: c.asset, price: priceText(c.cents), side: c.side, size: c.size, hash: hashes.get(c.asset)!, ...end.get(c.asset)! })), true), ts);
      }
      // The book sent right after a trade can carry the burst's hash.
      if (r() < 0.3) at(bookFrame([a], [hashes.get(a)!], r() < 0.5), ts);
    } else if (k < 0.2) {
      const c = normal(a);
      if (!c) continue;
      apply(a, c.side, c.cents, c.size);
      at(flatFrame(a, c, hex(40)), ts);
    } else if (k < 0.22) {
      at(bookFrame([a], [`0x${hex(40)}`], r() < 0.5), ts);
    } else {
      // One or two entries (sometimes a YES/NO pair), each claiming the top right after it.
      const entries: Entry[] = [];
      for (const asset of r() < 0.3 ? [a, other] : [a]) {
        const c = normal(asset);
        if (!c) continue;
        apply(asset, c.side, c.cents, c.size);
        entries.push({ asset, price: priceText(c.cents), side: c.side, size: c.size, hash: hex(40), ...claims(asset) });
      }
      if (entries.length > 0) at(listFrame(entries, false), ts);
    }
  }
  return frames;
}

/**
 * The venue sent frame i's changes at frame j's time and the other way round: a wrong
 * order, as a broken capture or a venue reordering would give. Times stay in place.
 */
export function swapBodies(frames: readonly AFrame[], i: number, j: number): AFrame[] {
  const out = frames.map((f) => ({ ...f }));
  const fi = out[i]!;
  const fj = out[j]!;
  [fi.body, fj.body] = [fj.body, fi.body];
  [fi.events, fj.events] = [fj.events, fi.events];
  [fi.kind, fj.kind] = [fj.kind, fi.kind];
  return out;
}

export interface Arrival {
  receivedMs: number;
  frame: number; // index into the frames
  resend: boolean;
}

/**
 * Receive order: each frame 1–4 ms after its event time (never before the previous one),
 * some re-sent byte-identically 2–15 ms later, so that a re-send lands among frames the
 * venue sent after it. Burst frames are re-sent more often.
 */
export function arrivalsOf(frames: readonly AFrame[], seed: number, resendRate: number): Arrival[] {
  const r = rng(seed);
  const out: Array<Arrival & { order: number }> = [];
  let last = 0;
  frames.forEach((f, i) => {
    const receivedMs = Math.max(last, f.ts + 1 + Math.floor(r() * 4));
    last = receivedMs;
    out.push({ receivedMs, frame: i, resend: false, order: 2 * i });
    if (r() < (f.burst ? 3 * resendRate : resendRate)) out.push({ receivedMs: receivedMs + 2 + Math.floor(r() * 14), frame: i, resend: true, order: 2 * i + 1 });
  });
  out.sort((a, b) => a.receivedMs - b.receivedMs || a.order - b.order);
  return out.map(({ receivedMs, frame, resend }) => ({ receivedMs, frame, resend }));
}

export interface Expected<R> {
  record: R;
  receivedMs: number;
  /** Receive position (capture order): the order of ingest_seq. */
  pos: number;
}

/**
 * The first-copy rule, from scratch: a record is a duplicate when the same hash, content and
 * time arrived before (same record); the first received copy's position and content win.
 * Served order: event time, then receive position.
 */
export function firstCopyA(frames: readonly AFrame[], arrivals: readonly Arrival[]): Expected<ExchangeAEvent>[] {
  const seen = new Set<string>();
  const out: Expected<ExchangeAEvent>[] = [];
  let pos = 0;
  for (const a of arrivals) {
    const f = frames[a.frame]!;
    for (const ev of f.events(f.ts)) {
      const p = pos++;
      const id = JSON.stringify(ev);
      if (seen.has(id)) continue;
      seen.add(id);
      out.push({ record: ev, receivedMs: a.receivedMs, pos: p });
    }
  }
  return out.sort((x, y) => Number(x.record.timestamp) - Number(y.record.timestamp) || x.pos - y.pos);
}

export function captureLinesA(frames: readonly AFrame[], arrivals: readonly Arrival[], connection: string): CaptureLine[] {
  const lines: CaptureLine[] = [{ venue: 'exchange-a', received_at: iso(arrivals[0]!.receivedMs - 10), boundary: { kind: 'connect', connection_id: connection } }];
  for (const a of arrivals) {
    const f = frames[a.frame]!;
    lines.push({ venue: 'exchange-a', received_at: iso(a.receivedMs), frame: f.body(f.ts) });
  }
  return lines;
}

/** A served exchange A record: the payload (venue extras at the top level) plus lineage. */
export function servedA(e: Expected<ExchangeAEvent>, workerId: number): Record<string, unknown> {
  const { extra, ...event } = e.record;
  return { ...extra, ...event, received_at: iso(e.receivedMs), worker_id: workerId };
}

// ---------------------------------------------------------------------------------------
// Exchange B

export interface BCapture {
  lines: CaptureLine[];
  /** Records in receive order (no duplicates: every B message has its own seq and time). */
  expected: Expected<ExchangeBRecord>[];
  /** Where the lost message was noticed. */
  gapMs: number;
}

export function generateExchangeB(o: { seed: number; tickers: [string, string]; startMs: number; steps: number }): BCapture {
  const r = rng(o.seed);
  const int = (n: number): number => Math.floor(r() * n);
  const lines: CaptureLine[] = [];
  const expected: Expected<ExchangeBRecord>[] = [];
  let pos = 0;
  let now = o.startMs;
  let gapMs = 0;
  const [T1, T2] = o.tickers;
  // The true book (both sides are bids, best last). Yes bids stay in 0.30–0.48 and no bids
  // in 0.40–0.50, so the book never crosses (yes bid + no bid < 1).
  const book = new Map<string, { yes: Map<number, number>; no: Map<number, number> }>([
    [T1, { yes: new Map([[41, 20], [42, 13]]), no: new Map([[45, 200], [46, 3]]) }],
    [T2, { yes: new Map(), no: new Map() }],
  ]);
  let seq = [0, 0, 0]; // per sid (1: order book, 2: ticker channel)
  let onSid1: string[] = []; // tickers of book messages on sid 1, in order of first appearance
  let loseNext = false;

  const tick = (): number => (now += int(3) === 0 ? 0 : 1 + int(40));
  const line = (frame: unknown, records: ExchangeBRecord[]): void => {
    lines.push({ venue: 'exchange-b', received_at: iso(now), frame });
    for (const record of records) expected.push({ record, receivedMs: now, pos: pos++ });
  };
  const boundary = (kind: 'connect' | 'disconnect', id: string, reason?: string): void => {
    lines.push({ venue: 'exchange-b', received_at: iso(now), boundary: { kind, connection_id: id, ...(reason ? { reason } : {}) } });
  };
  const time = (): { timestamp: string; epoch_ms: number } => ({ timestamp: iso(now), epoch_ms: now });
  /** The next seq of sid 1; after a lost message, the gap records it reveals. */
  const nextSeq1 = (): { seq: number; gaps: ExchangeBRecord[] } => {
    const expectedSeq = seq[1]! + 1;
    seq[1] = loseNext ? seq[1]! + 2 : seq[1]! + 1;
    const gaps = loseNext ? onSid1.map((t): ExchangeBRecord => ({ type: 'gap', ticker: t, ...time(), sid: 1, seq: seq[1]!, expected_seq: expectedSeq })) : [];
    if (loseNext) gapMs = now;
    loseNext = false;
    return { seq: seq[1]!, gaps };
  };
  const dollars = (c: number): string => `0.${pad2(c)}00`;
  const seen = (t: string): void => {
    if (!onSid1.includes(t)) onSid1.push(t);
  };
  const snapshot = (t: string, opts: { empty?: boolean } = {}): void => {
    tick();
    const { seq: s, gaps } = nextSeq1();
    const b = book.get(t)!;
    const side = (m: Map<number, number>): [string, string][] => [...m].sort((x, y) => x[0] - y[0]).map(([c, n]) => [dollars(c), `${n}.00`]);
    const empty = opts.empty === true;
    const msg: Record<string, unknown> = empty ? { market_ticker: t, market_id: '' } : { market_ticker: t, market_id: `id-${t.toLowerCase()}`, yes_dollars_fp: side(b.yes), no_dollars_fp: side(b.no) };
    if (empty) {
      b.yes.clear();
      b.no.clear();
    }
    line({ type: 'orderbook_snapshot', sid: 1, seq: s, msg }, [
      ...gaps,
      { type: 'snapshot', ticker: t, ...time(), sid: 1, seq: s, yes: empty ? [] : side(b.yes), no: empty ? [] : side(b.no), venue_ts: null, market_id: empty ? null : `id-${t.toLowerCase()}` },
    ]);
    seen(t);
  };
  const delta = (t: string): void => {
    tick();
    const { seq: s, gaps } = nextSeq1();
    const b = book.get(t)!;
    const yes = r() < 0.5;
    const m = yes ? b.yes : b.no;
    const c = yes ? 30 + int(19) : 40 + int(11);
    const have = m.get(c) ?? 0;
    const d = have > 0 && r() < 0.4 ? -(r() < 0.5 ? have : 1 + int(have)) : 1 + int(300);
    const left = have + d;
    if (left <= 0) m.delete(c);
    else m.set(c, left);
    const deltaText = `${d}.00`;
    const tsMs = now - 1 - int(3);
    const msg: Record<string, unknown> = { market_ticker: t, market_id: `id-${t.toLowerCase()}`, price_dollars: dollars(c), delta_fp: deltaText, side: yes ? 'yes' : 'no', ts_ms: tsMs };
    // Some deltas carry both: ts (ISO, microseconds, trailing zeros trimmed) and ts_ms.
    if (r() < 0.3) msg['ts'] = `${iso(tsMs).slice(0, -1)}25Z`;
    line({ type: 'orderbook_delta', sid: 1, seq: s, msg }, [
      ...gaps,
      { type: 'delta', ticker: t, ...time(), sid: 1, seq: s, side: yes ? 'yes' : 'no', price: dollars(c), delta: deltaText, venue_ts: iso(tsMs), market_id: `id-${t.toLowerCase()}` },
    ]);
    seen(t);
  };
  const ok = (): void => {
    tick();
    const { seq: s, gaps } = nextSeq1();
    line({ type: 'ok', id: 7 + int(50), sid: 1, seq: s, msg: { market_tickers: [T1, T2] } }, gaps);
  };
  const tickerMsg = (t: string): void => {
    tick();
    seq[2] = seq[2]! + 1;
    const msg = { market_ticker: t, price_dollars: '0.4300', yes_bid_dollars: '0.4200', yes_ask_dollars: '0.5400', volume_fp: '1234.00', open_interest_fp: '55.00', ts: Math.floor(now / 1000), ts_ms: now - 2 };
    line({ type: 'ticker', sid: 2, seq: seq[2], msg }, [{ type: 'ticker', ticker: t, ...time(), sid: 2, seq: seq[2]!, venue_ts: iso(now - 2), data: msg }]);
  };
  const subscribe = (): void => {
    tick();
    line({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 1 } }, []);
    tick();
    line({ type: 'subscribed', id: 2, msg: { channel: 'ticker', sid: 2 } }, []);
  };
  const mix = (n: number): void => {
    for (let i = 0; i < n; i++) {
      const k = r();
      const t = r() < 0.5 ? T1 : T2;
      if (k < 0.08) ok();
      else if (k < 0.16) tickerMsg(t);
      else delta(t);
    }
  };

  boundary('connect', 'b-0#1');
  subscribe();
  snapshot(T1);
  snapshot(T2, { empty: true }); // no yes/no arrays: an empty book; market_id ""
  mix(Math.floor(o.steps * 0.45));
  // A message of sid 1 is lost: the next one reveals the gap for every ticker on the sid.
  loseNext = true;
  delta(T1);
  mix(4);
  snapshot(T1);
  mix(2);
  snapshot(T2);
  mix(Math.floor(o.steps * 0.25));
  // A new connection: sids and seqs start again (replay resets at the boundary).
  tick();
  boundary('disconnect', 'b-0#1', 'closed 1006');
  now += 250;
  boundary('connect', 'b-0#2');
  seq = [0, 0, 0];
  onSid1 = [];
  subscribe();
  snapshot(T2);
  snapshot(T1);
  mix(Math.floor(o.steps * 0.3));
  return { lines, expected, gapMs };
}

export function servedB(e: Expected<ExchangeBRecord>, workerId: number): Record<string, unknown> {
  return { ...e.record, received_at: iso(e.receivedMs), worker_id: workerId };
}

/** Served order of exchange B: receive time is event time, then receive position. */
export function servedOrderB(expected: readonly Expected<ExchangeBRecord>[]): Expected<ExchangeBRecord>[] {
  return [...expected].sort((x, y) => x.record.epoch_ms - y.record.epoch_ms || x.pos - y.pos);
}

export function writeCaptureFile(path: string, lines: readonly CaptureLine[]): void {
  const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
  writeFileSync(path, path.endsWith('.gz') ? gzipSync(text) : text);
}
