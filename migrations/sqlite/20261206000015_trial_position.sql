-- Each trial's position in its pair (0 = it started first), from the order the trials really started in:
-- the latest attempt of each planned trial of one repeat (and warp cell), by start time, then by the rank
-- a cluster pair was submitted in, then by plan order. The claim keeps it current as trials start (a
-- retried trial runs after its partner, which then moves first). NULL: not started, alone in its repeat
-- (a calibration, a reused baseline's control), or imported (no known order: imports never started here).
ALTER TABLE trials ADD COLUMN pair_position INTEGER;
UPDATE trials SET pair_position = r.pos FROM (
    SELECT l.id,
           ROW_NUMBER() OVER (PARTITION BY l.experiment_id, l.repeat_index, COALESCE(l.cell, '')
                              ORDER BY l.started_at, COALESCE(l.pair_rank, 0), l.seq) - 1 AS pos
    FROM trials l
    WHERE l.started_at IS NOT NULL
      AND l.attempt = (SELECT MAX(a.attempt) FROM trials a WHERE a.experiment_id = l.experiment_id AND a.seq = l.seq)
      AND (SELECT COUNT(DISTINCT p.seq) FROM trials p
           WHERE p.experiment_id = l.experiment_id AND p.repeat_index = l.repeat_index
             AND COALESCE(p.cell, '') = COALESCE(l.cell, '')) > 1
) r
WHERE trials.id = r.id;
