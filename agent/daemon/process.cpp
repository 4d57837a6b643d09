#include "agent/daemon/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

extern char** environ;

namespace benchfleet::agent {
namespace {

constexpr auto kPollStep = std::chrono::milliseconds(20);

std::vector<std::string> child_environment(const SpawnOptions& o) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (o.env_set.contains(key)) continue;
    if (std::find(o.env_unset.begin(), o.env_unset.end(), key) != o.env_unset.end()) continue;
    env.push_back(entry);
  }
  for (const auto& [k, v] : o.env_set) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

Result<Child> Child::spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Error::internal("spawn: empty argv");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = o.stdout_path.empty() ? "/dev/null" : o.stdout_path;
  const std::string err = o.stderr_path.empty() ? "/dev/null" : o.stderr_path;
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A new process group (pgid = child pid), so a kill reaches everything the child starts.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto env_strings = child_environment(o);
  std::vector<char*> envp;
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error::internal("cannot start " + o.argv[0] + ": " + std::strerror(rc));
  return Child(pid, o.signal_as_exit_status);
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_), signal_as_exit_status_(other.signal_as_exit_status_), started_(other.started_) {
  other.pid_ = -1;
}

Child::~Child() {
  if (pid_ > 0) kill_group(std::chrono::milliseconds(0));
}

ExitInfo Child::finish(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) info.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) info.signal = WTERMSIG(status);
  if (signal_as_exit_status_ && info.exit_code > 128 && info.exit_code < 128 + NSIG) {
    info.signal = info.exit_code - 128;
    info.exit_code = -1;
  }
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  pid_ = -1;
  return info;
}

std::optional<ExitInfo> Child::poll() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) return finish(status);
  return std::nullopt;
}

ExitInfo Child::kill_group(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return ExitInfo{};
  ::kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto done = poll()) return *done;
    std::this_thread::sleep_for(kPollStep);
  }
  const pid_t group = pid_;
  ::kill(-group, SIGKILL);
  int status = 0;
  ::waitpid(group, &status, 0);
  return finish(status);
}

ExitInfo supervise(Child& child, std::chrono::milliseconds timeout, std::chrono::milliseconds grace,
                   std::chrono::milliseconds tick_every, const std::function<bool()>& tick) {
  const auto start = std::chrono::steady_clock::now();
  auto next_tick = start + tick_every;
  while (true) {
    if (auto done = child.poll()) return *done;
    const auto now = std::chrono::steady_clock::now();
    if (now - start >= timeout) {
      ExitInfo info = child.kill_group(grace);
      info.timed_out = true;
      return info;
    }
    if (tick && now >= next_tick) {
      next_tick = now + tick_every;
      if (!tick()) {
        ExitInfo info = child.kill_group(grace);
        info.aborted = true;
        return info;
      }
    }
    std::this_thread::sleep_for(kPollStep);
  }
}

std::string tail_of_file(const std::string& path, std::size_t max_lines) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(std::move(line));
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) {
    if (!out.empty()) out += '\n';
    out += l;
  }
  return out;
}

}  // namespace benchfleet::agent
