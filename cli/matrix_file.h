// Matrix files for the CLI: YAML (JSON is YAML too) with the same field names as the API's JSON
// (POST /api/v1/runs). The file is converted to JSON and validated by the same codec the
// coordinator uses, so an error names the file, the line and the field:
//   "examples/cpu-demo.yaml: line 7: batch_sizes[2]: must be >= 1".
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet::cli {

// A YAML document as JSON, with the line (1-based) each JSON path starts on ("" for the root,
// "measurement.warmup", "models[1]"). Plain scalars follow YAML 1.2's core schema: null/~/empty,
// true/false, integers, floats (.inf/.nan are refused: JSON has no such numbers); quoted scalars
// and !!str are strings. Mapping keys must be strings and unique. Errors read "line <n>: ...".
struct JsonDocument {
  nlohmann::json json;
  std::map<std::string, int, std::less<>> lines;

  // The line of `path`, or of its nearest ancestor that has one (a missing field is reported
  // at its parent mapping); 0 when none.
  int line_of(std::string_view path) const;
};
Result<JsonDocument> yaml_to_json(std::string_view text);

struct MatrixFile {
  MatrixSpec spec;
  // The request body to submit (the file's fields as written) and where each field's line is,
  // for errors the coordinator reports about a field.
  JsonDocument document;
  std::size_t job_count = 0;  // cells (every axis, dtypes included) x repetitions
};

// Parses and validates (everything but catalog ids, which the coordinator's catalog decides).
// Errors are Error{kInvalidArgument} reading "<origin>: line <n>: <field>: <problem>" (the
// field is kept in Error::field too).
Result<MatrixFile> parse_matrix(std::string_view text, std::string_view origin);
Result<MatrixFile> load_matrix_file(const std::string& path);

}  // namespace benchfleet::cli
