-- benchfleet schema v1. Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  name         TEXT    NOT NULL,
  spec         TEXT    NOT NULL,            -- the MatrixSpec as JSON, defaults filled in
  priority     INTEGER NOT NULL,
  job_count    INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  cancelled_at INTEGER,
  finished_at  INTEGER                      -- set when the last job reaches a terminal status
);

CREATE TABLE agents (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL UNIQUE,    -- stable identity across restarts
  hostname      TEXT    NOT NULL,
  version       TEXT    NOT NULL,
  descriptor    TEXT    NOT NULL,           -- AgentDescriptor as JSON (slots, torch builds)
  enrolled_at   INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL,
  draining      INTEGER NOT NULL DEFAULT 0
);

-- Only salted hashes of agent tokens are stored; the token itself is shown once, at enrolment.
CREATE TABLE agent_tokens (
  agent_id    INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
  salt        BLOB    NOT NULL,
  hash        BLOB    NOT NULL,             -- SHA-256(salt || token)
  created_at  INTEGER NOT NULL
);

CREATE TABLE agent_slots (
  agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  slot        TEXT    NOT NULL,
  gpu_class   TEXT    NOT NULL,
  gpu_name    TEXT,
  gpu_uuid    TEXT,
  memory_mb   INTEGER,
  descriptor  TEXT    NOT NULL,             -- SlotDescriptor as JSON
  PRIMARY KEY (agent_id, slot)
);

CREATE TABLE jobs (
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
  UNIQUE (run_id, model, batch, mode, torch_build, gpu_class, runtime, repetition)
);
CREATE INDEX jobs_queue ON jobs (status, gpu_class, priority DESC, id);
CREATE INDEX jobs_run_status ON jobs (run_id, status);
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_lease_holder ON jobs (lease_agent_id, lease_slot) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_group ON jobs (group_key);
-- The scheduler's three candidate windows (see scheduler::pick_job), each an ordered index scan.
CREATE INDEX jobs_queued_owned ON jobs (owner_agent_id, owner_slot, priority DESC, id) WHERE status = 'queued';
CREATE INDEX jobs_queued_unowned ON jobs (gpu_class, priority DESC, id)
  WHERE status = 'queued' AND owner_agent_id IS NULL;

CREATE TABLE attempts (
  job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt    INTEGER NOT NULL,
  lease_id   TEXT    NOT NULL UNIQUE,
  agent_id   INTEGER NOT NULL REFERENCES agents(id),
  slot       TEXT    NOT NULL,
  leased_at  INTEGER NOT NULL,
  ended_at   INTEGER,
  outcome    TEXT CHECK (outcome IN ('result','expired','released','cancelled')),
  PRIMARY KEY (job_id, attempt)
);

CREATE TABLE results (
  id                   INTEGER PRIMARY KEY,
  job_id               INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  attempt              INTEGER NOT NULL,
  status               TEXT    NOT NULL CHECK (status IN
                         ('ok','oom','oom_implied','error','timeout','crash','unsupported','invalid')),
  mean_ms REAL, median_ms REAL, p90_ms REAL, p99_ms REAL, min_ms REAL, max_ms REAL,
  stddev_ms REAL, cv REAL, ci_low_ms REAL, ci_high_ms REAL, iterations INTEGER,
  first_call_ms        REAL,
  stop_reason          TEXT,
  export_s             REAL,
  oom_phase            TEXT,
  oom_bytes            INTEGER,
  error                TEXT,
  signal               INTEGER,
  body                 TEXT    NOT NULL,    -- the JobResult as JSON (samples, memory, environment...)
  body_sha256          TEXT    NOT NULL,    -- identical retries are acknowledged without a new row
  agent_id             INTEGER REFERENCES agents(id),
  slot                 TEXT,
  created_at           INTEGER NOT NULL,
  UNIQUE (job_id, attempt)
);
CREATE INDEX results_run ON results (run_id, id);
