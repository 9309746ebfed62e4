-- Cluster variant of 003: replicated local tables read through Distributed tables. Keys are
-- sharded by user and usage by key, so every version of a row lands on one shard and
-- FINAL stays exact.
CREATE TABLE IF NOT EXISTS {db}.api_keys_local ON CLUSTER {cluster}
(
    key_id      String,
    user_id     String,
    name        String,
    key_hash    FixedString(64),
    status      LowCardinality(String),
    created_at  DateTime64(3, 'UTC'),
    revoked_at  Nullable(DateTime64(3, 'UTC')),
    updated_at  DateTime64(3, 'UTC'),
    INDEX key_hash_idx key_hash TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/api_keys_local', '{replica}', updated_at)
ORDER BY (user_id, key_id);

CREATE TABLE IF NOT EXISTS {db}.api_keys ON CLUSTER {cluster} AS {db}.api_keys_local
ENGINE = Distributed({cluster}, {db}, api_keys_local, cityHash64(user_id));

CREATE TABLE IF NOT EXISTS {db}.api_key_usage_local ON CLUSTER {cluster}
(
    key_id        String,
    last_used_at  DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/api_key_usage_local', '{replica}', last_used_at)
ORDER BY key_id;

CREATE TABLE IF NOT EXISTS {db}.api_key_usage ON CLUSTER {cluster} AS {db}.api_key_usage_local
ENGINE = Distributed({cluster}, {db}, api_key_usage_local, cityHash64(key_id));
