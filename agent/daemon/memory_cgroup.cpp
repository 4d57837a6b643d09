#include "agent/daemon/memory_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/process_spawn.h"

namespace benchfleet::agent {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, separator)) out.push_back(field);
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// "<prefix> N" on a line of a flat-keyed cgroup file (memory.events, memory.oom_control).
std::int64_t keyed_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string name;
  std::int64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return 0;
}

std::int64_t number_in(const std::string& path) {
  std::int64_t value = 0;
  std::ifstream(path) >> value;
  return value;
}

// A cgroup path inside its mount: the mount's root is a prefix of the process's path (a
// container sees "/" for both), else the process's cgroup is not under this mount.
std::optional<std::string> under_mount(const std::string& mount_point, const std::string& mount_root,
                                       const std::string& cgroup_path) {
  if (mount_root == "/") return mount_point + (cgroup_path == "/" ? "" : cgroup_path);
  if (cgroup_path.rfind(mount_root, 0) != 0) return std::nullopt;
  const std::string rest = cgroup_path.substr(mount_root.size());
  if (!rest.empty() && rest.front() != '/') return std::nullopt;
  return mount_point + rest;
}

}  // namespace

std::optional<CgroupLocation> locate_memory_cgroup(const std::string& proc_self_cgroup,
                                                   const std::string& proc_self_mountinfo,
                                                   const std::string& v2_subtree_control) {
  // /proc/self/cgroup: "hierarchy-id:controllers:path"; v2 is "0::path".
  std::optional<std::string> v1_path;
  std::optional<std::string> v2_path;
  for (const std::string& line : split(proc_self_cgroup, '\n')) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) v2_path = path;
    for (const std::string& c : split(controllers, ',')) {
      if (c == "memory") v1_path = path;
    }
  }
  // mountinfo: "id parent major:minor root mount-point options [optional...] - fstype source super-options".
  std::optional<CgroupLocation> v1;
  std::optional<CgroupLocation> v2;
  for (const std::string& line : split(proc_self_mountinfo, '\n')) {
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string f; in >> f;) fields.push_back(f);
    std::size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 >= fields.size()) continue;
    const std::string& root = fields[3];
    const std::string& mount_point = fields[4];
    const std::string& fstype = fields[dash + 1];
    const std::string& super_options = fields[dash + 3];
    if (fstype == "cgroup" && v1_path && !v1) {
      bool memory = false;
      for (const std::string& o : split(super_options, ',')) memory = memory || o == "memory";
      if (!memory) continue;
      if (auto dir = under_mount(mount_point, root, *v1_path)) v1 = CgroupLocation{CgroupVersion::kV1, *dir};
    } else if (fstype == "cgroup2" && v2_path && !v2) {
      if (auto dir = under_mount(mount_point, root, *v2_path)) v2 = CgroupLocation{CgroupVersion::kV2, *dir};
    }
  }
  if (v2) {
    std::istringstream controllers(v2_subtree_control);
    for (std::string c; controllers >> c;) {
      if (c == "memory") return v2;
    }
  }
  return v1;
}

std::optional<CgroupLocation> this_process_memory_cgroup() {
  const std::string cgroup = read_text("/proc/self/cgroup");
  const std::string mountinfo = read_text("/proc/self/mountinfo");
  // The v2 directory's subtree_control decides between the two: locate once without it.
  std::string subtree;
  if (auto v2 = locate_memory_cgroup(cgroup, mountinfo, "memory"); v2 && v2->version == CgroupVersion::kV2) {
    subtree = read_text(v2->directory + "/cgroup.subtree_control");
  }
  return locate_memory_cgroup(cgroup, mountinfo, subtree);
}

std::vector<std::string> joining_cgroup(const std::string& cgroup, std::vector<std::string> argv) {
  // The shell writes its own pid ("0": the writer) and then becomes the program: no window in
  // which the program, or a process it forks (bubblewrap forks the root's), is outside.
  std::vector<std::string> out = {"/bin/sh", "-c",
                                  "echo 0 > \"$0/cgroup.procs\" || { echo \"cannot join the memory cgroup $0\" >&2; "
                                  "exit 125; }; exec \"$@\"",
                                  cgroup};
  out.insert(out.end(), std::make_move_iterator(argv.begin()), std::make_move_iterator(argv.end()));
  return out;
}

int remove_stale_job_cgroups(const CgroupLocation& where) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(where.directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || name.rfind(kJobCgroupPrefix, 0) != 0) continue;
    // "benchfleet-<agent pid>-...": only an agent that is gone leaves its cgroups to others (a
    // live one may have just made one its job has not joined yet).
    const std::string rest = name.substr(kJobCgroupPrefix.size());
    const std::size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string::npos || rest[digits] != '-') continue;
    const pid_t owner = static_cast<pid_t>(std::stol(rest.substr(0, digits)));
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;
    if (::rmdir(entry.path().c_str()) == 0) ++removed;  // EBUSY: its job still runs; it stays
  }
  return removed;
}

Status probe_memory_cgroup(const CgroupLocation& where) {
  auto made = JobMemoryCgroup::create(where, std::string(kJobCgroupPrefix) + std::to_string(::getpid()) + "-probe");
  if (!made.ok()) return made.error();
  SpawnSpec spec;
  spec.argv = joining_cgroup(made->path(), {"/bin/true"});
  auto pid = spawn_in_own_group(spec);
  if (!pid.ok()) return pid.error();
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{ErrorCode::kUnavailable, "a process cannot join a memory cgroup under " + where.directory, {}};
  }
  return Status::Ok();
}

Result<JobMemoryCgroup> JobMemoryCgroup::create(const CgroupLocation& where, const std::string& name) {
  const std::string path = where.directory + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error{ErrorCode::kUnavailable, "cannot make the memory cgroup " + path + ": " + std::strerror(errno), {}};
  }
  JobMemoryCgroup made(where.version, path);
  if (where.version == CgroupVersion::kV2) {
    // Past the cap the job is killed, not swapped out: a card has no swap either.
    (void)made.write("memory.swap.max", "0");
  }
  return made;
}

JobMemoryCgroup::JobMemoryCgroup(JobMemoryCgroup&& other) noexcept
    : version_(other.version_),
      path_(std::exchange(other.path_, {})),
      capped_(other.capped_),
      growth_bytes_(other.growth_bytes_),
      base_bytes_(other.base_bytes_) {}

JobMemoryCgroup::~JobMemoryCgroup() {
  if (path_.empty()) return;
  // The job's processes are reaped by now, but the kernel may still be tearing the last ones down.
  for (int i = 0; i < 50; ++i) {
    if (::rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status JobMemoryCgroup::write(const char* file, const std::string& value) const {
  const std::string target = path_ + "/" + file;
  const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error{ErrorCode::kUnavailable, "cannot open " + target + ": " + std::strerror(errno), {}};
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return Error{ErrorCode::kUnavailable, "cannot write " + value + " to " + target + ": " + std::strerror(saved), {}};
  }
  return Status::Ok();
}

Status JobMemoryCgroup::add(pid_t pid) { return write("cgroup.procs", std::to_string(pid)); }

Status JobMemoryCgroup::cap(std::int64_t growth_bytes) {
  const CgroupMemoryUsage now = usage();
  const std::string limit = std::to_string(now.current_bytes + growth_bytes);
  if (auto s = write(version_ == CgroupVersion::kV1 ? "memory.limit_in_bytes" : "memory.max", limit); !s) return s;
  if (version_ == CgroupVersion::kV1) (void)write("memory.max_usage_in_bytes", "0");  // the peak from here on
  capped_ = true;
  growth_bytes_ = growth_bytes;
  base_bytes_ = now.current_bytes;
  return Status::Ok();
}

Status JobMemoryCgroup::lift() {
  return version_ == CgroupVersion::kV1 ? write("memory.limit_in_bytes", "-1") : write("memory.max", "max");
}

CgroupMemoryUsage JobMemoryCgroup::usage() const {
  CgroupMemoryUsage u;
  if (version_ == CgroupVersion::kV1) {
    u.current_bytes = number_in(path_ + "/memory.usage_in_bytes");
    u.peak_bytes = number_in(path_ + "/memory.max_usage_in_bytes");
    u.oom_kills = keyed_value(read_text(path_ + "/memory.oom_control"), "oom_kill");
  } else {
    u.current_bytes = number_in(path_ + "/memory.current");
    u.peak_bytes = number_in(path_ + "/memory.peak");
    u.oom_kills = keyed_value(read_text(path_ + "/memory.events"), "oom_kill");
  }
  return u;
}

}  // namespace benchfleet::agent
