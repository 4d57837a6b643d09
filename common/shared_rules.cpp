#include "common/shared_rules.h"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/embedded_file.h"

namespace benchfleet {

// Generated from common/rules/*.json (common/CMakeLists.txt).
std::vector<EmbeddedFile> embedded_rules();

namespace {

std::map<std::string, nlohmann::json, std::less<>> parse_rules() {
  std::map<std::string, nlohmann::json, std::less<>> rules;
  for (const auto& file : embedded_rules()) rules[file.name] = nlohmann::json::parse(file.content);
  return rules;
}

}  // namespace

const nlohmann::json& shared_rule(std::string_view name) {
  static const auto rules = parse_rules();
  const auto it = rules.find(name);
  if (it == rules.end()) throw std::logic_error("common/rules/" + std::string(name) + " is not embedded");
  return it->second;
}

std::size_t max_iterations() {
  static const auto value = shared_rule("measurement_limits.json").at("max_iterations").get<std::size_t>();
  return value;
}

const MemoryCgroupProtocol& memory_cgroup_protocol() {
  static const MemoryCgroupProtocol value = [] {
    const nlohmann::json& rule = shared_rule("memory_cgroup.json");
    return MemoryCgroupProtocol{rule.at("environment").get<std::string>(), rule.at("request_file").get<std::string>(),
                                rule.at("answer_file").get<std::string>(), rule.at("phase_file").get<std::string>(),
                                rule.at("answer_timeout_s").get<int>()};
  }();
  return value;
}

const Statuses& statuses() {
  static const Statuses value = [] {
    const nlohmann::json& rule = shared_rule("statuses.json");
    Statuses s;
    s.results = rule.at("results").get<std::vector<std::string>>();
    s.problems = rule.at("problems").get<std::vector<std::string>>();
    s.active_jobs = rule.at("jobs").at("active").get<std::vector<std::string>>();
    s.ended_jobs = rule.at("jobs").at("ended").get<std::vector<std::string>>();
    s.cell_precedence = rule.at("cell_precedence").get<std::vector<std::string>>();
    for (const auto& [status, text] : rule.at("cell_text").items()) s.cell_text[status] = text.get<std::string>();
    return s;
  }();
  return value;
}

const std::vector<std::string>& speed_keys() {
  static const auto value = shared_rule("speed_fingerprint.json").at("keys").get<std::vector<std::string>>();
  return value;
}

}  // namespace benchfleet
