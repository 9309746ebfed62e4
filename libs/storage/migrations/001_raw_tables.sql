-- Raw events of both venues, as the interface's 2.1 / 2.2 records plus lineage.
--
-- Ordering key: "one market, one date, in order" and "one market, a time range" are both a
-- prefix of (market, event_date, event_ts). The serving order is (event_ts, ingest_seq);
-- ingest_seq is deliberately NOT in the key, because the key is also the deduplication
-- identity: a book the venue re-sends after a reconnect has the same hash but a later
-- ingest_seq and must collapse into one row.
--
-- ReplacingMergeTree(row_version) keeps the FIRST accepted copy of a duplicate (highest
-- row_version = lowest Kafka offset), so replaying a file changes no stored column.
-- Readers use FINAL. non_replicated_deduplication_window lets the sink retry a batch with
-- the same insert_deduplication_token without doubling it even before merges.

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_a
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
ENGINE = ReplacingMergeTree(row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (market, event_date, event_ts, asset_id, event_type, dedup_id)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS {db}.raw_exchange_b
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
ENGINE = ReplacingMergeTree(row_version)
PARTITION BY toYYYYMM(event_date)
ORDER BY (ticker, event_date, event_ts, record_type, dedup_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- Connection-level gaps seen by capture (a dropped socket, a venue seq gap). One row per
-- gap; its end is filled in by a later row with the same key (ReplacingMergeTree keeps the
-- latest, which has ended_at set).
CREATE TABLE IF NOT EXISTS {db}.capture_gaps
(
    venue         LowCardinality(String),
    connection_id String,
    started_at    DateTime64(3, 'UTC'),
    ended_at      Nullable(DateTime64(3, 'UTC')),
    reason        String,
    markets       Array(String),
    updated_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (venue, connection_id, started_at);
