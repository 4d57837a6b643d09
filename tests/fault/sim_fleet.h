// Simulated agents that outlive their coordinator (fault class R2): N agents, each a
// Boost.Asio coroutine with one keep-alive connection (tests/support/sim_http.h), one "a100"
// slot, speaking the real agent protocol the way agent/daemon does:
//   - enrol, retried with the daemon's backoff (exponential from 250 ms to 30 s, full jitter);
//   - long-poll a lease with a request id kept until an answer was read, so a poll retried after
//     a lost answer gets the same lease back; a transport error or 5xx backs off and retries;
//   - "run" the job for a random while, then post its result until the coordinator acknowledges
//     it (2xx) or refuses it (409/404), backing off on transport errors and 5xx (the post is
//     idempotent on job + attempt, docs/design.md §7);
//   - on 401 enrol again; a lease granted while draining is given back.
// Every acknowledged result goes into a ledger; every 2xx answer can be watched for, to time how
// long agents take to be served again after a coordinator restart.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "common/result.h"

namespace benchfleet::testing {

struct FleetOptions {
  boost::asio::ip::tcp::endpoint endpoint;  // the coordinator (the same across its restarts)
  std::string enrollment_token;
  int agents = 100;
  // How long a simulated job runs, drawn uniformly per job.
  std::chrono::milliseconds work_min{20};
  std::chrono::milliseconds work_max{200};
  std::string tag = "fault";  // agent names are "sim-<tag>-<index>"
};

// One result the coordinator acknowledged with a 2xx answer.
struct Acknowledged {
  std::int64_t job_id = 0;
  int attempt = 0;
  std::int64_t result_id = 0;  // as the acknowledgement named it (0 when it named none)
  std::string identity;        // the posted result's environment.fault_result, unique per job + attempt
  bool repeat = false;         // acknowledged as an identical repeat (200): a retry after a lost answer
};

struct FleetCounters {
  std::int64_t leases_granted = 0;  // lease answers carrying a job (hand-overs of the same lease included)
  std::int64_t acknowledged = 0;
  std::int64_t acknowledged_repeats = 0;
  std::int64_t refused = 0;           // result posts answered 409 or 404: the work was thrown away
  std::int64_t transport_errors = 0;  // requests without an answer (the coordinator down, killed mid-request)
  std::int64_t server_errors = 0;     // 5xx answers
  std::int64_t unexpected = 0;        // other answers the protocol does not expect (401 included)
  std::int64_t released = 0;          // leases given back because the fleet was draining
  std::vector<std::string> samples;   // the first few refusals and unexpected answers, verbatim
};

// Thread-safe: the agents run on a client thread of their own; the methods may be called from
// any one other thread. The destructor stops the agents wherever they are and joins the thread.
class SimFleet {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SimFleet(FleetOptions options);
  ~SimFleet();
  SimFleet(const SimFleet&) = delete;
  SimFleet& operator=(const SimFleet&) = delete;

  // Starts the agents and waits up to `limit` until all of them enrolled; an Error naming the
  // last failure otherwise. Enrolled agents start leasing at once. REQUIRES: called once.
  Status start(std::chrono::milliseconds limit);

  // From now on, records each agent's first 2xx answer read at or after `since` (forgetting
  // what an earlier watch recorded).
  void watch_answers(Clock::time_point since);
  // Per agent: when its first 2xx answer since the last watch_answers() was read, or nullopt.
  std::vector<std::optional<Clock::time_point>> first_answers() const;

  // Stops leasing: each agent finishes the job it runs, posts its result until acknowledged or
  // refused, and ends. True when all ended within `limit` (the rest keep retrying until
  // destruction).
  bool drain(std::chrono::milliseconds limit);

  std::vector<Acknowledged> ledger() const;
  FleetCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace benchfleet::testing
