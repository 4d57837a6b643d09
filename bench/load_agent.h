// Simulated agents for the coordinator load benchmark: N agents, each one Boost.Asio C++20
// coroutine with its own keep-alive connection, enrol with one "a100" slot and then loop
// lease -> result for a fixed wall-clock window, while the driver keeps about `queued_jobs`
// jobs queued. A few client threads drive them all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "common/result.h"

namespace benchfleet::bench {

struct PhaseConfig {
  boost::asio::ip::tcp::endpoint endpoint;  // the coordinator
  std::string operator_token;
  std::string enrollment_token;
  int agents = 10;
  double seconds = 8;
  int client_threads = 1;
  // Jobs queued before the window opens, and kept queued through it: whenever the queue falls
  // below 90% of this (or the agents find it empty), a run brings it back up.
  std::int64_t queued_jobs = 1000;
  // Queued before those, never run: jobs of a build no agent offers (a backlog for a build the
  // fleet does not have now), ahead of the rest in submission order. Not counted in queued_jobs.
  std::int64_t foreign_jobs = 0;
  // Results per second of the whole fleet; 0: every agent posts its result at once and leases
  // again (the throughput test). When > 0 each job "runs" for a uniformly drawn 0.5-1.5 times
  // agents / rate seconds while the agent heartbeats every `heartbeat_s` and long-polls
  // (wait_s 30) for its next lease, as a real fleet does; each agent first waits up to one job
  // length, so the fleet does not start in step.
  double rate = 0;
  double heartbeat_s = 15;
  std::vector<std::string> models;  // catalog ids used in the submitted matrices
  std::string tag;                  // makes agent and run names unique per phase
};

struct PhaseResult {
  std::int64_t cycles = 0;  // lease -> result cycles whose result was stored inside the window
  double window_s = 0;
  std::vector<double> lease_ms;            // lease requests started in the window that granted a job
  std::vector<double> result_ms;           // stored results of jobs leased in the window
  std::vector<double> heartbeat_ms;        // heartbeats started in the window (paced phases)
  std::int64_t errors = 0;                 // transport errors and unexpected HTTP statuses
  std::vector<std::string> error_samples;  // the first few, verbatim
  std::int64_t empty_leases = 0;           // lease answers without a job (the queue ran dry)
  std::int64_t preloaded_jobs = 0;         // queued before the window opened
  std::int64_t jobs_submitted = 0;         // including refills
  int runs_submitted = 0;
  int refills = 0;  // runs submitted inside the window because the queue ran low
  // Queued jobs (submitted - granted) sampled every 10 ms through the window.
  std::int64_t queued_min = 0, queued_max = 0;
  double queued_mean = 0;
  // The coordinator's store operations and commits (group commit: fsyncs) from the window's
  // start until its last request ended.
  std::int64_t store_operations = 0, store_commits = 0;
  double preload_s = 0;
  double enrol_s = 0;
};

// Submits `queued_jobs` jobs (runs of at most 90,000, below the coordinator's default
// max_cells), enrols the agents, opens the window and measures. Returns an
// Error only when the phase could not start (submission or enrolment failed); errors inside
// the window are counted in the result.
Result<PhaseResult> run_phase(const PhaseConfig& config);

}  // namespace benchfleet::bench
