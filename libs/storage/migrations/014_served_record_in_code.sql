-- The raw tables lose their ALIAS columns `payload` and `rebuilt` (migration 012): the engine's
-- analyzer resolved both for every query that named a raw table, whether it read them or not,
-- 3–6 ms of every raw read (the book at an instant, rollups, coverage), to serve a record
-- only a few readers ask for. The same expression now lives in code
-- (libs/storage/src/served-record-sql.ts, migration 012's text word for word), selected by
-- the readers that serve records, so every answer stays byte for byte what it was.
--
-- An ALIAS column stores nothing: dropping it changes only the table's metadata, instant on
-- any size of table. `payload` goes first (it names `rebuilt`); IF EXISTS makes every
-- statement safe to run again after a crash.

ALTER TABLE {db}.raw_exchange_a DROP COLUMN IF EXISTS payload;

ALTER TABLE {db}.raw_exchange_a DROP COLUMN IF EXISTS rebuilt;

ALTER TABLE {db}.raw_exchange_b DROP COLUMN IF EXISTS payload;

ALTER TABLE {db}.raw_exchange_b DROP COLUMN IF EXISTS rebuilt;
