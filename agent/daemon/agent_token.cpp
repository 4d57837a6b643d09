#include "agent/daemon/agent_token.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
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

std::optional<std::pair<std::int64_t, std::string>> load_agent_token(const std::string& path,
                                                                     const std::string& coordinator,
                                                                     const AgentDescriptor& descriptor) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  auto j = nlohmann::json::parse(s.str(), nullptr, false);
  if (!j.is_object() || j.value("coordinator", "") != coordinator) return std::nullopt;
  if (j.value("descriptor", nlohmann::json()) != nlohmann::json(descriptor))
    return std::nullopt;  // re-enrol on changes
  return std::pair{j.value("agent_id", std::int64_t{0}), j.value("token", "")};
}

}  // namespace benchfleet::agent
