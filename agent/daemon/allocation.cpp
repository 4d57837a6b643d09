#include "agent/daemon/allocation.h"

#include <signal.h>

#include <algorithm>
#include <cctype>

namespace benchfleet::agent {
namespace {

std::string env_or(const std::map<std::string, std::string>& env, const std::string& key) {
  const auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char ch : text + ",") {
    if (ch == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (!std::isspace(static_cast<unsigned char>(ch))) {
      item += ch;
    }
  }
  return out;
}

// A decimal number of at most 9 digits, all of `text`.
std::optional<std::int64_t> number(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n;
}

}  // namespace

Result<SlurmAllocation> slurm_allocation_from(const std::map<std::string, std::string>& env) {
  SlurmAllocation a;
  const std::string job = env_or(env, "SLURM_JOB_ID");
  if (job.empty()) {
    return Error::invalid("allocation",
                          "slurm: SLURM_JOB_ID is not set; run the agent inside a Slurm job (sbatch) or use "
                          "--allocation none");
  }
  const std::string array_job = env_or(env, "SLURM_ARRAY_JOB_ID");
  const std::string array_task = env_or(env, "SLURM_ARRAY_TASK_ID");
  const bool array = !array_job.empty() && !array_task.empty();
  // An array task is asked about in the array form: `squeue -j <its SLURM_JOB_ID>` lists every
  // task of the array for the task whose own id is the array's (a line per task).
  const std::string id = array ? array_job + "_" + array_task : job;
  a.job_id = id;
  a.raw_job_id = job;
  const std::string cluster = env_or(env, "SLURM_CLUSTER_NAME");
  a.name = sanitized_agent_name(cluster.empty() ? "slurm-" + id : "slurm-" + cluster + "-" + id);
  const std::string job_gpus = env_or(env, "SLURM_JOB_GPUS");
  a.bound_gpus = split_list(job_gpus.empty() ? env_or(env, "CUDA_VISIBLE_DEVICES") : job_gpus);
  // CUDA_VISIBLE_DEVICES set to hide every GPU ("" or "-1", "NoDevFiles"): none bound.
  a.bound_gpus.erase(std::remove_if(a.bound_gpus.begin(), a.bound_gpus.end(),
                                    [](const std::string& g) { return g == "-1" || g == "NoDevFiles"; }),
                     a.bound_gpus.end());
  return a;
}

std::string sanitized_agent_name(std::string_view name) {
  std::string out;
  for (char ch : name.substr(0, 200)) {
    const bool kept = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
    out += kept ? ch : '-';
  }
  return out;
}

std::vector<GpuInfo> allocated_gpus(const std::vector<GpuInfo>& discovered, const std::vector<std::string>& bound) {
  std::vector<GpuInfo> out;
  if (bound.empty()) return out;
  for (const auto& g : discovered) {
    const bool wanted = std::find(bound.begin(), bound.end(), g.uuid) != bound.end() ||
                        std::find(bound.begin(), bound.end(), std::to_string(g.index)) != bound.end();
    if (wanted) out.push_back(g);
  }
  if (out.empty() && discovered.size() == bound.size()) return discovered;
  return out;
}

Result<std::optional<std::int64_t>> parse_slurm_time_left(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  if (text == "UNLIMITED" || text == "NOT_SET") return std::optional<std::int64_t>();
  const auto unreadable = [&] {
    return Error::invalid("squeue", "time left \"" + std::string(text.substr(0, 64)) +
                                        "\" is not [D-]HH:MM:SS, MM:SS, UNLIMITED or NOT_SET");
  };
  std::int64_t days = 0;
  if (const auto dash = text.find('-'); dash != std::string_view::npos) {
    const auto d = number(text.substr(0, dash));
    if (!d) return unreadable();
    days = *d;
    text.remove_prefix(dash + 1);
  }
  std::vector<std::int64_t> parts;
  while (true) {
    const auto colon = text.find(':');
    const auto part = number(text.substr(0, colon));
    if (!part) return unreadable();
    parts.push_back(*part);
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (parts.size() > 3) return unreadable();
  std::int64_t seconds = 0;
  for (std::int64_t p : parts) seconds = seconds * 60 + p;
  // With days, squeue prints HH:MM:SS; "D-HH" alone would be read as seconds above.
  if (days > 0 && parts.size() < 3) return unreadable();
  return std::optional<std::int64_t>(days * 86400 + seconds);
}

std::string duration_cell(const JobSpec& spec) {
  return spec.model + "|" + std::to_string(spec.batch) + "|" + std::string(to_string(spec.mode)) + "|" +
         std::string(to_string(spec.dtype)) + "|" + std::string(to_string(spec.runtime)) + "|" + spec.torch_build;
}

void DurationRecord::add(const JobSpec& spec, std::chrono::milliseconds took) {
  std::lock_guard lock(mu_);
  auto& longest = longest_[duration_cell(spec)];
  longest = std::max(longest, took);
}

std::optional<std::chrono::milliseconds> DurationRecord::longest(const JobSpec& spec) const {
  std::lock_guard lock(mu_);
  const auto it = longest_.find(duration_cell(spec));
  if (it == longest_.end()) return std::nullopt;
  return it->second;
}

std::chrono::milliseconds estimated_duration(const LeasedJob& job, std::optional<std::chrono::milliseconds> longest,
                                             int kill_grace_s) {
  const std::chrono::milliseconds base = longest ? *longest : std::chrono::seconds(job.timeout_s);
  return base + std::chrono::seconds(kill_grace_s);
}

bool fits_before(std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point deadline,
                 std::chrono::milliseconds estimate, std::chrono::milliseconds margin) {
  return now + estimate + margin <= deadline;
}

bool killed_from_outside(const JobResult& result, bool agent_stopping) {
  if (result.status != ResultStatus::kCrash || !result.signal) return false;
  return *result.signal == SIGTERM || (*result.signal == SIGKILL && agent_stopping);
}

}  // namespace benchfleet::agent
