#include "coordinator/config/config.h"

#include <filesystem>
#include <system_error>

#include "common/config_options.h"
#include "common/http/webhook_url.h"
#include "common/install_dirs.h"

namespace benchfleet::config {
namespace {

using config::option;
using config::Option;

std::vector<Option> options(CoordinatorConfig& c) {
  return {
      option("listen", c.listen, "address:port to listen on (127.0.0.1:0 picks a free port)"),
      option("db", c.db, "SQLite database file (created if missing)"),
      option("catalog", c.catalog,
             "model catalog YAML (default: <prefix>/share/benchfleet/catalog/models.yaml when installed, else the "
             "source tree's common/catalog/models.yaml)"),
      option("artifact_dir", c.artifact_dir,
             "where uploaded model artifacts are stored, one file per SHA-256 (default: <db>.artifacts)"),
      option("max_artifact_bytes", c.max_artifact_bytes, "largest artifact an upload may store (413 beyond)"),
      option("model_roots", c.model_roots,
             "directories on the agents a model definition's path may name (absolute; none: paths are refused, "
             "upload the files as artifacts)"),
      option("operator_token", c.operator_token,
             "token for writes (submit, cancel, drain); default: generated into <db>.operator-token"),
      option("enrollment_token", c.enrollment_token,
             "token agents exchange for their own at enrolment; default: generated into <db>.enrollment-token"),
      option("reader_token", c.reader_token,
             "read-only token: with public_reads false, GET endpoints accept it as well as the operator token; "
             "default: generated into <db>.reader-token"),
      option("public_reads", c.public_reads, "serve GET endpoints without a token"),
      option("reenrolment", c.reenrolment,
             "who may enrol under a name already enrolled: token (the agent's current token, header X-Agent-Token, "
             "or an operator's approval: benchfleet agents approve NAME) or open (any holder of the enrolment token)"),
      option("lease_ttl_s", c.lease_ttl_s, "seconds a lease lives unless renewed"),
      option("heartbeat_interval_s", c.heartbeat_interval_s, "seconds between agent heartbeats (told to agents)"),
      option("long_poll_timeout_s", c.long_poll_timeout_s, "longest wait of a lease request with no work"),
      option("max_attempts", c.max_attempts, "leases a job gets before it fails"),
      option("restart_grace_s", c.restart_grace_s, "after a restart, live leases get at least this long to renew"),
      option("max_cells", c.max_cells, "most jobs one run may expand to"),
      option("max_body_bytes", c.max_body_bytes,
             "largest request body (a result); submit and enrol take at most 1 MiB, other writes 64 KiB, GETs none"),
      option("max_connections", c.max_connections,
             "connections served at once, long-polls included; one more is answered 503 with Retry-After"),
      option("reserved_connections", c.reserved_connections,
             "of max_connections, the slots only connections that showed a token (agent, operator, reader, "
             "enrolment) may hold; anonymous ones share the rest, the oldest idle one giving way to a newcomer"),
      option("max_connections_per_peer", c.max_connections_per_peer,
             "anonymous connections one client address may hold (0: unbounded)"),
      option("idle_timeout_s", c.idle_timeout_s, "how long a keep-alive connection may wait for its next request"),
      option("first_request_timeout_s", c.first_request_timeout_s,
             "how long a new connection may take to send its first request's headers"),
      option("header_timeout_s", c.header_timeout_s,
             "how long a later request's headers may take, from its first byte"),
      option("max_inflight_body_bytes", c.max_inflight_body_bytes,
             "request bodies held at once across connections; a request beyond is answered 503 with Retry-After"),
      option("max_inflight_body_bytes_per_client", c.max_inflight_body_bytes_per_client,
             "of max_inflight_body_bytes, what one client (a token, else an address) may hold; a client holding "
             "none is always admitted one body (0: no per-client bound)"),
      option("max_inflight_response_bytes", c.max_inflight_response_bytes,
             "answers built and not yet read by their clients; a read beyond is answered 503 with Retry-After "
             "before it is built (0: unbounded)"),
      option("max_inflight_response_bytes_per_client", c.max_inflight_response_bytes_per_client,
             "of max_inflight_response_bytes, what one client (a token, else an address) may hold"),
      option("anonymous_reads_per_s", c.anonymous_reads_per_s,
             "reads without a token one address may make a second, in bursts of twice as many; beyond, 429 with "
             "Retry-After (0: unbounded)"),
      option("agent_listen", c.agent_listen,
             "a second address:port serving only requests with a token (agents, operators, readers), with its own "
             "connections, so that no anonymous client can take them (empty: none)"),
      option("agent_port_file", c.agent_port_file, "write agent_listen's bound port to this file once listening"),
      option("max_header_bytes", c.max_header_bytes, "largest request line plus headers"),
      option("max_json_depth", c.max_json_depth, "deepest JSON nesting accepted"),
      option("request_timeout_s", c.request_timeout_s, "bound on reading a request's body and on writing its response"),
      option("threads", c.threads, "I/O threads (they never wait on the database)"),
      option("store_threads", c.store_threads,
             "threads running the operators' writes and service routes that use the database (agents and reads "
             "have their own lanes); requests waiting for the same commit each hold one, so this bounds how many "
             "share an fsync"),
      option("agent_threads", c.agent_threads,
             "threads running only the agent protocol (lease, heartbeat, progress, result, release), whose store "
             "operations go ahead of every other's"),
      option("read_threads", c.read_threads,
             "threads running the API's reads without a token (lists, reports, results, compare), at nice "
             "read_nice (0: the machine's cores)"),
      option("read_nice", c.read_nice,
             "CPU priority (nice, 0..19) of the read threads; above 0 a read holding the store's lock can be "
             "starved by a flood, and agents wait on it"),
      option("log_level", c.log_level, "trace, debug, info, warn, error"),
      option("port_file", c.port_file, "write the bound port to this file once listening"),
      option("web_root", c.web_root,
             "directory of the dashboard's files, served at / (default: <prefix>/share/benchfleet/web when "
             "installed, else the build tree's web/); empty disables the dashboard"),
      option("schedule_check_ms", c.schedule_check_ms, "milliseconds between looks for due schedules"),
      option("schedule_clock_file", c.schedule_clock_file,
             "tests only: a file holding the schedules' \"now\" (integer ms since the epoch), re-read at each check "
             "(empty: the system clock)"),
      option("detect_interval_ms", c.detect_interval_ms,
             "milliseconds between change-detection passes over new series points (each stored result also wakes "
             "the detector)"),
      option("detect_min_effect", c.detect_min_effect,
             "smallest relative change of a run's median against the baseline's that counts (0.05 = 5%)"),
      option("detect_alpha", c.detect_alpha, "two-sided significance level of the Mann-Whitney U test on the samples"),
      option("detect_confirm_runs", c.detect_confirm_runs,
             "consecutive runs that must change in the same direction to confirm a change"),
      option("detect_baseline_runs", c.detect_baseline_runs, "most recent runs of the current level compared against"),
      option("detect_min_baseline_runs", c.detect_min_baseline_runs,
             "fewest baseline runs before the detector decides anything"),
      option("alert_webhook_url", c.alert_webhook_url,
             "http:// URL each new regression is POSTed to as JSON (event regression.opened); empty disables alerts"),
      option("alert_timeout_ms", c.alert_timeout_ms, "milliseconds one webhook request may take"),
      option("alert_max_attempts", c.alert_max_attempts, "webhook attempts per alert before it is given up"),
      option("alert_backoff_initial_ms", c.alert_backoff_initial_ms,
             "milliseconds before the first retry of a failed webhook; doubles with each further failure"),
      option("alert_backoff_max_ms", c.alert_backoff_max_ms, "longest wait between two webhook attempts"),
  };
}

}  // namespace

std::string default_web_root() {
  namespace fs = std::filesystem;
  const fs::path exe = running_executable();
  const fs::path installed = installed_share_dir(exe) / "web";
  if (std::error_code ec; !fs::is_directory(installed, ec)) {
    // benchfleet_web_assets (coordinator/CMakeLists.txt) assembles it in <build dir>/web.
    if (const auto tree = build_tree_of(exe)) return (tree->binary_dir / "web").string();
  }
  return installed.string();
}

Status apply_yaml_config(std::string_view yaml_text, std::string_view origin, CoordinatorConfig& config) {
  BF_ASSIGN_OR_RETURN(YAML::Node root, config::parse_yaml_mapping(yaml_text, origin));
  return config::apply_yaml(root, origin, options(config));
}

Status validate(const CoordinatorConfig& c) {
  if (c.lease_ttl_s < 1) return Error::invalid("lease_ttl_s", "must be >= 1");
  if (c.heartbeat_interval_s < 1 || c.heartbeat_interval_s >= c.lease_ttl_s) {
    return Error::invalid("heartbeat_interval_s", "must be >= 1 and shorter than lease_ttl_s");
  }
  if (c.long_poll_timeout_s < 0 || c.long_poll_timeout_s > 300) {
    return Error::invalid("long_poll_timeout_s", "must be between 0 and 300");
  }
  if (c.max_attempts < 1) return Error::invalid("max_attempts", "must be >= 1");
  if (c.restart_grace_s < 0) return Error::invalid("restart_grace_s", "must be >= 0");
  if (c.max_cells < 1) return Error::invalid("max_cells", "must be >= 1");
  if (c.max_body_bytes < 1024) return Error::invalid("max_body_bytes", "must be >= 1024");
  if (c.max_artifact_bytes < 1) return Error::invalid("max_artifact_bytes", "must be >= 1");
  for (const std::string& root : c.model_roots) {
    if (!std::filesystem::path(root).is_absolute()) {
      return Error::invalid("model_roots", "model_roots: \"" + root + "\" is not an absolute path");
    }
  }
  if (c.reenrolment != "token" && c.reenrolment != "open") {
    return Error::invalid("reenrolment", "must be token or open, not \"" + c.reenrolment + "\"");
  }
  if (c.max_connections < 1) return Error::invalid("max_connections", "must be >= 1");
  if (c.reserved_connections < 0 || c.reserved_connections >= c.max_connections) {
    return Error::invalid("reserved_connections",
                          "must be >= 0 and below max_connections (" + std::to_string(c.max_connections) + ")");
  }
  if (c.max_connections_per_peer < 0) return Error::invalid("max_connections_per_peer", "must be >= 0");
  if (c.idle_timeout_s < 1) return Error::invalid("idle_timeout_s", "must be >= 1");
  if (c.first_request_timeout_s < 1) return Error::invalid("first_request_timeout_s", "must be >= 1");
  if (c.header_timeout_s < 1) return Error::invalid("header_timeout_s", "must be >= 1");
  if (c.max_inflight_body_bytes < 1024) return Error::invalid("max_inflight_body_bytes", "must be >= 1024");
  if (c.max_inflight_body_bytes_per_client < 0) {
    return Error::invalid("max_inflight_body_bytes_per_client", "must be >= 0");
  }
  if (c.max_inflight_response_bytes < 0) return Error::invalid("max_inflight_response_bytes", "must be >= 0");
  if (!(c.anonymous_reads_per_s >= 0)) return Error::invalid("anonymous_reads_per_s", "must be >= 0");
  if (c.max_inflight_response_bytes_per_client < 0) {
    return Error::invalid("max_inflight_response_bytes_per_client", "must be >= 0");
  }
  if (c.max_header_bytes < 1024) return Error::invalid("max_header_bytes", "must be >= 1024");
  if (c.max_json_depth < 4 || c.max_json_depth > 256) return Error::invalid("max_json_depth", "must be 4..256");
  if (c.request_timeout_s < 1) return Error::invalid("request_timeout_s", "must be >= 1");
  if (c.threads < 1 || c.threads > 64) return Error::invalid("threads", "must be 1..64");
  if (c.store_threads < 1 || c.store_threads > 64) return Error::invalid("store_threads", "must be 1..64");
  if (c.agent_threads < 1 || c.agent_threads > 64) return Error::invalid("agent_threads", "must be 1..64");
  if (c.read_threads < 0 || c.read_threads > 64) return Error::invalid("read_threads", "must be 0..64");
  if (c.read_nice < 0 || c.read_nice > 19) return Error::invalid("read_nice", "must be 0..19");
  if (c.schedule_check_ms < 10 || c.schedule_check_ms > 3'600'000) {
    return Error::invalid("schedule_check_ms", "must be between 10 and 3600000");
  }
  if (c.detect_interval_ms < 10 || c.detect_interval_ms > 3'600'000) {
    return Error::invalid("detect_interval_ms", "must be between 10 and 3600000");
  }
  if (!(c.detect_min_effect >= 0 && c.detect_min_effect < 10)) {
    return Error::invalid("detect_min_effect", "must be >= 0 and < 10 (a fraction: 0.05 is 5%)");
  }
  if (!(c.detect_alpha > 0 && c.detect_alpha < 1)) return Error::invalid("detect_alpha", "must be > 0 and < 1");
  if (c.detect_confirm_runs < 1 || c.detect_confirm_runs > 100) {
    return Error::invalid("detect_confirm_runs", "must be 1..100");
  }
  if (c.detect_baseline_runs < 1 || c.detect_baseline_runs > 1000) {
    return Error::invalid("detect_baseline_runs", "must be 1..1000");
  }
  if (c.detect_min_baseline_runs < 1 || c.detect_min_baseline_runs > c.detect_baseline_runs) {
    return Error::invalid("detect_min_baseline_runs", "must be >= 1 and at most detect_baseline_runs");
  }
  if (!c.alert_webhook_url.empty()) {
    if (auto target = split_webhook_url(c.alert_webhook_url); !target.ok()) return target.error();
  }
  if (c.alert_timeout_ms < 1 || c.alert_timeout_ms > 600'000) {
    return Error::invalid("alert_timeout_ms", "must be between 1 and 600000");
  }
  if (c.alert_max_attempts < 1 || c.alert_max_attempts > 100) {
    return Error::invalid("alert_max_attempts", "must be 1..100");
  }
  if (c.alert_backoff_initial_ms < 1) return Error::invalid("alert_backoff_initial_ms", "must be >= 1");
  if (c.alert_backoff_max_ms < c.alert_backoff_initial_ms) {
    return Error::invalid("alert_backoff_max_ms", "must be >= alert_backoff_initial_ms");
  }
  return Status::Ok();
}

Result<ConfigParse> parse_coordinator_config(int argc, char** argv) {
  ConfigParse out;
  // The config file is read first so that environment and flags override it.
  if (const std::string path = config::config_path(argc, argv); !path.empty()) {
    BF_ASSIGN_OR_RETURN(YAML::Node root, config::load_yaml_mapping_file(path));
    BF_RETURN_IF_ERROR(config::apply_yaml(root, path, options(out.config)));
  }

  CLI::App app{
      "benchfleet-coordinator: schedules benchmark matrices onto agents, stores every measurement in\n"
      "SQLite and serves the REST API (/api/v1, OpenAPI at /api/v1/openapi.json), /healthz and /metrics.\n"
      "Every option can also be set in the YAML --config file (same name, underscores) or through\n"
      "the environment variable shown; flags win over the environment, which wins over the file.\n"
      "Database commands (see `benchfleet-coordinator backup --help`): backup --db DB --to FILE (a\n"
      "consistent copy while serving), restore --db DB --from FILE (refused while a coordinator serves DB)."};
  app.set_version_flag("--version", std::string("benchfleet-coordinator ") + BENCHFLEET_VERSION);
  std::string ignored_config;  // read above, before the other options
  config::add_options(app, options(out.config), ignored_config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exit_now = true;
    out.exit_code = app.exit(e);  // prints help, the version, or the usage error
    return out;
  }
  BF_RETURN_IF_ERROR(validate(out.config));
  return out;
}

}  // namespace benchfleet::config
