// A CPU job's memory cap on its resident memory: a memory cgroup of its own, made by the agent
// (which can write the cgroup tree; a job in a torch build's root sees /sys read-only).
//
// The cap means what it means under the address-space fallback (the worker's and the runner's
// RLIMIT_AS): the job may add at most `limit` bytes after its start-up (torch imported, its
// threads and BLAS started), so a matrix's memory_limit_mb reads the same on every host; here it
// counts RAM actually charged (RSS and page cache, of every process the job starts: Inductor's
// compile workers and their compilers too) instead of address space reserved. The job asks for
// the cap once started and for its lifting before its accuracy check (whose float64 model needs
// more), through a request file the agent reads while it supervises the job (JobMemoryRequests
// in job_runner.cpp). Past the cap the kernel's OOM killer ends the job, and the cgroup counts it.
//
// cgroup v2 (memory.max, memory.events, memory.peak) where the agent's own cgroup has the memory
// controller enabled for its children (a systemd unit with Delegate=yes), else cgroup v1's memory
// hierarchy (memory.limit_in_bytes, memory.oom_control, memory.max_usage_in_bytes). Neither: the
// job caps itself with RLIMIT_AS, as before.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace benchfleet::agent {

enum class CgroupVersion { kV1, kV2 };

// Where this process's memory cgroup is, from the text of /proc/self/cgroup and
// /proc/self/mountinfo: the directory to make job cgroups in.
struct CgroupLocation {
  CgroupVersion version = CgroupVersion::kV1;
  std::string directory;  // e.g. /sys/fs/cgroup/memory/system.slice/benchfleet-agent.service
};

// Pure: nullopt when neither hierarchy has a memory controller for this process. A v2 location
// is returned only if `v2_subtree_control` (the text of its cgroup.subtree_control, empty when
// unreadable) enables memory for children.
std::optional<CgroupLocation> locate_memory_cgroup(const std::string& proc_self_cgroup,
                                                   const std::string& proc_self_mountinfo,
                                                   const std::string& v2_subtree_control);

// This process's location (reads /proc and the v2 directory's subtree_control).
std::optional<CgroupLocation> this_process_memory_cgroup();

// Every job cgroup's name starts with this.
inline constexpr std::string_view kJobCgroupPrefix = "benchfleet-";

// Whether job cgroups work at `where`: makes one, has a child process join it and removes it.
// The reason when not (no permission, a read-only tree, no delegation).
Status probe_memory_cgroup(const CgroupLocation& where);

// Removes the empty job cgroups at `where` whose agent is gone (killed before it could remove
// them): names "benchfleet-<agent pid>-..." whose pid no longer runs. One still holding processes
// cannot be removed and stays. Returns how many went.
int remove_stale_job_cgroups(const CgroupLocation& where);

// `argv` prefixed so that the process joins `cgroup` (a directory) before it runs anything: every
// process it starts, inside a build's root too, is then in the cgroup from its first page. The
// prefix exits 125 with a message on stderr if it cannot join.
std::vector<std::string> joining_cgroup(const std::string& cgroup, std::vector<std::string> argv);

struct CgroupMemoryUsage {
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;  // since the cap was applied (v1), since the cgroup was made (v2)
  std::int64_t oom_kills = 0;   // processes the kernel killed at the limit
};

// One job's memory cgroup. Not copyable; the destructor removes it (waiting up to a second for
// its last processes to be gone). Not thread-safe: the job's supervising thread owns it.
class JobMemoryCgroup {
 public:
  // Makes <where.directory>/<name>, without a limit yet. Error (kUnavailable) naming the path and
  // the reason when it cannot be made (not root, read-only, no delegation).
  static Result<JobMemoryCgroup> create(const CgroupLocation& where, const std::string& name);
  JobMemoryCgroup(JobMemoryCgroup&& other) noexcept;
  JobMemoryCgroup& operator=(JobMemoryCgroup&&) = delete;
  JobMemoryCgroup(const JobMemoryCgroup&) = delete;
  ~JobMemoryCgroup();

  // Moves `pid` (and so everything it starts from then on) into the cgroup.
  Status add(pid_t pid);
  // Limit = what the cgroup holds now + `growth_bytes`; the peak is counted from here (v1).
  Status cap(std::int64_t growth_bytes);
  // No limit again.
  Status lift();
  CgroupMemoryUsage usage() const;

  bool capped() const { return capped_; }
  std::int64_t growth_bytes() const { return growth_bytes_; }
  std::int64_t base_bytes() const { return base_bytes_; }  // what it held when capped
  // "cgroup-v1" or "cgroup-v2": how a result names the cap.
  const char* kind() const { return version_ == CgroupVersion::kV1 ? "cgroup-v1" : "cgroup-v2"; }
  const std::string& path() const { return path_; }

 private:
  JobMemoryCgroup(CgroupVersion version, std::string path) : version_(version), path_(std::move(path)) {}
  Status write(const char* file, const std::string& value) const;

  CgroupVersion version_;
  std::string path_;  // empty once moved from
  bool capped_ = false;
  std::int64_t growth_bytes_ = 0;
  std::int64_t base_bytes_ = 0;
};

}  // namespace benchfleet::agent
