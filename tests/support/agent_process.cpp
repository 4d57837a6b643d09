#include "tests/support/agent_process.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The fields of /proc/<pid>/stat after the command name ("pid (comm) state ppid pgrp ..."; comm
// may hold spaces and parentheses, so parse from the last ')').
struct Stat {
  char state = '?';  // '?' when unreadable (gone)
  pid_t ppid = -1;
  pid_t pgrp = -1;
};
Stat stat_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  Stat out;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream rest(line.substr(close + 1));
  rest >> out.state >> out.ppid >> out.pgrp;
  if (!rest) out = Stat{};
  return out;
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    out.push_back(static_cast<pid_t>(std::atol(name.c_str())));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  if (parent <= 0) return out;
  for (pid_t pid : all_pids()) {
    if (stat_of(pid).ppid == parent) out.push_back(pid);
  }
  return out;
}

std::string command_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

std::vector<std::string> command_line(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> out;
  std::string arg;
  while (std::getline(in, arg, '\0')) out.push_back(arg);
  return out;
}

bool process_alive(pid_t pid) {
  const char state = pid > 0 ? stat_of(pid).state : '?';
  return state != '?' && state != 'Z' && state != 'X';
}

bool process_group_alive(pid_t pgid) {
  if (pgid <= 0 || (::kill(-pgid, 0) != 0 && errno == ESRCH)) return false;
  for (pid_t pid : all_pids()) {
    const Stat s = stat_of(pid);
    if (s.pgrp == pgid && s.state != 'Z' && s.state != 'X') return true;
  }
  return false;
}

AgentProcess::AgentProcess(AgentOptions options) : options_(std::move(options)) {
  if (options_.log_file.empty()) options_.log_file = options_.state_dir + ".log";
}

AgentProcess::~AgentProcess() {
  if (process_.running()) kill_host();
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- agent " << options_.name << " log (" << options_.log_file << ") ----\n"
              << log_tail() << "\n---- end of agent " << options_.name << " log ----\n";
  }
}

void AgentProcess::start() {
  if (process_.running()) throw std::runtime_error("AgentProcess::start: agent " + options_.name + " already runs");
  ChildOptions o;
  o.argv = options_.wrapper;
  o.argv.insert(o.argv.end(), {options_.binary, "--coordinator", options_.coordinator_url, "--state-dir",
                               options_.state_dir, "--name", options_.name});
  if (!options_.config_file.empty()) {
    o.argv.push_back("--config");
    o.argv.push_back(options_.config_file);
  }
  for (const auto& a : options_.extra_args) o.argv.push_back(a);
  o.log_file = options_.log_file;
  o.append_log = true;
  o.clean_environment = true;  // a developer's $BENCHFLEET_* must not change the test
  if (!options_.enrollment_token.empty()) o.env_set["BENCHFLEET_ENROLLMENT_TOKEN"] = options_.enrollment_token;
  auto child = ChildProcess::start(o);
  if (!child.ok()) throw std::runtime_error("agent " + options_.name + ": " + child.error().message);
  process_ = std::move(*child);
}

bool AgentProcess::running() {
  if (!process_.running()) return false;
  (void)process_.poll();
  return process_.running();
}

void AgentProcess::sigterm() {
  if (!process_.signal(SIGTERM))
    throw std::runtime_error("AgentProcess::sigterm: agent " + options_.name + " is not running");
}

std::optional<int> AgentProcess::wait_exit(std::chrono::milliseconds limit) { return process_.wait_exit(limit); }

void AgentProcess::kill9() { process_.kill9(); }

void AgentProcess::freeze() {
  if (!process_.signal(SIGSTOP))
    throw std::runtime_error("AgentProcess::freeze: agent " + options_.name + " is not running");
  // Delivery is asynchronous: wait (bounded) until /proc shows the process stopped.
  for (int i = 0; i < 1000; ++i) {
    const char state = stat_of(process_.pid()).state;
    if (state == 'T' || state == '?' || state == 'Z') return;
    std::this_thread::sleep_for(1ms);
  }
  throw std::runtime_error("AgentProcess::freeze: agent " + options_.name + " did not stop within 1 s of SIGSTOP");
}

void AgentProcess::thaw() { process_.signal(SIGCONT); }

std::vector<pid_t> AgentProcess::kill_host() {
  if (!process_.running()) return {};
  try {
    freeze();  // it starts nothing between the look at its children and its death
  } catch (const std::exception&) {
    // Gone meanwhile, or not stopping: kill whatever is found.
  }
  const std::vector<pid_t> groups = children();
  process_.kill9();
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  return groups;
}

std::vector<pid_t> AgentProcess::children() const { return children_of(process_.pid()); }

std::vector<pid_t> AgentProcess::children_named(const std::string& prefix) const {
  std::vector<pid_t> out;
  for (pid_t p : children()) {
    if (command_name(p).rfind(prefix, 0) == 0) out.push_back(p);
  }
  return out;
}

std::vector<std::string> AgentProcess::spool_entries() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(spool_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("job-", 0) == 0 && entry.path().extension() == ".json") out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string AgentProcess::log_tail(std::size_t max_bytes) const { return file_tail(options_.log_file, max_bytes); }

std::string AgentProcess::log() const {
  std::ifstream in(options_.log_file, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace benchfleet::testing
