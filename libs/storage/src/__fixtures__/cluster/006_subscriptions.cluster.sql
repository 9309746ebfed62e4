-- Cluster variant of 006: replicated local tables read through Distributed tables.
-- Subscriptions are sharded by user and events by event id, so every version of a row
-- lands on one shard and FINAL stays exact.
CREATE TABLE IF NOT EXISTS {db}.subscriptions_local ON CLUSTER {cluster}
(
    user_id                 String,
    email                   String,
    stripe_customer_id      String,
    stripe_subscription_id  String,
    tier                    LowCardinality(String),
    status                  LowCardinality(String),
    plan                    LowCardinality(String),
    current_period_end      Nullable(DateTime64(3, 'UTC')),
    cancel_at_period_end    UInt8,
    event_created           UInt64,
    last_event_id           String,
    updated_at              DateTime64(3, 'UTC'),
    version                 UInt64,
    INDEX customer_idx stripe_customer_id TYPE bloom_filter GRANULARITY 1
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/subscriptions_local', '{replica}', version)
ORDER BY user_id;

CREATE TABLE IF NOT EXISTS {db}.subscriptions ON CLUSTER {cluster} AS {db}.subscriptions_local
ENGINE = Distributed({cluster}, {db}, subscriptions_local, cityHash64(user_id));

CREATE TABLE IF NOT EXISTS {db}.stripe_events_local ON CLUSTER {cluster}
(
    event_id      String,
    type          LowCardinality(String),
    created       UInt64,
    user_id       String,
    outcome       LowCardinality(String),
    processed_at  DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/stripe_events_local', '{replica}', processed_at)
ORDER BY event_id;

CREATE TABLE IF NOT EXISTS {db}.stripe_events ON CLUSTER {cluster} AS {db}.stripe_events_local
ENGINE = Distributed({cluster}, {db}, stripe_events_local, cityHash64(event_id));
