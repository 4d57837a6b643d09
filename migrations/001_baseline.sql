-- benchfleet schema, baseline. Times are milliseconds since the Unix epoch (UTC). Later changes
-- are new numbered files beside this one (coordinator/store/migrations.h); each index is
-- defined here once. application_id marks a database made from this baseline: one made before
-- it (user_version > 0 without the mark) is refused, not migrated.
PRAGMA application_id = 1650879604;  -- 0x62666c74, "bflt"

CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,
  name            TEXT    NOT NULL,
  spec            TEXT    NOT NULL,         -- the MatrixSpec as JSON, defaults filled in
  priority        INTEGER NOT NULL,
  job_count       INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  cancelled_at    INTEGER,
  finished_at     INTEGER,                  -- set when the last job reaches a terminal status
  -- A run a schedule created names it and the due time it stands for; runs_schedule_due makes a
  -- second run for the same due time impossible (exactly once, also across restarts).
  schedule_id     INTEGER REFERENCES schedules(id) ON DELETE SET NULL,
  schedule_due_at INTEGER
);
CREATE UNIQUE INDEX runs_schedule_due ON runs (schedule_id, schedule_due_at) WHERE schedule_id IS NOT NULL;

CREATE TABLE agents (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL UNIQUE,    -- stable identity across restarts
  hostname      TEXT    NOT NULL,
  version       TEXT    NOT NULL,
  descriptor    TEXT    NOT NULL,           -- AgentDescriptor as JSON (slots, torch builds)
  enrolled_at   INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL,
  draining      INTEGER NOT NULL DEFAULT 0, -- an operator drained it
  self_draining INTEGER NOT NULL DEFAULT 0  -- the agent said it drains (SIGTERM)
);

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
  -- Lease hand-over (lease_acked, lease_request_id below). A lease is acknowledged once its holder shows it has it (a progress report
  -- or a heartbeat renewing it). Until then the lease may not have reached its agent: a new poll
  -- from the same slot is handed the same lease again (same lease id, same attempt) instead of
  -- burning an attempt, and a grant whose response could not be delivered is withdrawn (the job
  -- goes back to the queue at the attempt it had). lease_request_id is the agent-chosen id of the
  -- poll that was granted the lease: a retry of that poll gets the lease back even after it was
  -- acknowledged.
  started_at       INTEGER,
  finished_at      INTEGER,
  updated_at       INTEGER NOT NULL,
  lease_acked      INTEGER NOT NULL DEFAULT 1,
  lease_request_id TEXT,
  dtype            TEXT    NOT NULL DEFAULT 'float32',  -- Dtype wire name; part of a cell's identity
  UNIQUE (run_id, model, batch, mode, torch_build, gpu_class, runtime, dtype, repetition)
);
CREATE INDEX jobs_queue ON jobs (status, gpu_class, priority DESC, id);
CREATE INDEX jobs_run_status ON jobs (run_id, status);
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_lease_holder ON jobs (lease_agent_id, lease_slot) WHERE lease_id IS NOT NULL;
CREATE INDEX jobs_group ON jobs (group_key);
-- The scheduler's candidate windows (see scheduler::pick_job), each an ordered index scan: the
-- slot's own queued jobs; then, per build/runtime/mode the slot offers, one seek into the queued
-- jobs of that kind of cell (unowned ones for the shared window). Ordered by priority across the
-- GPU class and filtered row by row instead, a lease read every queued job ahead of its first
-- runnable one: 560,000 steps (~20 ms) a window behind 22,400 jobs of a build the slot lacks.
-- jobs_queued_cells also finds the queued jobs in a mode the asking slot's build/runtime lacks
-- (they become `unsupported`): without it that search read every queued job of the class on
-- every lease, ~100 ms a lease with 96,000 queued, and after a coordinator restart 100 agents
-- waited 13-27 s for their first answer.
CREATE INDEX jobs_queued_owned ON jobs (owner_agent_id, owner_slot, priority DESC, id) WHERE status = 'queued';
CREATE INDEX jobs_queued_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
  WHERE status = 'queued';
CREATE INDEX jobs_queued_unowned_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
  WHERE status = 'queued' AND owner_agent_id IS NULL;
-- A run's jobs in id order: the progress grid pages through them by id and reports read them in
-- that order, as an ordered index scan instead of collecting and sorting the run.
CREATE INDEX jobs_run ON jobs (run_id, id);
-- One cell of a run by batch: OOM pruning reads the cell of the job that ran out of memory or
-- went back to the queue, not every queued job of the run (230,000 steps per OOM or requeue in a
-- run of 19,200 queued jobs).
CREATE INDEX jobs_cells ON jobs (run_id, model, mode, torch_build, gpu_class, runtime, dtype, batch);

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
  body                 TEXT    NOT NULL,    -- the JobResult as JSON (memory, environment...; samples apart)
  body_sha256          TEXT    NOT NULL,    -- identical retries are acknowledged without a new row
  agent_id             INTEGER REFERENCES agents(id),
  slot                 TEXT,
  created_at           INTEGER NOT NULL,
  -- The torch version the result recorded (its fingerprint's "torch_version"), which report
  -- headers name per build: a column, because reading it from the body with json_extract took
  -- ~24 ms per report of 5,184 jobs (bench/report_queries).
  torch_version        TEXT,
  accuracy             TEXT,                -- AccuracyVerdict wire name of a compiled result; NULL: not checked
  accuracy_error       REAL,                -- the judged output's relative L2 error against the float64 reference
  accuracy_tolerance   REAL,                -- the bound it was held to (common/accuracy.h)
  -- Compiled modes: the compile (python: the first call, telemetry.compile_ms; libtorch: the
  -- AOTInductor export, export_s x 1000), and whether a cache served it (cold, warm, mixed,
  -- bypass, none).
  compile_ms           REAL,
  compile_cache        TEXT,
  peak_memory_bytes    INTEGER,             -- the allocator's peak allocated bytes on CUDA, else peak RSS
  recompiles           INTEGER,             -- python compiled modes: graphs compiled after the first call
  flags                TEXT    NOT NULL DEFAULT '',  -- noise flags, comma-separated (common/noise_flags.h)
  UNIQUE (job_id, attempt)
);
CREATE INDEX results_run ON results (run_id, id);
-- A run's verdict counts (GET /runs/{id}, every report) from the index alone (10 ms -> 1 ms).
CREATE INDEX results_run_status ON results (run_id, status);
-- What a report reads of each job's verdict, without the result row itself (a row holds the
-- result's body, about a page each: a report of 5,184 jobs read ~20 MB through a 2 MB page cache,
-- 21 ms -> 9 ms for the store's part of it).
CREATE INDEX results_cells ON results (job_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,
                                       stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, oom_phase, oom_bytes, signal,
                                       error, torch_version, accuracy, accuracy_error, accuracy_tolerance, compile_ms,
                                       compile_cache, peak_memory_bytes, recompiles, flags);

-- A result's samples, apart from its row: a listing reads them only when asked to.
CREATE TABLE result_samples (
  result_id   INTEGER PRIMARY KEY REFERENCES results(id) ON DELETE CASCADE,
  samples_ms  TEXT    NOT NULL  -- JSON array of numbers, as posted
);

CREATE TABLE schedules (
  id           INTEGER PRIMARY KEY,
  name         TEXT    NOT NULL,
  spec         TEXT    NOT NULL,            -- the MatrixSpec as JSON, defaults filled in
  cron         TEXT    NOT NULL,            -- 5-field cron expression or @daily-style macro, UTC
  enabled      INTEGER NOT NULL DEFAULT 1,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  next_due_at  INTEGER NOT NULL,            -- the first due time after the last one handled
  last_due_at  INTEGER,                     -- the due time of the last run it created
  last_run_id  INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  missed       INTEGER NOT NULL DEFAULT 0   -- due times skipped (coordinator down, or paused)
);
CREATE INDEX schedules_due ON schedules (next_due_at) WHERE enabled = 1;

CREATE TABLE series (
  id             INTEGER PRIMARY KEY,
  model          TEXT    NOT NULL,
  batch          INTEGER NOT NULL,
  mode           TEXT    NOT NULL,
  dtype          TEXT    NOT NULL,
  runtime        TEXT    NOT NULL,
  gpu_class      TEXT    NOT NULL,
  torch_build    TEXT    NOT NULL,
  -- The first point of the current level: the detector's baseline never reaches before it. NULL
  -- until a change is confirmed (the level starts at the first point).
  level_start    INTEGER REFERENCES series_points(id) ON DELETE SET NULL,
  points         INTEGER NOT NULL DEFAULT 0,
  last_point_at  INTEGER,
  UNIQUE (model, batch, mode, dtype, runtime, gpu_class, torch_build)
);

CREATE TABLE series_points (
  id             INTEGER PRIMARY KEY,
  series_id      INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  result_id      INTEGER NOT NULL UNIQUE REFERENCES results(id) ON DELETE CASCADE,
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  status         TEXT    NOT NULL,          -- the result's status (ok, oom, error, timeout, crash)
  median_ms      REAL,
  ci_low_ms      REAL,
  ci_high_ms     REAL,
  torch_version  TEXT,                      -- from the result's fingerprint
  torch_git      TEXT,
  version_key    TEXT    NOT NULL,          -- history::version_sort_key(torch_version)
  recorded_at    INTEGER NOT NULL,          -- results.created_at
  flags          TEXT    NOT NULL DEFAULT '',
  accuracy       TEXT,
  detected       INTEGER NOT NULL DEFAULT 0 -- 1 once the detector has seen the series with it
);
-- A series' points in order: torch version, then the time recorded.
CREATE INDEX series_points_order ON series_points (series_id, version_key, recorded_at, id);
CREATE INDEX series_points_pending ON series_points (series_id) WHERE detected = 0;

CREATE TABLE regressions (
  id                INTEGER PRIMARY KEY,
  series_id         INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  direction         TEXT    NOT NULL CHECK (direction IN ('regression', 'improvement')),
  state             TEXT    NOT NULL CHECK (state IN ('open', 'acknowledged', 'resolved')),
  first_bad_point   INTEGER NOT NULL REFERENCES series_points(id) ON DELETE CASCADE,
  last_good_point   INTEGER REFERENCES series_points(id) ON DELETE SET NULL,
  before_median_ms  REAL    NOT NULL,
  after_median_ms   REAL    NOT NULL,
  ratio             REAL    NOT NULL,       -- after / before
  p_value           REAL    NOT NULL,       -- the largest of the confirming points' p-values
  baseline_runs     INTEGER NOT NULL,
  confirm_runs      INTEGER NOT NULL,
  detected_at       INTEGER NOT NULL,
  acknowledged_at   INTEGER,
  resolved_at       INTEGER,
  note              TEXT
);
-- The regressions view pages newest first along the index its filter names (Store::list_regressions).
CREATE INDEX regressions_state ON regressions (state, direction, id);
CREATE INDEX regressions_by_state ON regressions (state, id);
CREATE INDEX regressions_by_direction ON regressions (direction, id);
CREATE INDEX regressions_series ON regressions (series_id, id);

CREATE TABLE alert_deliveries (
  id               INTEGER PRIMARY KEY,
  regression_id    INTEGER NOT NULL REFERENCES regressions(id) ON DELETE CASCADE,
  event            TEXT    NOT NULL,        -- regression.opened
  body             TEXT    NOT NULL,        -- the JSON posted
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER NOT NULL,
  delivered_at     INTEGER,
  failed_at        INTEGER,                 -- gave up after the last attempt
  last_error       TEXT
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at)
  WHERE delivered_at IS NULL AND failed_at IS NULL;
