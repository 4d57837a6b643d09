-- Indexes for the dashboard's reads of a big run (measured with bench/report_queries on
-- 100,000 results, a run of 5,184 jobs).

-- A run's jobs in id order: the progress grid pages through them by id and reports read them
-- in that order, as an ordered index scan instead of collecting and sorting the run.
CREATE INDEX jobs_run ON jobs (run_id, id);

-- What a report reads of each job's verdict, without the result row itself: a row holds the
-- result's body (every sample, the environment), about a page each, so reading the run's rows
-- meant reading ~20 MB through a 2 MB page cache on every report (the store's part of a report
-- of 5,184 jobs: 21 ms -> 9 ms).
CREATE INDEX results_cells ON results (job_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,
                                       stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, oom_phase, oom_bytes, signal,
                                       error);

-- A run's verdict counts (GET /runs/{id}, every report) from the index alone (10 ms -> 1 ms).
CREATE INDEX results_run_status ON results (run_id, status);
