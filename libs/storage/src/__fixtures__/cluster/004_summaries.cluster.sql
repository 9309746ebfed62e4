-- Cluster variant of 004: replicated local tables read through Distributed tables, sharded
-- by market like the raw tables, so every version of a row lands on one shard and FINAL
-- stays exact.
CREATE TABLE IF NOT EXISTS {db}.summary_days_local ON CLUSTER {cluster}
(
    venue             LowCardinality(String),
    market            String,
    asset             String,
    event_date        Date,
    version           UInt64,
    base_version      UInt64,
    engine_version    UInt16,
    covered_until     DateTime64(3, 'UTC'),
    complete          UInt8,
    events            UInt64,
    start_state_hash  String,
    state             String CODEC(ZSTD(3)),
    last_obs          String,
    computed_at       DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/summary_days_local', '{replica}', version)
ORDER BY (venue, market, asset, event_date);

CREATE TABLE IF NOT EXISTS {db}.summary_days ON CLUSTER {cluster} AS {db}.summary_days_local
ENGINE = Distributed({cluster}, {db}, summary_days_local, cityHash64(market));

CREATE TABLE IF NOT EXISTS {db}.summary_chunks_local ON CLUSTER {cluster}
(
    venue           LowCardinality(String),
    market          String,
    asset           String,
    event_date      Date,
    resolution      UInt16,
    hour            DateTime('UTC'),
    version         UInt64,
    engine_version  UInt16,
    bucket_count    UInt32,
    buckets         String CODEC(ZSTD(3))
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/summary_chunks_local', '{replica}', version)
ORDER BY (venue, market, asset, event_date, resolution, hour);

CREATE TABLE IF NOT EXISTS {db}.summary_chunks ON CLUSTER {cluster} AS {db}.summary_chunks_local
ENGINE = Distributed({cluster}, {db}, summary_chunks_local, cityHash64(market));

-- The rollup sweep asks which raw partitions received rows recently (see 004_summaries.sql).
ALTER TABLE {db}.raw_exchange_a_local ON CLUSTER {cluster} ADD INDEX IF NOT EXISTS inserted_at_idx inserted_at TYPE minmax GRANULARITY 1;

ALTER TABLE {db}.raw_exchange_b_local ON CLUSTER {cluster} ADD INDEX IF NOT EXISTS inserted_at_idx inserted_at TYPE minmax GRANULARITY 1;
