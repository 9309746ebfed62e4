-- The request log: one row per request to a billable (historical-data) endpoint by an
-- authenticated key, whatever its outcome, written by the API in batches off the request
-- path. It is the record of usage: the Redis quota counters are rebuilt from it (the
-- successful billable requests of a user in a period), and /usage, /user/{id}/requests/*
-- and /stats/* read it.
--
-- Ordered by (user_id, ts): every per-user question (a period's count, a time series, the
-- newest requests) reads one contiguous range. Monthly partitions match the quota period
-- and let old months be dropped whole; the TTL keeps 13 months (a year back plus the
-- current month). request_id is unique per request: counts that must be exact (quota
-- rebuild) use uniqExact(request_id), so a batch that was stored twice cannot count twice,
-- and a retried batch carries its insert_deduplication_token (non_replicated_deduplication_window).
CREATE TABLE IF NOT EXISTS {db}.request_log
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
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (user_id, ts)
TTL toDateTime(ts) + INTERVAL 13 MONTH
SETTINGS non_replicated_deduplication_window = 1000;
