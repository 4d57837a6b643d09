// The real `benchfleet` CLI binary as a child process, for the integration tests that drive it:
// exit code, stdout and stderr apart.
#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace benchfleet::testing {

inline constexpr const char* kCli = BENCHFLEET_CLI_BIN;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A finished CLI process: exit code, stdout and stderr apart.
struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// The CLI as a child process; stdout and stderr go to files in `dir`. Environment: only what
// `env` sets among BENCHFLEET_* (a developer's settings cannot change the test), and HOME points
// into `dir` so no user config file is read.
class CliProcess {
 public:
  CliProcess(const std::string& dir, std::vector<std::string> args, std::map<std::string, std::string> env) {
    static int counter = 0;
    const std::string base = dir + "/cli-" + std::to_string(++counter);
    out_path_ = base + ".out";
    err_path_ = base + ".err";
    ChildOptions o;
    // sh splits the two streams; exec keeps the CLI the direct child.
    o.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$BF_TEST_ERR\"", kCli};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.log_file = out_path_;
    o.clean_environment = true;
    o.env_set = std::move(env);
    o.env_set["BF_TEST_ERR"] = err_path_;
    o.env_set["HOME"] = dir;
    o.env_set["XDG_CONFIG_HOME"] = dir + "/xdg";
    auto started = ChildProcess::start(o);
    if (!started.ok()) throw std::runtime_error("cannot start the CLI: " + started.error().message);
    process_ = std::move(started).value();
  }

  CliRun wait(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    auto status = process_.wait_exit(limit);
    CliRun r;
    if (!status) {
      process_.kill9();
      r.err = "(the CLI did not exit within the limit)";
      return r;
    }
    r.code = exit_code(*status);
    r.out = read_file(out_path_);
    r.err = read_file(err_path_);
    return r;
  }

 private:
  std::string out_path_, err_path_;
  ChildProcess process_;
};

}  // namespace benchfleet::testing
