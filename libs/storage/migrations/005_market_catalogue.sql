-- Exchange A market catalogue: what the metadata API (gamma) says about each market, kept
-- by the ingestor (open events, refreshed periodically) and by the API (live answers of
-- the slug lookup are written back). The slug lookup answers from it, and it tells which
-- outcome token ids a condition has.
--
-- One row per market (condition id); a refresh is a new row with a later updated_at and
-- ReplacingMergeTree keeps the latest. Readers use FINAL. The event a market belongs to is
-- kept on the market's row (one event per market at the venue), so an event lookup is
-- "markets whose event_slug is X". Slug lookups find the condition ids through the bloom
-- filters first, then read those rows by key with FINAL.

CREATE TABLE IF NOT EXISTS {db}.market_catalogue
(
    condition_id  String,
    market_id     String,
    market_slug   String,
    question      String,
    active        Bool,
    closed        Bool,
    token_ids     Array(String),
    outcomes      Array(String),
    event_id      String,
    event_slug    String,
    event_title   String,
    updated_at    DateTime64(3, 'UTC'),
    INDEX market_slug_idx market_slug TYPE bloom_filter GRANULARITY 1,
    INDEX event_slug_idx event_slug TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY condition_id;
