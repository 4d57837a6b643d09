// The launcher's view of Slurm: submit with sbatch, list its allocations with squeue, learn how
// ended ones ended with sacct (or scontrol while slurmctld still remembers them). The parsers are
// free functions over the commands' documented output formats, tested with real-format samples.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "slurm/command_runner.h"
#include "slurm/launcher_config.h"

namespace benchfleet::slurm {

// One allocation as a Slurm command reports it. Fields a command does not give stay empty.
struct SlurmJob {
  std::string job_id;     // "123", or "123_4" for an array task
  std::string state;      // long form: PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, ...
  std::string name;       // job name (squeue, scontrol)
  std::string node;       // node list (empty while pending)
  std::string reason;     // pending reason, or what followed the state ("by 1000")
  std::string start;      // "2026-11-25T12:00:00" (sacct, scontrol); empty when unknown
  std::string end;        // as start
  std::string exit_code;  // "0:0" (sacct, scontrol)
};

// True for the states of a job that is over (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL,
// PREEMPTED, BOOT_FAIL, DEADLINE, OUT_OF_MEMORY, REVOKED, SPECIAL_EXIT).
bool is_final_state(std::string_view state);

// `sbatch --parsable` prints "123" or "123;cluster". Error naming the output otherwise.
Result<std::string> parse_sbatch_parsable(std::string_view out);

// Lines of `squeue -h -r -o '%i|%T|%j|%N|%r'`. Malformed lines are errors (naming the line).
Result<std::vector<SlurmJob>> parse_squeue(std::string_view out);

// Lines of `sacct -X -n -P -o JobID,State,Start,End,ExitCode`. "CANCELLED by 1000" gives state
// CANCELLED, reason "by 1000"; "Unknown"/"None" times are empty. Lines of array ranges still
// pending ("123_[2-5]") are kept with that id.
Result<std::vector<SlurmJob>> parse_sacct(std::string_view out);

// One line of `scontrol show job -o ID` (JobId=.. ArrayJobId=.. ArrayTaskId=.. JobName=..
// JobState=.. Reason=.. StartTime=.. EndTime=.. NodeList=.. ExitCode=..); an array task's id is
// "<ArrayJobId>_<ArrayTaskId>". One SlurmJob per non-empty line.
Result<std::vector<SlurmJob>> parse_scontrol_jobs(std::string_view out);

// Runs the commands named in the config through a CommandRunner.
// Thread safety: as the runner's (ProcessRunner: safe).
class SlurmCommands {
 public:
  SlurmCommands(const LauncherConfig& config, CommandRunner& runner,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // sbatch --parsable [--array=0-(count-1)] SCRIPT. The job id ("123"; its tasks are
  // "123_0".."123_<count-1>" when count > 1). REQUIRES: count >= 1.
  Result<std::string> submit(const std::string& script_path, int count);

  // This user's pending and running jobs with one of `job_names` (squeue --me --name=...).
  Result<std::vector<SlurmJob>> list(const std::vector<std::string>& job_names);

  // Accounting records of `job_ids` (sacct -j). An error when sacct fails (e.g. accounting
  // storage is disabled); ids sacct does not know are absent from the answer.
  Result<std::vector<SlurmJob>> account(const std::vector<std::string>& job_ids);

  // What slurmctld still remembers of `job_id` (scontrol show job -o); nullopt when it has
  // forgotten the job (MinJobAge) or never knew it.
  Result<std::optional<SlurmJob>> show(const std::string& job_id);

 private:
  Result<CommandOutput> run(const std::vector<std::string>& argv);

  const LauncherConfig& config_;
  CommandRunner& runner_;
  std::chrono::milliseconds timeout_;
};

}  // namespace benchfleet::slurm
