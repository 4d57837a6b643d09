#include "common/codecs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/shared_rules.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxNameBytes = 200;
constexpr std::size_t kMaxAxisValues = 1000;
constexpr std::size_t kMaxAgentBuilds = 64;

template <class E>
std::string allowed_names(const std::vector<E>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ", ";
    out += to_string(v);
  }
  return out;
}

template <class E, class Parse>
std::optional<Error> decode_enum(const json& j, const std::string& path, E& out, Parse parse,
                                 const std::string& allowed) {
  if (!j.is_string()) return Error::invalid(path, std::string("must be a string, got ") + j.type_name());
  auto parsed = parse(j.get_ref<const std::string&>());
  if (!parsed) {
    return Error::invalid(path, "unknown value \"" + j.get<std::string>() + "\" (allowed: " + allowed + ")");
  }
  out = *parsed;
  return std::nullopt;
}

// Reports the first duplicate in an axis: "gpus[3]: duplicate value \"a100\"".
template <class T>
void check_axis(JsonReader& r, std::string_view key, const std::vector<T>& values) {
  r.check(!values.empty(), key, "must not be empty");
  r.check(values.size() <= kMaxAxisValues, key, "has more than 1000 values");
  for (std::size_t i = 0; i < values.size() && !r.failed(); ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (values[k] == values[i]) {
        std::string message = "duplicate value ";
        if constexpr (std::is_same_v<T, int>) {
          message += std::to_string(values[i]);
        } else {
          message += '"';
          if constexpr (std::is_same_v<T, std::string>) {
            message += values[i];
          } else {
            message += to_string(values[i]);
          }
          message += '"';
        }
        r.check(false, std::string(key) + "[" + std::to_string(i) + "]", std::move(message));
        break;
      }
    }
  }
}

// A list of distinct values, at most `max` long: "modes[2]: duplicate value \"eager\"".
template <class T, class Name>
void check_distinct(JsonReader& r, std::string_view key, const std::vector<T>& values, std::size_t max, Name name_of) {
  r.check(values.size() <= max, key, "must list at most " + std::to_string(max));
  std::set<std::string> seen;
  for (std::size_t i = 0; i < values.size() && !r.failed(); ++i) {
    const std::string name = name_of(values[i]);
    r.check(seen.insert(name).second, std::string(key) + "[" + std::to_string(i) + "]",
            "duplicate value \"" + name + "\"");
  }
}

void check_identifiers(JsonReader& r, std::string_view key, const std::vector<std::string>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    r.check(is_valid_identifier(values[i]), std::string(key) + "[" + std::to_string(i) + "]",
            "\"" + values[i] + "\" is not a valid name (lowercase letters, digits, '.', '_', '-'; at most 64)");
  }
}

template <class T>
void put_optional(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

}  // namespace

bool is_valid_identifier(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!ok_first(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return ok_first(c) || c == '.' || c == '_' || c == '-'; });
}

// ---- enums --------------------------------------------------------------------------------------

std::optional<Error> decode_value(const json& j, const std::string& path, Mode& out) {
  return decode_enum(j, path, out, parse_mode, allowed_names(all_modes()));
}
std::optional<Error> decode_value(const json& j, const std::string& path, Runtime& out) {
  return decode_enum(j, path, out, parse_runtime, allowed_names(all_runtimes()));
}
std::optional<Error> decode_value(const json& j, const std::string& path, ResultStatus& out) {
  return decode_enum(j, path, out, parse_result_status, allowed_names(all_result_statuses()));
}
std::optional<Error> decode_value(const json& j, const std::string& path, JobStatus& out) {
  return decode_enum(j, path, out, parse_job_status, allowed_names(all_job_statuses()));
}
std::optional<Error> decode_value(const json& j, const std::string& path, OomPhase& out) {
  return decode_enum(j, path, out, parse_oom_phase, "load, compile, warmup, measure");
}
std::optional<Error> decode_value(const json& j, const std::string& path, StopReason& out) {
  return decode_enum(j, path, out, parse_stop_reason, "fixed_count, ci_target, max_iterations, max_time");
}

std::optional<Error> decode_value(const json& j, const std::string& path, Dtype& out) {
  return decode_enum(j, path, out, parse_dtype, allowed_names(all_dtypes()));
}
std::optional<Error> decode_value(const json& j, const std::string& path, AccuracyVerdict& out) {
  return decode_enum(j, path, out, parse_accuracy_verdict, allowed_names(all_accuracy_verdicts()));
}

void to_json(json& j, JobStatus v) { j = std::string(to_string(v)); }
void to_json(json& j, Dtype v) { j = std::string(to_string(v)); }
void to_json(json& j, AccuracyVerdict v) { j = std::string(to_string(v)); }
void to_json(json& j, ResultStatus v) { j = std::string(to_string(v)); }
void to_json(json& j, Mode v) { j = std::string(to_string(v)); }
void to_json(json& j, Runtime v) { j = std::string(to_string(v)); }
void to_json(json& j, OomPhase v) { j = std::string(to_string(v)); }
void to_json(json& j, StopReason v) { j = std::string(to_string(v)); }

// ---- matrix -------------------------------------------------------------------------------------

std::optional<Error> decode_value(const json& j, const std::string& path, MeasurementSpec& out) {
  JsonReader r(j, path);
  r.optional("warmup", out.warmup);
  r.optional("min_iterations", out.min_iterations);
  r.optional("max_iterations", out.max_iterations);
  r.optional("min_duration_s", out.min_duration_s);
  r.optional("max_duration_s", out.max_duration_s);
  r.optional("target_ci_rel_width", out.target_ci_rel_width);
  r.check(out.warmup >= 0 && out.warmup <= 100000, "warmup", "must be between 0 and 100000");
  const auto most = static_cast<std::int64_t>(max_iterations());
  r.check(out.min_iterations >= 1 && out.min_iterations <= most, "min_iterations",
          "must be between 1 and " + std::to_string(most));
  r.check(out.max_iterations >= out.min_iterations && out.max_iterations <= most, "max_iterations",
          "must be between min_iterations and " + std::to_string(most));
  r.check(out.min_duration_s >= 0 && out.min_duration_s <= 86400, "min_duration_s", "must be between 0 and 86400");
  r.check(out.max_duration_s > 0 && out.max_duration_s <= 86400 && out.max_duration_s >= out.min_duration_s,
          "max_duration_s", "must be > 0, >= min_duration_s and <= 86400");
  r.check(out.target_ci_rel_width > 0 && out.target_ci_rel_width < 1, "target_ci_rel_width", "must be > 0 and < 1");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const MeasurementSpec& v) {
  j = {{"warmup", v.warmup},
       {"min_iterations", v.min_iterations},
       {"max_iterations", v.max_iterations},
       {"min_duration_s", v.min_duration_s},
       {"max_duration_s", v.max_duration_s},
       {"target_ci_rel_width", v.target_ci_rel_width}};
}

std::optional<Error> decode_value(const json& j, const std::string& path, NoiseSpec& out) {
  JsonReader r(j, path);
  r.optional("max_cv", out.max_cv);
  r.optional("max_clock_drop", out.max_clock_drop);
  r.check(out.max_cv > 0 && out.max_cv <= 10, "max_cv", "must be > 0 and <= 10");
  r.check(out.max_clock_drop > 0 && out.max_clock_drop < 1, "max_clock_drop", "must be > 0 and < 1");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const NoiseSpec& v) { j = {{"max_cv", v.max_cv}, {"max_clock_drop", v.max_clock_drop}}; }

std::optional<Error> decode_value(const json& j, const std::string& path, MatrixSpec& out) {
  JsonReader r(j, path);
  r.required("name", out.name);
  r.required("models", out.models);
  r.required("batch_sizes", out.batch_sizes);
  r.required("modes", out.modes);
  r.required("torch_builds", out.torch_builds);
  r.required("gpus", out.gpus);
  r.optional("runtimes", out.runtimes);
  r.optional("dtypes", out.dtypes);
  r.optional("dynamic", out.dynamic);
  r.optional("shape_walk", out.shape_walk);
  r.optional("noise", out.noise);
  r.optional("repetitions", out.repetitions);
  r.optional("measurement", out.measurement);
  r.optional("memory_limit_mb", out.memory_limit_mb);
  r.optional("timeout_s", out.timeout_s);
  r.optional("priority", out.priority);

  const auto name_problem = display_name_problem(out.name, kMaxNameBytes);
  r.check(!name_problem, "name", name_problem.value_or(""));
  check_axis(r, "models", out.models);
  check_axis(r, "batch_sizes", out.batch_sizes);
  for (std::size_t i = 0; i < out.batch_sizes.size(); ++i) {
    r.check(out.batch_sizes[i] > 0 && out.batch_sizes[i] <= 65536, "batch_sizes[" + std::to_string(i) + "]",
            "must be between 1 and 65536");
  }
  check_axis(r, "modes", out.modes);
  check_axis(r, "torch_builds", out.torch_builds);
  check_identifiers(r, "torch_builds", out.torch_builds);
  check_axis(r, "gpus", out.gpus);
  check_identifiers(r, "gpus", out.gpus);
  check_axis(r, "runtimes", out.runtimes);
  check_axis(r, "dtypes", out.dtypes);
  r.check(out.repetitions >= 1 && out.repetitions <= 100, "repetitions", "must be between 1 and 100");
  r.check(!out.memory_limit_mb || (*out.memory_limit_mb > 0 && *out.memory_limit_mb <= (std::int64_t{1} << 24)),
          "memory_limit_mb", "must be null or between 1 and 16777216 (16 TiB)");
  r.check(out.timeout_s >= 1 && out.timeout_s <= 7 * 86400, "timeout_s", "must be between 1 and 604800");
  r.check(out.priority >= -1000 && out.priority <= 1000, "priority", "must be between -1000 and 1000");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const MatrixSpec& v) {
  j = {{"name", v.name},
       {"models", v.models},
       {"batch_sizes", v.batch_sizes},
       {"modes", v.modes},
       {"torch_builds", v.torch_builds},
       {"gpus", v.gpus},
       {"runtimes", v.runtimes},
       {"dtypes", v.dtypes},
       {"dynamic", v.dynamic},
       {"shape_walk", v.shape_walk},
       {"noise", v.noise},
       {"repetitions", v.repetitions},
       {"measurement", v.measurement},
       {"memory_limit_mb", v.memory_limit_mb ? json(*v.memory_limit_mb) : json(nullptr)},
       {"timeout_s", v.timeout_s},
       {"priority", v.priority}};
}

std::optional<Error> decode_value(const json& j, const std::string& path, JobSpec& out) {
  JsonReader r(j, path);
  r.required("model", out.model);
  r.required("batch", out.batch);
  r.required("mode", out.mode);
  r.required("torch_build", out.torch_build);
  r.required("gpu", out.gpu);
  r.required("runtime", out.runtime);
  r.optional("dtype", out.dtype);
  r.optional("repetition", out.repetition);
  r.check(out.batch > 0, "batch", "must be > 0");
  r.check(out.repetition >= 0, "repetition", "must be >= 0");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const JobSpec& v) {
  j = {{"model", v.model}, {"batch", v.batch},     {"mode", v.mode},   {"torch_build", v.torch_build},
       {"gpu", v.gpu},     {"runtime", v.runtime}, {"dtype", v.dtype}, {"repetition", v.repetition}};
}

// ---- agents -------------------------------------------------------------------------------------

std::optional<Error> decode_value(const json& j, const std::string& path, GpuInfo& out) {
  JsonReader r(j, path);
  r.required("index", out.index);
  r.required("uuid", out.uuid);
  r.required("name", out.name);
  r.optional("memory_mb", out.memory_mb);
  r.optional("compute_capability", out.compute_capability);
  r.optional("driver", out.driver);
  r.check(out.index >= 0, "index", "must be >= 0");
  r.check(!out.uuid.empty() && out.uuid.size() <= 128, "uuid", "must be 1 to 128 characters");
  r.check(out.name.size() <= kMaxNameBytes, "name", "must be at most 200 characters");
  r.check(out.memory_mb >= 0, "memory_mb", "must be >= 0");
  r.check(out.compute_capability.size() <= 32, "compute_capability", "must be at most 32 characters");
  r.check(out.driver.size() <= kMaxNameBytes, "driver", "must be at most 200 characters");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const GpuInfo& v) {
  j = {{"index", v.index},
       {"uuid", v.uuid},
       {"name", v.name},
       {"memory_mb", v.memory_mb},
       {"compute_capability", v.compute_capability},
       {"driver", v.driver}};
}

std::optional<Error> decode_value(const json& j, const std::string& path, SlotDescriptor& out) {
  JsonReader r(j, path);
  r.required("id", out.id);
  r.required("gpu_class", out.gpu_class);
  r.optional("gpu", out.gpu);
  r.optional("memory_limit_mb", out.memory_limit_mb);
  r.check(is_valid_identifier(out.id), "id", "is not a valid slot id");
  r.check(is_valid_identifier(out.gpu_class), "gpu_class", "is not a valid GPU class");
  r.check(!out.memory_limit_mb || *out.memory_limit_mb > 0, "memory_limit_mb", "must be null or > 0");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const SlotDescriptor& v) {
  j = {{"id", v.id},
       {"gpu_class", v.gpu_class},
       {"gpu", v.gpu ? json(*v.gpu) : json(nullptr)},
       {"memory_limit_mb", v.memory_limit_mb ? json(*v.memory_limit_mb) : json(nullptr)}};
}

std::optional<Error> decode_value(const json& j, const std::string& path, RuntimeSupport& out) {
  JsonReader r(j, path);
  r.required("runtime", out.runtime);
  r.required("modes", out.modes);
  check_distinct(r, "modes", out.modes, all_modes().size(), [](Mode m) { return std::string(to_string(m)); });
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const RuntimeSupport& v) { j = {{"runtime", v.runtime}, {"modes", v.modes}}; }

std::optional<Error> decode_value(const json& j, const std::string& path, TorchBuildDescriptor& out) {
  JsonReader r(j, path);
  r.required("name", out.name);
  r.optional("version", out.version);
  r.required("runtimes", out.runtimes);
  r.check(is_valid_identifier(out.name), "name", "is not a valid build name");
  r.check(out.version.size() <= kMaxNameBytes, "version", "must be at most 200 characters");
  check_distinct(r, "runtimes", out.runtimes, all_runtimes().size(),
                 [](const RuntimeSupport& rt) { return std::string(to_string(rt.runtime)); });
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const TorchBuildDescriptor& v) {
  j = {{"name", v.name}, {"version", v.version}, {"runtimes", v.runtimes}};
}

std::optional<Error> decode_value(const json& j, const std::string& path, AgentDescriptor& out) {
  JsonReader r(j, path);
  r.required("name", out.name);
  r.optional("hostname", out.hostname);
  r.optional("version", out.version);
  r.required("slots", out.slots);
  r.required("torch_builds", out.torch_builds);
  r.check(!out.name.empty() && out.name.size() <= kMaxNameBytes, "name", "must be 1 to 200 characters");
  r.check(!out.slots.empty() && out.slots.size() <= 64, "slots", "must list 1 to 64 slots");
  r.check(out.hostname.size() <= kMaxNameBytes, "hostname", "must be at most 200 characters");
  r.check(out.version.size() <= kMaxNameBytes, "version", "must be at most 200 characters");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < out.slots.size(); ++i) {
    r.check(ids.insert(out.slots[i].id).second, "slots[" + std::to_string(i) + "].id", "duplicate slot id");
  }
  check_distinct(r, "torch_builds", out.torch_builds, kMaxAgentBuilds,
                 [](const TorchBuildDescriptor& b) { return b.name; });
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const AgentDescriptor& v) {
  j = {{"name", v.name},
       {"hostname", v.hostname},
       {"version", v.version},
       {"slots", v.slots},
       {"torch_builds", v.torch_builds}};
}

}  // namespace benchfleet
