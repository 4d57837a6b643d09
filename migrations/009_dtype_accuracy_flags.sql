-- 009: the dtype axis, accuracy verdicts, compile and memory columns, noise flags.
--   jobs.dtype              Dtype wire name (float32, float16, bfloat16, amp); part of a cell's identity
--   results.accuracy        AccuracyVerdict wire name of a compiled result; NULL: not checked
--   results.accuracy_error  the judged output's relative L2 error against the float64 reference
--   results.accuracy_tolerance  the bound it was held to (common/accuracy.h)
--   results.compile_ms      compiled modes: the compile (python: the first call, telemetry.compile_ms;
--                           libtorch: the AOTInductor export, export_s x 1000)
--   results.compile_cache   cold, warm, mixed, bypass, none: whether a cache served that compile
--   results.peak_memory_bytes  the allocator's peak allocated bytes on CUDA, else peak RSS
--   results.recompiles      python compiled modes: graphs compiled after the first call
--   results.flags           noise flags, comma-separated (common/noise_flags.h); '' when none
-- Rows stored before this migration get what their body says; their flags from cv and stop_reason
-- (the default noise thresholds; clock and throttle readings are not re-read).
ALTER TABLE jobs ADD COLUMN dtype TEXT NOT NULL DEFAULT 'float32';
ALTER TABLE results ADD COLUMN accuracy TEXT;
ALTER TABLE results ADD COLUMN accuracy_error REAL;
ALTER TABLE results ADD COLUMN accuracy_tolerance REAL;
ALTER TABLE results ADD COLUMN compile_ms REAL;
ALTER TABLE results ADD COLUMN compile_cache TEXT;
ALTER TABLE results ADD COLUMN peak_memory_bytes INTEGER;
ALTER TABLE results ADD COLUMN recompiles INTEGER;
ALTER TABLE results ADD COLUMN flags TEXT NOT NULL DEFAULT '';

UPDATE results SET
  compile_ms = CASE
    WHEN (SELECT mode FROM jobs WHERE jobs.id = results.job_id) IN ('eager', 'torchscript') THEN NULL
    WHEN json_type(body, '$.telemetry.compile_ms') IN ('real', 'integer') THEN json_extract(body, '$.telemetry.compile_ms')
    WHEN json_type(body, '$.export_s') IN ('real', 'integer') THEN json_extract(body, '$.export_s') * 1000 END,
  compile_cache = CASE
    WHEN (SELECT mode FROM jobs WHERE jobs.id = results.job_id) IN ('eager', 'torchscript') THEN NULL
    WHEN json_type(body, '$.telemetry.inductor_cache') = 'text' THEN json_extract(body, '$.telemetry.inductor_cache')
    WHEN json_extract(body, '$.telemetry.artifact_cached') = 1 THEN 'warm'
    WHEN json_type(body, '$.telemetry.export_inductor_cache') = 'text'
      THEN json_extract(body, '$.telemetry.export_inductor_cache')
    WHEN json_type(body, '$.export_s') IN ('real', 'integer') THEN 'cold' END,
  peak_memory_bytes = COALESCE(json_extract(body, '$.memory.peak_allocated_bytes'),
                               json_extract(body, '$.memory.peak_rss_bytes')),
  recompiles = CASE WHEN json_type(body, '$.telemetry.recompiles') = 'integer'
                    THEN json_extract(body, '$.telemetry.recompiles') END,
  flags = CASE WHEN status <> 'ok' THEN '' ELSE
    trim((CASE WHEN cv > 0.10 THEN 'high_cv' ELSE '' END) ||
         (CASE WHEN stop_reason IN ('max_iterations', 'max_time')
               THEN (CASE WHEN cv > 0.10 THEN ',' ELSE '' END) || 'ci_not_met' ELSE '' END)) END
WHERE json_valid(body);

DROP INDEX IF EXISTS results_cells;
CREATE INDEX results_cells ON results (job_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,
                                       stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, oom_phase, oom_bytes, signal,
                                       error, torch_version, accuracy, accuracy_error, accuracy_tolerance, compile_ms,
                                       compile_cache, peak_memory_bytes, recompiles, flags);

DROP INDEX IF EXISTS jobs_cells;
CREATE INDEX jobs_cells ON jobs (run_id, model, mode, torch_build, gpu_class, runtime, dtype, batch);
