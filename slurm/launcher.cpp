#include "slurm/launcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/time_format.h"
#include "slurm/sbatch_script.h"

namespace benchfleet::slurm {
namespace {

namespace fs = std::filesystem;

bool has_started(std::string_view state) {
  return state == "RUNNING" || state == "COMPLETING" || state == "SUSPENDED" || state == "STOPPED" ||
         state == "SIGNALING" || state == "STAGE_OUT";
}

// Pending reasons that resolve by themselves (squeue %r).
bool is_transient_pending_reason(std::string_view reason) {
  static constexpr std::array kTransient{
      "",         "None",        "Priority", "Resources", "BeginTime", "Dependency",          "JobArrayTaskLimit",
      "NodeDown", "Reservation", "Prolog",   "Cleaning",  "Licenses",  "BurstBufferResources"};
  return std::find(kTransient.begin(), kTransient.end(), reason) != kTransient.end();
}

Status make_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot create " + dir.string() + ": " + ec.message(), {}};
  return Status::Ok();
}

// Writes `text` to `path` through a temporary file and a rename.
Status write_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text << std::flush;
    if (!out) return Error{ErrorCode::kUnavailable, "cannot write " + tmp.string() + ": " + std::strerror(errno), {}};
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot rename " + tmp.string() + ": " + ec.message(), {}};
  return Status::Ok();
}

TrackedAllocation newly_submitted(const std::string& gpu_class) {
  TrackedAllocation t;
  t.gpu_class = gpu_class;
  return t;
}

std::string string_field(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Launcher::Launcher(const LauncherConfig& config, SlurmCommands& slurm, QueueSource& queue, const Clock& clock)
    : config_(config),
      slurm_(slurm),
      queue_(queue),
      clock_(clock),
      timeline_((fs::path(config.state_dir) / "timeline.jsonl").string()),
      limiter_(config.max_submissions_per_minute) {
  for (const auto& cls : config_.classes) class_of_name_[cls.job_name] = cls.gpu_class;
}

std::string Launcher::script_path(const ClassConfig& cls) const {
  return (fs::path(config_.state_dir) / "scripts" / (cls.gpu_class + ".sh")).string();
}

Status Launcher::prepare() {
  BF_RETURN_IF_ERROR(make_dir(fs::path(config_.state_dir) / "logs"));
  BF_RETURN_IF_ERROR(make_dir(fs::path(config_.state_dir) / "scripts"));
  for (const auto& cls : config_.classes) {
    BF_RETURN_IF_ERROR(write_file(script_path(cls), render_sbatch_script(config_, cls)));
  }
  int skipped = 0;
  BF_ASSIGN_OR_RETURN(const auto events, timeline_.read(&skipped));
  if (skipped > 0) spdlog::warn("{}: skipped {} line(s) that are not JSON objects", timeline_.path(), skipped);
  for (const auto& event : events) {
    const auto kind = string_field(event, "event");
    const auto id = string_field(event, "slurm_job_id");
    const auto gpu_class = string_field(event, "gpu_class");
    if (id.empty() || config_.find_class(gpu_class) == nullptr) continue;  // a class no longer configured
    if (kind == "submitted") {
      // sbatch calls of the last minute still count: a launcher restarted in a loop cannot flood.
      if (const auto at = parse_time(string_field(event, "time"));
          at && *at > clock_.now_ms() - RateLimiter::kWindowMs && *at <= clock_.now_ms()) {
        (void)limiter_.try_acquire(*at);
      }
      const auto count = event.value("count", 1);
      auto track = [&](const std::string& task) { tracked_[task] = newly_submitted(gpu_class); };
      if (count > 1) {
        for (int i = 0; i < count; ++i) track(id + "_" + std::to_string(i));
      } else {
        track(id);
      }
    } else if (kind == "started") {
      if (auto it = tracked_.find(id); it != tracked_.end()) {
        it->second.started_logged = true;
        it->second.state = "RUNNING";
        it->second.node = string_field(event, "node");
      }
    } else if (kind == "ended") {
      tracked_.erase(id);
    }
  }
  if (!tracked_.empty()) {
    spdlog::info("{}: {} allocation(s) submitted earlier and not seen ending; checking them with Slurm",
                 timeline_.path(), tracked_.size());
  }
  return Status::Ok();
}

void Launcher::emit(const nlohmann::ordered_json& event) {
  nlohmann::ordered_json line = {{"time", format_time(clock_.now_ms())}};
  for (const auto& [key, value] : event.items()) line[key] = value;
  if (auto st = timeline_.append(line); !st.ok()) spdlog::error("timeline: {}", st.error().describe());
}

void Launcher::record_ended(const std::string& job_id, const SlurmJob& how) {
  const auto it = tracked_.find(job_id);
  if (it == tracked_.end()) return;
  nlohmann::ordered_json event = {
      {"event", "ended"}, {"gpu_class", it->second.gpu_class}, {"slurm_job_id", job_id}, {"state", how.state}};
  const std::string node = how.node.empty() ? it->second.node : how.node;
  if (!node.empty()) event["node"] = node;
  if (!how.reason.empty()) event["reason"] = how.reason;
  if (!how.exit_code.empty()) event["exit_code"] = how.exit_code;
  if (!how.start.empty()) event["start"] = how.start;
  if (!how.end.empty()) event["end"] = how.end;
  spdlog::info("allocation {} ({}) ended: {}{}", job_id, it->second.gpu_class, how.state,
               how.reason.empty() ? "" : " (" + how.reason + ")");
  emit(event);
  tracked_.erase(it);
}

Status Launcher::observe_allocations() {
  std::vector<std::string> names;
  for (const auto& cls : config_.classes) names.push_back(cls.job_name);
  BF_ASSIGN_OR_RETURN(const auto listed, slurm_.list(names));
  std::set<std::string> seen;
  for (const auto& job : listed) {
    const auto cls = class_of_name_.find(job.name);
    if (cls == class_of_name_.end()) continue;
    if (is_final_state(job.state)) {
      record_ended(job.job_id, job);
      continue;
    }
    seen.insert(job.job_id);
    auto [it, adopted] = tracked_.try_emplace(job.job_id);
    auto& t = it->second;
    if (adopted) {
      t.gpu_class = cls->second;
      spdlog::info("allocation {} ({}, {}) adopted: found by its job name {}", job.job_id, t.gpu_class, job.state,
                   job.name);
    }
    t.state = job.state;
    if (job.state == "PENDING" && job.reason != t.pending_reason) {
      t.pending_reason = job.reason;
      // A limit or a bad option keeps a job pending for good, and the launcher counts it: say so.
      if (!is_transient_pending_reason(job.reason)) {
        spdlog::warn(
            "allocation {} ({}) is pending with reason {}: check the class's partition, time_limit, account, "
            "qos and gres",
            job.job_id, t.gpu_class, job.reason);
      }
    }
    if (!job.node.empty()) t.node = job.node;
    t.unseen_passes = 0;
    if (!t.started_logged && has_started(job.state)) {
      t.started_logged = true;
      spdlog::info("allocation {} ({}) started on {}", job.job_id, t.gpu_class, t.node);
      emit({{"event", "started"},
            {"gpu_class", t.gpu_class},
            {"slurm_job_id", job.job_id},
            {"state", job.state},
            {"node", t.node}});
    }
  }

  std::vector<std::string> gone;
  for (const auto& [id, t] : tracked_) {
    if (!seen.contains(id)) gone.push_back(id);
  }
  if (gone.empty()) return Status::Ok();
  std::map<std::string, SlurmJob> accounted;
  if (auto records = slurm_.account(gone); records.ok()) {
    for (const auto& r : *records) accounted[r.job_id] = r;
  } else {
    spdlog::debug("sacct: {}; asking scontrol", records.error().describe());
  }
  for (const auto& id : gone) {
    if (const auto a = accounted.find(id); a != accounted.end() && is_final_state(a->second.state)) {
      record_ended(id, a->second);
      continue;
    }
    auto shown = slurm_.show(id);
    if (shown.ok() && shown->has_value() && is_final_state((*shown)->state)) {
      record_ended(id, **shown);
      continue;
    }
    const bool said_alive = accounted.contains(id) || (shown.ok() && shown->has_value());
    auto& t = tracked_.at(id);
    // Nobody remembers it (no accounting, and slurmctld forgot it after MinJobAge): it is over.
    // Slurm saying it is alive while squeue does not list it is a race: give it a few passes.
    if ((shown.ok() && !said_alive) || ++t.unseen_passes >= 3) {
      SlurmJob unknown;
      unknown.state = "UNKNOWN";
      unknown.reason = "ended, state unknown";
      record_ended(id, unknown);
    }
  }
  return Status::Ok();
}

Status Launcher::submit(const ClassConfig& cls, const ClassDecision& decision, PassReport& report) {
  // Rewritten each time: the submitted script is always the configured one.
  BF_RETURN_IF_ERROR(make_dir(fs::path(config_.state_dir) / "logs"));
  BF_RETURN_IF_ERROR(make_dir(fs::path(config_.state_dir) / "scripts"));
  BF_RETURN_IF_ERROR(write_file(script_path(cls), render_sbatch_script(config_, cls)));
  ++report.sbatch_calls;
  BF_ASSIGN_OR_RETURN(const auto job_id, slurm_.submit(script_path(cls), decision.submit));
  report.allocations_submitted += decision.submit;
  if (decision.submit > 1) {
    for (int i = 0; i < decision.submit; ++i)
      tracked_[job_id + "_" + std::to_string(i)] = newly_submitted(cls.gpu_class);
  } else {
    tracked_[job_id] = newly_submitted(cls.gpu_class);
  }
  spdlog::info("submitted {} allocation(s) for {} as Slurm job {} ({} queued, {} active)", decision.submit,
               cls.gpu_class, job_id, decision.queued, decision.active);
  emit({{"event", "submitted"},
        {"gpu_class", cls.gpu_class},
        {"slurm_job_id", job_id},
        {"count", decision.submit},
        {"queued", decision.queued}});
  return Status::Ok();
}

PassReport Launcher::reconcile_unguarded() {
  PassReport report;
  // Without Slurm's view of the allocations, submitting could exceed max_allocations: skip.
  if (auto st = observe_allocations(); !st.ok()) {
    report.status = st;
    return report;
  }
  auto cells = queue_.fetch();
  if (!cells.ok()) {
    report.status = cells.error();
    return report;
  }
  std::map<std::string, int> active;
  for (const auto& [id, t] : tracked_) ++active[t.gpu_class];
  report.decisions = plan_pass(config_, *cells, active, limiter_, clock_.now_ms());
  for (const auto& d : report.decisions) {
    const ClassConfig* cls = config_.find_class(d.gpu_class);
    if (d.submit > 0 && cls != nullptr) {
      if (auto st = submit(*cls, d, report); !st.ok() && report.status.ok()) report.status = st;
    } else if (d.rate_limited) {
      // Said once per wait, not every pass.
      const auto level = rate_limited_.insert(d.gpu_class).second ? spdlog::level::info : spdlog::level::debug;
      spdlog::log(level, "{}: {} allocation(s) wanted; {} sbatch call(s) a minute reached, waiting", d.gpu_class,
                  d.wanted, config_.max_submissions_per_minute);
    }
    if (d.submit > 0 || d.wanted == 0) rate_limited_.erase(d.gpu_class);
    if (d.too_long > 0 && cls != nullptr && too_long_warned_.insert(d.gpu_class).second) {
      // Said once until it clears: these jobs wait for a class with longer allocations.
      spdlog::warn(
          "{}: {} queued job(s) have a timeout_s that does not fit in time_limit {} (with {} s for the agent's "
          "start and margins): no allocation is submitted for them",
          d.gpu_class, d.too_long, cls->time_limit, kAgentOverheadS);
    }
    if (d.too_long == 0) too_long_warned_.erase(d.gpu_class);
    spdlog::debug("{}: {} queued, {} active, {} wanted, {} submitted", d.gpu_class, d.queued, d.active, d.wanted,
                  d.submit);
  }
  return report;
}

PassReport Launcher::reconcile() {
  try {
    return reconcile_unguarded();
  } catch (const std::exception& e) {
    PassReport report;
    report.status = Error::internal(std::string("reconcile pass: ") + e.what());
    return report;
  } catch (...) {
    PassReport report;
    report.status = Error::internal("reconcile pass: unknown exception");
    return report;
  }
}

void Launcher::run() {
  for (;;) {
    const auto report = reconcile();
    if (!report.status.ok()) spdlog::warn("pass: {}", report.status.error().describe());
    std::unique_lock lock(stop_mu_);
    if (stop_cv_.wait_for(lock, std::chrono::seconds(config_.poll_s), [&] { return stopping_; })) return;
  }
}

void Launcher::stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
}

}  // namespace benchfleet::slurm
