// Test support for integration tests: the real benchfleet-coordinator binary as a child process
// on loopback, and a small protocol driver that speaks the agent API to it.
//
//   CoordinatorProcess coord({{"--lease-ttl-s", "2"}, {"--heartbeat-interval-s", "1"}});
//   auto run = coord.submit(matrix_json);                   // POST /api/v1/runs as the operator
//   FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
//   auto job = agent.lease_job("gpu0");                     // {} when the answer was {job: null}
//   agent.post_result(job, ok_result(12.5));
//
// Every process runs in its own temporary directory (database, token files, log). The
// destructor always kills the process; the directory is removed unless the current test failed,
// in which case the log tail is printed and the directory kept for inspection. The process is a
// CoordinatorChild (coordinator_child.h), so a crashed test binary leaves no coordinator behind:
// start coordinators from the test's main thread.
//
// Transport failures (connection refused, timeouts) throw std::runtime_error naming the request
// and including the coordinator's log tail; gtest reports them as test failures.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "tests/support/coordinator_child.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing {

class CoordinatorProcess {
 public:
  static constexpr const char* kOperatorToken = "it-operator-token-0123456789";
  static constexpr const char* kEnrollmentToken = "it-enrollment-token-0123456789";

  // `flags` ("--max-cells" -> "10") are added to, or replace, the defaults:
  // --db, both tokens, --long-poll-timeout-s 10, --log-level info. (--listen 127.0.0.1:0 and
  // --port-file are always set; see LaunchOptions.)
  using Flag = std::pair<const std::string, std::string>;
  explicit CoordinatorProcess(std::initializer_list<Flag> flags = {});
  // As above, listening on 127.0.0.1:`port` at every start, so restarts keep the URL (agent
  // daemons are given one URL for their lifetime). free_loopback_port() finds one.
  CoordinatorProcess(int port, std::initializer_list<Flag> flags);
  ~CoordinatorProcess();
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  // Starts the binary and waits (bounded) until its port file appears. Throws on failure with
  // the log tail. Called by the constructor; call again after stop()/kill9() via restart().
  void start();
  // SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit status as waitpid reports it
  // (-1 when it was not running).
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // SIGKILL now (a crash: nothing is flushed or finished).
  void kill9();
  // stop() (or nothing, when already stopped) and start() again on the same database.
  // The port changes unless it was fixed at construction: clients made before refer to the old
  // one (FakeAgent follows on its own).
  void restart();
  bool running() const { return child_ != nullptr; }
  // The running coordinator's process id (0 when stopped).
  pid_t pid() const;

  // "http://127.0.0.1:<port>" of the current process.
  std::string base_url() const;
  // Its port.
  int port() const { return port_; }
  // A client of the current process, owned here (recreated by start()); not thread-safe.
  http::Client& client();
  // A new client of the current process, for use on another thread.
  std::unique_ptr<http::Client> make_client() const;

  const std::string& dir() const { return dir_; }
  std::string db_path() const { return dir_ + "/benchfleet.db"; }
  std::string log_path() const { return dir_ + "/coordinator.log"; }
  // The last `max_bytes` of the log.
  std::string log_tail(std::size_t max_bytes = 8192) const;

  // ---- operator requests (throw on transport failure) ---------------------------------------
  http::ClientResponse get(const std::string& target);
  http::ClientResponse post(const std::string& target, const nlohmann::json& body,
                            const std::string& token = kOperatorToken);
  // POST /api/v1/runs; throws unless the answer is 201. Returns the body ({id, job_count, url}).
  nlohmann::json submit(const nlohmann::json& matrix);
  // GET returning the JSON body; throws unless the answer is 200.
  nlohmann::json get_json(const std::string& target);

 private:
  CoordinatorProcess(std::initializer_list<Flag> flags, int port);

  std::map<std::string, std::string> flags_;
  int fixed_port_ = 0;            // 0: a new free port at every start
  TempDir tmp_{"benchfleet-it"};  // kept when the test failed
  std::string dir_ = tmp_.str();
  std::unique_ptr<CoordinatorChild> child_;
  int port_ = 0;  // of the last process started: clients made before a stop keep using it
  std::unique_ptr<http::Client> client_;
};

// One slot of a fake agent: its id and GPU class.
struct SlotSpec {
  std::string id;
  std::string gpu_class;
};
// A torch build and the libtorch modes it runs.
struct BuildSpec {
  std::string name;
  std::vector<std::string> modes;
  std::string runtime = "libtorch";
};

// A lease as granted: the "job" object of a lease answer.
struct Lease {
  std::int64_t job_id = 0;
  std::string lease_id;
  int attempt = 0;
  std::string expires_at;  // RFC 3339, lexicographically ordered
  nlohmann::json job;      // the whole object (spec, measurement, ...)
  const nlohmann::json& spec() const { return job.at("spec"); }
};

// A protocol driver: enrols with the real coordinator and speaks the agent API to it. No logic
// of its own beyond building requests; tests decide what to send. Not thread-safe; one per thread.
class FakeAgent {
 public:
  // Enrols immediately (throws unless 201).
  FakeAgent(CoordinatorProcess& coordinator, nlohmann::json descriptor);
  static nlohmann::json descriptor(const std::string& name, const std::vector<SlotSpec>& slots,
                                   const std::vector<BuildSpec>& builds);

  std::int64_t id() const { return id_; }
  const std::string& token() const { return token_; }
  const nlohmann::json& enrollment() const { return enrollment_; }

  // POST /agents/{id}/lease {slot, wait_s}; the raw answer.
  http::ClientResponse lease(const std::string& slot, std::optional<int> wait_s = 0);
  // As lease(), throwing unless 200; nullopt when no job was granted.
  std::optional<Lease> lease_job(const std::string& slot, int wait_s = 0);
  // POST /jobs/{id}/progress {lease_id}.
  http::ClientResponse progress(const Lease& lease);
  // POST /agents/{id}/heartbeat {leases: [...]}.
  http::ClientResponse heartbeat(const std::vector<Lease>& leases, bool draining = false);
  // POST /jobs/{id}/result {lease_id, attempt, result}.
  http::ClientResponse post_result(const Lease& lease, const nlohmann::json& result);
  // Any request with this agent's token (for authorization tests).
  http::ClientResponse post(const std::string& target, const nlohmann::json& body,
                            std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  http::Client& client();

  CoordinatorProcess& coordinator_;
  std::int64_t id_ = 0;
  std::string token_;
  nlohmann::json enrollment_;
  std::string client_url_;
  std::unique_ptr<http::Client> client_;
};

// ---- result bodies ---------------------------------------------------------------------------
// A valid "ok" JobResult: `n` samples around `mean_ms` whose mean is exactly `mean_ms` and whose
// median is `median_ms` (default: mean_ms), with a fingerprint.
nlohmann::json ok_result(double mean_ms, std::optional<double> median_ms = std::nullopt, int n = 5);
// A valid "oom" JobResult in `phase` with `bytes` requested.
nlohmann::json oom_result(const std::string& phase = "warmup", std::int64_t bytes = 1 << 30);

// Catalog models the tests submit.
inline const std::string kResnet = "microsoft/resnet-50";
inline const std::string kVit = "google/vit-base-patch16-224";

// "/api/v1/runs/<id>" of a run as submit() answered it.
std::string run_url(const nlohmann::json& created);

// A matrix with the given axes (name "it", one GPU class, one build, libtorch).
nlohmann::json matrix(const std::vector<std::string>& models, const std::vector<int>& batches,
                      const std::vector<std::string>& modes, const std::vector<std::string>& gpus = {"a100"},
                      const std::vector<std::string>& builds = {"stable"});

// Polls `condition` every 50 ms until it holds or `limit` passes; returns whether it held.
template <class F>
bool eventually(F&& condition, std::chrono::milliseconds limit = std::chrono::seconds(15));

}  // namespace benchfleet::testing

template <class F>
bool benchfleet::testing::eventually(F&& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}
