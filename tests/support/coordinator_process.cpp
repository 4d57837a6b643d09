#include "tests/support/coordinator_process.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "common/agent_protocol.h"
#include "common/codecs.h"
#include "common/stats.h"

namespace benchfleet::testing {

// ---- CoordinatorProcess ------------------------------------------------------------------------

CoordinatorProcess::CoordinatorProcess(std::initializer_list<Flag> flags) : CoordinatorProcess(flags, 0) {}

CoordinatorProcess::CoordinatorProcess(std::initializer_list<Flag> flags, int port) : fixed_port_(port) {
  if (port < 0) throw std::invalid_argument("CoordinatorProcess: negative port");
  flags_ = {
      {"--db", db_path()},
      {"--operator-token", kOperatorToken},
      {"--enrollment-token", kEnrollmentToken},
      {"--long-poll-timeout-s", "10"},
      {"--log-level", "info"},
  };
  for (const auto& [flag, value] : flags) flags_[flag] = value;
  start();
}

CoordinatorProcess::CoordinatorProcess(int port, std::initializer_list<Flag> flags) : CoordinatorProcess(flags, port) {}

CoordinatorProcess::~CoordinatorProcess() {
  child_.reset();  // kills it
  client_.reset();
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- coordinator log (" << log_path() << "), kept for inspection ----\n"
              << log_tail() << "\n---- end of coordinator log ----\n";
    tmp_.keep();
  }
}

void CoordinatorProcess::start() {
  if (child_) throw std::runtime_error("CoordinatorProcess::start: already running");
  client_.reset();
  port_ = 0;
  LaunchOptions options;
  options.flags = flags_;
  options.port = fixed_port_;
  options.port_file = dir_ + "/port";
  options.log_file = log_path();
  options.append_log = true;         // a restart keeps the log of the process before
  options.clean_environment = true;  // a developer's $BENCHFLEET_* must not change the test
  auto child = CoordinatorChild::start(options);
  if (!child.ok()) throw std::runtime_error(child.error().message + "\n(directory " + dir_ + " kept)");
  child_ = std::move(*child);
  port_ = child_->port();
  client_ = std::make_unique<http::Client>(base_url());
}

int CoordinatorProcess::stop(std::chrono::milliseconds grace) {
  if (!child_) return -1;
  const CoordinatorChild::Exit exit = child_->stop(grace);
  if (exit.killed_after_grace) {
    ADD_FAILURE() << "benchfleet-coordinator did not stop within " << grace.count() << " ms of SIGTERM; killed it";
  }
  child_.reset();
  client_.reset();
  return exit.status;
}

void CoordinatorProcess::kill9() {
  child_.reset();  // kills it
  client_.reset();
}

void CoordinatorProcess::restart() {
  stop();
  start();
}

pid_t CoordinatorProcess::pid() const { return child_ ? child_->pid() : 0; }

std::string CoordinatorProcess::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

http::Client& CoordinatorProcess::client() {
  if (!client_) throw std::runtime_error("CoordinatorProcess::client: the coordinator is not running");
  return *client_;
}

std::unique_ptr<http::Client> CoordinatorProcess::make_client() const {
  return std::make_unique<http::Client>(base_url());
}

std::string CoordinatorProcess::log_tail(std::size_t max_bytes) const { return file_tail(log_path(), max_bytes); }

namespace {

http::ClientResponse unwrap(Result<http::ClientResponse> r, std::string_view what, const CoordinatorProcess& c) {
  if (!r.ok()) {
    throw std::runtime_error(std::string(what) + " failed: " + r.error().describe() + "\ncoordinator log tail:\n" +
                             c.log_tail(4096));
  }
  return std::move(*r);
}

nlohmann::json json_of(const http::ClientResponse& res, std::string_view what) {
  auto j = res.json();
  if (!j.ok()) throw std::runtime_error(std::string(what) + ": answer is not JSON: " + res.body);
  return std::move(*j);
}

}  // namespace

http::ClientResponse CoordinatorProcess::get(const std::string& target) {
  return unwrap(client().get(target, kOperatorToken), "GET " + target, *this);
}

http::ClientResponse CoordinatorProcess::post(const std::string& target, const nlohmann::json& body,
                                              const std::string& token) {
  return unwrap(client().post_json(target, body, token), "POST " + target, *this);
}

nlohmann::json CoordinatorProcess::submit(const nlohmann::json& matrix) {
  auto res = post("/api/v1/runs", matrix);
  if (res.status != 201) {
    throw std::runtime_error("POST /api/v1/runs answered " + std::to_string(res.status) + ": " + res.body);
  }
  return json_of(res, "POST /api/v1/runs");
}

nlohmann::json CoordinatorProcess::get_json(const std::string& target) {
  auto res = get(target);
  if (res.status != 200) {
    throw std::runtime_error("GET " + target + " answered " + std::to_string(res.status) + ": " + res.body);
  }
  return json_of(res, "GET " + target);
}

// ---- FakeAgent ---------------------------------------------------------------------------------

FakeAgent::FakeAgent(CoordinatorProcess& coordinator, nlohmann::json descriptor) : coordinator_(coordinator) {
  auto res = unwrap(client().post_json("/api/v1/agents/enroll", descriptor, CoordinatorProcess::kEnrollmentToken),
                    "POST /api/v1/agents/enroll", coordinator_);
  if (res.status != 201) {
    throw std::runtime_error("enrolment answered " + std::to_string(res.status) + ": " + res.body);
  }
  enrollment_ = json_of(res, "enrolment");
  id_ = enrollment_.at("agent_id").get<std::int64_t>();
  token_ = enrollment_.at("agent_token").get<std::string>();
}

nlohmann::json FakeAgent::descriptor(const std::string& name, const std::vector<SlotSpec>& slots,
                                     const std::vector<BuildSpec>& builds) {
  nlohmann::json d = {{"name", name}, {"hostname", name + ".test"}, {"version", "it"}};
  d["slots"] = nlohmann::json::array();
  for (const auto& s : slots) d["slots"].push_back({{"id", s.id}, {"gpu_class", s.gpu_class}});
  d["torch_builds"] = nlohmann::json::array();
  for (const auto& b : builds) {
    d["torch_builds"].push_back(
        {{"name", b.name}, {"version", "2.0.0+test"}, {"runtimes", {{{"runtime", b.runtime}, {"modes", b.modes}}}}});
  }
  return d;
}

http::Client& FakeAgent::client() {
  const std::string url = coordinator_.base_url();
  if (!client_ || url != client_url_) {
    client_ = std::make_unique<http::Client>(url);
    client_url_ = url;
  }
  return *client_;
}

http::ClientResponse FakeAgent::post(const std::string& target, const nlohmann::json& body,
                                     std::chrono::milliseconds timeout) {
  return unwrap(client().post_json(target, body, token_, timeout), "POST " + target, coordinator_);
}

http::ClientResponse FakeAgent::lease(const std::string& slot, std::optional<int> wait_s) {
  nlohmann::json body = {{"slot", slot}};
  if (wait_s) body["wait_s"] = *wait_s;
  const auto timeout = std::chrono::seconds(wait_s.value_or(30) + 20);
  return post("/api/v1/agents/" + std::to_string(id_) + "/lease", body, timeout);
}

std::optional<Lease> FakeAgent::lease_job(const std::string& slot, int wait_s) {
  auto res = lease(slot, wait_s);
  if (res.status != 200) {
    throw std::runtime_error("lease answered " + std::to_string(res.status) + ": " + res.body);
  }
  auto body = json_of(res, "lease");
  if (body.at("job").is_null()) return std::nullopt;
  Lease l;
  l.job = body.at("job");
  l.job_id = l.job.at("id").get<std::int64_t>();
  l.lease_id = l.job.at("lease_id").get<std::string>();
  l.attempt = l.job.at("attempt").get<int>();
  l.expires_at = l.job.at("lease_expires_at").get<std::string>();
  return l;
}

http::ClientResponse FakeAgent::progress(const Lease& lease) {
  return post("/api/v1/jobs/" + std::to_string(lease.job_id) + "/progress",
              ProgressRequest{lease.lease_id, "measure", {}, 10});
}

http::ClientResponse FakeAgent::heartbeat(const std::vector<Lease>& leases, bool draining) {
  nlohmann::json refs = nlohmann::json::array();
  for (const auto& l : leases) refs.push_back({{"job_id", l.job_id}, {"lease_id", l.lease_id}});
  return post("/api/v1/agents/" + std::to_string(id_) + "/heartbeat", {{"leases", refs}, {"draining", draining}});
}

http::ClientResponse FakeAgent::post_result(const Lease& lease, const nlohmann::json& result) {
  return post("/api/v1/jobs/" + std::to_string(lease.job_id) + "/result",
              {{"lease_id", lease.lease_id}, {"attempt", lease.attempt}, {"result", result}});
}

// ---- bodies ------------------------------------------------------------------------------------

nlohmann::json ok_result(double mean_ms, std::optional<double> median_ms, int n) {
  // Samples whose median and mean are the ones asked for, and statistics computed from them:
  // the coordinator refuses statistics the samples do not give (check_posted_result).
  const double median = median_ms.value_or(mean_ms);
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) samples.push_back(median * (0.9 + 0.2 * i / std::max(1, n - 1)));
  if (n == 1) samples[0] = mean_ms;
  const double shift = n * (mean_ms - median);  // moves the mean, not the median
  if (n > 1 && shift >= 0) samples.back() += shift;
  if (n > 1 && shift < 0) samples.front() = std::max(0.0, samples.front() + shift);
  return {{"status", "ok"},
          {"stats", compute_statistics(samples)},
          {"samples_ms", samples},
          {"first_call_ms", 250.5},
          {"stop_reason", "max_time"},  // any count may claim it (fixed_count: only a fixed count)
          {"memory", {{"peak_allocated_bytes", 123456789}}},
          {"environment", {{"torch", "2.0.0+test"}, {"gpu_name", "Fake A100"}, {"sm", 80}}},
          {"telemetry", {{"temperature_c", 41}}}};
}

nlohmann::json oom_result(const std::string& phase, std::int64_t bytes) {
  return {{"status", "oom"},
          {"oom", {{"phase", phase}, {"bytes_requested", bytes}}},
          {"error", "CUDA out of memory. Tried to allocate 1.00 GiB"},
          {"samples_ms", nlohmann::json::array()},
          {"environment", {{"torch", "2.0.0+test"}}},
          {"telemetry", nlohmann::json::object()}};
}

std::string run_url(const nlohmann::json& created) {
  return "/api/v1/runs/" + std::to_string(created.at("id").get<std::int64_t>());
}

nlohmann::json matrix(const std::vector<std::string>& models, const std::vector<int>& batches,
                      const std::vector<std::string>& modes, const std::vector<std::string>& gpus,
                      const std::vector<std::string>& builds) {
  return {{"name", "it"},           {"models", models}, {"batch_sizes", batches},  {"modes", modes},
          {"torch_builds", builds}, {"gpus", gpus},     {"runtimes", {"libtorch"}}};
}

}  // namespace benchfleet::testing
