-- 010: a job's identity includes its dtype. 001's UNIQUE (run_id, model, batch, mode,
-- torch_build, gpu_class, runtime, repetition) refused a second dtype of a cell, and SQLite
-- changes a table's constraint only by rebuilding the table: create, copy, drop, rename
-- (migrate() runs with foreign keys off, so the drop does not cascade to attempts and results,
-- which keep referencing jobs by name; ids are copied unchanged). The indexes of 001-009 follow.
CREATE TABLE jobs_new (
  id               INTEGER PRIMARY KEY,
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  model            TEXT    NOT NULL,
  batch            INTEGER NOT NULL CHECK (batch > 0),
  mode             TEXT    NOT NULL,
  torch_build      TEXT    NOT NULL,
  gpu_class        TEXT    NOT NULL,
  runtime          TEXT    NOT NULL,
  repetition       INTEGER NOT NULL,
  -- Jobs differing only in mode share a group; a group prefers one slot (same physical GPU):
  -- the first slot to lease a job of the group becomes the owner of all its jobs.
  group_key        TEXT    NOT NULL,
  owner_agent_id   INTEGER REFERENCES agents(id),
  owner_slot       TEXT,
  status           TEXT    NOT NULL CHECK (status IN ('queued','leased','running','done','failed','cancelled')),
  priority         INTEGER NOT NULL,
  attempt          INTEGER NOT NULL DEFAULT 0,   -- attempts started so far
  max_attempts     INTEGER NOT NULL,
  lease_id         TEXT,
  lease_agent_id   INTEGER REFERENCES agents(id),
  lease_slot       TEXT,
  lease_expires_at INTEGER,
  started_at       INTEGER,
  finished_at      INTEGER,
  updated_at       INTEGER NOT NULL,
  lease_acked      INTEGER NOT NULL DEFAULT 1,   -- 006
  lease_request_id TEXT,                         -- 006
  dtype            TEXT    NOT NULL DEFAULT 'float32',  -- 009
  UNIQUE (run_id, model, batch, mode, torch_build, gpu_class, runtime, dtype, repetition)
);
INSERT INTO jobs_new (id, run_id, model, batch, mode, torch_build, gpu_class, runtime, repetition, group_key,
                      owner_agent_id, owner_slot, status, priority, attempt, max_attempts, lease_id, lease_agent_id,
                      lease_slot, lease_expires_at, started_at, finished_at, updated_at, lease_acked,
                      lease_request_id, dtype)
  SELECT id, run_id, model, batch, mode, torch_build, gpu_class, runtime, repetition, group_key, owner_agent_id,
         owner_slot, status, priority, attempt, max_attempts, lease_id, lease_agent_id, lease_slot, lease_expires_at,
         started_at, finished_at, updated_at, lease_acked, lease_request_id, dtype
  FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;

CREATE INDEX jobs_queue ON jobs (status, gpu_class, priority DESC, id);
CREATE INDEX jobs_run_status ON jobs (run_id, status);
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_lease_holder ON jobs (lease_agent_id, lease_slot) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_group ON jobs (group_key);
CREATE INDEX jobs_queued_owned ON jobs (owner_agent_id, owner_slot, priority DESC, id) WHERE status = 'queued';
CREATE INDEX jobs_run ON jobs (run_id, id);
CREATE INDEX jobs_queued_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
  WHERE status = 'queued';
CREATE INDEX jobs_queued_unowned_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
  WHERE status = 'queued' AND owner_agent_id IS NULL;
CREATE INDEX jobs_cells ON jobs (run_id, model, mode, torch_build, gpu_class, runtime, dtype, batch);
