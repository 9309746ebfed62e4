-- Order-book summaries made by the rollup worker (docs/rules/summaries.md, rule 10).
--
-- summary_days: one row per (venue, market, asset, UTC date) and rollup run: which events
-- the stored buckets cover (every book event with event_ts < covered_until), the book's
-- state at that point (the next run continues from it; the next day starts from the
-- final one), the last observation (the state a later answer forward-fills from), and
-- versions. The newest version wins (ReplacingMergeTree(version), read with FINAL).
--
-- summary_chunks: observed buckets (libs/book bucket-codec) of one UTC hour at one ladder
-- resolution. A full rebuild writes every chunk of the day at a new version and records
-- it as the day's base_version; chunks older than the base are leftovers of an earlier
-- build and are ignored by readers, so a re-run replaces its output as a whole.
CREATE TABLE IF NOT EXISTS {db}.summary_days
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
ENGINE = ReplacingMergeTree(version)
ORDER BY (venue, market, asset, event_date);

CREATE TABLE IF NOT EXISTS {db}.summary_chunks
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
ENGINE = ReplacingMergeTree(version)
ORDER BY (venue, market, asset, event_date, resolution, hour);

-- The rollup sweep asks which raw partitions received rows recently; raw parts are written
-- in time order, so a min-max index on inserted_at skips all but the newest parts.
ALTER TABLE {db}.raw_exchange_a ADD INDEX IF NOT EXISTS inserted_at_idx inserted_at TYPE minmax GRANULARITY 1;

ALTER TABLE {db}.raw_exchange_b ADD INDEX IF NOT EXISTS inserted_at_idx inserted_at TYPE minmax GRANULARITY 1;
