#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

extern char** environ;

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

// Waits for `pid`, retrying when a signal interrupts the wait. Returns its status.
int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

int exit_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "signal " + std::to_string(WTERMSIG(wait_status));
  return "status " + std::to_string(wait_status);
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  const std::string text = out.str();
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

Result<ChildProcess> ChildProcess::start(const ChildOptions& options) {
  if (options.argv.empty()) return Error::internal("ChildProcess::start: empty argv");
  if (::access(options.argv[0].c_str(), X_OK) != 0) {
    return Error::invalid("binary", "cannot execute " + options.argv[0] + ": " + std::strerror(errno));
  }

  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (options.clean_environment && entry.rfind("BENCHFLEET_", 0) == 0) continue;
    if (options.env_set.contains(entry.substr(0, entry.find('=')))) continue;
    env.push_back(entry);
  }
  for (const auto& [key, value] : options.env_set) env.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int log_fd = ::open(options.log_file.c_str(),
                            O_WRONLY | O_CREAT | O_CLOEXEC | (options.append_log ? O_APPEND : O_TRUNC), 0644);
  if (log_fd < 0) return Error::internal("cannot open " + options.log_file + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  // The test's own signal mask and dispositions are not the child's business.
  sigset_t none;
  sigemptyset(&none);

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return Error::internal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);       // nobody reads its answers any more
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "ChildProcess: execve failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill9();
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() { kill9(); }

bool ChildProcess::signal(int signo) const { return pid_ > 0 && ::kill(pid_, signo) == 0; }

std::optional<int> ChildProcess::poll() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    pid_ = -1;
    return status;
  }
  if (r < 0) {  // not our child any more: nothing left to reap
    pid_ = -1;
    return -1;
  }
  return std::nullopt;
}

std::optional<int> ChildProcess::wait_exit(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (auto status = poll()) return status;
    if (pid_ <= 0) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

ChildProcess::Exit ChildProcess::stop(std::chrono::milliseconds grace) {
  Exit out;
  if (pid_ <= 0) return out;
  ::kill(pid_, SIGTERM);
  if (auto status = wait_exit(grace)) {
    out.status = *status;
    return out;
  }
  if (pid_ <= 0) return out;
  out.status = kill9();
  out.killed_after_grace = true;
  return out;
}

int ChildProcess::kill9() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGKILL);
  const int status = reap(pid_);
  pid_ = -1;
  return status;
}

}  // namespace benchfleet::testing
