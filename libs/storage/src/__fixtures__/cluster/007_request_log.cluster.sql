-- Cluster variant of 007: a replicated local table read and written through a Distributed
-- table, sharded by user so a user's rows (and every per-user query) stay on one shard.
-- Replicated tables deduplicate retried inserts by their insert_deduplication_token.
CREATE TABLE IF NOT EXISTS {db}.request_log_local ON CLUSTER {cluster}
(
    ts          DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    request_id  String CODEC(ZSTD(1)),
    user_id     String CODEC(ZSTD(1)),
    key_id      String CODEC(ZSTD(1)),
    plan        LowCardinality(String),
    endpoint    LowCardinality(String),
    venue       LowCardinality(String),
    market      String CODEC(ZSTD(1)),
    params      String CODEC(ZSTD(3)),
    status      UInt16,
    billable    UInt8,
    latency_ms  Float32,
    bytes       UInt64
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{db}/request_log_local', '{replica}')
PARTITION BY toYYYYMM(ts)
ORDER BY (user_id, ts)
TTL toDateTime(ts) + INTERVAL 13 MONTH;

CREATE TABLE IF NOT EXISTS {db}.request_log ON CLUSTER {cluster} AS {db}.request_log_local
ENGINE = Distributed({cluster}, {db}, request_log_local, cityHash64(user_id));
