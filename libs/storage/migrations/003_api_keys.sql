-- API keys. The table is the record; Redis only caches it (hash -> key record).
-- Only the SHA-256 of a key is stored, never the key. A state change (revocation) is a new
-- row with a later updated_at; readers use FINAL.
CREATE TABLE IF NOT EXISTS {db}.api_keys
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
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (user_id, key_id);

-- When each key was last used. Written in batches by the API (never once per request), in
-- a table of its own so that a usage write can never overwrite a revocation.
CREATE TABLE IF NOT EXISTS {db}.api_key_usage
(
    key_id        String,
    last_used_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(last_used_at)
ORDER BY key_id;
