#include "agent/daemon/job_memory_cap.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/shared_rules.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

// A job's own message kept after the agent's, at most this long: the whole error stays bounded.
constexpr std::size_t kKeptMessageChars = 2000;

std::string read_trimmed(const fs::path& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.pop_back();
  return text;
}

std::string mib(std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

}  // namespace

const std::string& JobMemoryCap::environment_variable() { return memory_cgroup_protocol().environment; }

Result<JobMemoryCap> JobMemoryCap::start(const CgroupLocation& where, const std::string& name, std::int64_t limit_bytes,
                                         std::string job_dir) {
  auto cgroup = JobMemoryCgroup::create(where, name);
  if (!cgroup.ok()) return cgroup.error();
  return JobMemoryCap(std::move(*cgroup), limit_bytes, std::move(job_dir));
}

void JobMemoryCap::answer(const std::string& text) const {
  const MemoryCgroupProtocol& protocol = memory_cgroup_protocol();
  const fs::path final_path = fs::path(job_dir_) / protocol.answer_file;
  const fs::path temporary = final_path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text << '\n';
  }
  std::error_code ec;
  fs::rename(temporary, final_path, ec);  // whole or not at all: the job never reads half an answer
}

void JobMemoryCap::serve() {
  const std::string request = read_trimmed(fs::path(job_dir_) / memory_cgroup_protocol().request_file);
  if (request.empty() || request == answered_) return;
  answered_ = request;
  if (request == "cap") {
    if (auto s = cgroup_.cap(limit_bytes_); !s) {
      answer("failed " + s.error().message);
      return;
    }
    answer(std::string("capped ") + cgroup_.kind() + " " + std::to_string(limit_bytes_));
  } else if (request == "lift") {
    peak_capped_ = cgroup_.usage().peak_bytes;
    if (auto s = cgroup_.lift(); !s) {
      answer("failed " + s.error().message);
      return;
    }
    answer("lifted");
  } else {
    answer("failed unknown request \"" + request.substr(0, 40) + "\" (cap or lift)");
  }
}

void JobMemoryCap::finish(JobResult& result) const {
  if (!cgroup_.capped()) return;  // the job never asked: it ran without a cap, or capped itself
  const CgroupMemoryUsage usage = cgroup_.usage();
  const std::int64_t peak = std::max<std::int64_t>(0, peak_capped_.value_or(usage.peak_bytes) - cgroup_.base_bytes());
  MemoryInfo& memory = result.memory ? *result.memory : result.memory.emplace();
  memory.cap = cgroup_.kind();
  memory.cap_bytes = limit_bytes_;
  memory.peak_growth_bytes = peak;
  if (usage.oom_kills == 0) return;
  if (result.status == ResultStatus::kOk || result.status == ResultStatus::kOom) {
    if (!result.telemetry.is_object()) result.telemetry = nlohmann::json::object();
    result.telemetry["memory_cap_oom_kills"] = usage.oom_kills;  // a helper process killed; the job recovered
    return;
  }
  const std::string phase_name = read_trimmed(fs::path(job_dir_) / memory_cgroup_protocol().phase_file);
  const OomPhase phase = parse_oom_phase(phase_name).value_or(OomPhase::kLoad);
  const bool killed = result.status == ResultStatus::kCrash && result.signal == SIGKILL;
  std::string message = "out of memory: the kernel killed " + std::string(killed ? "the job" : "a process of the job") +
                        " in phase " + std::string(to_string(phase)) + " at its memory cap (" + cgroup_.kind() + ": " +
                        mib(limit_bytes_) + " over its start-up; it held " + mib(peak) + " beyond it at the most)";
  if (result.error && !result.error->empty()) {
    message += "; the job's own report: " + result.error->substr(0, kKeptMessageChars);
  }
  JobResult oom;
  oom.status = ResultStatus::kOom;
  oom.error = std::move(message);
  oom.oom = OomInfo{phase, std::nullopt};
  oom.memory = memory;
  oom.environment = std::move(result.environment);
  oom.export_s = result.export_s;
  result = std::move(oom);
}

}  // namespace benchfleet::agent
