import { Feed, summariseFeeds, type CaptureLogger, type CaptureStats, type FeedCallbacks, type FeedOptions } from './feed.base.ts';
import { spreadTokens } from './spread.ts';

/**
 * Exchange A (Polymarket CLOB market channel). No authentication, no acknowledgement, no
 * sequence numbers: a fresh `book` for every token arrives after each (re)subscription, which
 * is what makes a reconnect safe. Keep-alive is the text PING every 10 s, answered by PONG.
 */

export interface ExchangeAFeedOptions extends Omit<FeedOptions, 'venue' | 'markets'> {
  tokens: string[];
  /** Text PING interval. Default 10 s (the venue drops a connection idle for about 2 min). */
  pingIntervalMs?: number;
  /** Ask for the extra events (best_bid_ask, new_market, market_resolved). Default true. */
  customFeatureEnabled?: boolean;
  /**
   * token id → condition id. When given, gap records name condition ids (the market key the
   * stored records use) instead of token ids.
   */
  tokenMarkets?: ReadonlyMap<string, string>;
}

function gapMarkets(tokens: string[], tokenMarkets: ReadonlyMap<string, string> | undefined): string[] {
  return tokenMarkets ? [...new Set(tokens.map((t) => tokenMarkets.get(t) ?? t))] : [...tokens];
}

export class ExchangeAFeed extends Feed {
  private tokens: string[];
  private readonly pingIntervalMs: number;
  private readonly customFeatureEnabled: boolean;
  private readonly tokenMarkets: ReadonlyMap<string, string> | undefined;

  constructor(opts: ExchangeAFeedOptions) {
    const tokens = [...new Set(opts.tokens)];
    // PONG every 10 s keeps an idle market's connection visibly alive; three missed → reconnect.
    super({ ...opts, venue: 'exchange-a', markets: gapMarkets(tokens, opts.tokenMarkets), idleMs: opts.idleMs ?? 35_000 });
    this.tokens = tokens;
    this.tokenMarkets = opts.tokenMarkets;
    this.pingIntervalMs = opts.pingIntervalMs ?? 10_000;
    this.customFeatureEnabled = opts.customFeatureEnabled ?? true;
  }

  get tokenIds(): readonly string[] {
    return this.tokens;
  }

  protected override subscribe(): void {
    const msg: Record<string, unknown> = { assets_ids: this.tokens, type: 'market' };
    if (this.customFeatureEnabled) msg.custom_feature_enabled = true;
    this.send(JSON.stringify(msg));
  }

  protected override keepAliveIntervalMs(): number {
    return this.pingIntervalMs;
  }

  protected override keepAlive(): void {
    this.send('PING');
  }

  /** PONG and text answers (e.g. INVALID OPERATION) are control, not market data. */
  protected override onMessage(text: string): boolean {
    const c = text.charCodeAt(0);
    return c === 0x5b /* [ */ || c === 0x7b /* { */;
  }

  /** Adds tokens on the live connection (the venue sends their books); kept for reconnects. */
  addTokens(tokens: string[]): string[] {
    const have = new Set(this.tokens);
    const added = [...new Set(tokens)].filter((t) => !have.has(t));
    if (added.length === 0) return [];
    this.tokens = [...this.tokens, ...added];
    this.setMarkets(gapMarkets(this.tokens, this.tokenMarkets));
    this.send(JSON.stringify({ assets_ids: added, operation: 'subscribe' }));
    return added;
  }

  removeTokens(tokens: string[]): string[] {
    const drop = new Set(tokens);
    const removed = this.tokens.filter((t) => drop.has(t));
    if (removed.length === 0) return [];
    this.tokens = this.tokens.filter((t) => !drop.has(t));
    this.setMarkets(gapMarkets(this.tokens, this.tokenMarkets));
    this.send(JSON.stringify({ assets_ids: removed, operation: 'unsubscribe' }));
    return removed;
  }
}

export type ExchangeAFeedTuning = Partial<
  Pick<
    ExchangeAFeedOptions,
    'idleMs' | 'backoff' | 'stableMs' | 'handshakeTimeoutMs' | 'closeTimeoutMs' | 'pingIntervalMs' | 'customFeatureEnabled' | 'random'
  >
>;

export interface ExchangeACaptureOptions extends FeedCallbacks {
  url: string;
  tokens: string[];
  logger: CaptureLogger;
  /** Default 200 (the venue's practical limit is a few hundred per connection). */
  maxTokensPerConnection?: number;
  /** Feed ids are `<idPrefix>-<n>`. Default `exchange-a`. */
  idPrefix?: string;
  /** token id → condition id (ExchangeASelection.tokenMarkets), so gap records name markets. */
  tokenMarkets?: ReadonlyMap<string, string>;
  feed?: ExchangeAFeedTuning;
}

/** All exchange A connections of one capture process: one ExchangeAFeed per token group. */
export class ExchangeACapture {
  readonly feeds: ExchangeAFeed[] = [];
  private readonly max: number;
  private started = false;
  private stopping: Promise<void> | null = null;
  private nextFeed = 0;

  constructor(private readonly opts: ExchangeACaptureOptions) {
    this.max = opts.maxTokensPerConnection ?? 200;
    for (const group of spreadTokens(opts.tokens, this.max)) this.feeds.push(this.newFeed(group));
  }

  private newFeed(tokens: string[]): ExchangeAFeed {
    const { url, logger, onFrame, onGap, onState, onConnection, feed, tokenMarkets } = this.opts;
    return new ExchangeAFeed({
      ...feed,
      ...(tokenMarkets ? { tokenMarkets } : {}),
      id: `${this.opts.idPrefix ?? 'exchange-a'}-${this.nextFeed++}`,
      url,
      logger,
      tokens,
      onFrame,
      ...(onGap ? { onGap } : {}),
      ...(onState ? { onState } : {}),
      ...(onConnection ? { onConnection } : {}),
    });
  }

  get tokenCount(): number {
    return this.feeds.reduce((s, f) => s + f.tokenIds.length, 0);
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    if (this.feeds.length === 0) {
      this.opts.logger.warn({ venue: 'exchange-a' }, 'no exchange A tokens configured or discovered: nothing to capture yet');
    }
    this.opts.logger.info(
      { venue: 'exchange-a', tokens: this.tokenCount, connections: this.feeds.length, maxTokensPerConnection: this.max },
      'exchange A capture starting',
    );
    for (const f of this.feeds) f.start();
  }

  stop(): Promise<void> {
    this.stopping ??= Promise.all(this.feeds.map((f) => f.stop())).then(() => undefined);
    return this.stopping;
  }

  /** Subscribes new tokens: fills connections with room first, then opens new ones. */
  addTokens(tokens: string[]): string[] {
    const have = new Set(this.feeds.flatMap((f) => f.tokenIds));
    let todo = [...new Set(tokens)].filter((t) => !have.has(t));
    const added = [...todo];
    for (const f of this.feeds) {
      if (todo.length === 0) break;
      const room = this.max - f.tokenIds.length;
      if (room <= 0) continue;
      f.addTokens(todo.slice(0, room));
      todo = todo.slice(room);
    }
    for (const group of spreadTokens(todo, this.max)) {
      const f = this.newFeed(group);
      this.feeds.push(f);
      if (this.started && !this.stopping) f.start();
    }
    return added;
  }

  removeTokens(tokens: string[]): string[] {
    return this.feeds.flatMap((f) => f.removeTokens(tokens));
  }

  stats(): CaptureStats {
    return summariseFeeds('exchange-a', true, this.tokenCount, this.feeds.map((f) => f.stats()));
  }
}
