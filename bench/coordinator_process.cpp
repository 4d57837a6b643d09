#include "bench/coordinator_process.h"

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

namespace benchfleet::bench {
namespace {

// Exit code of a wait status: the code, or 128 + signal.
int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > max_bytes ? all.substr(all.size() - max_bytes) : all;
}

Result<std::unique_ptr<CoordinatorProcess>> CoordinatorProcess::start(const CoordinatorOptions& options,
                                                                      std::chrono::milliseconds timeout) {
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return Error::invalid("coordinator", "cannot execute " + options.binary + ": " + std::strerror(errno));
  }
  const std::string port_file = options.db + ".port";
  ::unlink(port_file.c_str());
  std::vector<std::string> args = {options.binary,
                                   "--listen", "127.0.0.1:0",
                                   "--db", options.db,
                                   "--port-file", port_file,
                                   "--operator-token", options.operator_token,
                                   "--enrollment-token", options.enrollment_token,
                                   "--threads", std::to_string(options.threads),
                                   "--log-level", "warn"};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int log_fd = ::open(options.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return Error::internal("cannot create " + options.log_file + ": " + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return Error::internal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // nobody reads its answers any more
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  std::unique_ptr<CoordinatorProcess> child(new CoordinatorProcess(pid, options.log_file));

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      child->reaped_ = true;
      child->exit_code_ = decode_status(status);
      return Error::internal("the coordinator exited with code " + std::to_string(child->exit_code_) +
                             " before listening; its log ends with:\n" + file_tail(options.log_file));
    }
    std::ifstream in(port_file);
    unsigned port = 0;
    if (in >> port && port > 0 && port < 65536) {
      child->port_ = static_cast<unsigned short>(port);
      return child;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  child->stop(std::chrono::seconds(2));
  return Error::internal("the coordinator wrote no port file within " + std::to_string(timeout.count()) +
                         " ms; its log ends with:\n" + file_tail(options.log_file));
}

CoordinatorProcess::~CoordinatorProcess() { stop(std::chrono::seconds(5)); }

int CoordinatorProcess::stop(std::chrono::milliseconds grace) {
  if (reaped_ || pid_ <= 0) return exit_code_;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) {  // not our child any more: nothing left to reap
      reaped_ = true;
      exit_code_ = 255;
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reaped_ = true;
  exit_code_ = decode_status(status);
  return exit_code_;
}

}  // namespace benchfleet::bench
