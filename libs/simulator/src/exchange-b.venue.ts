import { constants, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, type RawData } from 'ws';
import { NO, YES, type Ladder } from './binary-book.ts';
import { priceFixed2, priceFixed4, sizeFixed2 } from './format.ts';
import { ActiveList, VenueEndpoint, headerValue, rejectUpgrade, type VenueCounters } from './venue-common.ts';
import { ExchangeBConnection, ExchangeBSubscription, type SimMarketB, type World } from './world.ts';

/**
 * Exchange B (Kalshi websocket v2) endpoint, `orderbook_delta` channel: RSA-PSS signed
 * handshake (when a public key is configured), `subscribed` → one snapshot per ticker → deltas,
 * `seq` counting per `sid` across its tickers, `update_subscription` (get_snapshot,
 * add_markets, delete_markets), `unsubscribe`, and websocket pings from the server.
 */

export interface ExchangeBAuth {
  keyId: string;
  publicKey: KeyObject;
  /** Largest accepted distance between the signed timestamp and the server clock. */
  maxSkewMs: number;
}

export interface ExchangeBVenueOptions {
  legacyShapes: boolean;
  slowConsumerBytes: number;
  auth: ExchangeBAuth | null;
  now: () => number;
}

interface Command {
  id?: unknown;
  cmd?: unknown;
  params?: {
    channels?: unknown;
    market_tickers?: unknown;
    market_ticker?: unknown;
    sid?: unknown;
    sids?: unknown;
    action?: unknown;
  };
}

// Error codes as the venue documents them.
const ERR_PROCESS = 1;
const ERR_CHANNELS = 3;
const ERR_SIDS = 4;
const ERR_COMMAND = 5;
const ERR_UNKNOWN_SID = 7;
const ERR_CHANNEL_NAME = 8;
const ERR_ACTION = 13;
const ERR_TICKER = 14;
const ERR_MARKET = 16;

export class ExchangeBVenue extends VenueEndpoint<ExchangeBConnection> {
  readonly active = new ActiveList<SimMarketB>();
  private nextSid = 1;
  private lastIsoSecond = -1;
  private lastIso = '';

  constructor(
    private readonly world: World,
    private readonly opts: ExchangeBVenueOptions,
    counters: VenueCounters,
  ) {
    super(counters, opts.slowConsumerBytes);
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, path: string): void {
    const auth = this.opts.auth;
    if (auth) {
      const problem = this.checkSignature(req, path, auth);
      if (problem !== null) {
        rejectUpgrade(socket, 401, 'Unauthorized', problem);
        return;
      }
    }
    this.accept(req, socket, head);
  }

  /** null when the request is signed by the configured key, else the reason to refuse it. */
  private checkSignature(req: IncomingMessage, path: string, auth: ExchangeBAuth): string | null {
    const key = headerValue(req, 'kalshi-access-key');
    const ts = headerValue(req, 'kalshi-access-timestamp');
    const sig = headerValue(req, 'kalshi-access-signature');
    if (!key || !ts || !sig) return 'missing KALSHI-ACCESS-* authentication headers';
    if (key !== auth.keyId) return 'unknown access key';
    const tsMs = Number(ts);
    if (!/^\d+$/.test(ts) || Math.abs(this.opts.now() - tsMs) > auth.maxSkewMs) return 'timestamp out of range';
    const ok = verify(
      'sha256',
      Buffer.from(`${ts}GET${path}`),
      { key: auth.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 },
      Buffer.from(sig, 'base64'),
    );
    return ok ? null : 'invalid signature';
  }

  protected override open(id: number, ws: WebSocket, socket: Duplex): ExchangeBConnection {
    return new ExchangeBConnection(id, ws, socket);
  }

  protected override release(conn: ExchangeBConnection): void {
    for (const sub of conn.subs.values()) this.dropSubscription(sub);
    conn.subs.clear();
  }

  private error(conn: ExchangeBConnection, id: unknown, code: number, msg: string): void {
    const idPart = typeof id === 'number' ? `"id":${id},` : '';
    this.send(conn, `{${idPart}"type":"error","msg":{"code":${code},"msg":${JSON.stringify(msg)}}}`, 0);
  }

  protected override onMessage(conn: ExchangeBConnection, data: RawData, isBinary: boolean): void {
    let cmd: Command;
    try {
      cmd = JSON.parse(isBinary ? '' : data.toString()) as Command;
      if (typeof cmd !== 'object' || cmd === null) throw new Error('not an object');
    } catch {
      this.error(conn, undefined, ERR_PROCESS, 'Unable to process message');
      return;
    }
    const params = cmd.params ?? {};
    switch (cmd.cmd) {
      case 'subscribe':
        return this.subscribe(conn, cmd.id, params);
      case 'unsubscribe':
        return this.unsubscribe(conn, cmd.id, params);
      case 'update_subscription':
        return this.update(conn, cmd.id, params);
      default:
        this.error(conn, cmd.id, ERR_COMMAND, 'Unknown command');
    }
  }

  private tickersOf(params: NonNullable<Command['params']>): string[] | null {
    const list = params.market_tickers ?? (params.market_ticker !== undefined ? [params.market_ticker] : undefined);
    if (!Array.isArray(list) || list.length === 0 || !list.every((t) => typeof t === 'string')) return null;
    return list as string[];
  }

  private marketsOf(conn: ExchangeBConnection, id: unknown, tickers: string[]): SimMarketB[] | null {
    const out: SimMarketB[] = [];
    for (const t of tickers) {
      const m = this.world.tickers.get(t.toUpperCase());
      if (!m) {
        this.error(conn, id, ERR_MARKET, `Market not found: ${t}`);
        return null;
      }
      if (!out.includes(m)) out.push(m);
    }
    return out;
  }

  private subscribe(conn: ExchangeBConnection, id: unknown, params: NonNullable<Command['params']>): void {
    const channels = params.channels;
    if (!Array.isArray(channels) || channels.length === 0) return this.error(conn, id, ERR_CHANNELS, 'Channels required');
    if (channels.some((c) => c !== 'orderbook_delta')) {
      return this.error(conn, id, ERR_CHANNEL_NAME, 'Unknown channel name');
    }
    const tickers = this.tickersOf(params);
    if (!tickers) return this.error(conn, id, ERR_TICKER, 'Market Ticker required');
    const markets = this.marketsOf(conn, id, tickers);
    if (!markets) return;
    const sub = new ExchangeBSubscription(this.nextSid++, conn);
    conn.subs.set(sub.sid, sub);
    const idPart = typeof id === 'number' ? `,"id":${id}` : '';
    this.send(conn, `{"type":"subscribed"${idPart},"msg":{"channel":"orderbook_delta","sid":${sub.sid}}}`, 0);
    for (const m of markets) this.addMarket(sub, m);
  }

  private addMarket(sub: ExchangeBSubscription, m: SimMarketB): void {
    if (!sub.markets.has(m)) {
      sub.markets.add(m);
      m.subscriptions.add(sub);
      this.active.add(m);
    }
    this.sendSnapshot(sub, m);
  }

  private removeMarket(sub: ExchangeBSubscription, m: SimMarketB): void {
    sub.markets.delete(m);
    m.subscriptions.delete(sub);
    if (m.subscriptions.size === 0) this.active.remove(m);
  }

  private dropSubscription(sub: ExchangeBSubscription): void {
    for (const m of [...sub.markets]) this.removeMarket(sub, m);
  }

  private subscriptionOf(conn: ExchangeBConnection, id: unknown, params: NonNullable<Command['params']>): ExchangeBSubscription | null {
    const sid = params.sid ?? (Array.isArray(params.sids) && params.sids.length === 1 ? params.sids[0] : undefined);
    if (typeof sid !== 'number') {
      this.error(conn, id, ERR_SIDS, 'Subscription IDs required');
      return null;
    }
    const sub = conn.subs.get(sid);
    if (!sub) this.error(conn, id, ERR_UNKNOWN_SID, 'Unknown subscription ID');
    return sub ?? null;
  }

  private unsubscribe(conn: ExchangeBConnection, id: unknown, params: NonNullable<Command['params']>): void {
    const sids = params.sids;
    if (!Array.isArray(sids) || sids.length === 0) return this.error(conn, id, ERR_SIDS, 'Subscription IDs required');
    for (const sid of sids) {
      const sub = typeof sid === 'number' ? conn.subs.get(sid) : undefined;
      if (!sub) {
        this.error(conn, id, ERR_UNKNOWN_SID, 'Unknown subscription ID');
        continue;
      }
      this.dropSubscription(sub);
      conn.subs.delete(sub.sid);
      const idPart = typeof id === 'number' ? `"id":${id},` : '';
      this.send(conn, `{${idPart}"type":"unsubscribed","sid":${sub.sid}}`, 0);
    }
  }

  private update(conn: ExchangeBConnection, id: unknown, params: NonNullable<Command['params']>): void {
    const sub = this.subscriptionOf(conn, id, params);
    if (!sub) return;
    const tickers = this.tickersOf(params);
    if (!tickers) return this.error(conn, id, ERR_TICKER, 'Market Ticker required');
    const markets = this.marketsOf(conn, id, tickers);
    if (!markets) return;
    const idPart = typeof id === 'number' ? `"id":${id},` : '';
    const ok = `{${idPart}"sid":${sub.sid},"type":"ok","msg":{"market_tickers":${JSON.stringify(markets.map((m) => m.ticker))}}}`;
    switch (params.action) {
      case 'get_snapshot':
        for (const m of markets) {
          if (!sub.markets.has(m)) return this.error(conn, id, ERR_MARKET, `Not subscribed to ${m.ticker}`);
        }
        for (const m of markets) this.sendSnapshot(sub, m);
        return;
      case 'add_markets':
        this.send(conn, ok, 0);
        for (const m of markets) if (!sub.markets.has(m)) this.addMarket(sub, m);
        return;
      case 'delete_markets':
        for (const m of markets) this.removeMarket(sub, m);
        this.send(conn, ok, 0);
        return;
      default:
        this.error(conn, id, ERR_ACTION, 'Unsupported action');
    }
  }

  private sendSnapshot(sub: ExchangeBSubscription, m: SimMarketB): void {
    const seq = ++sub.seq;
    this.send(sub.conn, `{"type":"orderbook_snapshot","sid":${sub.sid},"seq":${seq},"msg":${this.snapshotBody(m)}}`, 1);
  }

  /** Snapshot message body in one of the venue's shapes; empty sides are left out. */
  snapshotBody(m: SimMarketB): string {
    const yes = m.book.sides[YES];
    const no = m.book.sides[NO];
    const shape = this.opts.legacyShapes ? m.aux.int(3) : 0;
    const fp = (l: Ladder): string => l.prices.map((p) => `["${priceFixed4(p)}","${sizeFixed2(l.size(p))}"]`).join(',');
    const cents = (l: Ladder): string => l.prices.map((p) => `[${p / 10},${l.size(p) / 100}]`).join(',');
    const dollars = (l: Ladder): string => l.prices.map((p) => `["${priceFixed2(p)}",${l.size(p) / 100}]`).join(',');
    let body = `{"market_ticker":"${m.ticker}"`;
    if (shape === 0) {
      body += `,"market_id":"${m.marketId}"`;
      if (yes.prices.length) body += `,"yes_dollars_fp":[${fp(yes)}]`;
      if (no.prices.length) body += `,"no_dollars_fp":[${fp(no)}]`;
    } else {
      if (yes.prices.length) body += `,"yes":[${cents(yes)}]`;
      if (no.prices.length) body += `,"no":[${cents(no)}]`;
      if (shape === 1) {
        if (yes.prices.length) body += `,"yes_dollars":[${dollars(yes)}]`;
        if (no.prices.length) body += `,"no_dollars":[${dollars(no)}]`;
      }
    }
    return `${body}}`;
  }

  private isoSecond(now: number): string {
    const s = Math.floor(now / 1000);
    if (s !== this.lastIsoSecond) {
      this.lastIsoSecond = s;
      this.lastIso = new Date(s * 1000).toISOString().replace('.000Z', 'Z');
    }
    return this.lastIso;
  }

  /** One level change on market m, queued as a delta for every subscription; returns 1. */
  emit(m: SimMarketB, now: number): number {
    const ch = m.book.step(m.rng);
    const delta = ch.newSize - ch.oldSize;
    const side = ch.side === YES ? 'yes' : 'no';
    const shape = this.opts.legacyShapes ? m.rng.int(3) : 0;
    let body: string;
    if (shape === 0) {
      body =
        `{"market_ticker":"${m.ticker}","market_id":"${m.marketId}","price_dollars":"${priceFixed4(ch.price)}",` +
        `"delta_fp":"${sizeFixed2(delta)}","side":"${side}","ts_ms":${now}}`;
    } else if (shape === 1) {
      body =
        `{"market_ticker":"${m.ticker}","price":${ch.price / 10},"price_dollars":"${priceFixed2(ch.price)}",` +
        `"delta":${delta / 100},"delta_fp":"${sizeFixed2(delta)}","side":"${side}","ts":"${this.isoSecond(now)}"}`;
    } else {
      body = `{"market_ticker":"${m.ticker}","price":${ch.price / 10},"delta":${delta / 100},"side":"${side}","ts":"${this.isoSecond(now)}"}`;
    }
    for (const sub of m.subscriptions) {
      if (sub.skipNext) {
        sub.skipNext = false;
        sub.seq++;
      }
      this.queue(sub.conn, `{"type":"orderbook_delta","sid":${sub.sid},"seq":${++sub.seq},"msg":${body}}`);
    }
    return 1;
  }

  /**
   * One message per websocket frame, as the venue does. The frames are built here into one
   * buffer and written with one socket write, instead of one ws.send (two writes) per message:
   * at 100k messages/s that is most of the cost. Safe because this server sends no compressed
   * or blob data, so ws's own sender never holds a partial frame.
   */
  protected override write(conn: ExchangeBConnection, p: string[]): void {
    const buf = encodeTextFrames(p);
    conn.socket.write(buf);
    this.counters.bytes += buf.length;
    this.counters.frames += p.length;
    this.counters.events += p.length;
  }

  pingAll(): void {
    for (const conn of this.conns) if (conn.ws.readyState === WebSocket.OPEN) conn.ws.ping();
  }

  /** Every current subscription skips one seq number on its next delta. */
  injectSeqGap(): number {
    let n = 0;
    for (const conn of this.conns) {
      for (const sub of conn.subs.values()) {
        sub.skipNext = true;
        n++;
      }
    }
    return n;
  }
}

/** Unmasked server-to-client text frames (RFC 6455 §5.2), back to back in one buffer. */
export function encodeTextFrames(texts: string[]): Buffer {
  const sizes = new Array<number>(texts.length);
  let total = 0;
  for (let i = 0; i < texts.length; i++) {
    const n = Buffer.byteLength(texts[i] as string);
    sizes[i] = n;
    total += n + (n < 126 ? 2 : n < 65536 ? 4 : 10);
  }
  const buf = Buffer.allocUnsafe(total);
  let o = 0;
  for (let i = 0; i < texts.length; i++) {
    const n = sizes[i] as number;
    buf[o++] = 0x81; // FIN + text
    if (n < 126) buf[o++] = n;
    else if (n < 65536) {
      buf[o++] = 126;
      buf.writeUInt16BE(n, o);
      o += 2;
    } else {
      buf[o++] = 127;
      buf.writeUInt32BE(0, o);
      buf.writeUInt32BE(n, o + 4);
      o += 8;
    }
    o += buf.write(texts[i] as string, o, 'utf8');
  }
  return buf;
}
