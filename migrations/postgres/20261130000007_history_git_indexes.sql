-- The history page's "ref or SHA" filter finds its experiments through these indexes first (arms by
-- ref or SHA range, experiments by base/head ref), so a rare SHA is as quick to find as a common ref.
CREATE INDEX arms_git_ref ON arms (git_ref);
CREATE INDEX experiments_base_ref ON experiments (base_ref);
CREATE INDEX experiments_head_ref ON experiments (head_ref);
