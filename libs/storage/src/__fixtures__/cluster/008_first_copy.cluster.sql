-- Cluster variant of 008: the same rebuild of the replicated local raw tables (see
-- 008_first_copy.sql for why and for the crash-safe order of the steps). Copies go through
-- Distributed tables: the source reads every shard (a Distributed table over a Merge table
-- of the live and retired local tables, which reads nothing where neither exists) and the
-- target re-shards by the same key, so every row lands on its own shard again. The new
-- local tables' ZooKeeper paths carry {uuid}: a re-run after a crash creates a staging
-- table that cannot collide with the one already renamed into place.

DROP VIEW IF EXISTS {db}.market_dates_exchange_a_mv ON CLUSTER {cluster} SYNC;

DROP VIEW IF EXISTS {db}.market_dates_exchange_b_mv ON CLUSTER {cluster} SYNC;

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_local ON CLUSTER {cluster}
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/raw_exchange_a_local/{uuid}', '{replica}', row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (market, event_date, event_ts, asset_id, event_type, dedup_id);

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8 ON CLUSTER {cluster} AS {db}.raw_exchange_a_v8_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_a_v8_local, cityHash64(market));

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_src_local ON CLUSTER {cluster}
(
    market String, event_date Date, event_ts DateTime64(3, 'UTC'), asset_id String, event_type LowCardinality(String),
    dedup_id String, ingest_seq UInt64, hash String, payload String, received_at DateTime64(3, 'UTC'), worker_id UInt32,
    kafka_partition Int32, kafka_offset Int64, inserted_at DateTime64(3, 'UTC')
)
ENGINE = Merge({db}, '^raw_exchange_a(_v1)?_local$');

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_src ON CLUSTER {cluster} AS {db}.raw_exchange_a_v8_src_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_a_v8_src_local);

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_late_local ON CLUSTER {cluster} AS {db}.raw_exchange_a_v8_src_local
ENGINE = Merge({db}, '^raw_exchange_a_v1_local$');

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_v8_late ON CLUSTER {cluster} AS {db}.raw_exchange_a_v8_late_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_a_v8_late_local);

INSERT INTO {db}.raw_exchange_a_v8
    (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SETTINGS insert_distributed_sync = 1
SELECT market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_a_v8_src;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v1_local ON CLUSTER {cluster} SYNC;

RENAME TABLE IF EXISTS {db}.raw_exchange_a_local TO {db}.raw_exchange_a_v1_local ON CLUSTER {cluster};

INSERT INTO {db}.raw_exchange_a_v8
    (market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SETTINGS insert_distributed_sync = 1
SELECT market, event_date, event_ts, asset_id, event_type, dedup_id, ingest_seq, hash, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_a_v8_late
WHERE inserted_at >= (SELECT max(inserted_at) FROM {db}.raw_exchange_a_v8) - INTERVAL 10 MINUTE;

RENAME TABLE {db}.raw_exchange_a_v8_local TO {db}.raw_exchange_a_local ON CLUSTER {cluster};

-- The Distributed table keeps its name and now reads the new local table; its copy of the
-- version expression is metadata only, kept equal to the local one.
ALTER TABLE {db}.raw_exchange_a ON CLUSTER {cluster} MODIFY COLUMN row_version UInt64 MATERIALIZED toUInt64(18446744073709551615) - ingest_seq;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v1_local ON CLUSTER {cluster} SYNC;

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8 ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8_late ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8_late_local ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8_src ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_a_v8_src_local ON CLUSTER {cluster};

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_local ON CLUSTER {cluster}
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/raw_exchange_b_local/{uuid}', '{replica}', row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (ticker, event_date, event_ts, record_type, dedup_id);

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8 ON CLUSTER {cluster} AS {db}.raw_exchange_b_v8_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_b_v8_local, cityHash64(ticker));

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_src_local ON CLUSTER {cluster}
(
    ticker String, event_date Date, event_ts DateTime64(3, 'UTC'), record_type LowCardinality(String), dedup_id String,
    ingest_seq UInt64, sid Nullable(Int64), seq Nullable(Int64), payload String, received_at DateTime64(3, 'UTC'),
    worker_id UInt32, kafka_partition Int32, kafka_offset Int64, inserted_at DateTime64(3, 'UTC')
)
ENGINE = Merge({db}, '^raw_exchange_b(_v1)?_local$');

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_src ON CLUSTER {cluster} AS {db}.raw_exchange_b_v8_src_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_b_v8_src_local);

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_late_local ON CLUSTER {cluster} AS {db}.raw_exchange_b_v8_src_local
ENGINE = Merge({db}, '^raw_exchange_b_v1_local$');

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_v8_late ON CLUSTER {cluster} AS {db}.raw_exchange_b_v8_late_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_b_v8_late_local);

INSERT INTO {db}.raw_exchange_b_v8
    (ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SETTINGS insert_distributed_sync = 1
SELECT ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_b_v8_src;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v1_local ON CLUSTER {cluster} SYNC;

RENAME TABLE IF EXISTS {db}.raw_exchange_b_local TO {db}.raw_exchange_b_v1_local ON CLUSTER {cluster};

INSERT INTO {db}.raw_exchange_b_v8
    (ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at)
SETTINGS insert_distributed_sync = 1
SELECT ticker, event_date, event_ts, record_type, dedup_id, ingest_seq, sid, seq, payload, received_at, worker_id, kafka_partition, kafka_offset, inserted_at
FROM {db}.raw_exchange_b_v8_late
WHERE inserted_at >= (SELECT max(inserted_at) FROM {db}.raw_exchange_b_v8) - INTERVAL 10 MINUTE;

RENAME TABLE {db}.raw_exchange_b_v8_local TO {db}.raw_exchange_b_local ON CLUSTER {cluster};

-- The Distributed table keeps its name and now reads the new local table; its copy of the
-- version expression is metadata only, kept equal to the local one.
ALTER TABLE {db}.raw_exchange_b ON CLUSTER {cluster} MODIFY COLUMN row_version UInt64 MATERIALIZED toUInt64(18446744073709551615) - ingest_seq;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v1_local ON CLUSTER {cluster} SYNC;

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8 ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8_late ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8_late_local ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8_src ON CLUSTER {cluster};

DROP TABLE IF EXISTS {db}.raw_exchange_b_v8_src_local ON CLUSTER {cluster};

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_a_mv ON CLUSTER {cluster} TO {db}.market_dates_local AS
SELECT DISTINCT 'exchange-a' AS venue, market, event_date FROM {db}.raw_exchange_a_local;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.market_dates_exchange_b_mv ON CLUSTER {cluster} TO {db}.market_dates_local AS
SELECT DISTINCT 'exchange-b' AS venue, ticker AS market, event_date FROM {db}.raw_exchange_b_local;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-a', market, event_date FROM {db}.raw_exchange_a;

INSERT INTO {db}.market_dates (venue, market, event_date)
SELECT DISTINCT 'exchange-b', ticker, event_date FROM {db}.raw_exchange_b;

-- The rollup's per asset-day cross-checks (see 008_first_copy.sql), on the local tables and
-- on the Distributed table that reads them.
ALTER TABLE {db}.summary_days_local ON CLUSTER {cluster} ADD COLUMN IF NOT EXISTS checks String DEFAULT '' CODEC(ZSTD(3));

ALTER TABLE {db}.summary_days ON CLUSTER {cluster} ADD COLUMN IF NOT EXISTS checks String DEFAULT '';
