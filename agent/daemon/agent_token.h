// The agent's saved credentials, <state_dir>/agent-token.json (docs/design.md §7): reused while
// the coordinator URL and the agent's descriptor are unchanged, so a restart need not enrol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/agent_protocol.h"
#include "common/types.h"

namespace benchfleet::agent {

// Writes the id and token `enrolled` gave, with the coordinator and descriptor they are for, to
// `path` (mode 0600, through a temporary file and a rename). Best effort: a token that cannot be
// saved only means enrolling again at the next start.
void save_agent_token(const std::string& path, const std::string& coordinator, const EnrollResponse& enrolled,
                      const AgentDescriptor& descriptor);

// The saved agent id and token when `path` holds credentials issued by `coordinator` for this
// same `descriptor`; nullopt otherwise (none saved, unreadable, or something changed).
std::optional<std::pair<std::int64_t, std::string>> load_agent_token(const std::string& path,
                                                                     const std::string& coordinator,
                                                                     const AgentDescriptor& descriptor);

// The saved token when `path` holds one issued by `coordinator`, whatever descriptor it was for
// ("" otherwise): the proof that lets the agent enrol under its name again (kAgentTokenHeader).
std::string held_agent_token(const std::string& path, const std::string& coordinator);

// The agent's key in `path` (<state_dir>/agent-key), made there first (32 random hex characters,
// mode 0600) when there is none; "" when it can be neither read nor made (the agent then enrols
// without one, and enrolling again under its name needs its token or an operator's approval).
std::string agent_key(const std::string& path);

}  // namespace benchfleet::agent
