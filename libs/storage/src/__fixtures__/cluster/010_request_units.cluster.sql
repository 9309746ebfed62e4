-- Cluster variant of 010: the column on the replicated local table and on the Distributed
-- table in front of it (which stores nothing but must know the column to pass it on).
ALTER TABLE {db}.request_log_local ON CLUSTER {cluster} ADD COLUMN IF NOT EXISTS units UInt32 DEFAULT 1;

ALTER TABLE {db}.request_log ON CLUSTER {cluster} ADD COLUMN IF NOT EXISTS units UInt32 DEFAULT 1;
