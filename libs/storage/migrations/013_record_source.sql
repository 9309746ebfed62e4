-- Provenance (issue 24, docs/rules/imports.md#provenance): where a stored record came from.
-- '' is own capture (the worker is worker_id) and every record stored before this column
-- existed; an import writes `import:<format>:<file>`. Metadata only: not in the sorting key,
-- not in the version, not in the served record.
--
-- ADD COLUMN with a constant DEFAULT changes only the table's metadata (parts written
-- before read the default), so the migration is instant on any size of table, and
-- IF NOT EXISTS makes every statement safe to run again after a crash.

ALTER TABLE {db}.raw_exchange_a ADD COLUMN IF NOT EXISTS source LowCardinality(String) DEFAULT '';

ALTER TABLE {db}.raw_exchange_b ADD COLUMN IF NOT EXISTS source LowCardinality(String) DEFAULT '';
