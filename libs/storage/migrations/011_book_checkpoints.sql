-- Full-book checkpoints written by the rollup (issue 12: the book at any instant): the book
-- of one asset after every book event at or before `at`, so that an answer replays only the
-- events since the last checkpoint instead of everything since the book's last snapshot.
--
-- A rollup run writes one when the day's applied event count crosses a multiple of the
-- checkpoint interval, and one at the end of a closed day, each right after a millisecond
-- that held a book record (so `at` is also the answer's as_of_ms) and only while the book
-- is known. `events` is the day's book events at or before `at`: the key within a day, and
-- what the late-data check compares with a count of the stored rows.
--
-- A checkpoint belongs to the day build whose `base_version` it carries; readers use only
-- those of the day row's current base_version (like summary_chunks). A rebuild writes the
-- same positions again at a newer version, which replaces them.
--
-- An answer reads one state: small granules (64 rows, not 8,192) spare it decompressing
-- every state of the day around it (~5 ms of a 20 ms budget on a 40-level book).
CREATE TABLE IF NOT EXISTS {db}.book_checkpoints
(
    venue           LowCardinality(String),
    market          String,
    asset           String,
    event_date      Date,
    events          UInt64,
    at              DateTime64(3, 'UTC'),
    base_version    UInt64,
    version         UInt64,
    engine_version  UInt16,
    state           String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (venue, market, asset, event_date, events)
SETTINGS index_granularity = 64;
