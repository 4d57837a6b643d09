// The agent daemon: prepares the host (orphaned children, directories, GPUs, torch builds),
// then runs the agent's loops (agent_loops.h: one thread per slot, a heartbeat thread and a
// spool replayer) over the real coordinator client, job runner and clock. Drain and abort are
// requested from the signal thread (see main.cpp).
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

  // What a running agent holds (daemon.cpp); named here for the steps of run().
  struct State;

 private:
  // At a clean exit in an allocation: its directory (token, work, spool) goes when the spool
  // is empty; a result still waiting there keeps it for an agent started on it again.
  void remove_allocation_dir();
  std::unique_ptr<State> state_;
};

}  // namespace benchfleet::agent
