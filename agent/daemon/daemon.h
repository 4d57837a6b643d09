// The agent daemon: one thread per slot (lease -> run -> spool -> upload), a heartbeat thread
// and a spool replayer, sharing credentials that are re-enrolled when the coordinator rejects
// them. Drain and abort are requested from the signal thread (see main.cpp).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "agent/daemon/agent_config.h"

namespace benchfleet::agent {

class Daemon {
 public:
  // `executable` is the agent binary's path (to find the worker and exporter beside it).
  Daemon(AgentConfig config, std::string executable);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until drained or aborted; returns the process exit code.
  int run();
  // First request: finish running jobs, lease nothing new, exit. Second: abort. Thread-safe.
  void request_stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace benchfleet::agent
