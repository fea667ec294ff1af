-- Where an experiment's trials run, and how many of them may run at once (the scheduler's slots):
-- 'local' (one measured trial per host), 'engine:KEY' (a cluster engine: the suite's max_parallel, and the
-- server-wide cap per engine), 'endpoint:URL' (an external warp endpoint: one phase at a time).
ALTER TABLE experiments ADD COLUMN lane TEXT NOT NULL DEFAULT 'local';
ALTER TABLE experiments ADD COLUMN lane_cap INTEGER NOT NULL DEFAULT 1;
-- Interleaved pairs on a cluster are submitted together in a random order: 1 when the order within each
-- pair is randomised (interleaved), 0 when it follows the plan (ABBA, blocked).
ALTER TABLE experiments ADD COLUMN shuffle_pairs INTEGER NOT NULL DEFAULT 0;
-- Set once, by whoever concludes the experiment first (two trials ending at once judge it once).
ALTER TABLE experiments ADD COLUMN concluded_at INTEGER;
-- The order a trial was submitted in within its pair (0 first), when its pair was submitted together.
ALTER TABLE trials ADD COLUMN pair_rank INTEGER;
