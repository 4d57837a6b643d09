#include "agent/daemon/agent_token.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/codecs.h"

namespace benchfleet::agent {

void save_agent_token(const std::string& path, const std::string& coordinator, const EnrollResponse& enrolled,
                      const AgentDescriptor& descriptor) {
  const nlohmann::json saved = {{"coordinator", coordinator},
                                {"agent_id", enrolled.agent_id},
                                {"token", enrolled.agent_token},
                                {"descriptor", descriptor}};
  const std::string tmp = path + ".tmp";
  const mode_t old = umask(077);
  std::ofstream(tmp) << saved.dump();
  umask(old);
  std::rename(tmp.c_str(), path.c_str());
}

namespace {

// The saved credentials when they were issued by `coordinator`; a discarded json otherwise.
nlohmann::json read_saved(const std::string& path, const std::string& coordinator) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::value_t::discarded;
  std::stringstream s;
  s << in.rdbuf();
  auto j = nlohmann::json::parse(s.str(), nullptr, false);
  if (!j.is_object() || !j.contains("token") || !j["token"].is_string() || j.value("coordinator", "") != coordinator) {
    return nlohmann::json::value_t::discarded;
  }
  return j;
}

}  // namespace

std::string held_agent_token(const std::string& path, const std::string& coordinator) {
  const nlohmann::json j = read_saved(path, coordinator);
  return j.is_discarded() ? std::string() : j["token"].get<std::string>();
}

std::optional<std::pair<std::int64_t, std::string>> load_agent_token(const std::string& path,
                                                                     const std::string& coordinator,
                                                                     const AgentDescriptor& descriptor) {
  const nlohmann::json j = read_saved(path, coordinator);
  if (j.is_discarded()) return std::nullopt;
  if (j.value("descriptor", nlohmann::json()) != nlohmann::json(descriptor))
    return std::nullopt;  // re-enrol on changes
  return std::pair{j.value("agent_id", std::int64_t{0}), j.value("token", "")};
}

std::string agent_key(const std::string& path) {
  std::string key;
  if (std::ifstream in(path); in && std::getline(in, key) && key.size() >= 16) return key;
  std::random_device random;
  char hex[33];
  for (std::size_t i = 0; i < 4; ++i) std::snprintf(hex + (i * 8), 9, "%08x", random());
  key.assign(hex, 32);
  const std::string tmp = path + ".tmp";
  const mode_t old = umask(077);
  std::ofstream(tmp) << key << "\n";
  umask(old);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return "";
  std::string written;
  if (std::ifstream in(path); in && std::getline(in, written) && written == key) return key;
  return "";
}

}  // namespace benchfleet::agent
