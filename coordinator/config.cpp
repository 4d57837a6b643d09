#include "coordinator/config.h"

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

namespace benchfleet {
namespace {

// One table drives the YAML keys, the flags, the environment variables and --help.
struct Option {
  std::string key;  // YAML key; flag is --key with '_' -> '-'; env is BENCHFLEET_KEY
  std::string help;
  std::function<void(CLI::App&, const std::string& flag, const std::string& env, const std::string& help)> add;
  std::function<Status(const YAML::Node&, const std::string& origin)> from_yaml;
};

template <class T>
Option option(std::string key, T& field, std::string help) {
  Option o;
  o.key = key;
  o.help = help;
  o.add = [&field](CLI::App& app, const std::string& flag, const std::string& env, const std::string& h) {
    app.add_option(flag, field, h)->envname(env)->capture_default_str();
  };
  o.from_yaml = [&field, key](const YAML::Node& node, const std::string& origin) -> Status {
    try {
      field = node.as<T>();
    } catch (const YAML::Exception&) {
      return Error::invalid(key, origin + ": wrong type for " + key);
    }
    return Status::Ok();
  };
  return o;
}

std::vector<Option> options(CoordinatorConfig& c) {
  return {
      option("listen", c.listen, "address:port to listen on (127.0.0.1:0 picks a free port)"),
      option("db", c.db, "SQLite database file (created if missing)"),
      option("catalog", c.catalog, "model catalog YAML (default: the shipped common/catalog/models.yaml)"),
      option("operator_token", c.operator_token,
             "token for writes (submit, cancel, drain); default: generated into <db>.operator-token"),
      option("enrollment_token", c.enrollment_token,
             "token agents exchange for their own at enrolment; default: generated into <db>.enrollment-token"),
      option("public_reads", c.public_reads, "serve GET endpoints without a token"),
      option("lease_ttl_s", c.lease_ttl_s, "seconds a lease lives unless renewed"),
      option("heartbeat_interval_s", c.heartbeat_interval_s, "seconds between agent heartbeats (told to agents)"),
      option("long_poll_timeout_s", c.long_poll_timeout_s, "longest wait of a lease request with no work"),
      option("max_attempts", c.max_attempts, "leases a job gets before it fails"),
      option("restart_grace_s", c.restart_grace_s, "after a restart, live leases get at least this long to renew"),
      option("max_cells", c.max_cells, "most jobs one run may expand to"),
      option("max_body_bytes", c.max_body_bytes, "largest request body"),
      option("max_header_bytes", c.max_header_bytes, "largest request line plus headers"),
      option("max_json_depth", c.max_json_depth, "deepest JSON nesting accepted"),
      option("request_timeout_s", c.request_timeout_s, "bound on reading a request and on writing its response"),
      option("threads", c.threads, "I/O threads (they never wait on the database)"),
      option("store_threads", c.store_threads, "threads running the handlers that use the database"),
      option("log_level", c.log_level, "trace, debug, info, warn, error"),
      option("port_file", c.port_file, "write the bound port to this file once listening"),
  };
}

std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  for (auto& ch : flag) ch = ch == '_' ? '-' : ch;
  return flag;
}

std::string env_of(const std::string& key) {
  std::string env = "BENCHFLEET_";
  for (char ch : key) env += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return env;
}

}  // namespace

Status apply_yaml_config(std::string_view yaml_text, std::string_view origin, CoordinatorConfig& config) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Error::invalid("", std::string(origin) + ": malformed YAML: " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Error::invalid("", std::string(origin) + ": must be a mapping of option: value");
  auto opts = options(config);
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    auto it = std::find_if(opts.begin(), opts.end(), [&](const Option& o) { return o.key == key; });
    if (it == opts.end()) return Error::invalid(key, std::string(origin) + ": unknown option");
    BF_RETURN_IF_ERROR(it->from_yaml(kv.second, std::string(origin)));
  }
  return Status::Ok();
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
  if (c.max_header_bytes < 1024) return Error::invalid("max_header_bytes", "must be >= 1024");
  if (c.max_json_depth < 4 || c.max_json_depth > 256) return Error::invalid("max_json_depth", "must be 4..256");
  if (c.request_timeout_s < 1) return Error::invalid("request_timeout_s", "must be >= 1");
  if (c.threads < 1 || c.threads > 64) return Error::invalid("threads", "must be 1..64");
  if (c.store_threads < 1 || c.store_threads > 64) return Error::invalid("store_threads", "must be 1..64");
  return Status::Ok();
}

Result<ConfigParse> parse_coordinator_config(int argc, char** argv) {
  ConfigParse out;
  // The config file is read first so that environment and flags override it.
  std::string config_path;
  if (const char* env = std::getenv("BENCHFLEET_CONFIG")) config_path = env;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "--config" || a == "-c") && i + 1 < argc) config_path = argv[i + 1];
    if (a.rfind("--config=", 0) == 0) config_path = std::string(a.substr(9));
  }
  if (!config_path.empty()) {
    std::ifstream in(config_path);
    if (!in) return Error::invalid("config", "cannot read " + config_path);
    std::stringstream text;
    text << in.rdbuf();
    BF_RETURN_IF_ERROR(apply_yaml_config(text.str(), config_path, out.config));
  }

  CLI::App app{
      "benchfleet-coordinator: schedules benchmark matrices onto agents, stores every measurement in\n"
      "SQLite and serves the REST API (/api/v1, OpenAPI at /api/v1/openapi.json), /healthz and /metrics.\n"
      "Every option can also be set in the YAML --config file (same name, underscores) or through\n"
      "the environment variable shown; flags win over the environment, which wins over the file."};
  app.set_version_flag("--version", std::string("benchfleet-coordinator ") + BENCHFLEET_VERSION);
  std::string ignored_config;
  app.add_option("-c,--config", ignored_config, "YAML config file")->envname("BENCHFLEET_CONFIG");
  for (auto& o : options(out.config)) o.add(app, flag_of(o.key), env_of(o.key), o.help);
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

}  // namespace benchfleet
