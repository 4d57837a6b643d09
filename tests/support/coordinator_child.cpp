#include "tests/support/coordinator_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kLogTailBytes = 8192;  // of the log, quoted in start-up errors

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// Waits for `pid`, retrying when a signal interrupts the wait. Returns its status.
int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string coordinator_binary() {
  if (const char* env = std::getenv("BENCHFLEET_COORDINATOR_BIN"); env != nullptr && *env != '\0') return env;
  return BENCHFLEET_COORDINATOR_BIN;
}

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
  const std::string text = read_file(path);
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

Result<std::unique_ptr<CoordinatorChild>> CoordinatorChild::start(const LaunchOptions& options) {
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return Error::invalid("coordinator", "cannot execute " + options.binary + ": " + std::strerror(errno));
  }
  ::unlink(options.port_file.c_str());

  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> args = {options.binary, "--listen", "127.0.0.1:0", "--port-file", options.port_file};
  for (const auto& [flag, value] : options.flags) {
    args.push_back(flag);
    args.push_back(value);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!options.clean_environment || std::strncmp(*e, "BENCHFLEET_", 11) != 0) envp.push_back(*e);
  }
  envp.push_back(nullptr);
  const int log_fd = ::open(options.log_file.c_str(),
                            O_WRONLY | O_CREAT | O_CLOEXEC | (options.append_log ? O_APPEND : O_TRUNC), 0644);
  if (log_fd < 0) return Error::internal("cannot open " + options.log_file + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return Error::internal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // nobody reads its answers any more
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "CoordinatorChild: execve failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  std::unique_ptr<CoordinatorChild> child(new CoordinatorChild(pid));

  const auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  while (true) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      child->pid_ = -1;
      return Error::internal("benchfleet-coordinator (" + options.binary + ") exited during start-up with " +
                             describe_wait_status(status) + "; its log ends with:\n" +
                             file_tail(options.log_file, kLogTailBytes));
    }
    // The coordinator writes "<port>\n": without the newline the file may be half written.
    const std::string text = read_file(options.port_file);
    if (!text.empty() && text.back() == '\n') {
      child->port_ = std::atoi(text.c_str());
      if (child->port_ > 0) return child;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      child->kill9();
      return Error::internal("benchfleet-coordinator wrote no port file " + options.port_file + " within " +
                             std::to_string(options.start_timeout.count()) + " ms; its log ends with:\n" +
                             file_tail(options.log_file, kLogTailBytes));
    }
    std::this_thread::sleep_for(10ms);
  }
}

CoordinatorChild::~CoordinatorChild() { kill9(); }

CoordinatorChild::Exit CoordinatorChild::stop(std::chrono::milliseconds grace) {
  Exit out;
  if (pid_ <= 0) return out;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (true) {
    const pid_t r = ::waitpid(pid_, &out.status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) break;  // not our child any more: nothing left to reap
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      out.status = reap(pid_);
      out.killed_after_grace = true;
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  pid_ = -1;
  return out;
}

void CoordinatorChild::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(pid_);
  pid_ = -1;
}

}  // namespace benchfleet::testing
