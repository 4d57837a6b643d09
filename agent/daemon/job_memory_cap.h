// One CPU job's memory cap as the agent holds it (memory_cgroup.h says why the agent): the job's
// cgroup, the requests the job makes through the files of common/rules/memory_cgroup.json, and
// what the cgroup saw, put into the job's result.
//   auto cap = JobMemoryCap::start(location, "benchfleet-job-7-1", 1024 << 20, job_dir);
//   options.argv = joining_cgroup(cap->cgroup_path(), options.argv);
//   options.env_set[cap->environment_variable()] = job_dir;
//   ... while the job runs: cap->serve();   after: cap->finish(result);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/daemon/memory_cgroup.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

class JobMemoryCap {
 public:
  // Makes the job's cgroup under `where`; `job_dir` is the folder the job's request, answer and
  // phase files live in (the job's scratch directory, which the job can write).
  static Result<JobMemoryCap> start(const CgroupLocation& where, const std::string& name, std::int64_t limit_bytes,
                                    std::string job_dir);

  const std::string& cgroup_path() const { return cgroup_.path(); }
  // The variable that tells the job where its request files are (the job's environment).
  static const std::string& environment_variable();

  // Answers the job's newest request, if it has not been answered: "cap" applies the limit as
  // growth over what the cgroup holds now, "lift" removes it (the peak under the cap is kept).
  // Called often while the job runs (each poll of supervise); cheap when nothing changed.
  void serve();

  // After the job ended: `result.memory` names the cap and the peak beyond start-up; a job the
  // kernel killed at the cap (the cgroup counted an OOM kill, and the job ended in a crash or an
  // error, as a killed process or its parent reports it) becomes `oom` in the phase the job last
  // wrote, keeping its own message after the agent's.
  void finish(JobResult& result) const;

 private:
  JobMemoryCap(JobMemoryCgroup cgroup, std::int64_t limit_bytes, std::string job_dir)
      : cgroup_(std::move(cgroup)), limit_bytes_(limit_bytes), job_dir_(std::move(job_dir)) {}
  void answer(const std::string& text) const;

  JobMemoryCgroup cgroup_;
  std::int64_t limit_bytes_;
  std::string job_dir_;
  std::string answered_;                     // the last request answered
  std::optional<std::int64_t> peak_capped_;  // the cgroup's peak when the cap was lifted
};

}  // namespace benchfleet::agent
