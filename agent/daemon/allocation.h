// The agent inside one batch allocation (docs/design.md §10.1): who it is (the Slurm
// job's name and GPUs, from its environment), how long it may run (squeue's time left), and
// whether a leased job fits before the end. Pure functions and a small record of durations,
// free of processes and real time; the daemon reads the environment and runs squeue.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

// The Slurm job this agent runs in, read from its environment (SLURM_* variables).
struct SlurmAllocation {
  std::string job_id;      // SLURM_JOB_ID; `<array job>_<task>` for an array task (as squeue shows it)
  std::string raw_job_id;  // SLURM_JOB_ID itself, also for an array task (jobcomp records use it)
  std::string name;        // slurm-<cluster>-<id>, or slurm-<id> without SLURM_CLUSTER_NAME
  // The GPUs Slurm bound to the job: SLURM_JOB_GPUS (global indices), else CUDA_VISIBLE_DEVICES
  // (indices or UUIDs); empty when it bound none.
  std::vector<std::string> bound_gpus;
};

// The allocation from `env`. An error naming `allocation` when SLURM_JOB_ID is missing.
Result<SlurmAllocation> slurm_allocation_from(const std::map<std::string, std::string>& env);

// `name` with what agent names should not hold replaced by '-' (kept: letters, digits, '.',
// '_', '-'), at most 200 bytes.
std::string sanitized_agent_name(std::string_view name);

// The discovered GPUs (nvidia-smi) the allocation may use: those whose index or UUID is in
// `bound`. Under a device cgroup nvidia-smi may list the bound GPUs only, renumbered from 0:
// when nothing matches and it lists exactly as many GPUs as were bound, those are taken.
// Nothing bound: none (one cpu slot), however many GPUs the node has (they are other jobs').
std::vector<GpuInfo> allocated_gpus(const std::vector<GpuInfo>& discovered, const std::vector<std::string>& bound);

// squeue's `%L` (time left): `[D-]HH:MM:SS`, `MM:SS`, or `SS`, in seconds; nullopt for
// `UNLIMITED` and `NOT_SET` (no limit). An error for `INVALID` and anything unreadable.
Result<std::optional<std::int64_t>> parse_slurm_time_left(std::string_view text);

// The cell of a job as far as its duration goes: model, batch, mode, dtype, runtime, build.
// Repetitions of a cell are separate jobs of the same cell.
std::string duration_cell(const JobSpec& spec);

// The longest duration (lease to verdict) this agent measured per cell. Thread-safe.
class DurationRecord {
 public:
  void add(const JobSpec& spec, std::chrono::milliseconds took);
  std::optional<std::chrono::milliseconds> longest(const JobSpec& spec) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::chrono::milliseconds> longest_;  // under mu_, by duration_cell
};

// How long `job` may take here: the longest measured for its cell, else its timeout_s (the
// worker is killed at it), plus the kill grace.
std::chrono::milliseconds estimated_duration(const LeasedJob& job, std::optional<std::chrono::milliseconds> longest,
                                             int kill_grace_s);

// Whether a job of `estimate` started at `now` ends `margin` before `deadline`.
bool fits_before(std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point deadline,
                 std::chrono::milliseconds estimate, std::chrono::milliseconds margin);

// A job's end by a signal from outside rather than its own fault: its worker or exporter (a
// `crash` with its signal) ended by SIGTERM, or by SIGKILL while the agent is stopping. Slurm's
// scancel, preemption and time limit send SIGTERM; the agent itself sends it only at a timeout
// (a `timeout` verdict or an export error) or when it stops a job (which reports nothing). Its
// lease is released (the job runs again elsewhere), nothing is reported.
bool killed_from_outside(const JobResult& result, bool agent_stopping);

}  // namespace benchfleet::agent
