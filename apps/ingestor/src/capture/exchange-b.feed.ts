import type { CaptureGap } from '@booktape/domain';
import { Feed, summariseFeeds, type CaptureLogger, type CaptureStats, type FeedCallbacks, type FeedOptions } from './feed.base.ts';
import { kalshiAuthHeaders, loadKalshiPrivateKey, type KalshiCredentials } from './kalshi-auth.ts';
import { spreadTokens } from './spread.ts';

/**
 * Exchange B (Kalshi websocket v2), `orderbook_delta` channel. The handshake is signed; the
 * server pings every 10 s (ws answers pongs itself), so the client only watches for silence.
 * Within a subscription (`sid`) every message carries `seq` (snapshots, deltas, and also `ok`
 * acknowledgements and other channels' messages); a skipped number means the book is
 * unknown, so the feed asks for fresh snapshots and records a 'seq gap'.
 */

export interface ExchangeBFeedOptions extends Omit<FeedOptions, 'venue' | 'markets'> {
  tickers: string[];
  credentials: KalshiCredentials;
}

interface SubscriptionState {
  tickers: string[];
  lastSeq: number;
  /** Tickers whose fresh snapshot is awaited after a seq gap. */
  awaiting: Set<string> | null;
  gap: CaptureGap | null;
}

interface VenueMessage {
  type?: unknown;
  id?: unknown;
  sid?: unknown;
  seq?: unknown;
  msg?: { sid?: unknown; market_ticker?: unknown; code?: unknown; msg?: unknown } | null;
}

export class ExchangeBFeed extends Feed {
  private readonly tickers: string[];
  private readonly credentials: KalshiCredentials;
  private nextId = 1;
  /** Subscribe commands sent and not yet acknowledged: command id → tickers. */
  private readonly pending = new Map<number, string[]>();
  private readonly subs = new Map<number, SubscriptionState>();
  private seqGaps = 0;
  private snapshotRequests = 0;
  /** Seq gaps still open when their connection ended: the next subscription closes them. */
  private orphanGaps: CaptureGap[] = [];

  constructor(opts: ExchangeBFeedOptions) {
    const tickers = [...new Set(opts.tickers.map((t) => t.toUpperCase()))];
    // The venue pings every 10 s: 35 s without any traffic means the link is dead.
    super({ ...opts, venue: 'exchange-b', markets: tickers, idleMs: opts.idleMs ?? 35_000 });
    this.tickers = tickers;
    this.credentials = opts.credentials;
  }

  get tickerList(): readonly string[] {
    return this.tickers;
  }

  /** Seq gaps seen and snapshot requests sent since start. */
  seqStats(): { seqGaps: number; snapshotRequests: number } {
    return { seqGaps: this.seqGaps, snapshotRequests: this.snapshotRequests };
  }

  protected override connectHeaders(): Record<string, string> {
    return kalshiAuthHeaders(this.credentials, 'GET', this.opts.url);
  }

  protected override awaitsSubscriptionAck(): boolean {
    return true;
  }

  protected override onConnectionReset(): void {
    // A new connection brings new sids whose seq starts again.
    for (const st of this.subs.values()) if (st.gap) this.orphanGaps.push(st.gap);
    this.pending.clear();
    this.subs.clear();
    this.nextId = 1;
  }

  protected override subscribe(): void {
    const id = this.nextId++;
    this.pending.set(id, this.tickers);
    this.send(JSON.stringify({ id, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: this.tickers } }));
  }

  protected override onMessage(text: string, receivedAt: Date): boolean {
    let m: VenueMessage;
    try {
      m = JSON.parse(text) as VenueMessage;
    } catch {
      this.logger.warn({ feed: this.id, frame: text.slice(0, 200) }, 'exchange B frame is not JSON');
      return false;
    }
    if (typeof m !== 'object' || m === null) return false;
    switch (m.type) {
      case 'orderbook_snapshot':
      case 'orderbook_delta':
        this.trackSeq(m, receivedAt);
        return true;
      case 'subscribed':
        this.onSubscribed(m);
        return false;
      case 'error':
        this.onError(m);
        return false;
      case 'unsubscribed': {
        // It may use up a seq; then the sid is gone.
        this.trackSeq(m, receivedAt);
        if (typeof m.sid === 'number') this.subs.delete(m.sid);
        return false;
      }
      default:
        // `ok` acknowledgements (e.g. of our own get_snapshot request), `ticker` and `trade`
        // messages use up a seq of their sid too: counting only book messages would see a
        // false gap after every acknowledgement, and answer it with another request.
        this.trackSeq(m, receivedAt);
        return m.type === 'ticker' || m.type === 'trade';
    }
  }

  private onSubscribed(m: VenueMessage): void {
    const sid = m.msg?.sid;
    const id = typeof m.id === 'number' ? m.id : null;
    const tickers = id !== null ? this.pending.get(id) : undefined;
    if (id !== null) this.pending.delete(id);
    if (typeof sid !== 'number') {
      this.logger.warn({ feed: this.id, message: m }, 'subscribed without a sid');
      return;
    }
    // seq starts at 1 for a new sid, so the first snapshot is checked too.
    this.subs.set(sid, { tickers: tickers ?? [], lastSeq: 0, awaiting: null, gap: null });
    this.logger.info({ feed: this.id, sid, tickers: tickers?.length ?? 0 }, 'exchange B subscribed');
    if (this.pending.size === 0) {
      // A fresh subscription starts with fresh snapshots, which ends seq gaps of the old one.
      const now = new Date().toISOString();
      for (const gap of this.orphanGaps.splice(0)) this.emitGap({ ...gap, ended_at: now });
      this.markSubscribed();
    }
  }

  private onError(m: VenueMessage): void {
    const id = typeof m.id === 'number' ? m.id : null;
    const detail = { feed: this.id, id, code: m.msg?.code, message: m.msg?.msg };
    if (id !== null && this.pending.has(id)) {
      this.pending.delete(id);
      this.logger.error(detail, 'exchange B refused the subscription');
      if (this.pending.size === 0 && this.subs.size > 0) this.markSubscribed();
    } else {
      this.logger.warn(detail, 'exchange B error message');
    }
  }

  private trackSeq(m: VenueMessage, receivedAt: Date): void {
    const sid = m.sid;
    const seq = typeof m.seq === 'number' ? m.seq : Number(m.seq);
    if (typeof sid !== 'number' || !Number.isInteger(seq)) return;
    let st = this.subs.get(sid);
    if (!st) {
      st = { tickers: [...this.tickers], lastSeq: seq - 1, awaiting: null, gap: null };
      this.subs.set(sid, st);
    }
    if (seq !== st.lastSeq + 1) this.onSeqGap(sid, st, st.lastSeq + 1, seq, receivedAt);
    st.lastSeq = seq;
    if (m.type === 'orderbook_snapshot' && st.awaiting) {
      const ticker = typeof m.msg?.market_ticker === 'string' ? m.msg.market_ticker.toUpperCase() : '';
      st.awaiting.delete(ticker);
      if (st.awaiting.size === 0) {
        st.awaiting = null;
        const gap = st.gap;
        st.gap = null;
        if (gap) {
          const closed = { ...gap, ended_at: receivedAt.toISOString() };
          this.logger.info({ feed: this.id, sid, gap: closed }, 'fresh snapshots arrived; seq gap closed');
          this.emitGap(closed);
        }
      }
    }
  }

  private onSeqGap(sid: number, st: SubscriptionState, expected: number, got: number, at: Date): void {
    this.seqGaps++;
    const tickers = st.tickers.length > 0 ? st.tickers : this.tickers;
    const id = this.nextId++;
    this.snapshotRequests++;
    this.logger.warn(
      { feed: this.id, connectionId: this.connectionId, sid, expected, got, tickers: tickers.length, requestId: id },
      'exchange B seq gap: requesting fresh snapshots',
    );
    this.send(JSON.stringify({ id, cmd: 'update_subscription', params: { sid, action: 'get_snapshot', market_tickers: tickers } }));
    // The message that was skipped could belong to any ticker of the subscription.
    st.awaiting = new Set(tickers);
    if (!st.gap) {
      st.gap = {
        venue: 'exchange-b',
        connection_id: this.connectionId ?? this.id,
        started_at: at.toISOString(),
        ended_at: null,
        reason: 'seq gap',
        markets: [...tickers],
      };
      this.emitGap(st.gap);
    }
  }
}

export type ExchangeBFeedTuning = Partial<
  Pick<ExchangeBFeedOptions, 'idleMs' | 'backoff' | 'stableMs' | 'handshakeTimeoutMs' | 'closeTimeoutMs' | 'random'>
>;

export interface ExchangeBCaptureOptions extends FeedCallbacks {
  url: string;
  tickers: string[];
  logger: CaptureLogger;
  /** Without both, exchange B capture stays off (the live channel needs an API key). */
  keyId?: string | undefined;
  privateKeyPem?: string | undefined;
  /** Default 500. */
  maxTickersPerConnection?: number;
  idPrefix?: string;
  feed?: ExchangeBFeedTuning;
}

/** Exchange B capture: off (logged) without credentials, else one ExchangeBFeed per ticker group. */
export class ExchangeBCapture {
  readonly feeds: ExchangeBFeed[] = [];
  /** Why capture is off, or null when it runs. */
  readonly offReason: string | null;
  private started = false;
  private stopping: Promise<void> | null = null;

  constructor(private readonly opts: ExchangeBCaptureOptions) {
    let reason: string | null = null;
    let credentials: KalshiCredentials | null = null;
    if (!opts.keyId || !opts.privateKeyPem) {
      reason = 'no Kalshi API key id and private key configured';
    } else {
      try {
        credentials = { keyId: opts.keyId, privateKey: loadKalshiPrivateKey(opts.privateKeyPem) };
      } catch (err) {
        reason = (err as Error).message;
      }
    }
    if (credentials && opts.tickers.length === 0) reason = 'no exchange B tickers configured';
    this.offReason = reason;
    if (credentials && reason === null) {
      spreadTokens(opts.tickers.map((t) => t.toUpperCase()), opts.maxTickersPerConnection ?? 500).forEach((group, i) => {
        this.feeds.push(
          new ExchangeBFeed({
            ...opts.feed,
            id: `${opts.idPrefix ?? 'exchange-b'}-${i}`,
            url: opts.url,
            logger: opts.logger,
            tickers: group,
            credentials: credentials as KalshiCredentials,
            onFrame: opts.onFrame,
            ...(opts.onGap ? { onGap: opts.onGap } : {}),
            ...(opts.onState ? { onState: opts.onState } : {}),
            ...(opts.onConnection ? { onConnection: opts.onConnection } : {}),
          }),
        );
      });
    }
  }

  get enabled(): boolean {
    return this.offReason === null;
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    if (!this.enabled) {
      this.opts.logger.warn({ venue: 'exchange-b', reason: this.offReason }, `exchange B capture is off: ${this.offReason}`);
      this.opts.onState?.('off', { feedId: this.opts.idPrefix ?? 'exchange-b', venue: 'exchange-b', connectionId: null });
      return;
    }
    this.opts.logger.info({ venue: 'exchange-b', tickers: this.opts.tickers.length, connections: this.feeds.length }, 'exchange B capture starting');
    for (const f of this.feeds) f.start();
  }

  stop(): Promise<void> {
    this.stopping ??= Promise.all(this.feeds.map((f) => f.stop())).then(() => undefined);
    return this.stopping;
  }

  stats(): CaptureStats {
    return summariseFeeds('exchange-b', this.enabled, this.enabled ? this.opts.tickers.length : 0, this.feeds.map((f) => f.stats()));
  }
}
