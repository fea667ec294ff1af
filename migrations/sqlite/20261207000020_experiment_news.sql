-- The verdict's news in a few words ("+27.5 % CPU in stage1", "upstream rule: FAIL; within noise: …"),
-- written with the verdict, so the history lists the size of each change without reading every report.
ALTER TABLE experiments ADD COLUMN news TEXT;
