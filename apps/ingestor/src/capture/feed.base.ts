import type { CaptureGap, Venue } from '@booktape/domain';
import { WebSocket, type RawData } from 'ws';

/** The subset of pino's logger that capture uses (a pino Logger fits). */
export interface CaptureLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** One websocket frame exactly as received. */
export interface CapturedFrame {
  venue: Venue;
  /** `<feed id>#<connection number>`: changes on every (re)connection. */
  connectionId: string;
  text: string;
  receivedAt: Date;
}

export type FeedState = 'idle' | 'connecting' | 'open' | 'subscribed' | 'reconnecting' | 'stopping' | 'closed' | 'off';

export interface FeedCallbacks {
  onFrame(frame: CapturedFrame): void;
  /** Called when a gap opens (ended_at null) and again, same connection_id/started_at, when it closes. */
  onGap?(gap: CaptureGap): void;
  onState?(state: FeedState, info: { feedId: string; venue: Venue; connectionId: string | null }): void;
  /**
   * A websocket opened (`connect`, before any of its frames) or closed (`disconnect`, after
   * its last frame, with the reason). Capture files record these boundaries: sequence
   * state belongs to a connection.
   */
  onConnection?(event: ConnectionEvent): void;
}

export interface ConnectionEvent {
  venue: Venue;
  feedId: string;
  kind: 'connect' | 'disconnect';
  connectionId: string;
  at: Date;
  reason?: string;
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** Fraction of the delay that is randomised (0 = none, 1 = "full jitter"). */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 30_000, factor: 2, jitter: 0.5 };

/**
 * Delay before reconnect attempt `attempt` (0-based): capped exponential growth, then a random
 * share taken off so that many feeds dropped together do not reconnect in lockstep.
 * Always within [cap × (1 − jitter), cap] where cap = min(maxMs, initialMs × factor^attempt).
 */
export function backoffDelay(attempt: number, opts: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const exp = opts.initialMs * Math.pow(opts.factor, Math.max(0, attempt));
  const cap = Math.min(opts.maxMs, Number.isFinite(exp) ? exp : opts.maxMs);
  const jitter = Math.min(1, Math.max(0, opts.jitter));
  return Math.round(cap * (1 - jitter * random()));
}

export interface FeedOptions extends FeedCallbacks {
  venue: Venue;
  /** Stable name of this feed slot, e.g. `exchange-a-0`. */
  id: string;
  url: string;
  logger: CaptureLogger;
  /** Markets (token ids or tickers) this feed follows, named in its gap records. */
  markets: string[];
  /** No message (data, PONG or websocket ping) for this long → terminate and reconnect. */
  idleMs?: number;
  backoff?: Partial<BackoffOptions>;
  /** A connection that stayed up this long resets the back-off. Default 30 s. */
  stableMs?: number;
  /** Websocket handshake timeout. Default 10 s. */
  handshakeTimeoutMs?: number;
  /** How long stop() waits for the close handshake before terminating. Default 2 s. */
  closeTimeoutMs?: number;
  random?: () => number;
}

export interface FeedStats {
  id: string;
  venue: Venue;
  state: FeedState;
  connected: boolean;
  connectionId: string | null;
  /** Successful connections (opened websockets) so far. */
  connections: number;
  /** Reconnect attempts scheduled after a drop or a failed attempt. */
  reconnects: number;
  framesReceived: number;
  /** Frames that carry market data (not PONG, acks or errors). */
  dataFramesReceived: number;
  lastFrameAt: string | null;
  lastDataAt: string | null;
  gapOpen: boolean;
  gapsRecorded: number;
}

/** Stats of one venue's capture (all its connections). */
export interface CaptureStats {
  venue: Venue;
  enabled: boolean;
  markets: number;
  connections: number;
  connected: number;
  framesReceived: number;
  dataFramesReceived: number;
  reconnects: number;
  lastDataAt: string | null;
  feeds: FeedStats[];
}

export function summariseFeeds(venue: Venue, enabled: boolean, markets: number, feeds: FeedStats[]): CaptureStats {
  let last: string | null = null;
  for (const f of feeds) if (f.lastDataAt !== null && (last === null || f.lastDataAt > last)) last = f.lastDataAt;
  return {
    venue,
    enabled,
    markets,
    connections: feeds.length,
    connected: feeds.filter((f) => f.connected).length,
    framesReceived: feeds.reduce((s, f) => s + f.framesReceived, 0),
    dataFramesReceived: feeds.reduce((s, f) => s + f.dataFramesReceived, 0),
    reconnects: feeds.reduce((s, f) => s + f.reconnects, 0),
    lastDataAt: last,
    feeds,
  };
}

/**
 * Owns one websocket to a venue: connect, subscribe on open, keep-alive, idle timeout,
 * reconnect with capped exponential back-off plus jitter, re-subscribe, and gap records.
 * Venues override the small hooks below (after tardis-node's RealTimeFeedBase).
 */
export abstract class Feed {
  protected readonly opts: FeedOptions;
  protected readonly logger: CaptureLogger;
  protected ws: WebSocket | null = null;
  private state: FeedState = 'idle';
  private connectionNo = 0;
  private connectionIdValue: string | null = null;
  private failures = 0;
  private openedAt = 0;
  private lastSeenAt = 0;
  private subscribed = false;
  private openGap: CaptureGap | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private keepAliveTimer: NodeJS.Timeout | null = null;
  private disconnectReason: string | null = null;
  private started = false;
  private paused = false;
  private stopping: Promise<void> | null = null;
  private resolveClosed: (() => void) | null = null;
  private readonly counters = {
    connections: 0,
    reconnects: 0,
    frames: 0,
    dataFrames: 0,
    lastFrameAt: null as Date | null,
    lastDataAt: null as Date | null,
    gaps: 0,
  };

  constructor(opts: FeedOptions) {
    this.opts = opts;
    this.logger = opts.logger;
  }

  // ---- hooks -------------------------------------------------------------------------------

  /** Sends the subscription messages on a freshly opened socket. */
  protected abstract subscribe(): void;

  /** Handshake headers (e.g. request signing); computed for every connection attempt. */
  protected connectHeaders(): Record<string, string> | undefined {
    return undefined;
  }

  /** Interval of the client keep-alive (null = none; the venue pings us). */
  protected keepAliveIntervalMs(): number | null {
    return null;
  }

  protected keepAlive(): void {}

  /**
   * Looks at a frame (after onFrame got it); returns whether it is market data (for stats).
   * A venue whose subscriptions are acknowledged calls markSubscribed() from here.
   */
  protected onMessage(_text: string, _receivedAt: Date): boolean {
    return true;
  }

  /** True when the venue acknowledges subscriptions (the feed then waits for markSubscribed()). */
  protected awaitsSubscriptionAck(): boolean {
    return false;
  }

  /** Per-connection state of the subclass is reset here (sids, seqs …). */
  protected onConnectionReset(): void {}

  // ---- public API --------------------------------------------------------------------------

  get id(): string {
    return this.opts.id;
  }

  get venue(): Venue {
    return this.opts.venue;
  }

  get connectionId(): string | null {
    return this.connectionIdValue;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.connect();
  }

  /** Graceful and idempotent: cancels timers, closes the socket and waits for it. */
  stop(): Promise<void> {
    if (this.stopping) return this.stopping;
    this.stopping = new Promise<void>((resolve) => {
      this.clearTimers();
      if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
      const ws = this.ws;
      if (!ws) {
        this.setState('closed');
        resolve();
        return;
      }
      this.setState('stopping');
      this.resolveClosed = resolve;
      if (ws.readyState === WebSocket.OPEN) {
        ws.close(1000, 'capture stopping');
        const t = setTimeout(() => ws.terminate(), this.opts.closeTimeoutMs ?? 2000);
        t.unref();
      } else {
        ws.terminate();
      }
    });
    return this.stopping;
  }

  stats(): FeedStats {
    const c = this.counters;
    return {
      id: this.opts.id,
      venue: this.opts.venue,
      state: this.state,
      connected: this.ws?.readyState === WebSocket.OPEN,
      connectionId: this.connectionIdValue,
      connections: c.connections,
      reconnects: c.reconnects,
      framesReceived: c.frames,
      dataFramesReceived: c.dataFrames,
      lastFrameAt: c.lastFrameAt?.toISOString() ?? null,
      lastDataAt: c.lastDataAt?.toISOString() ?? null,
      gapOpen: this.openGap !== null,
      gapsRecorded: c.gaps,
    };
  }

  /** Terminates the current connection (it will reconnect); for operators and tests. */
  reconnectNow(reason = 'requested'): void {
    if (this.ws) this.drop(reason);
  }

  // ---- for subclasses ----------------------------------------------------------------------

  protected send(text: string): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(text);
    return true;
  }

  /** Replaces the markets named in future gap records (subscriptions changed). */
  protected setMarkets(markets: string[]): void {
    this.opts.markets = markets;
  }

  protected isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** The subscription is in place: closes the gap left by the previous connection, if any. */
  protected markSubscribed(): void {
    if (this.subscribed) return;
    this.subscribed = true;
    this.setState('subscribed');
    const gap = this.openGap;
    if (gap) {
      this.openGap = null;
      const closed: CaptureGap = { ...gap, ended_at: new Date().toISOString() };
      this.logger.info({ feed: this.opts.id, gap: closed }, 'capture gap closed');
      this.emitGap(closed);
    }
  }

  protected emitGap(gap: CaptureGap): void {
    try {
      this.opts.onGap?.(gap);
    } catch (err) {
      this.logger.error({ feed: this.opts.id, err }, 'onGap callback failed');
    }
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  private setState(state: FeedState): void {
    if (this.state === state) return;
    this.state = state;
    try {
      this.opts.onState?.(state, { feedId: this.opts.id, venue: this.opts.venue, connectionId: this.connectionIdValue });
    } catch (err) {
      this.logger.error({ feed: this.opts.id, err }, 'onState callback failed');
    }
  }

  private connect(): void {
    if (this.stopping) return;
    this.reconnectTimer = null;
    this.connectionNo++;
    this.connectionIdValue = `${this.opts.id}#${this.connectionNo}`;
    this.subscribed = false;
    this.disconnectReason = null;
    this.onConnectionReset();
    this.setState('connecting');
    let headers: Record<string, string> | undefined;
    try {
      headers = this.connectHeaders();
    } catch (err) {
      this.logger.error({ feed: this.opts.id, err }, 'cannot build connection headers');
      this.scheduleReconnect();
      return;
    }
    const ws = new WebSocket(this.opts.url, {
      headers,
      handshakeTimeout: this.opts.handshakeTimeoutMs ?? 10_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.on('open', () => {
      this.onOpen(ws);
      if (this.paused) ws.pause();
    });
    ws.on('message', (data) => this.onRaw(ws, data));
    ws.on('ping', () => this.seen());
    ws.on('pong', () => this.seen());
    ws.on('unexpected-response', (_req, res) => {
      this.disconnectReason = `handshake refused: HTTP ${res.statusCode ?? '?'}`;
      this.logger.error({ feed: this.opts.id, url: this.opts.url, status: res.statusCode }, 'venue refused the websocket handshake');
      res.resume();
      ws.terminate();
    });
    ws.on('error', (err) => {
      this.disconnectReason ??= `error: ${err.message}`;
      if (!this.stopping) this.logger.warn({ feed: this.opts.id, err: err.message }, 'websocket error');
    });
    ws.on('close', (code, reason) => this.onClose(ws, code, reason.toString()));
  }

  private onOpen(ws: WebSocket): void {
    if (ws !== this.ws) return;
    this.counters.connections++;
    this.openedAt = Date.now();
    this.seen();
    this.setState('open');
    this.logger.info({ feed: this.opts.id, connectionId: this.connectionIdValue, markets: this.opts.markets.length }, 'connected');
    this.emitConnection('connect');
    this.armIdle();
    const every = this.keepAliveIntervalMs();
    if (every !== null) {
      this.keepAliveTimer = setInterval(() => {
        try {
          this.keepAlive();
        } catch (err) {
          this.logger.warn({ feed: this.opts.id, err }, 'keep-alive failed');
        }
      }, every);
    }
    try {
      this.subscribe();
    } catch (err) {
      this.logger.error({ feed: this.opts.id, err }, 'subscribe failed');
      this.drop('subscribe failed');
      return;
    }
    if (!this.awaitsSubscriptionAck()) this.markSubscribed();
  }

  private emitConnection(kind: 'connect' | 'disconnect', reason?: string): void {
    const event: ConnectionEvent = { venue: this.opts.venue, feedId: this.opts.id, kind, connectionId: this.connectionIdValue as string, at: new Date() };
    if (reason !== undefined) event.reason = reason;
    try {
      this.opts.onConnection?.(event);
    } catch (err) {
      this.logger.error({ feed: this.opts.id, err }, 'onConnection callback failed');
    }
  }

  private seen(): void {
    this.lastSeenAt = Date.now();
  }

  private onRaw(ws: WebSocket, data: RawData): void {
    if (ws !== this.ws) return;
    const receivedAt = new Date();
    this.lastSeenAt = receivedAt.getTime();
    // ws hands text and binary frames over as one Buffer (binaryType 'nodebuffer').
    const text = (data as Buffer).toString('utf8');
    this.counters.frames++;
    this.counters.lastFrameAt = receivedAt;
    try {
      this.opts.onFrame({ venue: this.opts.venue, connectionId: this.connectionIdValue as string, text, receivedAt });
    } catch (err) {
      this.logger.error({ feed: this.opts.id, err }, 'onFrame callback failed');
    }
    let isData = true;
    try {
      isData = this.onMessage(text, receivedAt);
    } catch (err) {
      this.logger.warn({ feed: this.opts.id, err }, 'frame handler failed');
    }
    if (isData) {
      this.counters.dataFrames++;
      this.counters.lastDataAt = receivedAt;
    }
  }

  /**
   * Idle check without re-arming a timer per message (tens of thousands a second): the timer
   * fires, compares the last traffic time, and re-arms for the remainder.
   */
  private armIdle(): void {
    const idleMs = this.opts.idleMs;
    if (idleMs === undefined || idleMs <= 0) return;
    const check = (): void => {
      this.idleTimer = null;
      if (!this.ws || this.stopping) return;
      // While capture holds the socket paused (back-pressure), silence is ours, not the venue's.
      if (this.paused) this.lastSeenAt = Date.now();
      const quiet = Date.now() - this.lastSeenAt;
      if (quiet >= idleMs) {
        this.logger.warn({ feed: this.opts.id, quietMs: quiet }, 'no message within the idle timeout; reconnecting');
        this.drop('idle timeout');
      } else {
        this.idleTimer = setTimeout(check, idleMs - quiet);
      }
    };
    this.idleTimer = setTimeout(check, idleMs);
  }

  /**
   * Back-pressure: stop reading the socket (TCP then slows the venue down) while what was
   * already received cannot be passed on fast enough. A venue that drops a slow consumer
   * causes a recorded gap, which is better than unbounded memory.
   */
  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.ws?.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.lastSeenAt = Date.now();
    this.ws?.resume();
  }

  private drop(reason: string): void {
    this.disconnectReason = reason;
    this.ws?.terminate();
  }

  private clearTimers(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    this.idleTimer = null;
    this.keepAliveTimer = null;
  }

  private onClose(ws: WebSocket, code: number, reasonText: string): void {
    if (ws !== this.ws) return;
    this.ws = null;
    this.clearTimers();
    const wasOpen = this.openedAt > 0;
    const wasSubscribed = this.subscribed;
    this.subscribed = false;
    const reason = this.stopping ? 'capture stopping' : (this.disconnectReason ?? `closed by venue (code ${code}${reasonText ? `: ${reasonText}` : ''})`);
    if (wasOpen) this.emitConnection('disconnect', reason);
    if (this.stopping) {
      this.setState('closed');
      this.logger.info({ feed: this.opts.id }, 'stopped');
      this.resolveClosed?.();
      this.resolveClosed = null;
      return;
    }
    if (wasSubscribed && !this.openGap) {
      // Frames may be missing from the last traffic seen on this connection until the next
      // subscription is in place.
      this.openGap = {
        venue: this.opts.venue,
        connection_id: this.connectionIdValue as string,
        started_at: new Date(this.lastSeenAt || Date.now()).toISOString(),
        ended_at: null,
        reason,
        markets: [...this.opts.markets],
      };
      this.counters.gaps++;
      this.emitGap(this.openGap);
    }
    if (wasOpen && Date.now() - this.openedAt >= (this.opts.stableMs ?? 30_000)) this.failures = 0;
    this.openedAt = 0;
    this.logger.warn({ feed: this.opts.id, connectionId: this.connectionIdValue, reason }, 'disconnected');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopping) return;
    const delay = backoffDelay(this.failures, { ...DEFAULT_BACKOFF, ...this.opts.backoff }, this.opts.random);
    this.failures++;
    this.counters.reconnects++;
    this.setState('reconnecting');
    this.logger.info({ feed: this.opts.id, delayMs: delay, attempt: this.failures }, 'reconnecting');
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }
}
