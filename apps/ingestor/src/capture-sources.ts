import type { Logger } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';
import { ExchangeACapture, ExchangeBCapture, backoffDelay, resolveExchangeATokens, type CapturedFrame, type FeedCallbacks } from './capture/index.ts';
import type { CapturePipeline } from './capture-pipeline.ts';
import type { IngestorConfig } from './config.ts';

/** A venue's capture as a long-running part. */
export interface CaptureSource {
  venue: Venue;
  start(): Promise<void>;
  stop(): Promise<void>;
  pause(): void;
  resume(): void;
  status(): Record<string, unknown>;
}

/**
 * Builds the capture of each configured venue, wired to the pipeline. Nothing here blocks
 * start-up on the outside world: exchange A resolves its tokens (configuration or the
 * metadata API) in the background and keeps retrying with back-off, logging clearly while
 * the venue cannot be reached.
 */
export async function buildCaptureSources(
  config: IngestorConfig,
  pipeline: CapturePipeline,
  log: Logger,
  flow: { backlog: () => number; high: number; low: number } = { backlog: () => pipeline.backlog, high: 100_000, low: 20_000 },
): Promise<CaptureSource[]> {
  const sources: CaptureSource[] = [];
  // Back-pressure: above `high` messages waiting for Kafka, stop reading the sockets until
  // the backlog is under `low`, so memory stays bounded when Kafka is slow or down.
  let paused = false;
  let pausedSince = 0;
  let check: NodeJS.Timeout | undefined;
  const setPaused = (on: boolean) => {
    paused = on;
    for (const s of sources) (on ? s.pause : s.resume)();
    if (on) {
      pausedSince = Date.now();
      log.warn({ backlog: flow.backlog() }, 'kafka is behind: pausing venue sockets');
      check = setInterval(() => {
        if (flow.backlog() <= flow.low) {
          clearInterval(check);
          check = undefined;
          setPaused(false);
          log.info({ pausedMs: Date.now() - pausedSince }, 'resuming venue sockets');
        }
      }, 50);
      check.unref();
    }
  };
  const callbacks = (venue: Venue): FeedCallbacks => ({
    onFrame: (f: CapturedFrame) => {
      pipeline.handleFrame(venue, f.text, f.receivedAt).catch((e: Error) => log.error({ err: e.message, venue }, 'frame handling failed'));
      if (!paused && flow.backlog() > flow.high) setPaused(true);
    },
    onGap: (gap) => {
      pipeline.handleGap(gap).catch((e: Error) => log.error({ err: e.message, venue }, 'gap record failed'));
    },
    // Synchronous, like onFrame: the boundary lands in the capture file between the frames
    // of the two connections, and exchange B's seq state is reset before the new one's frames.
    onConnection: (c) => {
      pipeline.handleBoundary(venue, { kind: c.kind, connection_id: c.connectionId, ...(c.reason !== undefined ? { reason: c.reason } : {}) }, c.at);
    },
  });
  for (const venue of VENUES) if (config.venues[venue]) sources.push(CAPTURE_SOURCES[venue](config, callbacks(venue), log));
  return sources;
}

/**
 * Each venue's capture (its feeds), keyed by venue: the feed factory of the venue registry's
 * entry, kept in this app because the feeds are (libs/venues does not depend on apps).
 */
const CAPTURE_SOURCES: { readonly [V in Venue]: (config: IngestorConfig, callbacks: FeedCallbacks, log: Logger) => CaptureSource } = {
  'exchange-a': exchangeASource,
  'exchange-b': exchangeBSource,
};

function exchangeASource(config: IngestorConfig, callbacks: FeedCallbacks, log: Logger): CaptureSource {
  const a = config.exchangeA;
  let capture: ExchangeACapture | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let attempt = 0;
  let lastError: string | null = null;

  const resolveAndStart = async (): Promise<void> => {
    if (stopped) return;
    try {
      const selection = await resolveExchangeATokens({
        gammaUrl: a.gammaUrl,
        tokenIds: a.tokens,
        conditionIds: a.markets,
        maxMarkets: a.discoverLimit,
      });
      if (stopped) return;
      if (selection.missing.length > 0) log.warn({ venue: 'exchange-a', missing: selection.missing }, 'configured condition ids not found in the metadata API');
      capture = new ExchangeACapture({ url: a.wsUrl, tokens: selection.tokenIds, logger: log, maxTokensPerConnection: a.tokensPerConnection, ...callbacks });
      capture.start();
      lastError = null;
      log.info({ venue: 'exchange-a', source: selection.source, markets: selection.markets.length, tokens: selection.tokenIds.length }, 'exchange A markets resolved');
    } catch (e) {
      lastError = (e as Error).message;
      const delay = backoffDelay(attempt++, { initialMs: 2_000, maxMs: 60_000, factor: 2, jitter: 0.2 });
      log.warn({ venue: 'exchange-a', err: lastError, retryInMs: delay }, `exchange A cannot be reached (${a.gammaUrl}); retrying`);
      timer = setTimeout(() => void resolveAndStart(), delay);
    }
  };

  return {
    venue: 'exchange-a',
    async start() {
      stopped = false;
      void resolveAndStart();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await capture?.stop();
    },
    pause: () => capture?.feeds.forEach((f) => f.pause()),
    resume: () => capture?.feeds.forEach((f) => f.resume()),
    status: () => ({ venue: 'exchange-a', resolving: !capture, lastError, ...(capture ? { feeds: capture.stats() } : {}) }),
  };
}

function exchangeBSource(config: IngestorConfig, callbacks: FeedCallbacks, log: Logger): CaptureSource {
  const b = config.exchangeB;
  const capture = new ExchangeBCapture({
    url: b.wsUrl,
    tickers: b.tickers,
    logger: log,
    keyId: b.credentials?.keyId,
    privateKeyPem: b.credentials?.privateKeyPem,
    // One connection: Kalshi numbers subscriptions per connection, and the pipeline keeps one
    // seq stream per venue (reset at each connect boundary), so all tickers share it.
    maxTickersPerConnection: 100_000,
    ...callbacks,
  });
  return {
    venue: 'exchange-b',
    async start() {
      capture.start();
    },
    async stop() {
      await capture.stop();
    },
    pause: () => capture.feeds.forEach((f) => f.pause()),
    resume: () => capture.feeds.forEach((f) => f.resume()),
    // Why it is off, as a code for the status report (the capture logs the full text).
    status: () => ({ ...capture.stats(), offReason: capture.enabled ? null : !b.credentials ? 'no_credentials' : b.tickers.length === 0 ? 'no_markets' : 'bad_credentials' }),
  };
}
