-- A skip index on exchange A's `source` (migration 013: '' for own capture, the archive's name
-- for an imported record). Every rollup read asks whether its market-day holds imported
-- records (holdsImportsSql / holdsImportsManySql: `source != ''`), and without an index the
-- engine reads the `source` of the whole market-day each time: during a replay, every run
-- of a day re-read everything stored to it so far (tens of millions of rows for a million
-- stored). A minmax per granule lets it skip each granule holding own capture alone.
--
-- The index is built for every part written or merged from now on; parts written before it
-- are read as they were until a merge rewrites them (no mutation: the statement is instant
-- on any size of table). IF NOT EXISTS makes it safe to run again.

ALTER TABLE {db}.raw_exchange_a ADD INDEX IF NOT EXISTS source_idx source TYPE minmax GRANULARITY 1;
