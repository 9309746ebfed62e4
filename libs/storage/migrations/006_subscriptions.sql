-- Subscriptions (billing). The table is the record of each user's plan; Redis only caches
-- it. One row per user: every change (a Stripe webhook, a checkout) writes a new version
-- with a larger `version`, readers use FINAL. `plan` is derived from tier and status when
-- the row is written (kept as a column so operators can query who is on which plan).
CREATE TABLE IF NOT EXISTS {db}.subscriptions
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
ENGINE = ReplacingMergeTree(version)
ORDER BY user_id;

-- Stripe events already handled, by event id: a redelivered event is answered without
-- being applied again, across restarts (Redis holds the same mark for speed).
CREATE TABLE IF NOT EXISTS {db}.stripe_events
(
    event_id      String,
    type          LowCardinality(String),
    created       UInt64,
    user_id       String,
    outcome       LowCardinality(String),
    processed_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(processed_at)
ORDER BY event_id;
