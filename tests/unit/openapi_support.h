// Shared by the OpenAPI tests (openapi_test.cpp, openapi_schema_test.cpp,
// openapi_routes_test.cpp): the document served at /api/v1/openapi.json, helpers that walk it
// through $ref and allOf, a small JSON Schema checker, and fully populated codec values.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"

namespace benchfleet::testing {

// The keys of an OpenAPI path item that name operations.
extern const std::vector<std::string> kMethods;

// The embedded document, parsed once.
const nlohmann::json& document();
// document()["components"]["schemas"][name]; throws when there is none.
const nlohmann::json& component_schema(const std::string& name);

// "#/components/schemas/X" -> the node of `root`, or nullptr.
const nlohmann::json* resolve_pointer(const nlohmann::json& root, const std::string& ref);
// The node a chain of {"$ref": ...} in document() ends at (`node` itself when it is no $ref).
const nlohmann::json& deref(const nlohmann::json& node);

// An object schema's members as seen through $ref and allOf (the "if"/"then" rules aside).
struct ObjectView {
  nlohmann::json properties = nlohmann::json::object();
  std::set<std::string> required;
  bool closed = false;  // additionalProperties: false somewhere
  bool open = false;    // additionalProperties: true or a schema somewhere
};
ObjectView object_view(const nlohmann::json& schema);

// A small JSON Schema checker covering the keywords the document uses. Stricter than JSON
// Schema in one way, on purpose: an object schema that declares properties (itself, through
// $ref or allOf) and says nothing about additionalProperties accepts no undeclared member, so a
// field the server adds without documenting it fails here. $refs resolve against document().
class SchemaChecker {
 public:
  // What in `value` breaks `schema`, one "$.path: message" each; empty when it conforms.
  std::vector<std::string> check(const nlohmann::json& value, const nlohmann::json& schema) const;
  // True when `value` validates against `schema` in plain JSON Schema terms (no check for
  // undocumented members), as for evaluating an "if".
  bool matches(const nlohmann::json& value, const nlohmann::json& schema) const;

 private:
  void visit(const nlohmann::json& v, const nlohmann::json& s, const std::string& path, bool check_keys,
             std::vector<std::string>& errors) const;
};

// The lines, each on its own indented line, for failure messages.
std::string join(const std::vector<std::string>& lines);

// Values with every optional field set, so that their encodings show every documented member.
GpuInfo full_gpu();
SlotDescriptor full_slot();
TorchBuildDescriptor full_build();
AgentDescriptor full_agent();
MatrixSpec full_matrix();
JobResult full_result(ResultStatus status);
// A result an agent may post with `status`: the fields a worker reaches for it (statistics
// recomputed from the samples for ok, the OOM info for oom, ...), as the coordinator's ingest
// checks require (common/result_checks.h).
JobResult posted_result(ResultStatus status);

}  // namespace benchfleet::testing
