-- Cluster variant of 005: a replicated local table read through a Distributed table.
-- Sharded by condition id, so every version of a market's row lands on one shard and
-- FINAL stays exact.
CREATE TABLE IF NOT EXISTS {db}.market_catalogue_local ON CLUSTER {cluster}
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/market_catalogue_local', '{replica}', updated_at)
ORDER BY condition_id;

CREATE TABLE IF NOT EXISTS {db}.market_catalogue ON CLUSTER {cluster} AS {db}.market_catalogue_local
ENGINE = Distributed({cluster}, {db}, market_catalogue_local, cityHash64(condition_id));
