#include "common/process_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace benchfleet {
namespace {

void redirect(posix_spawn_file_actions_t& actions, int stream, const ChildOutput& to) {
  if (to.fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, to.fd, stream);
  } else {
    const std::string path = to.path.empty() ? "/dev/null" : to.path;
    posix_spawn_file_actions_addopen(&actions, stream, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
}

// For execve, whose signature takes char* const[].
std::vector<char*> pointers_to(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));  // NOLINT: execve's signature
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<pid_t> spawn_in_own_group(const SpawnSpec& spec) {
  if (spec.argv.empty()) return Error{ErrorCode::kUnavailable, "cannot start a program: empty argv", {}};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  redirect(actions, STDOUT_FILENO, spec.stdout_to);
  redirect(actions, STDERR_FILENO, spec.stderr_to);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // pgid = the child's pid
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

  const auto argv = pointers_to(spec.argv);
  std::vector<char*> envp;
  if (spec.env) envp = pointers_to(*spec.env);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), spec.env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error{ErrorCode::kUnavailable, "cannot start " + spec.argv[0] + ": " + std::strerror(rc), {}};
  return pid;
}

Status run_to_end(std::vector<std::string> argv, const std::string& stderr_file) {
  SpawnSpec spec;
  spec.argv = std::move(argv);
  spec.stderr_to = ChildOutput::to_file(stderr_file);
  BF_ASSIGN_OR_RETURN(const pid_t pid, spawn_in_own_group(spec));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string why;
  {
    std::ifstream in(stderr_file);
    why.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ::unlink(stderr_file.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  const std::string how =
      WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status));
  return Error::internal(spec.argv.front() + " failed (" + how + "): " + why.substr(0, 500));
}

}  // namespace benchfleet
