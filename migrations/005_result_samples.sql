-- A result's samples (up to 1,000,000, ~20 MB of JSON) leave the result row for a table of
-- their own, read only when a client asks for them (GET /results/{id}, ?samples=true). With
-- them in results.body, listing ten results of a million samples each read and parsed 40 MB
-- under the store lock for 4.4 s and stalled every agent's heartbeat.
-- body_sha256 still covers the whole result as posted, samples included.
CREATE TABLE result_samples (
  result_id   INTEGER PRIMARY KEY REFERENCES results(id) ON DELETE CASCADE,
  samples_ms  TEXT    NOT NULL  -- JSON array of numbers, as posted
);

INSERT INTO result_samples (result_id, samples_ms)
  SELECT id, json_extract(body, '$.samples_ms') FROM results
  WHERE json_valid(body) AND json_type(body, '$.samples_ms') = 'array'
    AND json_array_length(body, '$.samples_ms') > 0;

UPDATE results SET body = json_remove(body, '$.samples_ms')
  WHERE json_valid(body) AND json_type(body, '$.samples_ms') IS NOT NULL;
