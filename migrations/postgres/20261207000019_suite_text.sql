-- A suite's text as it was written (its file, or the editor's TOML), comments and all, so the suite page
-- shows and edits what its author wrote; NULL when only the definition is known (it is then written out).
ALTER TABLE suites ADD COLUMN toml TEXT;
