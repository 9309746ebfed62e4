-- First copy wins (issue 9): the raw tables' ReplacingMergeTree version becomes
-- MAX_UInt64 - ingest_seq, so the copy received first (lowest ingest_seq) is the one kept.
-- Before, the version came from the Kafka offset alone; the capture merges consecutive
-- frames of a market into ONE Kafka message, so an original and its re-sent duplicate could
-- share an offset, and then the LAST inserted copy won (wrong position, wrong order).
-- ingest_seq is strictly increasing in receive order and deterministic for a replayed file;
-- equal ingest_seq means the very same line again (identical content).
--
-- A ReplacingMergeTree's version cannot be altered, so each raw table is rebuilt: a staging
-- table with the new version is filled with EVERY stored row (not FINAL: where an earlier
-- copy of a duplicate was not merged away yet, the new version now keeps it), then swapped
-- in. Every statement can run again after a crash at any point (migrations are recorded
-- only when all their statements ran) without losing or doubling a row:
--   * the copy reads the live table and a retired one through a Merge table that tolerates
--     either being absent, and copying a row twice is harmless (same key, same version,
--     same content: one row after FINAL);
--   * the retired table is dropped only right after a copy that read it whole;
--   * a row inserted into the live table while its copy ran is picked up by a second pass
--     over the retired table (rows inserted since the copy's newest row, with a margin);
--     between the two renames the table does not exist and the sink's insert retries.
-- The market_dates views (002) read the raw tables: they are dropped first, created again
-- on the new tables, and market_dates is backfilled (it is a set, so repeats collapse).
-- On an empty database every step is a no-op copy of nothing.

DROP VIEW IF EXISTS {db}.market_dates_exchange_a_mv;

DROP VIEW IF EXISTS {db}.market_dates_exchange_b_mv;

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8
(
    market          String CODEC(ZSTD(1)),
    event_date      Date CODEC(DoubleDelta, ZSTD(1)),
    event_ts        DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    asset_id        String CODEC(ZSTD(1)),
    event_type      LowCardinality(String),
    dedup_id        String CODEC(ZSTD(1)),
    ingest_seq      UInt64 CODEC(DoubleDelta, ZSTD(1)),
    hash            String CODEC(ZSTD(1)),
    payload         String CODEC(ZSTD(3)),
    received_at     DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    worker_id       UInt32 CODEC(ZSTD(1)),
    kafka_partition Int32 CODEC(ZSTD(1)),
    kafka_offset    Int64 CODEC(DoubleDelta, ZSTD(1)),
    row_version     UInt64 MATERIALIZED toUInt64(18446744073709551615) - ingest_seq,
    inserted_at     DateTime64(3, 'UTC') DEFAULT now64(3) CODEC(DoubleDelta, ZSTD(1)),
    INDEX inserted_at_idx inserted_at TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree(row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (market, event_date, event_ts, asset_id, event_type, dedup_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- Every row of the live table and of a retired one left by an interrupted run. A Merge
-- table with its own column list reads nothing (rather than failing) when neither exists.
CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_src
(
    market String, event_date Date, event_ts DateTime64(3, 'UTC'), asset_id String, event_type LowCardinality(String),
    dedup_id String, ingest_seq UInt64, hash String, payload String, received_at DateTime64(3, 'UTC'), worker_id UInt32,
    kafka_partition Int32, kafka_offset Int64, inserted_at DateTime64(3, 'UTC')
)
ENGINE = Merge({db}, '^raw_exchange_a(_v1)?$');

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_late AS {db}.raw_exchange_a_v8_src
ENGINE = Merge({db}, '^raw_exchange_a_v1$');

INSERT INTO {db}.raw_exchange_a_v8
    (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SELECT market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_a_v8_src;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v1 SYNC;

RENAME TABLE IF EXISTS {db}.raw_exchange_a TO {db}.raw_exchange_a_v1;

INSERT INTO {db}.raw_exchange_a_v8
    (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SELECT market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_a_v8_late
WHERE inserted_at >= (SELECT max(inserted_at) FROM {db}.raw_exchange_a_v8) - INTERVAL 10 MINUTE;

RENAME TABLE {db}.raw_exchange_a_v8 TO {db}.raw_exchange_a;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v1 SYNC;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8_late;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8_src;

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8
(
    ticker          String CODEC(ZSTD(1)),
    event_date      Date CODEC(DoubleDelta, ZSTD(1)),
    event_ts        DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    record_type     LowCardinality(String),
    dedup_id        String CODEC(ZSTD(1)),
    ingest_seq      UInt64 CODEC(DoubleDelta, ZSTD(1)),
    sid             Nullable(Int64) CODEC(ZSTD(1)),
    seq             Nullable(Int64) CODEC(ZSTD(1)),
    payload         String CODEC(ZSTD(3)),
    received_at     DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    worker_id       UInt32 CODEC(ZSTD(1)),
    kafka_partition Int32 CODEC(ZSTD(1)),
    kafka_offset    Int64 CODEC(DoubleDelta, ZSTD(1)),
    row_version     UInt64 MATERIALIZED toUInt64(18446744073709551615) - ingest_seq,
    inserted_at     DateTime64(3, 'UTC') DEFAULT now64(3) CODEC(DoubleDelta, ZSTD(1)),
    INDEX inserted_at_idx inserted_at TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree(row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (ticker, event_date, event_ts, record_type, dedup_id)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_src
(
    ticker String, event_date Date, event_ts DateTime64(3, 'UTC'), record_type LowCardinality(String), dedup_id String,
    ingest_seq UInt64, sid Nullable(Int64), seq Nullable(Int64), payload String, received_at DateTime64(3, 'UTC'),
    worker_id UInt32, kafka_partition Int32, kafka_offset Int64, inserted_at DateTime64(3, 'UTC')
)
ENGINE = Merge({db}, '^raw_exchange_b(_v1)?$');

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_late AS {db}.raw_exchange_b_v8_src
ENGINE = Merge({db}, '^raw_exchange_b_v1$');

INSERT INTO {db}.raw_exchange_b_v8
    (ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SELECT ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_b_v8_src;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v1 SYNC;

RENAME TABLE IF EXISTS {db}.raw_exchange_b TO {db}.raw_exchange_b_v1;

INSERT INTO {db}.raw_exchange_b_v8
    (ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SELECT ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_b_v8_late
WHERE inserted_at >= (SELECT max(inserted_at) FROM {db}.raw_exchange_b_v8) - INTERVAL 10 MINUTE;

RENAME TABLE {db}.raw_exchange_b_v8 TO {db}.raw_exchange_b;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v1 SYNC;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8_late;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8_src;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_a_mv TO {db}.market_dates AS
SELECT DISTINCT 'exchange-a' AS venue, market, event_date FROM {db}.raw_exchange_a;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_b_mv TO {db}.market_dates AS
SELECT DISTINCT 'exchange-b' AS venue, ticker AS market, event_date FROM {db}.raw_exchange_b;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-a', market, event_date FROM {db}.raw_exchange_a;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-b', ticker, event_date FROM {db}.raw_exchange_b;

-- The rollup's per asset-day cross-checks (JSON of libs/book checks.ts ChecksState; '' on
-- rows written before: the rollup then rebuilds the day).
ALTER TABLE {db}.summary_days ADD COLUMN IF NOT EXISTS checks String DEFAULT '' CODEC(ZSTD(3));
