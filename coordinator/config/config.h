// Coordinator configuration: defaults < YAML file (--config) < environment < flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet::config {

// Where the dashboard's files are when web_root is not set: <dir of the executable>/../share/
// benchfleet/web (an installed coordinator); when that directory is missing and the executable
// lies in its build tree, that tree's assembled copy (<build dir>/web, made by the
// benchfleet_web_assets target). See common/install_dirs.h.
std::string default_web_root();

struct CoordinatorConfig {
  std::string listen = "127.0.0.1:8080";
  std::string db = "./benchfleet.db";
  std::string catalog;  // empty: the built-in default path
  // Registered models (docs/models.md): where uploaded artifacts live (empty: <db>.artifacts),
  // their largest size, and the directories a definition's `path` may name on the agents.
  std::string artifact_dir;
  std::int64_t max_artifact_bytes = std::int64_t{8} << 30;
  std::vector<std::string> model_roots;
  // Tokens. When unset, a random token is generated once and kept in <db>.operator-token /
  // <db>.enrollment-token (mode 0600) so local tools can read it; tokens are never logged.
  std::string operator_token;
  std::string enrollment_token;
  std::string reader_token;
  bool public_reads = true;  // false: GET endpoints need the operator token too
  int lease_ttl_s = 60;
  int heartbeat_interval_s = 15;
  int long_poll_timeout_s = 25;
  int max_attempts = 3;
  int restart_grace_s = 60;
  std::int64_t max_cells = 100'000;
  // Results; other routes are held lower (api.cpp). A result of max_iterations() samples (common/
  // shared_rules.h: a million), each
  // printed as the shortest round-trip double (up to 19 bytes with its comma), is ~19 MB.
  std::int64_t max_body_bytes = 32 << 20;
  // Connections served at once (agents' long-polls included); beyond: 503 with Retry-After.
  // Of them, reserved_connections are kept for connections that showed a token, and one address
  // holds at most max_connections_per_peer anonymous ones (http::ServerLimits).
  // Who may enrol under a name already enrolled: "token" (the agent's current token, or an
  // operator's approval) or "open" (any holder of the enrolment token).
  std::string reenrolment = "token";
  int max_connections = 2048;
  int reserved_connections = 256;
  int max_connections_per_peer = 64;
  int idle_timeout_s = 60;          // a keep-alive connection waiting for its next request
  int first_request_timeout_s = 5;  // a new connection, until its first request's headers
  int header_timeout_s = 10;        // a later request's headers, from its first byte
  // Request bodies held at once across connections; a request that would go beyond gets 503.
  std::int64_t max_inflight_body_bytes = std::int64_t{64} << 20;
  std::int64_t max_inflight_body_bytes_per_client = std::int64_t{16} << 20;  // a token, else an address
  // Answers built and not yet read by their clients; a read beyond is answered 503.
  std::int64_t max_inflight_response_bytes = std::int64_t{256} << 20;
  std::int64_t max_inflight_response_bytes_per_client = std::int64_t{64} << 20;
  // Reads without a token from one address, per second (bursts of twice as many); 0: unbounded.
  double anonymous_reads_per_s = 100;
  // A second listener serving only requests with a token (agents, operators, readers), with its
  // own connections: no anonymous client can take them. Empty: none.
  std::string agent_listen;
  std::string agent_port_file;  // when set, the second listener's port is written here
  std::int64_t max_header_bytes = 16 << 10;
  int max_json_depth = 32;
  int request_timeout_s = 30;
  int threads = 2;         // I/O threads (never block)
  int store_threads = 32;  // threads running handlers that use the store (bounds a group commit)
  // The agent lane: threads running only the agent protocol (lease, heartbeat, progress, result,
  // release), whose store operations go ahead of every other's.
  int agent_threads = 32;
  // The read lane: threads running the anonymous GETs (lists, reports, results, compare), so a
  // flood of reads queues on few threads and cannot take the store or the CPU from the agents.
  // 0: the machine's cores. read_nice lowers their CPU priority; 0 by default: a read holding the
  // store's lock at a low priority is starved by the flood's own threads, and the agents wait on
  // it (measured: heartbeat p99 under a report flood 107-200 ms at nice 10, 117-125 ms at 0).
  int read_threads = 0;
  int read_nice = 0;
  std::string log_level = "info";
  std::string port_file;  // when set, the bound port is written here after listening
  // The directory served at / (the dashboard); empty disables the dashboard.
  std::string web_root = default_web_root();

  // History. How often due schedules are looked for, and how often the change
  // detector looks at new points (it is also woken by each stored result).
  int schedule_check_ms = 5000;
  // Tests only: a file holding "now" for the schedule runner (integer ms since the epoch), re-read
  // at each check; empty: the system clock.
  std::string schedule_clock_file;
  int detect_interval_ms = 2000;
  // The change detector (coordinator/rules/change_detector.h; docs/usage.md, "Nightly history and regression
  // detection").
  double detect_min_effect = 0.05;
  double detect_alpha = 0.001;
  int detect_confirm_runs = 2;
  int detect_baseline_runs = 5;
  int detect_min_baseline_runs = 3;
  // Alerts: each new regression is POSTed as JSON to this http:// URL ("" disables), retried
  // with exponential backoff (initial, doubling, capped) up to alert_max_attempts attempts.
  std::string alert_webhook_url;
  int alert_timeout_ms = 10000;
  int alert_max_attempts = 8;
  int alert_backoff_initial_ms = 1000;
  int alert_backoff_max_ms = 300000;
};

// Parses argv (and $BENCHFLEET_* variables, and the --config file). For --help/--version it
// prints and sets exit_now; usage errors come back as an Error naming the option.
struct ConfigParse {
  CoordinatorConfig config;
  bool exit_now = false;
  int exit_code = 0;
};
Result<ConfigParse> parse_coordinator_config(int argc, char** argv);

// Applies a YAML document onto `config`; unknown keys and wrong types name the key.
Status apply_yaml_config(std::string_view yaml_text, std::string_view origin, CoordinatorConfig& config);

// Checks ranges (TTL > heartbeat, positive limits...) naming the offending option.
Status validate(const CoordinatorConfig& config);

}  // namespace benchfleet::config
