import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { Rng } from '@booktape/simulator';

/**
 * A synthetic capture file for the replay benchmark: `frames` frame lines of both venues in
 * the shapes of docs/rules/venue-frames.md, the newer and the older shapes mixed, with valid
 * books (the top-of-book claims in newer exchange A frames are the true top, so the
 * cross-checks pass). Deterministic for a seed; about 1.6 records per frame, like the
 * capture the issue measured.
 *
 * Exchange A (60% of frames): `markets` markets of two tokens. Frames: a `book` per token
 * first; then newer `price_change` lists of one to four entries (claims included), the flat
 * 2024 shape (one entry, no claims, ~10%), `last_trade_price` (~5%), a fresh `book` now and
 * then (~2%). Exchange B (40%): `tickers` tickers on one subscription (one `sid`, one seq
 * stream), a snapshot per ticker after `connect`, then deltas, in the dollar fixed-point
 * shape (since 2026-03) and the older cents shape (~30%).
 */
export interface CaptureSpec {
  frames: number;
  marketsA: number;
  tickersB: number;
  seed: number;
  /** Epoch ms of the first frame. */
  startMs: number;
}

type Side = Map<number, number>; // price in cents → size in hundredths

interface Token {
  id: string;
  bids: Side;
  asks: Side;
}

const hex = (r: Rng, n: number) => {
  let s = '';
  while (s.length < n) s += Math.floor(r.next() * 0x1_0000_0000).toString(16).padStart(8, '0');
  return s.slice(0, n);
};
const price = (c: number) => (c % 10 === 0 ? `0.${c / 10}` : `0.${String(c).padStart(2, '0')}`);
const size = (h: number) => (h % 100 === 0 ? String(h / 100) : (h / 100).toFixed(2));
const best = (s: Side, max: boolean): number | null => {
  let b: number | null = null;
  for (const [p, q] of s) if (q > 0 && (b === null || (max ? p > b : p < b))) b = p;
  return b;
};

function seedSide(r: Rng, lo: number, hi: number): Side {
  const s: Side = new Map();
  for (let c = lo; c <= hi; c++) if (r.next() < 0.7) s.set(c, 100 * (1 + Math.floor(r.next() * 500)));
  return s;
}

/** Writes the capture to `file` (NDJSON, uncompressed); resolves with the lines written. */
export async function writeCapture(file: string, spec: CaptureSpec): Promise<{ lines: number; frames: number }> {
  const r = new Rng(spec.seed);
  const out = createWriteStream(file);
  let buf: string[] = [];
  let lines = 0;
  const put = async (line: object) => {
    buf.push(JSON.stringify(line));
    lines += 1;
    if (buf.length >= 2000) {
      if (!out.write(buf.join('\n') + '\n')) await once(out, 'drain');
      buf = [];
    }
  };
  let t = spec.startMs;
  const at = () => new Date(t).toISOString();

  const markets = Array.from({ length: spec.marketsA }, () => ({
    id: `0x${hex(r, 64)}`,
    tokens: [0, 1].map((): Token => ({ id: String(BigInt(`0x${hex(r, 30)}`)), bids: seedSide(r, 30, 48), asks: seedSide(r, 52, 70) })),
  }));
  const tickers = Array.from({ length: spec.tickersB }, (_, i) => ({
    ticker: `KXBENCH-26MAR01-T${1000 + i}`,
    id: `${hex(r, 8)}-${hex(r, 4)}-${hex(r, 4)}-${hex(r, 4)}-${hex(r, 12)}`,
    yes: seedSide(r, 30, 48),
    no: seedSide(r, 30, 48),
  }));

  const bookFrame = (m: (typeof markets)[number], k: Token) => [
    {
      event_type: 'book',
      asset_id: k.id,
      market: m.id,
      bids: [...k.bids].filter(([, q]) => q > 0).sort((a, b) => a[0] - b[0]).map(([p, q]) => ({ price: price(p), size: size(q) })),
      asks: [...k.asks].filter(([, q]) => q > 0).sort((a, b) => b[0] - a[0]).map(([p, q]) => ({ price: price(p), size: size(q) })),
      timestamp: String(t),
      hash: `0x${hex(r, 40)}`,
      tick_size: '0.01',
      last_trade_price: '0.500',
    },
  ];
  /** A change on one side of a token's book that never crosses it. */
  const change = (k: Token) => {
    const buy = r.next() < 0.5;
    const s = buy ? k.bids : k.asks;
    const other = best(buy ? k.asks : k.bids, !buy);
    let c = buy ? 30 + Math.floor(r.next() * 19) : 52 + Math.floor(r.next() * 19);
    if (other !== null && (buy ? c >= other : c <= other)) c = buy ? other - 1 : other + 1;
    const q = r.next() < 0.25 ? 0 : 100 * (1 + Math.floor(r.next() * 500));
    s.set(c, q);
    return { price: price(c), size: size(q), side: buy ? 'BUY' : 'SELL' };
  };

  let frames = 0;
  let seq = 0;
  const sid = 7;
  // Exchange B: connect, subscription ack, one snapshot per ticker.
  await put({ venue: 'exchange-b', received_at: at(), boundary: { kind: 'connect', connection_id: 'exchange-b#1' } });
  await put({ venue: 'exchange-b', received_at: at(), frame: { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid } } });
  for (const x of tickers) {
    const levels = (s: Side) => [...s].filter(([, q]) => q > 0).sort((a, b) => a[0] - b[0]);
    await put({
      venue: 'exchange-b',
      received_at: at(),
      frame: { type: 'orderbook_snapshot', sid, seq: ++seq, msg: { market_ticker: x.ticker, market_id: x.id, yes_dollars_fp: levels(x.yes).map(([p, q]) => [`0.${String(p).padStart(2, '0')}00`, (q / 100).toFixed(2)]), no_dollars_fp: levels(x.no).map(([p, q]) => [`0.${String(p).padStart(2, '0')}00`, (q / 100).toFixed(2)]) } },
    });
    frames += 1;
  }
  for (const m of markets) {
    for (const k of m.tokens) {
      await put({ venue: 'exchange-a', received_at: at(), frame: bookFrame(m, k) });
      frames += 1;
    }
  }

  while (frames < spec.frames) {
    t += r.next() < 0.5 ? 1 : 0;
    frames += 1;
    if (r.next() < 0.6) {
      const m = markets[Math.floor(r.next() * markets.length)]!;
      const k = m.tokens[r.next() < 0.5 ? 0 : 1]!;
      const u = r.next();
      let frame: unknown;
      if (u < 0.02) frame = bookFrame(m, k);
      else if (u < 0.07) frame = { event_type: 'last_trade_price', asset_id: k.id, market: m.id, price: price(50), size: '12.5', fee_rate_bps: '0', side: 'BUY', timestamp: String(t), transaction_hash: `0x${hex(r, 64)}` };
      else if (u < 0.17) frame = { event_type: 'price_change', asset_id: k.id, market: m.id, timestamp: String(t), hash: hex(r, 40), changes: [change(k)] };
      else {
        const n = 1 + Math.floor(r.next() * 4);
        const entries = [];
        for (let i = 0; i < n; i++) {
          const kk = m.tokens[r.next() < 0.5 ? 0 : 1]!;
          const c = change(kk);
          const bb = best(kk.bids, true);
          const ba = best(kk.asks, false);
          entries.push({ asset_id: kk.id, ...c, hash: hex(r, 40), best_bid: bb === null ? '0' : price(bb), best_ask: ba === null ? '1' : price(ba) });
        }
        frame = { event_type: 'price_change', market: m.id, timestamp: String(t), price_changes: entries };
      }
      await put({ venue: 'exchange-a', received_at: at(), frame });
    } else {
      const x = tickers[Math.floor(r.next() * tickers.length)]!;
      const yes = r.next() < 0.5;
      const s = yes ? x.yes : x.no;
      const c = 30 + Math.floor(r.next() * 19);
      const before = s.get(c) ?? 0;
      const d = r.next() < 0.3 && before > 0 ? -before : 100 * (1 + Math.floor(r.next() * 50));
      s.set(c, before + d);
      const frame =
        r.next() < 0.3
          ? { type: 'orderbook_delta', sid, seq: ++seq, msg: { market_ticker: x.ticker, price: c, price_dollars: `0.${String(c).padStart(2, '0')}`, delta: d / 100, delta_fp: (d / 100).toFixed(2), side: yes ? 'yes' : 'no', ts: at().replace(/\.\d{3}Z$/, 'Z') } }
          : { type: 'orderbook_delta', sid, seq: ++seq, msg: { market_ticker: x.ticker, market_id: x.id, price_dollars: `0.${String(c).padStart(2, '0')}00`, delta_fp: (d / 100).toFixed(2), side: yes ? 'yes' : 'no', ts_ms: t } };
      await put({ venue: 'exchange-b', received_at: at(), frame });
    }
  }
  if (buf.length) out.write(buf.join('\n') + '\n');
  out.end();
  await once(out, 'finish');
  return { lines, frames };
}
