-- The torch version each result recorded (its environment fingerprint's "torch_version"), which
-- report headers name per build. Kept as a column because the fingerprint sits in the result's
-- body: reading it with json_extract for a run of 5,184 jobs took ~24 ms per report, against
-- nothing measurable from the covering index below (bench/report_queries).
ALTER TABLE results ADD COLUMN torch_version TEXT;

UPDATE results SET torch_version =
  CASE WHEN json_valid(body) THEN
    CASE WHEN json_type(body, '$.environment.torch_version') = 'text'
         THEN NULLIF(json_extract(body, '$.environment.torch_version'), '') END
  END;

-- results_cells (003) with torch_version, so a report still reads no result row.
DROP INDEX IF EXISTS results_cells;
CREATE INDEX results_cells ON results (job_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,
                                       stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, oom_phase, oom_bytes, signal,
                                       error, torch_version);
