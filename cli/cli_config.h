// Where the CLI finds the coordinator and its operator token.
// Precedence: defaults < YAML config file < environment (BENCHFLEET_URL, BENCHFLEET_OPERATOR_TOKEN,
// ...) < flags. The config file is --config, else $BENCHFLEET_CLI_CONFIG, else
// $XDG_CONFIG_HOME/benchfleet/cli.yaml (~/.config/benchfleet/cli.yaml) when that file exists.
#pragma once

#include <string>
#include <vector>

#include "common/config_options.h"
#include "common/result.h"

namespace benchfleet::cli {

struct CliConfig {
  std::string url = "http://127.0.0.1:8080";
  std::string operator_token;       // for submit, cancel, drain (and reads when they need it)
  std::string operator_token_file;  // read when operator_token is empty (e.g. <db>.operator-token)
  int timeout_s = 30;               // per request
};

// The options of CliConfig, for config::add_options and config::apply_yaml.
std::vector<config::Option> cli_options(CliConfig& config);

// The config file to read, or "" for none (see the top of this file).
std::string cli_config_path(int argc, char** argv);

// operator_token, else the first line of operator_token_file, else "" (reads without a token).
// An error naming operator_token_file when that file cannot be read.
Result<std::string> resolve_operator_token(const CliConfig& config);

// Checks the URL's shape and the timeout, naming the option.
Status validate(const CliConfig& config);

}  // namespace benchfleet::cli
