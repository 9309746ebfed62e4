-- Cluster variant of 009: a replicated local table read through a Distributed table,
-- sharded by id so every version of an outage lands on one shard and FINAL stays exact.
CREATE TABLE IF NOT EXISTS {db}.outages_local ON CLUSTER {cluster}
(
    id          String,
    venue       LowCardinality(String),
    start_ms    Int64,
    end_ms      Int64,
    reason      String,
    created_at  DateTime64(3, 'UTC'),
    removed     UInt8,
    version     UInt64
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/outages_local', '{replica}', version)
ORDER BY id;

CREATE TABLE IF NOT EXISTS {db}.outages ON CLUSTER {cluster} AS {db}.outages_local
ENGINE = Distributed({cluster}, {db}, outages_local, cityHash64(id));
