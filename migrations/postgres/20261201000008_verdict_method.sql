-- Every verdict records the version of the judging method that reached it and who asked for it (NULL:
-- the experiment's own end). Verdicts stored before this change were method 1, unless their report
-- already names method 2 (pipeline verdicts judged between method 2 and this migration).
ALTER TABLE verdicts ADD COLUMN method_version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE verdicts ADD COLUMN judged_by BIGINT REFERENCES users(id) ON DELETE SET NULL;
UPDATE verdicts SET method_version = (report::jsonb #>> '{method,version}')::BIGINT
 WHERE report::jsonb #>> '{method,version}' IS NOT NULL;
