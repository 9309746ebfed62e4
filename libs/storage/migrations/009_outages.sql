-- Operator-declared outages (issue 9): periods in which a venue's data is known to be
-- missing or untrustworthy (the venue's own published incidents, a capture host that was
-- down). Shown in the coverage map and on the status page. Removal is a new version of
-- the row with removed = 1 (nothing is deleted: what was declared stays auditable);
-- the newest version wins (ReplacingMergeTree(version), read with FINAL).
CREATE TABLE IF NOT EXISTS {db}.outages
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
ENGINE = ReplacingMergeTree(version)
ORDER BY id;
