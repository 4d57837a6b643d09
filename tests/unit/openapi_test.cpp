// The OpenAPI document (coordinator/api/openapi.json) against the code it describes: every
// route is documented with its route name as operationId and nothing else is, every $ref
// resolves, the codec schemas list exactly the fields the codecs write and require, and real
// responses of every endpoint (driven through the Router) match the documented status codes,
// media types and schemas. tests/openapi/validate.mjs checks the document against the OpenAPI
// 3.1 schema itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/verb.hpp>
#include <cctype>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/codecs.h"
#include "common/http/router.h"
#include "coordinator/api/api.h"
#include "coordinator/api/common.h"
#include "coordinator/config.h"
#include "coordinator/metrics.h"
#include "coordinator/store/store.h"
#include "coordinator/work_signal.h"

namespace benchfleet {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using nlohmann::json;

constexpr const char* kOperatorToken = "operator-secret";
constexpr const char* kEnrollmentToken = "enrollment-secret";
const std::vector<std::string> kMethods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"};

const json& document() {
  static const json doc = json::parse(api::openapi_document());
  return doc;
}

const json& component_schema(const std::string& name) { return document().at("components").at("schemas").at(name); }

// "#/components/schemas/X" -> the node, or nullptr.
const json* resolve_pointer(const json& root, const std::string& ref) {
  if (ref.rfind("#/", 0) != 0) return nullptr;
  try {
    return &root.at(json::json_pointer(ref.substr(1)));
  } catch (const json::exception&) {
    return nullptr;
  }
}

const json& deref(const json& node) {
  const json* n = &node;
  for (int hops = 0; hops < 16 && n->is_object() && n->contains("$ref"); ++hops) {
    const json* target = resolve_pointer(document(), n->at("$ref").get<std::string>());
    if (target == nullptr) break;
    n = target;
  }
  return *n;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::set<std::string> keys_of(const json& object) {
  std::set<std::string> out;
  for (const auto& [k, v] : object.items()) out.insert(k);
  return out;
}

std::set<std::string> strings_of(const json& array) {
  std::set<std::string> out;
  if (array.is_array()) {
    for (const auto& v : array) out.insert(v.get<std::string>());
  }
  return out;
}

// An object schema's members as seen through $ref and allOf (the "if"/"then" rules aside).
struct ObjectView {
  json properties = json::object();
  std::set<std::string> required;
  bool closed = false;  // additionalProperties: false somewhere
  bool open = false;    // additionalProperties: true or a schema somewhere
};

void merge_view(const json& s, ObjectView& out) {
  if (s.contains("$ref")) merge_view(deref(s), out);
  for (const auto& branch : s.value("allOf", json::array())) {
    if (!branch.contains("if")) merge_view(branch, out);
  }
  if (s.contains("properties")) out.properties.update(s["properties"]);
  for (const auto& r : s.value("required", json::array())) out.required.insert(r.get<std::string>());
  if (s.contains("additionalProperties")) {
    (s["additionalProperties"] == json(false) ? out.closed : out.open) = true;
  }
}

ObjectView object_view(const json& schema) {
  ObjectView view;
  merge_view(schema, view);
  return view;
}

// ---- a small JSON Schema checker -------------------------------------------------------------
// Covers the keywords the document uses. Stricter than JSON Schema in one way, on purpose: an
// object schema that declares properties (itself, through $ref or allOf) and says nothing about
// additionalProperties accepts no undeclared member, so a field the server adds without
// documenting it fails here.
class SchemaChecker {
 public:
  std::vector<std::string> check(const json& value, const json& schema) const {
    std::vector<std::string> errors;
    visit(value, schema, "$", /*check_keys=*/true, errors);
    return errors;
  }
  // True when `value` validates against `schema` in plain JSON Schema terms (no check for
  // undocumented members), as for evaluating an "if".
  bool matches(const json& value, const json& schema) const {
    std::vector<std::string> errors;
    visit(value, schema, "$", /*check_keys=*/false, errors);
    return errors.empty();
  }

 private:
  static bool has_type(const json& v, const std::string& type) {
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "string") return v.is_string();
    if (type == "array") return v.is_array();
    if (type == "object") return v.is_object();
    return false;
  }

  void visit(const json& v, const json& s, const std::string& path, bool check_keys,
             std::vector<std::string>& errors) const {
    if (!s.is_object()) return;
    auto fail = [&](const std::string& message) { errors.push_back(path + ": " + message); };

    if (check_keys && v.is_object()) {
      const ObjectView view = object_view(s);
      if (!view.properties.empty() && !view.open) {
        for (const auto& [k, x] : v.items()) {
          if (!view.properties.contains(k)) fail("member \"" + k + "\" is not documented");
        }
      }
    }
    if (s.contains("$ref")) {
      const json* target = resolve_pointer(document(), s["$ref"].get<std::string>());
      if (target == nullptr) return fail("unresolvable $ref " + s["$ref"].dump());
      visit(v, *target, path, false, errors);
    }
    if (s.contains("allOf")) {
      for (const auto& b : s["allOf"]) visit(v, b, path, false, errors);
    }
    for (const char* kw : {"anyOf", "oneOf"}) {
      if (!s.contains(kw)) continue;
      int matches = 0;
      std::vector<std::string> first;
      for (const auto& b : s[kw]) {
        std::vector<std::string> e;
        visit(v, b, path, true, e);
        if (e.empty()) ++matches;
        if (first.empty()) first = e;
      }
      if (matches == 0) fail(std::string("matches no ") + kw + " branch, e.g. " + (first.empty() ? "" : first[0]));
      if (std::string(kw) == "oneOf" && matches > 1) fail("matches several oneOf branches");
    }
    if (s.contains("if")) {
      std::vector<std::string> e;
      visit(v, s["if"], path, false, e);
      if (e.empty() && s.contains("then")) visit(v, s["then"], path, false, errors);
    }
    if (s.contains("type")) {
      const json& t = s["type"];
      bool ok = false;
      if (t.is_string()) ok = has_type(v, t.get<std::string>());
      for (const auto& one : t.is_array() ? t : json::array()) ok = ok || has_type(v, one.get<std::string>());
      if (!ok) return fail("has type " + std::string(v.type_name()) + ", documented " + t.dump());
    }
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) {
      fail(v.dump() + " is not one of " + s["enum"].dump());
    }
    if (s.contains("const") && s["const"] != v) fail(v.dump() + " is not " + s["const"].dump());
    if (v.is_number()) {
      const double x = v.get<double>();
      if (s.contains("minimum") && x < s["minimum"].get<double>()) fail(v.dump() + " < minimum");
      if (s.contains("maximum") && x > s["maximum"].get<double>()) fail(v.dump() + " > maximum");
      if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>())
        fail(v.dump() + " <= exclusiveMinimum");
      if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>())
        fail(v.dump() + " >= exclusiveMaximum");
    }
    if (v.is_string()) {
      const auto& str = v.get_ref<const std::string&>();
      if (s.contains("minLength") && str.size() < s["minLength"].get<std::size_t>()) fail("shorter than minLength");
      if (s.contains("maxLength") && str.size() > s["maxLength"].get<std::size_t>()) fail("longer than maxLength");
      if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>()))) {
        fail(v.dump() + " does not match " + s["pattern"].dump());
      }
      static const std::regex kDateTime(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$)");
      if (s.value("format", "") == "date-time" && !std::regex_match(str, kDateTime))
        fail(v.dump() + " is not a date-time");
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) fail("fewer than minItems");
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) fail("more than maxItems");
      if (s.contains("items")) {
        for (std::size_t i = 0; i < v.size(); ++i)
          visit(v[i], s["items"], path + "[" + std::to_string(i) + "]", true, errors);
      }
    }
    if (v.is_object()) {
      for (const auto& r : s.value("required", json::array())) {
        if (!v.contains(r.get<std::string>())) fail("required member " + r.dump() + " is missing");
      }
      const json props = s.value("properties", json::object());
      for (const auto& [k, x] : v.items()) {
        if (props.contains(k)) {
          visit(x, props[k], path + "." + k, true, errors);
        } else if (s.contains("additionalProperties")) {
          if (s["additionalProperties"] == json(false)) {
            if (s.contains("properties")) fail("member \"" + k + "\" is not allowed");
          } else {
            visit(x, s["additionalProperties"], path + "." + k, true, errors);
          }
        }
      }
      if (s.contains("maxProperties") && v.size() > s["maxProperties"].get<std::size_t>())
        fail("more than maxProperties");
    }
  }
};

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

// ---- the document itself ---------------------------------------------------------------------

TEST(OpenApiDocument, ParsesAsOpenApi31) {
  const json& doc = document();
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(doc.contains("openapi"));
  EXPECT_EQ(doc["openapi"].get<std::string>().rfind("3.1.", 0), 0u) << doc["openapi"];
  ASSERT_TRUE(doc.contains("info"));
  EXPECT_TRUE(doc["info"].contains("title"));
  EXPECT_TRUE(doc["info"].contains("version"));
  EXPECT_EQ(doc["info"]["version"], BENCHFLEET_VERSION) << "info.version should follow the project version";
  ASSERT_TRUE(doc.contains("paths"));
  EXPECT_FALSE(doc["paths"].empty());
  ASSERT_TRUE(doc.contains("components"));
  for (const char* c : {"schemas", "securitySchemes", "responses", "parameters"}) {
    EXPECT_TRUE(doc["components"].contains(c)) << c;
  }
  for (const char* scheme : {"operatorToken", "enrollmentToken", "agentToken"}) {
    const json& s = doc["components"]["securitySchemes"].at(scheme);
    EXPECT_EQ(s["type"], "http") << scheme;
    EXPECT_EQ(s["scheme"], "bearer") << scheme;
  }
  EXPECT_EQ(api::openapi_document().find(")bf_embed\""), std::string::npos);
}

TEST(OpenApiDocument, EveryRefResolves) {
  std::vector<std::string> bad;
  int refs = 0;
  std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& where) {
    if (node.is_array()) {
      for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], where + "/" + std::to_string(i));
    } else if (node.is_object()) {
      for (const auto& [k, v] : node.items()) {
        if (k == "$ref" && v.is_string()) {
          ++refs;
          const std::string ref = v.get<std::string>();
          if (ref.rfind("#/components/", 0) != 0) bad.push_back(where + ": " + ref + " is not #/components/...");
          if (resolve_pointer(document(), ref) == nullptr) bad.push_back(where + ": " + ref + " does not resolve");
        } else {
          walk(v, where + "/" + k);
        }
      }
    }
  };
  walk(document(), "#");
  EXPECT_GT(refs, 50);
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(OpenApiDocument, OperationsAreWellFormed) {
  std::set<std::string> ids;
  for (const auto& [path, item] : document()["paths"].items()) {
    std::set<std::string> templated;
    static const std::regex kParam(R"(\{([^}]+)\})");
    for (auto it = std::sregex_iterator(path.begin(), path.end(), kParam); it != std::sregex_iterator(); ++it) {
      templated.insert((*it)[1]);
    }
    for (const auto& method : kMethods) {
      if (!item.contains(method)) continue;
      const json& op = item[method];
      const std::string where = method + " " + path;
      ASSERT_TRUE(op.contains("operationId")) << where;
      EXPECT_TRUE(ids.insert(op["operationId"].get<std::string>()).second) << "duplicate operationId at " << where;
      EXPECT_FALSE(op.value("summary", "").empty()) << where;
      EXPECT_FALSE(op.value("description", "").empty()) << where;
      ASSERT_TRUE(op.contains("responses")) << where;
      EXPECT_FALSE(op["responses"].empty()) << where;
      for (const auto& [status, r] : op["responses"].items()) {
        const json& resp = deref(r);
        EXPECT_TRUE(resp.contains("description")) << where << " " << status;
        const int code = std::atoi(status.c_str());
        if (code >= 400) {
          ASSERT_TRUE(resp.contains("content")) << where << " " << status;
          EXPECT_TRUE(resp["content"].contains("application/problem+json")) << where << " " << status;
        }
      }
      std::set<std::string> declared;
      for (const auto& p : op.value("parameters", json::array())) {
        const json& param = deref(p);
        if (param["in"] == "path") {
          EXPECT_TRUE(param.value("required", false)) << where << " " << param["name"];
          declared.insert(param["name"].get<std::string>());
        }
      }
      EXPECT_EQ(declared, templated) << where << ": path parameters and the path template disagree";
    }
  }
  EXPECT_EQ(ids.size(), 18u);
}

TEST(OpenApiDocument, EnumsUseTheWireNames) {
  auto names = [](const auto& values) {
    std::set<std::string> out;
    for (auto v : values) out.insert(std::string(to_string(v)));
    return out;
  };
  EXPECT_EQ(strings_of(component_schema("JobStatus")["enum"]), names(all_job_statuses()));
  EXPECT_EQ(strings_of(component_schema("ResultStatus")["enum"]), names(all_result_statuses()));
  EXPECT_EQ(strings_of(component_schema("Mode")["enum"]), names(all_modes()));
  EXPECT_EQ(strings_of(component_schema("Runtime")["enum"]), names(all_runtimes()));
  EXPECT_EQ(strings_of(component_schema("OomPhase")["enum"]),
            names(std::vector<OomPhase>{OomPhase::kLoad, OomPhase::kCompile, OomPhase::kWarmup, OomPhase::kMeasure}));
  EXPECT_EQ(strings_of(component_schema("StopReason")["enum"]),
            names(std::vector<StopReason>{StopReason::kFixedCount, StopReason::kCiTarget, StopReason::kMaxIterations,
                                          StopReason::kMaxTime}));
  // The run's job/result counters have one member per status.
  EXPECT_EQ(strings_of(component_schema("Run")["properties"]["jobs"]["required"]), names(all_job_statuses()));
  EXPECT_EQ(strings_of(component_schema("Run")["properties"]["results"]["required"]), names(all_result_statuses()));
}

TEST(OpenApiDocument, SubmitExampleIsTheSeedsStudyAndDecodes) {
  const json& media = document()["paths"]["/api/v1/runs"]["post"]["requestBody"]["content"]["application/json"];
  const json& seeds = media.at("examples").at("seeds").at("value");
  auto spec = decode<MatrixSpec>(seeds);
  ASSERT_TRUE(spec.ok()) << spec.error().describe();
  auto catalog = Catalog::load_file(default_catalog_path());
  ASSERT_TRUE(catalog.ok()) << catalog.error().describe();
  ASSERT_EQ(spec->models.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(spec->models[i], catalog->models()[i].id) << i;
  EXPECT_EQ(spec->batch_sizes, (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(spec->modes, (std::vector<Mode>{Mode::kEager, Mode::kDefault}));
  EXPECT_EQ(spec->torch_builds, (std::vector<std::string>{"stable", "nightly"}));
  EXPECT_EQ(spec->gpus, (std::vector<std::string>{"a100", "v100", "t4"}));
  EXPECT_TRUE(decode<MatrixSpec>(media["examples"]["minimal"]["value"]).ok());
}

// ---- codec schemas against the codecs ---------------------------------------------------------

// The schema's `required` plus what its allOf if/then rules add for this instance (JobResult
// requires stats and samples_ms when status is ok, oom when status is oom...).
std::set<std::string> effective_required(const json& schema, const json& instance) {
  std::set<std::string> out = object_view(schema).required;
  for (const auto& branch : schema.value("allOf", json::array())) {
    if (branch.contains("if") && SchemaChecker().matches(instance, branch["if"])) {
      for (const auto& r : branch["then"].value("required", json::array())) out.insert(r.get<std::string>());
    }
  }
  return out;
}

template <class T>
void expect_schema_matches_codec(const std::string& name, const T& full) {
  SCOPED_TRACE(name);
  const json& schema = component_schema(name);
  const ObjectView view = object_view(schema);
  const json encoded = full;
  ASSERT_TRUE(encoded.is_object());
  EXPECT_EQ(keys_of(view.properties), keys_of(encoded))
      << "the schema's properties differ from what to_json writes for a fully populated value";
  auto roundtrip = decode<T>(encoded);
  ASSERT_TRUE(roundtrip.ok()) << roundtrip.error().describe();
  EXPECT_TRUE(*roundtrip == full);

  std::set<std::string> needed;
  for (const auto& [key, value] : encoded.items()) {
    json without = encoded;
    without.erase(key);
    if (!decode<T>(without).ok()) needed.insert(key);
  }
  EXPECT_EQ(effective_required(schema, encoded), needed)
      << "the schema's required list differs from the fields decode<" << name << "> cannot do without";
  EXPECT_TRUE(view.closed) << "decode refuses unknown fields, so the schema should too";
  json unknown = encoded;
  unknown["no_such_field"] = 1;
  EXPECT_FALSE(decode<T>(unknown).ok());

  // Documented defaults are what an absent field decodes to.
  const json defaults = T{};
  for (const auto& [key, prop] : view.properties.items()) {
    if (prop.contains("default") && defaults.contains(key)) {
      EXPECT_EQ(prop["default"], defaults[key]) << "default of " << name << "." << key;
    }
  }
  // And the encoding conforms to the schema.
  EXPECT_TRUE(SchemaChecker().check(encoded, schema).empty()) << join(SchemaChecker().check(encoded, schema));
}

GpuInfo full_gpu() { return {0, "GPU-1234", "NVIDIA A100-SXM4-40GB", 40960, "8.0", "550.54.15"}; }
SlotDescriptor full_slot() { return {"gpu0", "a100", full_gpu(), 20000}; }
TorchBuildDescriptor full_build() {
  return {"stable", "2.11.0+cu130", {{Runtime::kLibtorch, {Mode::kEager, Mode::kDefault}}}};
}
AgentDescriptor full_agent() { return {"host-1", "host-1.lab", "0.1.0", {full_slot()}, {full_build()}}; }

MatrixSpec full_matrix() {
  MatrixSpec m;
  m.name = "full";
  m.models = {"microsoft/resnet-50", "google/vit-base-patch16-224"};
  m.batch_sizes = {1, 4};
  m.modes = {Mode::kEager, Mode::kDefault};
  m.torch_builds = {"stable", "nightly"};
  m.gpus = {"a100", "t4"};
  m.runtimes = {Runtime::kLibtorch, Runtime::kPython};
  m.repetitions = 2;
  m.measurement = MeasurementSpec{5, 50, 500, 1.0, 60.0, 0.05};
  m.memory_limit_mb = 8192;
  m.timeout_s = 600;
  m.priority = 3;
  return m;
}

JobResult full_result(ResultStatus status) {
  JobResult r;
  r.status = status;
  r.stats = Statistics{2.0, 2.0, 2.9, 3.0, 1.0, 3.0, 0.8, 0.4, 1.5, 2.5, 3};
  r.samples_ms = {1.0, 2.0, 3.0};
  r.first_call_ms = 120.5;
  r.stop_reason = StopReason::kFixedCount;
  r.export_s = 4.5;
  r.oom = OomInfo{OomPhase::kWarmup, 1 << 30};
  r.error = "message";
  r.signal = 11;
  r.memory = MemoryInfo{1, 2, 3};
  r.environment = {{"torch", "2.11.0"}, {"cuda", 13.0}};
  r.telemetry = {{"sm_clock_mhz", 1410}, {"throttled", false}};
  return r;
}

TEST(OpenApiSchemas, MatrixSpecMatchesCodec) {
  expect_schema_matches_codec("MatrixSpec", full_matrix());
  expect_schema_matches_codec("MeasurementSpec", MeasurementSpec{5, 50, 500, 1.0, 60.0, 0.05});
  expect_schema_matches_codec("JobSpec",
                              JobSpec{"microsoft/resnet-50", 4, Mode::kDefault, "stable", "a100", Runtime::kPython, 1});
}

TEST(OpenApiSchemas, JobResultMatchesCodec) {
  // ok requires stats and samples_ms, oom requires oom, the others only status.
  expect_schema_matches_codec("JobResult", full_result(ResultStatus::kOk));
  expect_schema_matches_codec("JobResult", full_result(ResultStatus::kOom));
  expect_schema_matches_codec("JobResult", full_result(ResultStatus::kError));
  expect_schema_matches_codec("Statistics", *full_result(ResultStatus::kOk).stats);
  expect_schema_matches_codec("OomInfo", OomInfo{OomPhase::kLoad, 123});
  expect_schema_matches_codec("MemoryInfo", MemoryInfo{1, 2, 3});
}

TEST(OpenApiSchemas, AgentDescriptorMatchesCodec) {
  expect_schema_matches_codec("AgentDescriptor", full_agent());
  expect_schema_matches_codec("SlotDescriptor", full_slot());
  expect_schema_matches_codec("GpuInfo", full_gpu());
  expect_schema_matches_codec("TorchBuildDescriptor", full_build());
  expect_schema_matches_codec("RuntimeSupport", RuntimeSupport{Runtime::kPython, {Mode::kEager}});
}

TEST(OpenApiSchemas, JsonViewsMatchTheirSchemas) {
  SchemaChecker checker;
  store::RunInfo run;
  run.id = 7;
  run.name = "full";
  run.spec = full_matrix();
  run.job_count = 64;
  run.created_at = 1'700'000'000'123;
  run.cancelled_at = 1'700'000'100'000;
  run.finished_at = 1'700'000'100'000;
  run.jobs_by_status = {{JobStatus::kDone, 10}, {JobStatus::kCancelled, 54}};
  run.results_by_status = {{ResultStatus::kOk, 9}, {ResultStatus::kOom, 1}};
  run.state = "cancelled";
  EXPECT_TRUE(checker.check(api::run_json(run), component_schema("Run")).empty())
      << join(checker.check(api::run_json(run), component_schema("Run")));

  store::AgentInfo agent;
  agent.id = 3;
  agent.descriptor = full_agent();
  agent.enrolled_at = 1'700'000'000'000;
  agent.last_seen_at = 1'700'000'001'000;
  agent.draining = true;
  agent.leases.push_back({"gpu0", 5, 7,
                          JobSpec{"microsoft/resnet-50", 1, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0},
                          "running"});
  const json a = api::agent_json(agent, 1'700'000'002'000, 15);
  EXPECT_TRUE(checker.check(a, component_schema("Agent")).empty()) << join(checker.check(a, component_schema("Agent")));

  store::ResultRow row;
  row.id = 11;
  row.job_id = 5;
  row.run_id = 7;
  row.attempt = 2;
  row.spec = JobSpec{"microsoft/resnet-50", 1, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0};
  row.result = full_result(ResultStatus::kOk);
  row.agent_name = "host-1";
  row.slot = "gpu0";
  row.created_at = 1'700'000'000'000;
  for (bool samples : {true, false}) {
    const json r = api::result_json(row, samples);
    EXPECT_TRUE(checker.check(r, component_schema("ResultRow")).empty())
        << join(checker.check(r, component_schema("ResultRow")));
  }

  auto catalog = Catalog::load_file(default_catalog_path());
  ASSERT_TRUE(catalog.ok());
  for (const auto& m : catalog->models()) {
    EXPECT_TRUE(checker.check(api::model_json(m), component_schema("CatalogModel")).empty()) << m.id;
  }
}

TEST(OpenApiSchemas, CheckerCatchesDrift) {
  SchemaChecker checker;
  json matrix = full_matrix();
  EXPECT_TRUE(checker.check(matrix, component_schema("MatrixSpec")).empty());
  matrix["undocumented"] = true;
  EXPECT_FALSE(checker.check(matrix, component_schema("MatrixSpec")).empty());
  json result = full_result(ResultStatus::kOk);
  result.erase("stats");
  EXPECT_FALSE(checker.check(result, component_schema("JobResult")).empty());
  EXPECT_FALSE(checker.check(json{{"id", 1}}, component_schema("Run")).empty());
}

// ---- routes and real responses ---------------------------------------------------------------

class OpenApiRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bf-openapi-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store::StoreOptions options;
    options.path = (dir_ / "bf.db").string();
    auto s = store::Store::open(options, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok()) << catalog.error().describe();
    catalog_ = std::move(*catalog);
    ctx_.emplace(api::ApiContext{.store = *store_,
                                 .catalog = catalog_,
                                 .config = config_,
                                 .clock = clock_,
                                 .work = work_,
                                 .metrics = metrics_,
                                 .operator_token = kOperatorToken,
                                 .enrollment_token = kEnrollmentToken,
                                 .stopping = stopping_,
                                 .blocking = blocking_.get_executor()});
    api::register_routes(router_, *ctx_);
  }
  void TearDown() override {
    ctx_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  struct Call {
    unsigned status = 0;
    std::string route;
    std::string content_type;
    std::string body;
    json parsed;  // null unless JSON
  };

  // Dispatches through the router and checks the answer against the document: the route's
  // operation documents this status with this media type, and a JSON body matches its schema.
  Call call(bhttp::verb method, const std::string& target, const std::optional<json>& body = std::nullopt,
            const std::string& token = "") {
    http::Request req{method, target, 11};
    if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + token);
    if (body) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body->dump();
    }
    req.prepare_payload();
    Call out;
    std::optional<http::Response> res;
    asio::io_context io;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { res = co_await router_.dispatch(req, out.route); },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run();
    EXPECT_TRUE(res.has_value());
    if (!res) return out;
    out.status = res->result_int();
    out.content_type = std::string((*res)[bhttp::field::content_type]);
    out.body = res->body();
    const std::string media = lower(out.content_type.substr(0, out.content_type.find(';')));
    if (media == "application/json" || media == "application/problem+json") out.parsed = json::parse(out.body);
    expect_documented(method, out, media);
    return out;
  }

  void expect_documented(bhttp::verb method, const Call& c, const std::string& media) {
    const std::string where = std::string(bhttp::to_string(method)) + " " + c.route + " -> " + std::to_string(c.status);
    const json* op = nullptr;
    for (const auto& [path, item] : document()["paths"].items()) {
      for (const auto& m : kMethods) {
        if (item.contains(m) && item[m]["operationId"] == c.route) op = &item[m];
      }
    }
    ASSERT_NE(op, nullptr) << where << ": no operation";
    const std::string status = std::to_string(c.status);
    ASSERT_TRUE((*op)["responses"].contains(status)) << where << ": status not documented; body " << c.body;
    const json& resp = deref((*op)["responses"][status]);
    ASSERT_TRUE(resp.contains("content")) << where;
    ASSERT_TRUE(resp["content"].contains(media)) << where << ": media type " << media << " not documented";
    exercised_.insert(c.route + " " + status);
    if (c.parsed.is_null()) return;
    const auto errors = SchemaChecker().check(c.parsed, resp["content"][media]["schema"]);
    EXPECT_TRUE(errors.empty()) << where << join(errors) << "\nbody: " << c.body;
  }

  fs::path dir_;
  SystemClock clock_;
  std::unique_ptr<store::Store> store_;
  Catalog catalog_;
  CoordinatorConfig config_;
  WorkSignal work_;
  Metrics metrics_;
  std::atomic<bool> stopping_{false};
  asio::thread_pool blocking_{2};  // where the handlers that touch the store run
  std::optional<api::ApiContext> ctx_;
  http::Router router_;
  std::set<std::string> exercised_;
};

TEST_F(OpenApiRoutes, EveryRouteIsDocumentedAndNothingElse) {
  const json& paths = document()["paths"];
  std::set<std::pair<std::string, std::string>> routes;
  for (const auto& r : router_.routes()) {
    const std::string method = lower(bhttp::to_string(r.method));
    routes.insert({r.pattern, method});
    ASSERT_TRUE(paths.contains(r.pattern)) << r.pattern << " is not documented";
    ASSERT_TRUE(paths[r.pattern].contains(method)) << method << " " << r.pattern << " is not documented";
    EXPECT_EQ(paths[r.pattern][method]["operationId"], r.name) << method << " " << r.pattern;
  }
  EXPECT_EQ(routes.size(), 18u);
  for (const auto& [path, item] : paths.items()) {
    for (const auto& m : kMethods) {
      if (item.contains(m)) {
        EXPECT_TRUE(routes.contains({path, m})) << m << " " << path << " is not a route";
      }
    }
  }
}

TEST_F(OpenApiRoutes, ResponsesMatchTheDocument) {
  using bhttp::verb;
  const std::string op = kOperatorToken;
  json matrix = json::object();
  matrix["name"] = "doc check";
  matrix["models"] = json::array({"microsoft/resnet-50"});
  matrix["batch_sizes"] = json::array({1, 4});
  matrix["modes"] = json::array({"eager", "default"});
  matrix["torch_builds"] = json::array({"stable"});
  matrix["gpus"] = json::array({"a100"});

  // Operators.
  EXPECT_EQ(call(verb::post, "/api/v1/runs", matrix).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs", json{{"name", "x"}}, op).status, 400u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs", json::array(), op).status, 400u);
  Call submitted = call(verb::post, "/api/v1/runs", matrix, op);
  ASSERT_EQ(submitted.status, 201u) << submitted.body;
  const std::string run = "/api/v1/runs/" + std::to_string(submitted.parsed["id"].get<std::int64_t>());
  EXPECT_EQ(call(verb::get, "/api/v1/runs").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs?limit=1").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs?limit=0").status, 400u);
  EXPECT_EQ(call(verb::get, run).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999").status, 404u);
  EXPECT_EQ(call(verb::get, "/api/v1/models").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/agents").status, 200u);

  // An agent enrols, leases, reports progress and results.
  json descriptor = full_agent();
  EXPECT_EQ(call(verb::post, "/api/v1/agents/enroll", descriptor, op).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/agents/enroll", json{{"name", "x"}}, kEnrollmentToken).status, 400u);
  Call enrolled = call(verb::post, "/api/v1/agents/enroll", descriptor, kEnrollmentToken);
  ASSERT_EQ(enrolled.status, 201u) << enrolled.body;
  const std::int64_t agent_id = enrolled.parsed["agent_id"];
  const std::string agent = "/api/v1/agents/" + std::to_string(agent_id);
  const std::string token = enrolled.parsed["agent_token"];
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", json::object()).status, 401u);
  EXPECT_EQ(
      call(verb::post, "/api/v1/agents/" + std::to_string(agent_id + 1) + "/heartbeat", json::object(), token).status,
      403u);
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", json{{"leases", 1}}, token).status, 400u);
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", json::object(), token).status, 200u);
  EXPECT_EQ(call(verb::post, agent + "/lease", json{{"slot", "nope"}, {"wait_s", 0}}, token).status, 404u);
  EXPECT_EQ(call(verb::post, agent + "/lease", json{{"wait_s", 0}}, token).status, 400u);
  Call leased = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_EQ(leased.status, 200u) << leased.body;
  ASSERT_TRUE(leased.parsed["job"].is_object()) << leased.body;
  const json job = leased.parsed["job"];
  const std::string job_url = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
  const std::string lease_id = job["lease_id"];
  EXPECT_EQ(call(verb::post, job_url + "/progress",
                 json{{"lease_id", lease_id}, {"phase", "measure"}, {"iterations", 3}}, token)
                .status,
            200u);
  json held = json::object();
  held["job_id"] = job["id"];
  held["lease_id"] = lease_id;
  json beat = json::object();
  beat["leases"] = json::array({held});
  beat["draining"] = false;
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", beat, token).status, 200u);
  json result = {{"lease_id", lease_id}, {"attempt", job["attempt"]}, {"result", full_result(ResultStatus::kOk)}};
  EXPECT_EQ(call(verb::post, job_url + "/result", json{{"lease_id", lease_id}}, token).status, 400u);
  EXPECT_EQ(call(verb::post, job_url + "/result", result, token).status, 201u);
  EXPECT_EQ(call(verb::post, job_url + "/result", result, token).status, 200u);
  json different = result;
  different["result"]["first_call_ms"] = 1.0;
  Call mismatch = call(verb::post, job_url + "/result", different, token);
  EXPECT_EQ(mismatch.status, 409u);
  EXPECT_EQ(mismatch.parsed["reason"], "result_mismatch");
  Call lost = call(verb::post, job_url + "/progress", json{{"lease_id", lease_id}}, token);
  EXPECT_EQ(lost.status, 409u);
  EXPECT_EQ(lost.parsed["reason"], "lease_lost");
  EXPECT_EQ(call(verb::post, "/api/v1/jobs/999999/result", result, token).status, 404u);

  // A second job ends in an OOM.
  Call leased2 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased2.parsed["job"].is_object()) << leased2.body;
  const json job2 = leased2.parsed["job"];
  EXPECT_EQ(
      call(verb::post, "/api/v1/jobs/" + std::to_string(job2["id"].get<std::int64_t>()) + "/result",
           json{{"lease_id", job2["lease_id"]}, {"attempt", 1}, {"result", full_result(ResultStatus::kOom)}}, token)
          .status,
      201u);

  // Reads of what happened.
  Call results = call(verb::get, run + "/results?limit=1");
  EXPECT_EQ(results.status, 200u);
  ASSERT_TRUE(results.parsed["next_cursor"].is_string()) << results.body;
  EXPECT_EQ(call(verb::get, run + "/results?cursor=" + results.parsed["next_cursor"].get<std::string>() +
                                "&samples=false&status=oom&mode=eager&runtime=libtorch&batch=1&gpu=a100&build=stable"
                                "&model=microsoft/resnet-50")
                .status,
            200u);
  EXPECT_EQ(call(verb::get, run + "/results?samples=maybe").status, 400u);
  EXPECT_EQ(call(verb::get, run + "/results?mode=fast").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999/results").status, 404u);
  const std::int64_t result_id = results.parsed["results"][0]["id"];
  EXPECT_EQ(call(verb::get, "/api/v1/results/" + std::to_string(result_id)).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/results/999999").status, 404u);
  for (const char* q : {"", "?format=json&stat=median", "?format=md", "?format=csv"}) {
    EXPECT_EQ(call(verb::get, run + "/report" + q).status, 200u) << q;
  }
  EXPECT_EQ(call(verb::get, run + "/report?format=pdf").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999/report").status, 404u);
  EXPECT_EQ(call(verb::get, "/api/v1/agents").status, 200u);
  EXPECT_EQ(call(verb::get, "/healthz").status, 200u);
  EXPECT_EQ(call(verb::get, "/metrics").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/openapi.json").status, 200u);

  // Drain, resume; then a job whose run gets cancelled under it.
  EXPECT_EQ(call(verb::post, agent + "/drain", std::nullopt).status, 401u);
  EXPECT_EQ(call(verb::post, agent + "/drain", json{{"draining", "yes"}}, op).status, 400u);
  EXPECT_EQ(call(verb::post, "/api/v1/agents/999/drain", std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::post, agent + "/drain", std::nullopt, op).status, 200u);
  Call drained = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  EXPECT_TRUE(drained.parsed["job"].is_null());
  EXPECT_EQ(drained.parsed["draining"], true);
  EXPECT_EQ(call(verb::post, agent + "/drain", json{{"draining", false}}, op).status, 200u);
  Call leased3 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased3.parsed["job"].is_object()) << leased3.body;
  EXPECT_EQ(call(verb::post, run + "/cancel", std::nullopt).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs/999/cancel", std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::post, run + "/cancel", std::nullopt, op).status, 200u);
  EXPECT_EQ(call(verb::post, run + "/cancel", std::nullopt, op).status, 200u);
  Call cancelled =
      call(verb::post, "/api/v1/jobs/" + std::to_string(leased3.parsed["job"]["id"].get<std::int64_t>()) + "/progress",
           json{{"lease_id", leased3.parsed["job"]["lease_id"]}}, token);
  EXPECT_EQ(cancelled.status, 409u);
  EXPECT_EQ(cancelled.parsed["reason"], "cancelled");
  Call idle = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  EXPECT_EQ(idle.status, 200u);
  EXPECT_TRUE(idle.parsed["job"].is_null());

  // A run that finished cannot be cancelled.
  json one = matrix;
  one["batch_sizes"] = json::array({1});
  one["modes"] = json::array({"eager"});
  Call small = call(verb::post, "/api/v1/runs", one, op);
  ASSERT_EQ(small.status, 201u);
  Call leased4 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased4.parsed["job"].is_object()) << leased4.body;
  json error_result = {{"status", "error"}, {"error", "boom"}};
  EXPECT_EQ(
      call(verb::post, "/api/v1/jobs/" + std::to_string(leased4.parsed["job"]["id"].get<std::int64_t>()) + "/result",
           json{{"lease_id", leased4.parsed["job"]["lease_id"]}, {"attempt", 1}, {"result", error_result}}, token)
          .status,
      201u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs/" + std::to_string(small.parsed["id"].get<std::int64_t>()) + "/cancel",
                 std::nullopt, op)
                .status,
            409u);

  // With public_reads off, reads need the operator token.
  config_.public_reads = false;
  EXPECT_EQ(call(verb::get, "/api/v1/runs").status, 401u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs", std::nullopt, op).status, 200u);
  for (const std::string& target :
       std::vector<std::string>{run, run + "/results", run + "/report", "/api/v1/results/1"}) {
    EXPECT_EQ(call(verb::get, target).status, 401u) << target;
  }
  for (const char* target : {"/api/v1/models", "/api/v1/agents", "/metrics"}) {
    EXPECT_EQ(call(verb::get, target).status, 401u) << target;
  }
  EXPECT_EQ(call(verb::get, "/healthz").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/openapi.json").status, 200u);

  // Every route answered at least once.
  for (const auto& r : router_.routes()) {
    EXPECT_TRUE(std::any_of(exercised_.begin(), exercised_.end(),
                            [&](const std::string& e) { return e.rfind(r.name + " ", 0) == 0; }))
        << r.name << " was never called";
  }
}

TEST_F(OpenApiRoutes, ServedDocumentIsTheEmbeddedOne) {
  http::Request req{bhttp::verb::get, "/api/v1/openapi.json", 11};
  std::optional<http::Response> res;
  asio::io_context io;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { res = co_await router_.dispatch(req); },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200u);
  EXPECT_EQ(json::parse(res->body()), document());
}

}  // namespace
}  // namespace benchfleet
