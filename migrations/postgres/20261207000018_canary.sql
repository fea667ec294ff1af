-- A same-code canary (a schedule's `mode = "canary"`, or a launch's `canary`): its trials wait behind every
-- other experiment's, and the suite page counts its verdicts in the realised false-alarm rate. 1 or 0.
-- (`shuffle_pairs`, from 11, is no longer read: a cluster pair is submitted in the plan's balanced order.)
ALTER TABLE experiments ADD COLUMN canary BIGINT NOT NULL DEFAULT 0;
