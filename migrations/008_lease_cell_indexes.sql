-- The lease and result paths read only what they act on, whatever the queue's depth.
-- Measured by tests/unit/store_query_plan_test (SQLite's steps per statement at 320 and at 41,600
-- jobs queued) and bench/coordinator_load --queued.

-- A slot's candidates: one ordered seek per (build, runtime, mode) the slot offers, its first row
-- the best of that cell. The windows before (001: jobs_queue, jobs_queued_unowned) were ordered
-- by priority across the GPU class and filtered row by row, so a lease read every queued job
-- ahead of its first runnable one: 560,000 steps (~20 ms) a window behind 22,400 jobs of a build
-- the slot lacks, three windows a lease.
DROP INDEX IF EXISTS jobs_queued_cells;
CREATE INDEX jobs_queued_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
  WHERE status = 'queued';
CREATE INDEX jobs_queued_unowned_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
  WHERE status = 'queued' AND owner_agent_id IS NULL;
DROP INDEX IF EXISTS jobs_queued_unowned;

-- One cell of a run (model, mode, build, GPU class, runtime) by batch: OOM pruning reads the cell
-- of the job that ran out of memory or went back to the queue, not every queued job of the run
-- (230,000 steps per OOM or requeue in a run of 19,200 queued jobs).
CREATE INDEX jobs_cells ON jobs (run_id, model, mode, torch_build, gpu_class, runtime, batch);
