-- Cluster variant of 002: the summary is sharded like the raw tables (by market), the views
-- hang on the local raw tables (an insert through the Distributed table lands on the local
-- table of its shard, which fires the view there), and a Distributed table carries the
-- name the code queries.

CREATE TABLE IF NOT EXISTS {db}.market_dates_local ON CLUSTER {cluster}
(
    venue       LowCardinality(String),
    market      String CODEC(ZSTD(1)),
    event_date  Date CODEC(DoubleDelta, ZSTD(1))
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/market_dates_local', '{replica}')
ORDER BY (venue, market, event_date);

CREATE TABLE IF NOT EXISTS {db}.market_dates ON CLUSTER {cluster} AS {db}.market_dates_local
ENGINE = Distributed({cluster}, {db}, market_dates_local, cityHash64(market));

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_a_mv ON CLUSTER {cluster} TO {db}.market_dates_local AS
SELECT DISTINCT 'exchange-a' AS venue, market, event_date FROM {db}.raw_exchange_a_local;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_b_mv ON CLUSTER {cluster} TO {db}.market_dates_local AS
SELECT DISTINCT 'exchange-b' AS venue, ticker AS market, event_date FROM {db}.raw_exchange_b_local;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-a', market, event_date FROM {db}.raw_exchange_a;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-b', ticker, event_date FROM {db}.raw_exchange_b;
