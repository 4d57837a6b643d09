#include "tests/fault/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <tuple>

extern char** environ;

namespace benchfleet::testing {
namespace {

constexpr int kCapNetAdmin = 12;
constexpr int kCapSysAdmin = 21;

// The absolute path of `tool` (ip, tc) on $PATH or in the sbin folders; "" when none.
std::string tool_path(const std::string& tool) {
  std::string dirs = "/usr/sbin:/sbin:/usr/bin:/bin";
  if (const char* path = std::getenv("PATH"); path != nullptr && *path != '\0') dirs = std::string(path) + ":" + dirs;
  std::stringstream list(dirs);
  for (std::string dir; std::getline(list, dir, ':');) {
    const std::string candidate = dir + "/" + tool;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

const std::string& ip_tool() {
  static const std::string path = tool_path("ip");
  return path;
}

const std::string& tc_tool() {
  static const std::string path = tool_path("tc");
  return path;
}

// The effective capability set of this process (/proc/self/status CapEff); 0 when unreadable.
unsigned long long effective_capabilities() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CapEff:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 16);
  }
  return 0;
}

bool process_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

}  // namespace

bool has_network_admin(std::string& why_not) {
  const unsigned long long caps = effective_capabilities();
  if ((caps >> kCapNetAdmin & 1) == 0 || (caps >> kCapSysAdmin & 1) == 0) {
    why_not = "needs CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root) to make network namespaces";
    return false;
  }
  if (ip_tool().empty() || tc_tool().empty()) {
    why_not = "needs ip(8) and tc(8) (iproute2)";
    return false;
  }
  return true;
}

Result<std::string> run_command(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Error::internal(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (spawned == 0) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(out[0]);
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  if (spawned != 0) return Error::internal(command + ": " + std::strerror(spawned));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error::internal(command + " failed (status " + std::to_string(status) + "): " + text);
  }
  return text;
}

std::string describe(CutMethod method) {
  switch (method) {
    case CutMethod::kNetemLoss:
      return "tc qdisc netem loss 100% on both veth ends";
    case CutMethod::kDropQueue:
      return "tc qdisc pfifo limit 0 on both veth ends (every packet dropped; no sch_netem here)";
    case CutMethod::kLinkDown:
      return "ip link set down on both veth ends (no qdisc that drops here)";
  }
  return "?";
}

Status enter_network_namespace(const std::string& ns) {
  const std::string path = "/run/netns/" + ns;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::internal("open " + path + ": " + std::strerror(errno));
  const int entered = ::setns(fd, CLONE_NEWNET);
  const int saved = errno;
  ::close(fd);
  if (entered != 0) return Error::internal("setns " + path + ": " + std::strerror(saved));
  return Status::Ok();
}

Result<std::unique_ptr<NetnsPair>> NetnsPair::create(const std::string& prefix) {
  const pid_t self = ::getpid();
  // Stale namespaces: an earlier run of this program that was killed (ctest's timeout sends
  // SIGKILL) could not delete its own.
  BF_ASSIGN_OR_RETURN(const std::string listed, run_command({ip_tool(), "netns", "list"}));
  std::stringstream lines(listed);
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix + "-coord-", 0) != 0 && name.rfind(prefix + "-agent-", 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.substr(name.rfind('-') + 1).c_str()));
    if (owner != self && process_exists(owner)) continue;  // another run's, live
    auto deleted = run_command({ip_tool(), "netns", "delete", name});
    std::cerr << (deleted.ok() ? "removed the stale network namespace " + name + "\n"
                               : "cannot remove the stale namespace " + name + ": " + deleted.error().message + "\n");
  }

  std::unique_ptr<NetnsPair> pair(new NetnsPair());
  const std::string id = std::to_string(self);
  pair->coord_ns_ = prefix + "-coord-" + id;
  pair->agent_ns_ = prefix + "-agent-" + id;
  pair->coord_if_ = "bfc" + id;  // at most 15 characters (pids are at most 7 digits)
  pair->agent_if_ = "bfa" + id;
  const std::string subnet = "10.231." + std::to_string(self % 250) + ".";
  pair->coord_address_ = subnet + "1";
  pair->agent_address_ = subnet + "2";
  pair->created_ = true;  // from here on the destructor deletes whatever was made
  const std::string& ip = ip_tool();
  BF_RETURN_IF_ERROR(run_command({ip, "netns", "add", pair->coord_ns_}));
  BF_RETURN_IF_ERROR(run_command({ip, "netns", "add", pair->agent_ns_}));
  // Both ends are created inside their namespaces: the host never sees them.
  BF_RETURN_IF_ERROR(run_command({ip, "link", "add", pair->coord_if_, "netns", pair->coord_ns_, "type", "veth", "peer",
                                  "name", pair->agent_if_, "netns", pair->agent_ns_}));
  for (const auto& [ns, dev, address] : {std::tuple{pair->coord_ns_, pair->coord_if_, pair->coord_address_},
                                         std::tuple{pair->agent_ns_, pair->agent_if_, pair->agent_address_}}) {
    BF_RETURN_IF_ERROR(run_command({ip, "-n", ns, "addr", "add", address + "/30", "dev", dev}));
    BF_RETURN_IF_ERROR(run_command({ip, "-n", ns, "link", "set", "dev", "lo", "up"}));
    BF_RETURN_IF_ERROR(run_command({ip, "-n", ns, "link", "set", "dev", dev, "up"}));
  }
  return pair;
}

NetnsPair::~NetnsPair() {
  if (!created_) return;
  if (is_cut()) {
    if (auto healed = heal(); !healed.ok()) std::cerr << "heal: " << healed.error().message << "\n";
  }
  for (const auto& ns : {coord_ns_, agent_ns_}) {
    // Deleting a namespace deletes its veth end, and with it the pair.
    auto deleted = run_command({ip_tool(), "netns", "delete", ns});
    if (!deleted.ok() && deleted.error().message.find("No such file") == std::string::npos) {
      std::cerr << "cannot delete network namespace " << ns << ": " << deleted.error().message << "\n";
    }
  }
}

std::vector<std::string> NetnsPair::exec_in(const std::string& ns) const { return {ip_tool(), "netns", "exec", ns}; }

Status NetnsPair::run_in_both(const std::vector<std::string>& coord_args, const std::vector<std::string>& agent_args) {
  // Both are tried even when the first fails: a heal must undo what it can.
  auto coord_side = run_command(coord_args);
  auto agent_side = run_command(agent_args);
  if (!coord_side.ok()) return coord_side.error();
  if (!agent_side.ok()) return agent_side.error();
  return Status::Ok();
}

Result<CutMethod> NetnsPair::cut() {
  if (is_cut()) return Error::internal("NetnsPair::cut: already cut");
  const std::string& tc = tc_tool();
  const std::string& ip = ip_tool();
  const auto qdisc = [&](const std::string& ns, const std::string& dev, const std::vector<std::string>& kind) {
    std::vector<std::string> args = {tc, "-n", ns, "qdisc", "add", "dev", dev, "root"};
    args.insert(args.end(), kind.begin(), kind.end());
    return args;
  };
  const std::vector<std::pair<CutMethod, std::vector<std::string>>> qdiscs = {
      {CutMethod::kNetemLoss, {"netem", "loss", "100%"}}, {CutMethod::kDropQueue, {"pfifo", "limit", "0"}}};
  std::string failures;
  for (const auto& [method, kind] : qdiscs) {
    auto coord_side = run_command(qdisc(coord_ns_, coord_if_, kind));
    if (!coord_side.ok()) {
      failures += coord_side.error().message;
      continue;
    }
    auto agent_side = run_command(qdisc(agent_ns_, agent_if_, kind));
    if (agent_side.ok()) return *(method_ = method);
    failures += agent_side.error().message;
    (void)run_command({tc, "-n", coord_ns_, "qdisc", "del", "dev", coord_if_, "root"});
  }
  std::cerr << "no qdisc drops packets here (" << failures << "); cutting by taking the links down\n";
  BF_RETURN_IF_ERROR(run_in_both({ip, "-n", coord_ns_, "link", "set", "dev", coord_if_, "down"},
                                 {ip, "-n", agent_ns_, "link", "set", "dev", agent_if_, "down"}));
  return *(method_ = CutMethod::kLinkDown);
}

Status NetnsPair::heal() {
  if (!method_) return Status::Ok();
  const CutMethod method = *method_;
  method_.reset();
  if (method == CutMethod::kLinkDown) {
    return run_in_both({ip_tool(), "-n", coord_ns_, "link", "set", "dev", coord_if_, "up"},
                       {ip_tool(), "-n", agent_ns_, "link", "set", "dev", agent_if_, "up"});
  }
  return run_in_both({tc_tool(), "-n", coord_ns_, "qdisc", "del", "dev", coord_if_, "root"},
                     {tc_tool(), "-n", agent_ns_, "qdisc", "del", "dev", agent_if_, "root"});
}

}  // namespace benchfleet::testing
