// One table of options drives a program's YAML config keys, flags, environment variables and
// --help: key `lease_ttl_s` is flag `--lease-ttl-s` and variable `BENCHFLEET_LEASE_TTL_S`.
// Precedence: defaults < YAML file < environment < flags.
#pragma once

#include <yaml-cpp/yaml.h>
#include <CLI/CLI.hpp>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet::config {

struct Option {
  std::string key;
  std::string help;
  std::function<void(CLI::App&, const std::string& flag, const std::string& env, const std::string& help)> add;
  std::function<Status(const YAML::Node&, const std::string& origin)> from_yaml;
};

// An option bound to `field` (which keeps its value as the default). T: string, bool, ints,
// doubles, or vectors of those (YAML sequence; comma-separated on the command line).
template <class T>
Option option(const std::string& key, T& field, std::string help) {
  Option o;
  o.key = key;
  o.help = std::move(help);
  o.add = [&field](CLI::App& app, const std::string& flag, const std::string& env, const std::string& h) {
    auto* opt = app.add_option(flag, field, h)->envname(env)->capture_default_str();
    if constexpr (requires { field.push_back(field.front()); }) opt->delimiter(',');
  };
  o.from_yaml = [&field, key](const YAML::Node& node, const std::string& origin) -> Status {
    try {
      field = node.as<T>();
    } catch (const YAML::Exception&) {
      return Error::invalid(key, origin + ": wrong type for " + key);
    }
    return Status::Ok();
  };
  return o;
}

std::string flag_of(const std::string& key);  // "lease_ttl_s" -> "--lease-ttl-s"
std::string env_of(const std::string& key);   // "lease_ttl_s" -> "BENCHFLEET_LEASE_TTL_S"

// The --config/-c path from argv, else from the variable `env_var`; empty when neither.
std::string config_path(int argc, char** argv, const char* env_var = "BENCHFLEET_CONFIG");

// Parses YAML text that must be a mapping (or empty).
Result<YAML::Node> parse_yaml_mapping(std::string_view text, std::string_view origin);
Result<YAML::Node> load_yaml_mapping_file(const std::string& path);

// Applies the mapping's keys to `options`; keys in `handled_elsewhere` are skipped (the caller
// reads them), any other unknown key is an error naming it.
Status apply_yaml(const YAML::Node& root, std::string_view origin, const std::vector<Option>& options,
                  const std::set<std::string>& handled_elsewhere = {});

// Registers every option on `app` (plus -c/--config).
void add_options(CLI::App& app, const std::vector<Option>& options, std::string& config_file);

}  // namespace benchfleet::config
