-- Which (venue, market, UTC date) hold raw data: the availability and list endpoints read
-- this instead of the raw tables, so they stay fast with billions of raw rows.
--
-- One row per (venue, market, date); insert-triggered materialized views keep it current
-- (each insert block contributes its distinct dates), ReplacingMergeTree collapses the
-- repeats. Readers need no FINAL: they only ask whether a date exists (DISTINCT, min, max).
-- The backfill runs after the views exist, so no insert falls between the two.

CREATE TABLE IF NOT EXISTS {db}.market_dates
(
    venue       LowCardinality(String),
    market      String CODEC(ZSTD(1)),
    event_date  Date CODEC(DoubleDelta, ZSTD(1))
)
ENGINE = ReplacingMergeTree
ORDER BY (venue, market, event_date);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_a_mv TO {db}.market_dates AS
SELECT DISTINCT 'exchange-a' AS venue, market, event_date FROM {db}.raw_exchange_a;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_b_mv TO {db}.market_dates AS
SELECT DISTINCT 'exchange-b' AS venue, ticker AS market, event_date FROM {db}.raw_exchange_b;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-a', market, event_date FROM {db}.raw_exchange_a;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-b', ticker, event_date FROM {db}.raw_exchange_b;
