-- An adaptive experiment's latest look while it runs: how many settled pairs (or ABBA blocks) the
-- sequential design judged, and that look's report (JSON), for the page's live pair-by-pair chart.
-- Written only forward (a look at more units replaces one at fewer); the verdict is stored as always.
ALTER TABLE experiments ADD COLUMN look_pairs INTEGER;
ALTER TABLE experiments ADD COLUMN look_report TEXT;
