-- Queued jobs by kind of cell, for the lease path's search for jobs in a mode the asking slot's
-- build/runtime lacks (they become `unsupported`). Without it that search read every queued job
-- of the GPU class on every lease, under the store's lock: ~100 ms a lease with 96,000 jobs
-- queued, so after a coordinator restart 100 agents waited 13-27 s for their first answer
-- (R2: tests/fault/fault_coordinator_kill --queue 90000). Now one index seek per
-- build/runtime the slot offers.
CREATE INDEX jobs_queued_cells ON jobs (gpu_class, torch_build, runtime, mode) WHERE status = 'queued';
