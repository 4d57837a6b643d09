#include "coordinator/config/layer_options.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>

#include "coordinator/rules/tokens.h"

namespace benchfleet::config {

using std::chrono::milliseconds;

store::StoreOptions store_options(const CoordinatorConfig& config) {
  store::StoreOptions options;
  options.path = config.db;
  options.max_attempts = config.max_attempts;
  options.lease_ttl_ms = config.lease_ttl_s * 1000LL;
  options.restart_grace_ms = config.restart_grace_s * 1000LL;
  return options;
}

services::HistoryWorkerOptions history_options(const CoordinatorConfig& config) {
  services::HistoryWorkerOptions options;
  options.detect_interval = milliseconds(config.detect_interval_ms);
  options.detector.min_effect = config.detect_min_effect;
  options.detector.alpha = config.detect_alpha;
  options.detector.confirm_runs = config.detect_confirm_runs;
  options.detector.baseline_runs = config.detect_baseline_runs;
  options.detector.min_baseline_runs = config.detect_min_baseline_runs;
  options.webhook_url = config.alert_webhook_url;
  options.alert_timeout = milliseconds(config.alert_timeout_ms);
  options.alert_max_attempts = config.alert_max_attempts;
  options.alert_backoff_initial = milliseconds(config.alert_backoff_initial_ms);
  options.alert_backoff_max = milliseconds(config.alert_backoff_max_ms);
  return options;
}

http::ServerLimits server_limits(const CoordinatorConfig& config) {
  http::ServerLimits limits;
  limits.body_limit = static_cast<std::size_t>(config.max_body_bytes);
  limits.header_limit = static_cast<std::size_t>(config.max_header_bytes);
  limits.request_timeout = std::chrono::seconds(config.request_timeout_s);
  limits.max_connections = static_cast<std::size_t>(config.max_connections);
  limits.reserved_connections = static_cast<std::size_t>(config.reserved_connections);
  limits.max_connections_per_peer = static_cast<std::size_t>(config.max_connections_per_peer);
  limits.idle_timeout = std::chrono::seconds(config.idle_timeout_s);
  limits.first_request_timeout = std::chrono::seconds(config.first_request_timeout_s);
  limits.header_timeout = std::chrono::seconds(config.header_timeout_s);
  limits.max_inflight_body_bytes = static_cast<std::size_t>(config.max_inflight_body_bytes);
  limits.max_inflight_body_bytes_per_client = static_cast<std::size_t>(config.max_inflight_body_bytes_per_client);
  limits.max_inflight_response_bytes = static_cast<std::size_t>(config.max_inflight_response_bytes);
  limits.max_inflight_response_bytes_per_client =
      static_cast<std::size_t>(config.max_inflight_response_bytes_per_client);
  limits.anonymous_reads_per_s_per_peer = config.anonymous_reads_per_s;
  return limits;
}

Result<std::string> resolve_token(const std::string& configured, const std::string& path) {
  if (!configured.empty()) return configured;
  if (std::ifstream in(path); in) {
    std::string token;
    std::getline(in, token);
    if (!token.empty()) return token;
  }
  const std::string token = rules::generate_secret();
  const mode_t old = umask(077);
  std::ofstream out(path, std::ios::trunc);
  umask(old);
  if (!out || !(out << token << "\n") || !out.flush()) return Error::internal("cannot write " + path);
  ::chmod(path.c_str(), 0600);
  spdlog::info("generated a token into {} (mode 0600)", path);
  return token;
}

void raise_open_file_limit(const CoordinatorConfig& config) {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return;
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
    ::getrlimit(RLIMIT_NOFILE, &files);
  }
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < static_cast<rlim_t>(config.max_connections) + 64) {
    spdlog::warn(
        "the open-file limit ({}) is below max_connections ({}) + 64: connections beyond it wait in the "
        "listen backlog instead of getting 503",
        static_cast<unsigned long long>(files.rlim_cur), config.max_connections);
  }
}

}  // namespace benchfleet::config
