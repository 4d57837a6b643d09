#include "tests/unit/openapi_support.h"

#include "common/stats.h"

#include <algorithm>
#include <regex>

#include "coordinator/api/api.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

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

bool has_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return false;
}

}  // namespace

const std::vector<std::string> kMethods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"};

const json& document() {
  static const json doc = json::parse(api::openapi_document());
  return doc;
}

const json& component_schema(const std::string& name) { return document().at("components").at("schemas").at(name); }

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

ObjectView object_view(const json& schema) {
  ObjectView view;
  merge_view(schema, view);
  return view;
}

// ---- SchemaChecker -----------------------------------------------------------------------------

std::vector<std::string> SchemaChecker::check(const json& value, const json& schema) const {
  std::vector<std::string> errors;
  visit(value, schema, "$", /*check_keys=*/true, errors);
  return errors;
}

bool SchemaChecker::matches(const json& value, const json& schema) const {
  std::vector<std::string> errors;
  visit(value, schema, "$", /*check_keys=*/false, errors);
  return errors.empty();
}

void SchemaChecker::visit(const json& v, const json& s, const std::string& path, bool check_keys,
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

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

// ---- fully populated values --------------------------------------------------------------------

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
  m.dtypes = {Dtype::kFloat32, Dtype::kBfloat16};
  m.dynamic = true;
  m.shape_walk = true;
  m.noise = NoiseSpec{0.05, 0.2};
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
  r.stop_reason = StopReason::kMaxTime;
  r.export_s = 4.5;
  r.load_s = 0.25;
  r.oom = OomInfo{OomPhase::kWarmup, 1 << 30};
  r.error = "message";
  r.signal = 11;
  r.memory = MemoryInfo{1, 2, 3, "address-space", 4, std::nullopt};
  r.accuracy = AccuracyInfo{AccuracyVerdict::kWrong, 0.049, 4.3e-7, 1.0129e-4, 0.9988, "output0", "too far"};
  r.environment = {{"torch_version", "2.11.0+cu130"}, {"cuda", 13.0}};
  r.telemetry = {{"sm_clock_mhz", 1410}, {"throttled", false}};
  return r;
}

JobResult posted_result(ResultStatus status) {
  JobResult r = full_result(status);
  if (status != ResultStatus::kOk) {
    r.stats.reset();
    r.samples_ms.clear();
    r.stop_reason.reset();
  } else {
    r.stats = compute_statistics(r.samples_ms);
    r.error.reset();
  }
  if (status != ResultStatus::kOom) r.oom.reset();
  if (status != ResultStatus::kCrash) r.signal.reset();
  if (status != ResultStatus::kOk && status != ResultStatus::kInvalid) r.accuracy.reset();
  return r;
}

}  // namespace benchfleet::testing
