-- What a trial is for: 'measured' (judged) or 'warm_up' (run first, never judged; it belongs to no pair and
-- is stored with repeat_index -1). Every trial stored before warm-ups existed was measured.
ALTER TABLE trials ADD COLUMN role TEXT NOT NULL DEFAULT 'measured' CHECK (role IN ('measured', 'warm_up'));
