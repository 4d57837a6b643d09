#include "slurm/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/process_spawn.h"

namespace benchfleet::slurm {
namespace {

// Closes its descriptors when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

Status make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Error{ErrorCode::kUnavailable, std::string("pipe: ") + std::strerror(errno), {}};
  read_end.fd = fds[0];
  write_end.fd = fds[1];
  return Status::Ok();
}

std::string first_line(const std::string& text) {
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return {};
  const auto end = text.find('\n', start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

std::string CommandOutput::describe_failure() const {
  std::string what =
      signal != 0 ? "killed by signal " + std::to_string(signal) : "exit status " + std::to_string(exit_code);
  const std::string detail = first_line(err).empty() ? first_line(out) : first_line(err);
  return detail.empty() ? what : what + ": " + detail.substr(0, 300);
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& word : argv) {
    if (!line.empty()) line += ' ';
    line += word.find_first_of(" \t'\"") == std::string::npos ? word : "'" + word + "'";
  }
  return line;
}

Result<CommandOutput> ProcessRunner::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const std::string program = argv.empty() ? std::string() : argv[0];
  auto unavailable = [&](const std::string& why) { return Error{ErrorCode::kUnavailable, program + ": " + why, {}}; };
  if (argv.empty()) return Error::internal("ProcessRunner::run: empty argv");
  Fd out_read, out_write, err_read, err_write;
  BF_RETURN_IF_ERROR(make_pipe(out_read, out_write));
  BF_RETURN_IF_ERROR(make_pipe(err_read, err_write));

  SpawnSpec spec;
  spec.argv = argv;
  spec.stdout_to = ChildOutput::to_fd(out_write.fd);
  spec.stderr_to = ChildOutput::to_fd(err_write.fd);
  BF_ASSIGN_OR_RETURN(const pid_t pid, spawn_in_own_group(spec));
  out_write.reset();
  err_write.reset();

  CommandOutput result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  std::array<char, 65536> buffer{};
  std::array<pollfd, 2> fds{pollfd{out_read.fd, POLLIN, 0}, pollfd{err_read.fd, POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (got > 0) {
        const auto room = output_limit_ > sinks[i]->size() ? output_limit_ - sinks[i]->size() : 0;
        sinks[i]->append(buffer.data(), std::min<std::size_t>(room, static_cast<std::size_t>(got)));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;  // EOF (the Fd objects close them)
        --open_fds;
      }
    }
  }
  if (timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  // After EOF the child exits soon (or has exited); wait for it within what is left.
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, timed_out ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return unavailable(std::string("waitpid: ") + std::strerror(errno));
    if (w == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        timed_out = true;
        ::kill(-pid, SIGKILL);
        continue;
      }
      ::usleep(10000);
    }
  }
  if (timed_out) {
    return unavailable("did not finish within " + std::to_string(timeout.count()) + " ms (killed)");
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace benchfleet::slurm
