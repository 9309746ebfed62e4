-- Quota units per request (issue 12): what a successful request counts as against the
-- monthly quota, 1 for a call and the days covered for a bulk export. The quota counter is
-- rebuilt from the log as the sum of units over distinct request ids; rows written before
-- this column existed read as 1, which is what they counted.
ALTER TABLE {db}.request_log ADD COLUMN IF NOT EXISTS units UInt32 DEFAULT 1;
