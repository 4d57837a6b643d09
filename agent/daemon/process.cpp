#include "agent/daemon/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/json_reader.h"
#include "common/process_spawn.h"

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

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// This boot's identity: a start time read from /proc means nothing across a reboot.
std::string boot_id() {
  std::string id = read_small_file("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// From /proc/<pid>/stat: state, process group and start time (clock ticks after boot).
struct ProcStat {
  char state = '?';
  pid_t pgrp = 0;
  std::uint64_t start_ticks = 0;
};
std::optional<ProcStat> proc_stat(pid_t pid) {
  const std::string text = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string field; fields >> field;) f.push_back(field);
  if (f.size() < 20) return std::nullopt;  // f[0] is field 3 (state), f[19] field 22 (starttime)
  ProcStat st;
  st.state = f[0].empty() ? '?' : f[0][0];
  try {
    st.pgrp = static_cast<pid_t>(std::stol(f[2]));
    st.start_ticks = std::stoull(f[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return st;
}

// Alive and still the process that started at `start_ticks` (a zombie has ended).
bool still_running(pid_t pid, std::uint64_t start_ticks) {
  auto st = proc_stat(pid);
  return st && st->state != 'Z' && st->state != 'X' && st->start_ticks == start_ticks;
}

std::string random_token() {
  std::random_device rd;
  std::ostringstream out;
  out << std::hex;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(rd()));
    out << part;
  }
  return out.str();
}

bool is_token(const std::string& s) {
  return s.size() == 32 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// Written beside and renamed, so a reader sees a whole record or none.
void write_record(const std::string& path, const nlohmann::json& record) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << record.dump() << '\n';
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
}

// The pids of live processes whose environment holds `<kChildTokenVariable>=<token>`, by token.
std::map<std::string, std::vector<pid_t>> processes_by_token() {
  std::map<std::string, std::vector<pid_t>> out;
  const std::string prefix = std::string(kChildTokenVariable) + "=";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    const std::string environ_text =
        read_small_file("/proc/" + name + "/environ");  // ours only: others' are unreadable
    for (std::size_t at = 0; at < environ_text.size();) {
      std::size_t end = environ_text.find('\0', at);
      if (end == std::string::npos) end = environ_text.size();
      if (environ_text.compare(at, prefix.size(), prefix) == 0) {
        out[environ_text.substr(at + prefix.size(), end - at - prefix.size())].push_back(pid);
      }
      at = end + 1;
    }
  }
  return out;
}

}  // namespace

Result<Child> Child::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Error::internal("spawn: empty argv");
  SpawnOptions o = options;
  std::string record;
  nlohmann::json record_json;
  if (!o.record_dir.empty()) {
    // Recorded before the spawn: an agent killed between the spawn and the second write below
    // still leaves the token, by which its next life finds the child.
    std::error_code ec;
    std::filesystem::create_directories(o.record_dir, ec);
    const std::string token = random_token();
    record = o.record_dir + "/" + token + ".json";
    record_json = {{"token", token}, {"program", o.argv[0]}, {"agent_pid", ::getpid()}, {"boot_id", boot_id()}};
    write_record(record, record_json);
    o.env_set[kChildTokenVariable] = token;
  }
  SpawnSpec spec;
  spec.argv = o.argv;
  spec.env = child_environment(o);
  spec.stdout_to = ChildOutput::to_file(o.stdout_path);
  spec.stderr_to = ChildOutput::to_file(o.stderr_path);
  const auto spawned = spawn_in_own_group(spec);
  if (!spawned.ok()) {
    if (!record.empty()) ::unlink(record.c_str());
    return spawned.error();
  }
  const pid_t pid = *spawned;
  if (!record.empty()) {
    record_json["pid"] = pid;  // also its process group (POSIX_SPAWN_SETPGROUP, pgid 0)
    if (auto st = proc_stat(pid)) record_json["start_ticks"] = st->start_ticks;
    write_record(record, record_json);
  }
  return Child(pid, o.signal_as_exit_status, std::move(record));
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_),
      signal_as_exit_status_(other.signal_as_exit_status_),
      started_(other.started_),
      record_(std::move(other.record_)) {
  other.pid_ = -1;
  other.record_.clear();
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
  if (!record_.empty()) ::unlink(record_.c_str());
  record_.clear();
  return info;
}

std::optional<ExitInfo> Child::poll() {
  if (pid_ <= 0) return std::nullopt;
  // Seen exited but not reaped yet: while the leader is a zombie its pid (the group's id)
  // cannot be reused, so what it left running in its group is killed safely first.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid_) {
    return std::nullopt;
  }
  ::kill(-pid_, SIGKILL);
  int status = 0;
  if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
  return finish(status);
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
                   std::chrono::milliseconds tick_every, const std::function<bool()>& tick,
                   const std::function<void()>& each_poll) {
  const auto start = std::chrono::steady_clock::now();
  auto next_tick = start + tick_every;
  while (true) {
    if (auto done = child.poll()) return *done;
    if (each_poll) each_poll();
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

OrphanSweep kill_orphaned_children(const std::string& record_dir, std::chrono::milliseconds wait) {
  OrphanSweep sweep;
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> records;
  for (const auto& entry : fs::directory_iterator(record_dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() == ".json") records.push_back(p);
    if (p.extension() == ".tmp") fs::remove(p, ec);  // half-written: its final form is there or never was
  }
  if (records.empty()) return sweep;
  const auto by_token = processes_by_token();
  const std::string this_boot = boot_id();
  std::vector<std::pair<pid_t, std::uint64_t>> doomed;  // (pid, start time) of everything killed
  std::set<pid_t> seen;
  auto doom = [&](pid_t pid) {
    if (pid <= 1 || pid == ::getpid() || !seen.insert(pid).second) return;
    if (auto st = proc_stat(pid); st && st->state != 'Z') doomed.emplace_back(pid, st->start_ticks);
  };
  for (const fs::path& path : records) {
    ++sweep.records;
    // The record is this program's own file; still read without trusting it.
    auto parsed = parse_json(read_small_file(path.string()));
    std::string token, recorded_boot;
    std::int64_t pid = 0, start_ticks = -1;
    if (parsed.ok() && parsed->is_object()) {
      JsonReader r(*parsed, path.filename().string());
      r.required("token", token);
      r.optional("boot_id", recorded_boot);
      r.optional("pid", pid);
      r.optional("start_ticks", start_ticks);
      if (r.failed() || !is_token(token)) token.clear();
    }
    if (!token.empty()) {
      // The recorded leader, if it is still that very process: its whole group.
      if (pid > 1 && pid <= std::numeric_limits<pid_t>::max() && start_ticks >= 0 && recorded_boot == this_boot) {
        const auto leader = static_cast<pid_t>(pid);
        if (auto st = proc_stat(leader); st && st->state != 'Z' && st->pgrp == leader &&
                                         st->start_ticks == static_cast<std::uint64_t>(start_ticks)) {
          doom(leader);
          ::kill(-leader, SIGKILL);
        }
      }
      // Everything that carries the token (its descendants, wherever their group).
      if (auto it = by_token.find(token); it != by_token.end()) {
        for (pid_t p : it->second) doom(p);
      }
    }
    for (const auto& [p, start] : doomed) {
      if (still_running(p, start)) ::kill(p, SIGKILL);
    }
    fs::remove(path, ec);
  }
  // Orphans are reaped by init (or a subreaper): wait for them to be gone.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (const auto& [p, start] : doomed) {
    sweep.killed.push_back(p);
    while (still_running(p, start) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(kPollStep);
    if (still_running(p, start)) sweep.survivors.push_back(p);
  }
  return sweep;
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
