-- What of a result's environment fingerprint changes its speed (rules/fingerprint_diff.h:
-- cpu_model, cpu_threads, driver, gpu_name, as compact JSON with sorted keys), so that a report
-- can warn when the builds it compares ran on unequal terms without reading each result's body.
ALTER TABLE results ADD COLUMN fingerprint TEXT;
UPDATE results SET fingerprint = json_object(
  'cpu_model', CASE WHEN json_type(body, '$.environment.cpu_model') IN ('text', 'integer', 'real') THEN json_extract(body, '$.environment.cpu_model') END,
  'cpu_threads', CASE WHEN json_type(body, '$.environment.cpu_threads') IN ('text', 'integer', 'real') THEN json_extract(body, '$.environment.cpu_threads') END,
  'driver', CASE WHEN json_type(body, '$.environment.driver') IN ('text', 'integer', 'real') THEN json_extract(body, '$.environment.driver') END,
  'gpu_name', CASE WHEN json_type(body, '$.environment.gpu_name') IN ('text', 'integer', 'real') THEN json_extract(body, '$.environment.gpu_name') END);
-- The report reads it with the other cells' columns, from the index alone.
DROP INDEX results_cells;
CREATE INDEX results_cells ON results (job_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,
                                       stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, oom_phase, oom_bytes, signal,
                                       error, torch_version, accuracy, accuracy_error, accuracy_tolerance, compile_ms,
                                       compile_cache, peak_memory_bytes, recompiles, flags, fingerprint);
