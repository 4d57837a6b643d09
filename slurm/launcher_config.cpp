#include "slurm/launcher_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include "common/codecs.h"
#include "common/config_options.h"

namespace benchfleet::slurm {
namespace {

constexpr std::array kTopKeys{"coordinator", "api_token_file", "poll_s", "max_submissions_per_minute",
                              "state_dir",   "sbatch",         "squeue", "sacct",
                              "scontrol",    "classes"};
constexpr std::array kClassKeys{"gpu_class",       "builds",   "partition",   "gres",          "constraint",
                                "account",         "qos",      "time_limit",  "cpus_per_task", "mem",
                                "max_allocations", "signal_s", "idle_exit_s", "agent_command", "job_name",
                                "sbatch_options"};

template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, int>) return "an integer";
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  return "a list of strings";
}

// Reads map[key] into `out` when present and not null; an error naming prefix + key otherwise.
template <class T>
Status read(const YAML::Node& map, const std::string& prefix, const char* key, T& out) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return Status::Ok();
  if constexpr (std::is_same_v<T, std::string>) {
    if (!node.IsScalar()) return Error::invalid(prefix + key, std::string("must be ") + type_name<T>());
  }
  if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!node.IsSequence()) return Error::invalid(prefix + key, std::string("must be ") + type_name<T>());
    for (const auto& item : node) {
      if (!item.IsScalar()) return Error::invalid(prefix + key, "must be a list of strings");
    }
  }
  try {
    out = node.as<T>();
  } catch (const YAML::Exception&) {
    return Error::invalid(prefix + key, std::string("must be ") + type_name<T>());
  }
  return Status::Ok();
}

template <std::size_t N>
Status check_keys(const YAML::Node& map, const std::string& prefix, const std::array<const char*, N>& known) {
  for (const auto& kv : map) {
    const auto key = kv.first.as<std::string>();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      return Error::invalid(prefix + key, "unknown key");
    }
  }
  return Status::Ok();
}

Result<ClassConfig> read_class(const YAML::Node& node, const std::string& prefix) {
  if (!node.IsMap()) return Error::invalid(prefix.substr(0, prefix.size() - 1), "must be a mapping of key: value");
  BF_RETURN_IF_ERROR(check_keys(node, prefix, kClassKeys));
  ClassConfig c;
  BF_RETURN_IF_ERROR(read(node, prefix, "gpu_class", c.gpu_class));
  BF_RETURN_IF_ERROR(read(node, prefix, "builds", c.builds));
  BF_RETURN_IF_ERROR(read(node, prefix, "partition", c.partition));
  BF_RETURN_IF_ERROR(read(node, prefix, "gres", c.gres));
  BF_RETURN_IF_ERROR(read(node, prefix, "constraint", c.constraint));
  BF_RETURN_IF_ERROR(read(node, prefix, "account", c.account));
  BF_RETURN_IF_ERROR(read(node, prefix, "qos", c.qos));
  BF_RETURN_IF_ERROR(read(node, prefix, "time_limit", c.time_limit));
  BF_RETURN_IF_ERROR(read(node, prefix, "cpus_per_task", c.cpus_per_task));
  BF_RETURN_IF_ERROR(read(node, prefix, "mem", c.mem));
  BF_RETURN_IF_ERROR(read(node, prefix, "max_allocations", c.max_allocations));
  BF_RETURN_IF_ERROR(read(node, prefix, "signal_s", c.signal_s));
  BF_RETURN_IF_ERROR(read(node, prefix, "idle_exit_s", c.idle_exit_s));
  BF_RETURN_IF_ERROR(read(node, prefix, "agent_command", c.agent_command));
  BF_RETURN_IF_ERROR(read(node, prefix, "job_name", c.job_name));
  BF_RETURN_IF_ERROR(read(node, prefix, "sbatch_options", c.sbatch_options));
  if (c.job_name.empty() && !c.gpu_class.empty()) c.job_name = "benchfleet-" + c.gpu_class;
  return c;
}

bool has_line_break(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }
bool has_space(std::string_view s) { return s.find_first_of(" \t\r\n") != std::string_view::npos; }

// Values that go into one "#SBATCH --opt=VALUE" line: no whitespace (sbatch would split them).
Status check_sbatch_value(const std::string& field, const std::string& value) {
  if (has_space(value)) return Error::invalid(field, "must not contain whitespace, got \"" + value + "\"");
  return Status::Ok();
}

Status validate_class(const ClassConfig& c, const std::string& prefix) {
  if (c.gpu_class.empty()) return Error::invalid(prefix + "gpu_class", "is required");
  if (!is_valid_identifier(c.gpu_class)) {
    return Error::invalid(prefix + "gpu_class",
                          "must be 1-64 of a-z 0-9 . _ - starting with a letter or digit, got \"" + c.gpu_class + "\"");
  }
  for (std::size_t i = 0; i < c.builds.size(); ++i) {
    if (c.builds[i].empty() || has_space(c.builds[i])) {
      return Error::invalid(prefix + "builds[" + std::to_string(i) + "]", "must be a torch build name");
    }
  }
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "partition", c.partition));
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "gres", c.gres));
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "constraint", c.constraint));
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "account", c.account));
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "qos", c.qos));
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "mem", c.mem));
  BF_RETURN_IF_ERROR(check_sbatch_value(prefix + "job_name", c.job_name));
  if (c.job_name.find_first_of(",|'\"") != std::string::npos) {
    return Error::invalid(prefix + "job_name", "must not contain , | or quotes (squeue --name takes a comma list)");
  }
  if (c.time_limit.empty() || !parse_slurm_time_limit(c.time_limit)) {
    return Error::invalid(prefix + "time_limit",
                          "must be a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED), got \"" +
                              c.time_limit + "\"");
  }
  if (c.cpus_per_task < 0) return Error::invalid(prefix + "cpus_per_task", "must be >= 0 (0: not given)");
  if (c.max_allocations < 1) return Error::invalid(prefix + "max_allocations", "must be >= 1");
  if (c.signal_s < 0 || c.signal_s > 65535) return Error::invalid(prefix + "signal_s", "must be 0..65535");
  if (const auto limit = parse_slurm_time_limit(c.time_limit); limit && *limit > 0 && c.signal_s >= *limit) {
    return Error::invalid(prefix + "signal_s",
                          "must be shorter than time_limit (" + c.time_limit +
                              "): the agent drains when the signal comes, so it would run nothing");
  }
  if (c.idle_exit_s < 0) return Error::invalid(prefix + "idle_exit_s", "must be >= 0 (0: never)");
  if (c.agent_command.find_first_not_of(" \t") == std::string::npos) {
    return Error::invalid(prefix + "agent_command", "is required (the agent's command line)");
  }
  if (has_line_break(c.agent_command)) return Error::invalid(prefix + "agent_command", "must be one line");
  for (std::size_t i = 0; i < c.sbatch_options.size(); ++i) {
    const auto& o = c.sbatch_options[i];
    const std::string field = prefix + "sbatch_options[" + std::to_string(i) + "]";
    if (o.rfind('-', 0) != 0)
      return Error::invalid(field, "must be an sbatch option starting with -, got \"" + o + "\"");
    if (has_line_break(o)) return Error::invalid(field, "must be one line");
  }
  return Status::Ok();
}

// Digits only, at least one; std::nullopt otherwise.
std::optional<std::int64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const auto pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

}  // namespace

bool ClassConfig::counts_build(std::string_view torch_build) const {
  return builds.empty() || std::find(builds.begin(), builds.end(), torch_build) != builds.end();
}

const ClassConfig* LauncherConfig::find_class(std::string_view gpu_class) const {
  auto it =
      std::find_if(classes.begin(), classes.end(), [&](const ClassConfig& c) { return c.gpu_class == gpu_class; });
  return it == classes.end() ? nullptr : &*it;
}

std::optional<std::int64_t> parse_slurm_time_limit(std::string_view text) {
  if (text == "UNLIMITED" || text == "INFINITE" || text == "unlimited" || text == "infinite") return 0;
  std::optional<std::int64_t> days = 0;
  std::string_view rest = text;
  const bool has_days = text.find('-') != std::string_view::npos;
  if (has_days) {
    const auto dash = text.find('-');
    days = number(text.substr(0, dash));
    rest = text.substr(dash + 1);
  }
  if (!days) return std::nullopt;
  const auto parts = split(rest, ':');
  if (parts.size() > 3) return std::nullopt;
  std::vector<std::int64_t> v;
  for (auto p : parts) {
    auto n = number(p);
    if (!n) return std::nullopt;
    v.push_back(*n);
  }
  std::int64_t seconds = 0;
  if (has_days) {  // days-hours[:minutes[:seconds]]
    seconds = *days * 86400 + v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
  } else if (v.size() == 1) {  // minutes
    seconds = v[0] * 60;
  } else if (v.size() == 2) {  // minutes:seconds
    seconds = v[0] * 60 + v[1];
  } else {  // hours:minutes:seconds
    seconds = v[0] * 3600 + v[1] * 60 + v[2];
  }
  return seconds;
}

Result<LauncherConfig> parse_launcher_config(std::string_view yaml_text, std::string_view origin) {
  BF_ASSIGN_OR_RETURN(const YAML::Node root, config::parse_yaml_mapping(yaml_text, origin));
  LauncherConfig c;
  if (!root || root.IsNull())
    return Error::invalid("classes", std::string(origin) + ": at least one class is required");
  BF_RETURN_IF_ERROR(check_keys(root, "", kTopKeys));
  BF_RETURN_IF_ERROR(read(root, "", "coordinator", c.coordinator));
  BF_RETURN_IF_ERROR(read(root, "", "api_token_file", c.api_token_file));
  BF_RETURN_IF_ERROR(read(root, "", "poll_s", c.poll_s));
  BF_RETURN_IF_ERROR(read(root, "", "max_submissions_per_minute", c.max_submissions_per_minute));
  BF_RETURN_IF_ERROR(read(root, "", "state_dir", c.state_dir));
  BF_RETURN_IF_ERROR(read(root, "", "sbatch", c.sbatch));
  BF_RETURN_IF_ERROR(read(root, "", "squeue", c.squeue));
  BF_RETURN_IF_ERROR(read(root, "", "sacct", c.sacct));
  BF_RETURN_IF_ERROR(read(root, "", "scontrol", c.scontrol));
  const YAML::Node classes = root["classes"];
  if (classes && !classes.IsNull()) {
    if (!classes.IsSequence()) return Error::invalid("classes", "must be a list of classes");
    for (std::size_t i = 0; i < classes.size(); ++i) {
      BF_ASSIGN_OR_RETURN(auto cls, read_class(classes[i], "classes[" + std::to_string(i) + "]."));
      c.classes.push_back(std::move(cls));
    }
  }
  while (c.coordinator.size() > 7 && c.coordinator.back() == '/') c.coordinator.pop_back();
  if (!c.state_dir.empty()) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(c.state_dir, ec);
    if (ec) return Error::invalid("state_dir", "cannot make " + c.state_dir + " absolute: " + ec.message());
    c.state_dir = absolute.lexically_normal().string();
    while (c.state_dir.size() > 1 && c.state_dir.back() == '/') c.state_dir.pop_back();
  }
  BF_RETURN_IF_ERROR(validate(c));
  return c;
}

Result<LauncherConfig> load_launcher_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::invalid("config", "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_launcher_config(text.str(), path);
}

Status validate(const LauncherConfig& c) {
  if (c.coordinator.rfind("http://", 0) != 0 || c.coordinator.size() <= 7) {
    return Error::invalid("coordinator", "must look like http://HOST:PORT, got \"" + c.coordinator + "\"");
  }
  if (c.poll_s < 1 || c.poll_s > 86400) return Error::invalid("poll_s", "must be 1..86400");
  if (c.max_submissions_per_minute < 1) return Error::invalid("max_submissions_per_minute", "must be >= 1");
  if (c.state_dir.empty()) return Error::invalid("state_dir", "is required");
  BF_RETURN_IF_ERROR(check_sbatch_value("state_dir", c.state_dir));
  for (const auto& [key, value] : {std::pair{"sbatch", &c.sbatch}, std::pair{"squeue", &c.squeue},
                                   std::pair{"sacct", &c.sacct}, std::pair{"scontrol", &c.scontrol}}) {
    if (value->empty()) return Error::invalid(key, "must name the command (a name on PATH or a path)");
  }
  if (c.classes.empty()) return Error::invalid("classes", "at least one class is required");
  std::set<std::string> classes;
  std::set<std::string> names;
  for (std::size_t i = 0; i < c.classes.size(); ++i) {
    const std::string prefix = "classes[" + std::to_string(i) + "].";
    BF_RETURN_IF_ERROR(validate_class(c.classes[i], prefix));
    if (!classes.insert(c.classes[i].gpu_class).second) {
      return Error::invalid(prefix + "gpu_class", "\"" + c.classes[i].gpu_class + "\" is configured twice");
    }
    if (!names.insert(c.classes[i].job_name).second) {
      return Error::invalid(prefix + "job_name", "\"" + c.classes[i].job_name +
                                                     "\" is used by another class (the launcher finds its "
                                                     "allocations by job name)");
    }
  }
  return Status::Ok();
}

}  // namespace benchfleet::slurm
