-- 011: nightly history. Schedules (recurring matrices), series (one per cell across
-- runs), their points (one per stored result), the changes the detector confirmed, and the
-- webhook deliveries it owes (an outbox: written with the change, sent after the commit).

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

-- A run a schedule created names it and the due time it stands for; the unique index makes a
-- second run for the same due time impossible (exactly once, also across restarts).
ALTER TABLE runs ADD COLUMN schedule_id INTEGER REFERENCES schedules(id) ON DELETE SET NULL;
ALTER TABLE runs ADD COLUMN schedule_due_at INTEGER;
CREATE UNIQUE INDEX runs_schedule_due ON runs (schedule_id, schedule_due_at) WHERE schedule_id IS NOT NULL;

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
