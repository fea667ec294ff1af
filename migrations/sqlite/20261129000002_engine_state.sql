-- The state a cluster engine last reported for a trial's job (e.g. PENDING, RUNNING), shown beside its job id.
ALTER TABLE trials ADD COLUMN engine_state TEXT;
