-- Cluster variant of 001: replicated local tables plus Distributed tables under the names
-- the code queries. Sharding by the market keeps one market's rows (and so its duplicates)
-- on one shard, where ReplacingMergeTree can collapse them.

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a_local ON CLUSTER {cluster}
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
    row_version     UInt64 MATERIALIZED toUInt64(9223372036854775807) - toUInt64(greatest(kafka_offset, 0)),
    inserted_at     DateTime64(3, 'UTC') DEFAULT now64(3) CODEC(DoubleDelta, ZSTD(1))
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/raw_exchange_a_local', '{replica}', row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (market, event_date, event_ts, asset_id, event_type, dedup_id);

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a ON CLUSTER {cluster} AS {db}.raw_exchange_a_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_a_local, cityHash64(market));

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b_local ON CLUSTER {cluster}
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
    row_version     UInt64 MATERIALIZED toUInt64(9223372036854775807) - toUInt64(greatest(kafka_offset, 0)),
    inserted_at     DateTime64(3, 'UTC') DEFAULT now64(3) CODEC(DoubleDelta, ZSTD(1))
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/raw_exchange_b_local', '{replica}', row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (ticker, event_date, event_ts, record_type, dedup_id);

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b ON CLUSTER {cluster} AS {db}.raw_exchange_b_local
ENGINE = Distributed({cluster}, {db}, raw_exchange_b_local, cityHash64(ticker));

CREATE TABLE IF NOT EXISTS {db}.capture_gaps_local ON CLUSTER {cluster}
(
    venue         LowCardinality(String),
    connection_id String,
    started_at    DateTime64(3, 'UTC'),
    ended_at      Nullable(DateTime64(3, 'UTC')),
    reason        String,
    markets       Array(String),
    updated_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/capture_gaps_local', '{replica}', updated_at)
ORDER BY (venue, connection_id, started_at);

CREATE TABLE IF NOT EXISTS {db}.capture_gaps ON CLUSTER {cluster} AS {db}.capture_gaps_local
ENGINE = Distributed({cluster}, {db}, capture_gaps_local, cityHash64(connection_id));
