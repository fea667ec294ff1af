-- An adaptive experiment (trials = "auto") grows by a unit of trials at a time: how many repeats an arm it
-- plans so far. Set by whoever adds the next unit, compare-and-set from the value it read, so two trials
-- ending at once add one unit, not two (NULL: the launch's own plan, never grown).
ALTER TABLE experiments ADD COLUMN planned_repeats INTEGER;
