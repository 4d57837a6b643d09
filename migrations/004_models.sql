-- Models are data (docs/models.md): every version of every definition, the shipped catalog's
-- included (registered at first start). A version keeps its definition for as long as results
-- name it; jobs of version 1 name the model by its id, later versions by "id@N".
CREATE TABLE models (
  seq         INTEGER PRIMARY KEY,       -- registration order: the order of report rows after the catalog's
  id          TEXT    NOT NULL,
  version     INTEGER NOT NULL CHECK (version >= 1),
  digest      TEXT    NOT NULL,          -- "sha256:" of the definition as stored
  definition  TEXT    NOT NULL,          -- JSON, defaults filled in
  created_at  INTEGER NOT NULL,
  retired_at  INTEGER,                   -- set: kept with its results, refused to new runs
  UNIQUE (id, version)
);
-- Files models are built from (a checkpoint directory's tar, weights, a factory's module, an
-- exported program), content-addressed: the bytes live in <artifact_dir>/<hex>.
CREATE TABLE artifacts (
  digest      TEXT    PRIMARY KEY,       -- "sha256:<64 hex>"
  size        INTEGER NOT NULL CHECK (size >= 0),
  kind        TEXT    NOT NULL CHECK (kind IN ('file', 'tar')),
  name        TEXT    NOT NULL,          -- what the uploader called it, for people
  created_at  INTEGER NOT NULL
);
-- "Does this model key have results?", asked when a definition changes.
CREATE INDEX jobs_model ON jobs (model) WHERE status IN ('done', 'failed');
