#include "cli/cli_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace benchfleet::cli {

std::vector<config::Option> cli_options(CliConfig& c) {
  using config::option;
  return {
      option("url", c.url, "coordinator base URL"),
      option("operator_token", c.operator_token, "operator token (needed to submit, cancel and drain)"),
      option("operator_token_file", c.operator_token_file,
             "file holding the operator token, used when no token is given (e.g. <db>.operator-token)"),
      option("timeout_s", c.timeout_s, "seconds to wait for each answer of the coordinator"),
  };
}

std::string cli_config_path(int argc, char** argv) {
  std::string path = config::config_path(argc, argv, "BENCHFLEET_CLI_CONFIG");
  if (!path.empty()) return path;
  std::filesystem::path fallback;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    fallback = std::filesystem::path(xdg) / "benchfleet" / "cli.yaml";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    fallback = std::filesystem::path(home) / ".config" / "benchfleet" / "cli.yaml";
  }
  std::error_code ec;
  return !fallback.empty() && std::filesystem::is_regular_file(fallback, ec) ? fallback.string() : std::string();
}

Result<std::string> resolve_operator_token(const CliConfig& c) {
  if (!c.operator_token.empty() || c.operator_token_file.empty()) return c.operator_token;
  std::ifstream in(c.operator_token_file);
  std::string token;
  if (!in || !std::getline(in, token) || token.empty()) {
    return Error::invalid("operator_token_file", "cannot read a token from " + c.operator_token_file);
  }
  return token;
}

Status validate(const CliConfig& c) {
  if (c.url.rfind("http://", 0) != 0 || c.url.size() <= 7) {
    return Error::invalid("url", "must look like http://HOST:PORT, got \"" + c.url + "\"");
  }
  if (c.timeout_s < 1 || c.timeout_s > 3600) return Error::invalid("timeout_s", "must be 1..3600");
  return Status::Ok();
}

}  // namespace benchfleet::cli
