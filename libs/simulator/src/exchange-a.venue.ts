import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { NO, YES, type BinaryBook } from './binary-book.ts';
import { priceShort, sizeShort } from './format.ts';
import { ExchangeAConnection, type SimMarketA, type World } from './world.ts';
import { ActiveList, VenueEndpoint, type VenueCounters } from './venue-common.ts';

/**
 * Exchange A (Polymarket CLOB market channel) endpoint: books on subscribe, then
 * `price_change` (2025-09-15 shape; the older per-asset shape too with `legacyShapes`),
 * `last_trade_price` and rare `tick_size_change` events, text PING/PONG keep-alive and the
 * venue's silent drop of connections that stop pinging.
 */

export interface ExchangeAVenueOptions {
  idleMs: number;
  maxEventsPerFrame: number;
  legacyShapes: boolean;
  slowConsumerBytes: number;
  now: () => number;
  isStalled: () => boolean;
}

const MASK_YES = 1;
const MASK_NO = 2;
const MASK_BOTH = 3;

export class ExchangeAVenue extends VenueEndpoint<ExchangeAConnection> {
  readonly active = new ActiveList<SimMarketA>();

  constructor(
    private readonly world: World,
    private readonly opts: ExchangeAVenueOptions,
    counters: VenueCounters,
  ) {
    super(counters, opts.slowConsumerBytes);
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.accept(req, socket, head);
  }

  protected override open(id: number, ws: WebSocket, socket: Duplex): ExchangeAConnection {
    return new ExchangeAConnection(id, ws, socket, this.opts.now());
  }

  protected override release(conn: ExchangeAConnection): void {
    for (const asset of conn.assets) this.setMask(conn, asset, false);
    conn.assets.clear();
  }

  protected override onMessage(conn: ExchangeAConnection, data: RawData, isBinary: boolean): void {
    const text = isBinary ? '' : data.toString();
    if (text === 'PING') {
      conn.lastPingAt = this.opts.now();
      if (!this.opts.isStalled()) this.send(conn, 'PONG', 0);
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      this.send(conn, 'INVALID OPERATION', 0);
      return;
    }
    const m = msg as { assets_ids?: unknown; operation?: unknown; type?: unknown };
    if (!Array.isArray(m.assets_ids) || !m.assets_ids.every((x) => typeof x === 'string')) {
      this.send(conn, 'INVALID OPERATION', 0);
      return;
    }
    const ids = m.assets_ids as string[];
    const op = typeof m.operation === 'string' ? m.operation.toLowerCase() : undefined;
    if (op === 'unsubscribe') {
      for (const id of ids) this.setMask(conn, id, false);
      return;
    }
    const type = typeof m.type === 'string' ? m.type.toLowerCase() : undefined;
    if (op !== 'subscribe' && type !== 'market') {
      this.send(conn, 'INVALID OPERATION', 0);
      return;
    }
    // Subscribe: the venue answers with the current book of every known requested asset.
    const books: string[] = [];
    const seen = new Set<string>();
    const ts = String(this.opts.now());
    for (const id of ids) {
      if (seen.has(id)) continue;
      seen.add(id);
      const hit = this.world.tokens.get(id);
      if (!hit) continue;
      this.setMask(conn, id, true);
      books.push(this.bookText(hit[0], hit[1], ts));
    }
    this.send(conn, `[${books.join(',')}]`, books.length);
  }

  private setMask(conn: ExchangeAConnection, asset: string, on: boolean): void {
    const hit = this.world.tokens.get(asset);
    if (!hit) return;
    const [m, t] = hit;
    const bit = t === 0 ? MASK_YES : MASK_NO;
    const old = m.subscribers.get(conn) ?? 0;
    const mask = on ? old | bit : old & ~bit;
    if (on) conn.assets.add(asset);
    else conn.assets.delete(asset);
    if (mask === old) return;
    if (old !== 0 && old !== MASK_BOTH) m.partialSubscribers--;
    if (mask === 0) m.subscribers.delete(conn);
    else {
      m.subscribers.set(conn, mask);
      if (mask !== MASK_BOTH) m.partialSubscribers++;
    }
    if (m.subscribers.size > 0) this.active.add(m);
    else this.active.remove(m);
  }

  /** The `book` event of token t (0 = YES, 1 = NO): bids ascending, asks descending, best last. */
  bookText(m: SimMarketA, t: 0 | 1, ts: string): string {
    const book: BinaryBook = m.book;
    const own = book.sides[t === 0 ? YES : NO];
    const other = book.sides[t === 0 ? NO : YES];
    let bids = '';
    for (const p of own.prices) {
      bids += `${bids ? ',' : ''}{"price":"${priceShort(p)}","size":"${sizeShort(own.size(p))}"}`;
    }
    let asks = '';
    for (const q of other.prices) {
      asks += `${asks ? ',' : ''}{"price":"${priceShort(1000 - q)}","size":"${sizeShort(other.size(q))}"}`;
    }
    const last = t === 0 ? m.lastTrade : 1000 - m.lastTrade;
    return (
      `{"event_type":"book","asset_id":"${m.tokenIds[t]}","market":"${m.conditionId}","bids":[${bids}],` +
      `"asks":[${asks}],"timestamp":"${ts}","hash":"0x${m.aux.hex(40)}","tick_size":"${m.tickSize}",` +
      `"last_trade_price":"${(last / 1000).toFixed(3)}"}`
    );
  }

  /** Generates one event on market m and queues it for its subscribers; returns events generated. */
  emit(m: SimMarketA, ts: string): number {
    const r = m.rng.next();
    if (r < 0.0005) return this.emitTickSize(m, ts);
    if (r < 0.05) {
      const n = this.emitTrade(m, ts);
      if (n > 0) return n;
    }
    return this.emitPriceChange(m, ts);
  }

  private emitPriceChange(m: SimMarketA, ts: string): number {
    const { rng, book } = m;
    const changes = rng.next() < 0.1 ? 2 : 1;
    const legacy = this.opts.legacyShapes && rng.next() < 1 / 3;
    const yes: string[] = [];
    const no: string[] = [];
    const all: string[] = [];
    let firstYes = true;
    for (let k = 0; k < changes; k++) {
      const ch = book.step(rng);
      const size = sizeShort(ch.newSize);
      const buyToken: 0 | 1 = ch.side === YES ? 0 : 1;
      const buyPrice = priceShort(ch.price);
      const sellPrice = priceShort(1000 - ch.price);
      if (k === 0) firstYes = buyToken === 0;
      if (legacy) {
        const buy = `{"price":"${buyPrice}","side":"BUY","size":"${size}"}`;
        const sell = `{"price":"${sellPrice}","side":"SELL","size":"${size}"}`;
        (buyToken === 0 ? yes : no).push(buy);
        (buyToken === 0 ? no : yes).push(sell);
        continue;
      }
      // Top of each token's book after this change: YES (bid yb, ask ya), NO is its mirror.
      const [yb, ya] = book.yesTop();
      const yesTop = `"best_bid":"${priceShort(yb)}","best_ask":"${priceShort(ya)}"`;
      const noTop = `"best_bid":"${priceShort(ya === 1000 ? 0 : 1000 - ya)}","best_ask":"${priceShort(yb === 0 ? 1000 : 1000 - yb)}"`;
      const sellToken: 0 | 1 = buyToken === 0 ? 1 : 0;
      const buy =
        `{"asset_id":"${m.tokenIds[buyToken]}","price":"${buyPrice}","size":"${size}","side":"BUY",` +
        `"hash":"${rng.hex(40)}",${buyToken === 0 ? yesTop : noTop}}`;
      const sell =
        `{"asset_id":"${m.tokenIds[sellToken]}","price":"${sellPrice}","size":"${size}","side":"SELL",` +
        `"hash":"${rng.hex(40)}",${sellToken === 0 ? yesTop : noTop}}`;
      all.push(buy, sell);
      (buyToken === 0 ? yes : no).push(buy);
      (buyToken === 0 ? no : yes).push(sell);
    }
    if (legacy) {
      const ev = (t: 0 | 1, list: string[]): string =>
        `{"event_type":"price_change","asset_id":"${m.tokenIds[t]}","market":"${m.conditionId}",` +
        `"timestamp":"${ts}","hash":"${rng.hex(40)}","changes":[${list.join(',')}]}`;
      const y = ev(0, yes);
      const n = ev(1, no);
      this.deliver(m, firstYes ? [y, n] : [n, y], [y], [n]);
      return 2;
    }
    const head = `{"event_type":"price_change","market":"${m.conditionId}","timestamp":"${ts}","price_changes":[`;
    const full = `${head}${all.join(',')}]}`;
    if (m.partialSubscribers > 0) this.deliver(m, [full], [`${head}${yes.join(',')}]}`], [`${head}${no.join(',')}]}`]);
    else this.deliver(m, [full], null, null);
    return 1;
  }

  private emitTrade(m: SimMarketA, ts: string): number {
    const { rng, book } = m;
    const t = rng.int(2) as 0 | 1;
    const buy = rng.next() < 0.5;
    // BUY lifts the token's best ask (the other outcome's best bid), SELL hits its best bid.
    const ladder = book.sides[buy ? (t === 0 ? NO : YES) : t === 0 ? YES : NO];
    const best = ladder.best();
    if (best === 0) return 0;
    const price = buy ? 1000 - best : best;
    const size = 1 + rng.int(ladder.size(best));
    m.lastTrade = t === 0 ? price : 1000 - price;
    const text =
      `{"event_type":"last_trade_price","asset_id":"${m.tokenIds[t]}","market":"${m.conditionId}",` +
      `"price":"${priceShort(price)}","size":"${sizeShort(size)}","fee_rate_bps":"0",` +
      `"side":"${buy ? 'BUY' : 'SELL'}","timestamp":"${ts}","transaction_hash":"0x${rng.hex(64)}"}`;
    const list = [text];
    this.deliver(m, list, t === 0 ? list : [], t === 1 ? list : []);
    return 1;
  }

  private emitTickSize(m: SimMarketA, ts: string): number {
    // Prices stay on the cent grid, which is valid under either tick, so the book stays valid.
    const old = m.tickSize;
    m.tickSize = old === '0.01' ? '0.001' : '0.01';
    const ev = (t: 0 | 1): string =>
      `{"event_type":"tick_size_change","asset_id":"${m.tokenIds[t]}","market":"${m.conditionId}",` +
      `"old_tick_size":"${old}","new_tick_size":"${m.tickSize}","timestamp":"${ts}"}`;
    const y = ev(0);
    const n = ev(1);
    this.deliver(m, [y, n], [y], [n]);
    return 2;
  }

  private deliver(m: SimMarketA, full: string[], yesOnly: string[] | null, noOnly: string[] | null): void {
    for (const [conn, mask] of m.subscribers) {
      const list = mask === MASK_BOTH ? full : mask === MASK_YES ? yesOnly : noOnly;
      if (list === null) continue;
      for (const s of list) this.queue(conn, s);
    }
  }

  /** A tick's events go out batched into arrays of up to maxEventsPerFrame. */
  protected override write(conn: ExchangeAConnection, p: string[]): void {
    const max = this.opts.maxEventsPerFrame;
    conn.socket.cork();
    for (let i = 0; i < p.length; i += max) {
      const end = Math.min(p.length, i + max);
      const text = end - i === 1 ? (p[i] as string) : `[${p.slice(i, end).join(',')}]`;
      conn.ws.send(text);
      this.counters.frames++;
      this.counters.bytes += text.length;
    }
    this.counters.events += p.length;
    conn.socket.uncork();
  }

  /** The venue drops, without a close frame, connections that stopped sending PING. */
  sweepIdle(now: number): void {
    for (const conn of this.conns) {
      if (now - conn.lastPingAt > this.opts.idleMs) conn.ws.terminate();
    }
  }
}
