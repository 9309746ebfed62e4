export {
  Feed,
  backoffDelay,
  summariseFeeds,
  DEFAULT_BACKOFF,
  type BackoffOptions,
  type CaptureLogger,
  type CaptureStats,
  type CapturedFrame,
  type ConnectionEvent,
  type FeedCallbacks,
  type FeedOptions,
  type FeedState,
  type FeedStats,
} from './feed.base.ts';
export {
  ExchangeAFeed,
  ExchangeACapture,
  type ExchangeAFeedOptions,
  type ExchangeAFeedTuning,
  type ExchangeACaptureOptions,
} from './exchange-a.feed.ts';
export {
  ExchangeBFeed,
  ExchangeBCapture,
  type ExchangeBFeedOptions,
  type ExchangeBFeedTuning,
  type ExchangeBCaptureOptions,
} from './exchange-b.feed.ts';
export { kalshiAuthHeaders, kalshiSignature, loadKalshiPrivateKey, signedPath, type KalshiCredentials } from './kalshi-auth.ts';
export {
  MarketDiscoveryError,
  discoverExchangeAMarkets,
  marketsForConditions,
  parseEncodedList,
  parseGammaMarket,
  resolveExchangeATokens,
  tokenMarketMap,
  type DiscoveredMarket,
  type ExchangeASelection,
  type ResolveExchangeAOptions,
} from './market-discovery.ts';
export { spreadTokens } from './spread.ts';
