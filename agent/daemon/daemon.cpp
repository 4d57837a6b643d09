#include "agent/daemon/daemon.h"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "agent/daemon/agent_codecs.h"
#include "agent/daemon/artifact_cache.h"
#include "agent/daemon/build_launcher.h"
#include "agent/daemon/coordinator_client.h"
#include "agent/daemon/gpu_discovery.h"
#include "agent/daemon/process.h"
#include "agent/daemon/spool.h"
#include "common/codecs.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Slot {
  SlotDescriptor descriptor;
  std::mutex mu;
  std::optional<LeaseRef> current;  // the lease being worked on
  // Set when a heartbeat says the lease is gone: kLost or kCancelled (kActive: keep going).
  std::atomic<LeaseState> stop_job{LeaseState::kActive};
};

// Exponential backoff with full jitter, capped.
class Backoff {
 public:
  std::chrono::milliseconds next() {
    const auto cap = std::min<std::int64_t>(30'000, 250LL << std::min(attempt_++, 7));
    std::uniform_int_distribution<std::int64_t> d(cap / 2, cap);
    return std::chrono::milliseconds(d(rng_));
  }
  void reset() { attempt_ = 0; }

 private:
  int attempt_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
};

// Runs `argv` (a worker or runner with --capabilities) and returns its decoded answer, or
// nullopt when it failed, timed out or printed something unreadable. Its stdout is kept in
// <work_dir>/capabilities-<name>.json.
// `why_not` gets the reason when there is no answer (exit status and the end of stderr, kept in
// <work_dir>/capabilities-<name>.err, or what is wrong with the answer).
std::optional<Capabilities> capabilities_of(const BuildLauncher& launcher, const TorchBuild& build,
                                            const std::string& work_dir, const std::string& record_dir,
                                            const std::string& name, std::vector<std::string> argv,
                                            std::chrono::seconds limit, std::string& why_not) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.stdout_path = work_dir + "/capabilities-" + name + ".json";
  o.stderr_path = work_dir + "/capabilities-" + name + ".err";
  o = launcher.wrap(build, std::move(o));
  o.record_dir = record_dir;
  auto child = Child::spawn(o);
  if (!child.ok()) {
    why_not = child.error().message;
    return std::nullopt;
  }
  const ExitInfo exit = supervise(*child, limit, 1s, 1h, {});
  if (exit.exit_code != 0) {
    why_not = (exit.timed_out ? "no answer within " + std::to_string(limit.count()) + " s"
               : exit.signal  ? "killed by signal " + std::to_string(exit.signal)
                              : "exit " + std::to_string(exit.exit_code)) +
              ": " + tail_of_file(o.stderr_path, 3);
    return std::nullopt;
  }
  auto text = read_file_bounded(o.stdout_path, 1 << 20);
  auto caps = text.ok() ? decode_capabilities(*text) : Result<Capabilities>(text.error());
  if (!caps.ok()) {
    why_not = "its --capabilities answer is unusable: " + caps.error().describe();
    return std::nullopt;
  }
  return std::move(*caps);
}

// The modes a --capabilities answer lists for `device` ("cpu" or "cuda").
std::vector<Mode> modes_on(const Capabilities& caps, const std::string& device) {
  auto it = caps.modes.find(device);
  return it == caps.modes.end() ? std::vector<Mode>{} : it->second;
}

// `p` absolute, with symlinks resolved as far as it exists.
std::string resolved_path(const std::string& p) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(p, ec);
  if (ec) return p;
  const fs::path resolved = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal().string() : resolved.string();
}

// Finds out what `build` can run here: its root (when it has one), then its worker's
// (libtorch) and its python runner's (python runtime) --capabilities on this host's device.
// A build that cannot run at all (a missing or broken root, neither program answering) is
// still offered with both runtimes and every mode, and `broken` says why: its jobs then end
// with an `error` verdict naming the cause instead of waiting forever for an agent.
void probe_build(const AgentConfig& c, const BuildLauncher& launcher, const std::string& records,
                 const std::string& device, TorchBuild& b) {
  b.runtimes.clear();
  b.broken.clear();
  auto offer_everything = [&](std::string why) {
    b.broken = std::move(why);
    b.runtimes = {{Runtime::kLibtorch, all_modes()}, {Runtime::kPython, all_modes()}};
    spdlog::error("torch build {}: {}; its jobs will end as errors", b.name, b.broken);
  };
  if (!b.root.empty()) {
    auto info = read_root_info(b.root);
    if (!info.ok()) return offer_everything(info.error().message);
    b.root_info = *info;
  }
  // The runner first: it names the build's native library folders (pip's nvidia/*/lib), which
  // the worker, its --capabilities included, then finds on its library path.
  // Importing torch in a cold python takes a while on a loaded host: a longer bound.
  std::string runner_failure;
  const auto runner_caps = capabilities_of(launcher, b, c.work_dir, records, b.name + "-python",
                                          {b.python, c.runner, "--capabilities"}, 180s, runner_failure);
  std::optional<RuntimeSupport> python_runtime;
  if (runner_caps) {
    b.torch_git = runner_caps->torch_git;
    b.library_dirs = runner_caps->library_dirs;
    python_runtime = RuntimeSupport{Runtime::kPython, modes_on(*runner_caps, device)};
  } else {
    spdlog::error("torch build {}: {} {} --capabilities failed ({}); the build is offered without the python runtime",
                  b.name, b.python, c.runner, runner_failure);
  }
  std::string worker_failure;
  const auto worker_caps = capabilities_of(launcher, b, c.work_dir, records, b.name + "-libtorch",
                                          {b.worker, "--capabilities"}, 60s, worker_failure);
  if (worker_caps) {
    b.version = worker_caps->torch_version;
    b.runtimes.push_back({Runtime::kLibtorch, modes_on(*worker_caps, device)});
  } else {
    spdlog::error("torch build {}: {} --capabilities failed ({}); the build is offered without the libtorch runtime",
                  b.name, b.worker, worker_failure);
  }
  if (python_runtime) {
    if (b.version.empty()) b.version = runner_caps->torch_version;
    b.runtimes.push_back(std::move(*python_runtime));
  }
  if (!b.library_dirs.empty()) {
    spdlog::info("torch build {}: {} native library folders on its programs' library path", b.name,
                 b.library_dirs.size());
  }
  if (b.runtimes.empty()) {
    return offer_everything("neither its worker nor its python runner answers --capabilities (worker: " +
                            worker_failure + "; runner: " + runner_failure + ")");
  }
  for (const auto& rt : b.runtimes) {
    spdlog::info("torch build {}: torch {} {} runtime ({}), {} modes on {}{}", b.name, b.version, to_string(rt.runtime),
                 rt.runtime == Runtime::kLibtorch ? b.worker : c.runner, rt.modes.size(), device,
                 b.root.empty() ? "" : " in root " + b.root + " (" + b.root_info.id + ")");
  }
}

}  // namespace

struct Daemon::State {
  AgentConfig config;
  std::string executable;
  AgentDescriptor descriptor;
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<TorchBuild> builds;
  AgentIdentity identity;
  std::mutex enrol_mu;
  Intervals intervals;
  std::mutex intervals_mu;
  std::unique_ptr<Spool> spool;
  std::unique_ptr<ArtifactCache> cache;
  std::unique_ptr<BuildLauncher> launcher;
  std::atomic<int> stop_requests{0};
  std::mutex sleep_mu;
  std::condition_variable wake;
  int interval_changes = 0;  // under sleep_mu: wakes the heartbeat when the coordinator's pace changes
  int reachable_again = 0;   // under sleep_mu: wakes uploads waiting out a backoff when it answers again

  bool draining() const { return stop_requests.load() >= 1; }
  bool aborting() const { return stop_requests.load() >= 2; }
  std::string token_file() const { return config.state_dir + "/agent-token.json"; }
  // Records of the running exporters and workers (SpawnOptions::record_dir).
  std::string record_dir() const { return config.work_dir + "/children"; }

  // Sleeps up to `d`, waking early on drain/abort (and, with `or_new_intervals`, when the
  // coordinator dictates other intervals: see adopt_intervals).
  void sleep_for(std::chrono::milliseconds d, bool or_new_intervals = false, bool or_reachable_again = false) {
    std::unique_lock lock(sleep_mu);
    const int seen = stop_requests.load();
    const int seen_intervals = interval_changes;
    const int seen_reachable = reachable_again;
    wake.wait_for(lock, d, [&] {
      return stop_requests.load() != seen || (or_new_intervals && interval_changes != seen_intervals) ||
             (or_reachable_again && reachable_again != seen_reachable);
    });
  }

  // The coordinator answered a heartbeat after it had failed (a partition healed, a restart):
  // spooled results waiting out their backoff (up to 30 s) are sent now.
  void coordinator_reachable_again() {
    {
      std::lock_guard lock(sleep_mu);
      ++reachable_again;
    }
    wake.notify_all();
  }

  Intervals current_intervals() {
    std::lock_guard lock(intervals_mu);
    return intervals;
  }

  // The coordinator dictates the intervals (docs/design.md §7) at enrolment and in every lease answer.
  // An agent restarted on its saved token does not enrol: until a lease answer came it runs on
  // the built-in defaults, so a change wakes the heartbeat, which may be asleep for the default
  // interval while a lease of a shorter TTL needs renewing.
  void adopt_intervals(const Intervals& dictated) {
    {
      std::lock_guard lock(intervals_mu);
      const Intervals& had = intervals;
      if (had.heartbeat_interval_s == dictated.heartbeat_interval_s && had.lease_ttl_s == dictated.lease_ttl_s &&
          had.long_poll_timeout_s == dictated.long_poll_timeout_s) {
        return;
      }
      intervals = dictated;
    }
    {
      std::lock_guard lock(sleep_mu);
      ++interval_changes;
    }
    wake.notify_all();
  }

  // Enrols unless the token that failed (`rejected`) was already replaced by another thread.
  Status enrol(const std::string& rejected) {
    std::lock_guard lock(enrol_mu);
    if (identity.valid() && identity.get().second != rejected) return Status::Ok();
    CoordinatorClient client(config.coordinator, identity);
    BF_ASSIGN_OR_RETURN(EnrollResponse e, client.enroll(descriptor, config.enrollment_token));
    adopt_intervals(e.intervals);
    const nlohmann::json saved = {{"coordinator", config.coordinator},
                                  {"agent_id", e.agent_id},
                                  {"token", e.agent_token},
                                  {"descriptor", descriptor}};
    const std::string tmp = token_file() + ".tmp";
    const mode_t old = umask(077);
    std::ofstream(tmp) << saved.dump();
    umask(old);
    std::rename(tmp.c_str(), token_file().c_str());
    spdlog::info("enrolled as agent {} with {} slot(s)", e.agent_id, descriptor.slots.size());
    return Status::Ok();
  }

  // Reuses the saved token when it was issued by this coordinator for this same descriptor.
  void load_saved_token() {
    std::ifstream in(token_file());
    if (!in) return;
    std::stringstream s;
    s << in.rdbuf();
    auto j = nlohmann::json::parse(s.str(), nullptr, false);
    if (!j.is_object() || j.value("coordinator", "") != config.coordinator) return;
    if (j.value("descriptor", nlohmann::json()) != nlohmann::json(descriptor)) return;  // re-enrol on changes
    identity.set(j.value("agent_id", std::int64_t{0}), j.value("token", ""));
  }

  // Enrols until it works, or until a stop is requested (returns false then).
  bool ensure_enrolled(const std::string& rejected = "") {
    Backoff backoff;
    while (!aborting() && !(draining() && !identity.valid())) {
      auto s = enrol(rejected);
      if (s.ok()) return true;
      spdlog::warn("enrolment failed: {}", s.error().message);
      sleep_for(backoff.next());
    }
    return identity.valid();
  }

  // Uploads one spooled result until acknowledged or refused (then removes it), or abort. A
  // result the coordinator will never accept (400: its checks refuse it; 413: too big) is replaced,
  // in the spool too, by an error verdict saying why, so the job ends visibly instead of the
  // upload being retried forever; if even that is refused, the entry is dropped.
  void upload(SpoolEntry entry) {
    CoordinatorClient client(config.coordinator, identity);
    Backoff backoff;
    bool replaced = false;
    while (!aborting()) {
      auto r = client.upload(entry);
      if (r.ok() && r->outcome == Upload::kInvalid && !replaced) {
        spdlog::error("job {}: the coordinator refused the worker's result as invalid: {}; posting an error verdict "
                      "instead", entry.job_id, r->detail);
        entry.result = refused_result_verdict(entry.result, r->detail);
        replaced = true;
        if (auto put = spool->put(entry); !put.ok()) spdlog::warn("job {}: spool: {}", entry.job_id, put.error().message);
        continue;
      }
      if (r.ok()) {
        if (r->outcome == Upload::kRefused) {
          spdlog::warn("job {}: the coordinator refused the result (stale lease or cancelled): {}", entry.job_id,
                       r->detail);
        } else if (r->outcome == Upload::kInvalid) {
          spdlog::error("job {}: the coordinator refused the error verdict too, dropping it: {}", entry.job_id,
                        r->detail);
        }
        (void)spool->remove(entry.job_id, entry.attempt);
        return;
      }
      if (r.error().code == ErrorCode::kUnauthenticated) {
        ensure_enrolled(identity.get().second);
        continue;
      }
      spdlog::warn("job {}: result upload failed, will retry: {}", entry.job_id, r.error().message);
      sleep_for(backoff.next(), /*or_new_intervals=*/false, /*or_reachable_again=*/true);
    }
  }

  void slot_loop(Slot& slot) {
    CoordinatorClient client(config.coordinator, identity);
    Backoff backoff;
    JobEnvironment env;
    env.slot = &slot.descriptor;
    env.cache = cache.get();
    env.launcher = launcher.get();
    env.exporter = Exporter{"", config.exporter, config.catalog, config.export_timeout_s, {}};
    env.runner = config.runner;
    env.work_dir = config.work_dir + "/" + slot.descriptor.id;
    env.record_dir = record_dir();
    env.kill_grace_s = config.kill_grace_s;
    while (!draining()) {
      const Intervals iv = current_intervals();
      auto answer = client.lease(slot.descriptor.id, iv.long_poll_timeout_s);
      if (!answer.ok()) {
        if (answer.error().code == ErrorCode::kUnauthenticated) {
          ensure_enrolled(identity.get().second);
        } else {
          spdlog::warn("slot {}: lease failed: {}", slot.descriptor.id, answer.error().message);
          sleep_for(backoff.next());
        }
        continue;
      }
      backoff.reset();
      adopt_intervals(answer->intervals);
      if (!answer->job) {
        if (answer->draining) sleep_for(std::chrono::seconds(answer->intervals.heartbeat_interval_s));
        continue;
      }
      const LeasedJob job = *answer->job;
      if (draining()) {
        // Granted to a long poll that began before the drain: give it back untouched.
        spdlog::info("slot {}: draining; giving job {} back", slot.descriptor.id, job.job_id);
        give_back_untouched(client, slot, job);
        continue;
      }
      spdlog::info("slot {}: job {} attempt {} ({} batch {} {} {} {})", slot.descriptor.id, job.job_id, job.attempt,
                   job.spec.model, job.spec.batch, to_string(job.spec.mode), job.spec.torch_build,
                   to_string(job.spec.runtime));
      auto build = std::find_if(builds.begin(), builds.end(), [&](auto& b) { return b.name == job.spec.torch_build; });
      std::optional<JobResult> result;
      {
        std::lock_guard lock(slot.mu);
        slot.current = LeaseRef{job.job_id, job.lease_id};
        slot.stop_job = LeaseState::kActive;
      }
      if (build == builds.end()) {
        JobResult r;
        r.status = ResultStatus::kUnsupported;
        r.error = "this agent has no torch build named " + job.spec.torch_build;
        result = r;
      } else if (!build->broken.empty()) {
        JobResult r;
        r.status = ResultStatus::kError;
        r.error = "torch build " + build->name + " cannot run jobs on this agent: " + build->broken;
        result = r;
      } else {
        env.build = &*build;
        auto next_renewal =
            std::chrono::steady_clock::now() + std::chrono::seconds(answer->intervals.heartbeat_interval_s);
        auto stop = [&](LeaseState why) {
          spdlog::warn("slot {}: job {} {}; stopping its worker", slot.descriptor.id, job.job_id,
                       why == LeaseState::kCancelled ? "was cancelled" : "lost its lease");
          return false;
        };
        result = run_leased_job(job, env, [&] {
          if (aborting()) return false;
          if (const LeaseState why = slot.stop_job.load(); why != LeaseState::kActive) return stop(why);  // heartbeat
          if (std::chrono::steady_clock::now() < next_renewal) return true;
          next_renewal = std::chrono::steady_clock::now() + std::chrono::seconds(current_intervals().heartbeat_interval_s);
          auto renewal = client.progress(job.job_id, job.lease_id, "running");
          if (renewal.ok() && *renewal != LeaseState::kActive) return stop(*renewal);
          return true;  // a coordinator that is down is no reason to throw the work away
        });
      }
      {
        std::lock_guard lock(slot.mu);
        slot.current.reset();
      }
      if (!result && aborting()) {
        // Give the job back now rather than leaving it to the lease's expiry.
        if (auto s = client.release(job.job_id, job.lease_id); !s) spdlog::warn("release failed: {}", s.error().message);
      }
      if (!result) continue;  // stopped: nothing to report
      spdlog::info("slot {}: job {} -> {}", slot.descriptor.id, job.job_id, to_string(result->status));
      const SpoolEntry entry{job.job_id, job.lease_id, job.attempt, std::move(*result)};
      if (auto s = spool->put(entry); !s) spdlog::error("cannot spool job {}: {}", job.job_id, s.error().message);
      upload(entry);
    }
    // A poll left without a readable answer may hold a grant nobody will ask for again.
    if (!aborting() && client.has_unanswered_poll(slot.descriptor.id)) give_back_untouched(client, slot, std::nullopt);
  }

  // While draining, gives back a lease `slot` was granted but never started: `job` when its answer
  // was read, or whatever an unanswered poll may have been granted. Once the coordinator knows
  // the agent drains, the slot's next poll has it withdraw that lease (queued again at the same
  // attempt, Store::lease); a release, the fallback, would use the attempt up.
  void give_back_untouched(CoordinatorClient& client, Slot& slot, const std::optional<LeasedJob>& job) {
    auto told = client.heartbeat({}, /*draining=*/true);
    auto answer = told.ok() ? client.lease(slot.descriptor.id, 0) : Result<LeaseResponse>(told.error());
    if (answer.ok() && !answer->job) {
      spdlog::info("slot {}: draining; the coordinator took back the lease it may have granted", slot.descriptor.id);
      return;
    }
    const std::optional<LeasedJob> held = answer.ok() ? answer->job : job;
    if (!held) {
      spdlog::warn("slot {}: draining; a lease granted to its unanswered poll is left to expire: {}", slot.descriptor.id,
                   answer.error().message);
      return;
    }
    if (auto s = client.release(held->job_id, held->lease_id); !s) spdlog::warn("release failed: {}", s.error().message);
  }

  // The slot thread's body: slot_loop under a guard. An exception (a bug, std::bad_alloc) must
  // not reach std::terminate, which would skip every destructor: the worker's group is killed
  // by its Child's destructor while the exception unwinds, the lease is given back here, and
  // the slot serves on after a pause (unless the agent is stopping).
  void guarded_slot_loop(Slot& slot) {
    while (true) {
      try {
        slot_loop(slot);
        return;
      } catch (const std::exception& e) {
        spdlog::error("slot {}: unexpected exception: {}; its job is given back, the slot serves on", slot.descriptor.id,
                      e.what());
      } catch (...) {
        spdlog::error("slot {}: unexpected exception; its job is given back, the slot serves on", slot.descriptor.id);
      }
      give_back_current(slot);
      if (draining()) return;
      sleep_for(5s);
    }
  }

  // Releases the lease `slot` was working on, if any (best effort, never throws).
  void give_back_current(Slot& slot) noexcept {
    try {
      std::optional<LeaseRef> lease;
      {
        std::lock_guard lock(slot.mu);
        lease.swap(slot.current);
      }
      if (!lease) return;
      CoordinatorClient client(config.coordinator, identity);
      if (auto s = client.release(lease->job_id, lease->lease_id); !s) {
        spdlog::warn("job {}: release failed ({}); its lease will expire", lease->job_id, s.error().message);
      }
    } catch (...) {
      spdlog::error("slot {}: cannot give its job back; its lease will expire", slot.descriptor.id);
    }
  }

  // The heartbeat thread's body under a guard: logged and started again after a pause.
  void guarded_heartbeat_loop() {
    while (true) {
      try {
        heartbeat_loop();
        return;
      } catch (const std::exception& e) {
        spdlog::error("heartbeat: unexpected exception: {}; heartbeats go on", e.what());
      } catch (...) {
        spdlog::error("heartbeat: unexpected exception; heartbeats go on");
      }
      if (aborting()) return;
      sleep_for(1s);
    }
  }

  // The spool replayer's body: results from before a restart. An entry whose upload throws
  // stays in the spool for the next start; the others are still sent.
  void replay_spool() {
    std::vector<SpoolEntry> entries;
    try {
      std::vector<std::string> skipped;
      entries = spool->list(&skipped);
      for (const auto& name : skipped) spdlog::error("unreadable spool entry set aside: {}", name);
    } catch (const std::exception& e) {
      spdlog::error("cannot list the spool: {}", e.what());
      return;
    }
    for (const auto& entry : entries) {
      try {
        upload(entry);
      } catch (const std::exception& e) {
        spdlog::error("job {}: unexpected exception uploading its spooled result ({}); kept for the next start",
                      entry.job_id, e.what());
      }
    }
  }

  void heartbeat_loop() {
    CoordinatorClient client(config.coordinator, identity);
    std::mt19937_64 rng{std::random_device{}()};
    bool failing = false;  // the last heartbeat went unanswered or unread
    while (!aborting()) {
      std::vector<LeaseRef> leases;
      std::vector<Slot*> owners;
      for (auto& s : slots) {
        std::lock_guard lock(s->mu);
        if (s->current) {
          leases.push_back(*s->current);
          owners.push_back(s.get());
        }
      }
      if (draining() && leases.empty()) {
        // Tell the coordinator once, so lease requests still waiting return at once.
        (void)client.heartbeat({}, true);
        return;
      }
      auto answer = client.heartbeat(leases, draining());
      if (answer.ok() && failing) coordinator_reachable_again();
      failing = !answer.ok();
      if (answer.ok()) {
        for (std::size_t i = 0; i < answer->leases.size() && i < owners.size(); ++i) {
          const LeaseState state = answer->leases[i].state;
          if (state == LeaseState::kActive) continue;
          // The answer is about the lease sent; the slot may have finished that job and started
          // another meanwhile, which a stale "lost" must not stop.
          Slot& owner = *owners[i];
          std::lock_guard lock(owner.mu);
          if (owner.current && owner.current->lease_id == leases[i].lease_id) owner.stop_job = state;
        }
      } else if (answer.error().code == ErrorCode::kUnauthenticated) {
        ensure_enrolled(identity.get().second);
      } else {
        // Unreachable, or an unreadable answer: the leases stand until a heartbeat is read.
        spdlog::warn("heartbeat failed: {}", answer.error().message);
      }
      const auto base = std::chrono::milliseconds(current_intervals().heartbeat_interval_s * 1000);
      std::uniform_int_distribution<std::int64_t> jitter(-base.count() / 10, base.count() / 10);
      sleep_for(base + std::chrono::milliseconds(jitter(rng)), /*or_new_intervals=*/true);
    }
  }
};

Daemon::Daemon(AgentConfig config, std::string executable) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->executable = std::move(executable);
}

Daemon::~Daemon() = default;

void Daemon::request_stop() {
  {
    std::lock_guard lock(state_->sleep_mu);
    state_->stop_requests.fetch_add(1);
  }
  state_->wake.notify_all();
  spdlog::info(state_->aborting() ? "abort: killing workers" : "drain: running jobs finish, nothing new is leased");
}

int Daemon::run() {
  State& s = *state_;
  AgentConfig& c = s.config;
  std::error_code ec;
  for (const auto& dir : {c.state_dir, c.work_dir, c.artifact_dir}) {
    fs::create_directories(dir, ec);
    if (ec) {
      spdlog::error("cannot create {}: {}", dir, ec.message());
      return 1;
    }
  }
  // Before anything is probed or leased: what a previous life of this agent left running (it
  // was killed, or died of an exception) still holds the GPU and would skew every timing.
  const OrphanSweep sweep = kill_orphaned_children(s.record_dir(), 10s);
  if (sweep.records > 0) {
    spdlog::warn("killed {} orphaned process(es) of {} exporter/worker record(s) left by an earlier run of this agent",
                 sweep.killed.size(), sweep.records);
  }
  if (!sweep.survivors.empty()) {
    spdlog::error("{} orphaned process(es) survive SIGKILL; not serving with them on the GPU", sweep.survivors.size());
    return 1;
  }
  if (c.exporter.empty()) c.exporter = default_exporter_path(s.executable);
  s.spool = std::make_unique<Spool>(c.spool_dir);
  s.cache = std::make_unique<ArtifactCache>(c.artifact_dir);
  if (auto st = s.spool->open(); !st) {
    spdlog::error("{}", st.error().message);
    return 1;
  }

  const Discovery found = discover_gpus();
  if (found.gpus.empty()) spdlog::info("no GPU: {}; offering one cpu slot", found.note);
  const auto descriptors =
      slots_for(found.gpus, c.gpus, c.memory_limit_mb > 0 ? std::optional<std::int64_t>(c.memory_limit_mb) : std::nullopt);
  const std::string device = found.gpus.empty() ? "cpu" : "cuda";

  s.builds = c.builds;
  if (s.builds.empty()) {
    TorchBuild local;
    local.name = "local";
    local.python = "/usr/bin/python3";
    local.worker = default_worker_path(s.executable);
    s.builds.push_back(std::move(local));
  }
  if (c.runner.empty()) c.runner = default_runner_path(c.exporter);
  if (c.in_root.empty()) c.in_root = default_in_root_path(c.exporter);
  // Paths resolved once: a build in its own root sees the host directories it needs bound at
  // these paths, so the paths its programs are given must not go through symlinks.
  for (std::string* p : {&c.exporter, &c.runner, &c.catalog, &c.in_root, &c.work_dir, &c.artifact_dir}) {
    *p = resolved_path(*p);
  }
  for (auto& b : s.builds) b.worker = resolved_path(b.worker);
  s.launcher = std::make_unique<BuildLauncher>(
      c.in_root, std::vector<std::string>{c.work_dir, c.artifact_dir},
      std::vector<std::string>{fs::path(c.exporter).parent_path().string(), fs::path(c.runner).parent_path().string(),
                               fs::path(c.catalog).parent_path().string()},
      c.artifact_dir + "/inductor");
  for (auto& b : s.builds) probe_build(c, *s.launcher, s.record_dir(), device, b);

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  s.descriptor.name = c.name;
  s.descriptor.hostname = host;
  s.descriptor.version = BENCHFLEET_VERSION;
  for (const auto& d : descriptors) {
    s.descriptor.slots.push_back(d);
    s.slots.push_back(std::make_unique<Slot>());
    s.slots.back()->descriptor = d;
  }
  for (const auto& b : s.builds) s.descriptor.torch_builds.push_back({b.name, b.version, b.runtimes});

  s.load_saved_token();
  if (!s.identity.valid() && !s.ensure_enrolled()) return 0;
  // A first heartbeat before any lease: it clears a drain this agent announced before a
  // restart (and finds out at once if a saved token is no longer accepted).
  {
    CoordinatorClient client(c.coordinator, s.identity);
    auto first = client.heartbeat({}, false);
    if (!first.ok() && first.error().code == ErrorCode::kUnauthenticated) s.ensure_enrolled(s.identity.get().second);
  }

  std::vector<std::thread> threads;
  threads.reserve(s.slots.size() + 2);
  // Every thread body is guarded: no exception ends the agent (see guarded_slot_loop).
  threads.emplace_back([&s] { s.replay_spool(); });
  threads.emplace_back([&s] { s.guarded_heartbeat_loop(); });
  for (auto& slot : s.slots) threads.emplace_back([&s, &slot] { s.guarded_slot_loop(*slot); });
  for (auto& t : threads) t.join();
  spdlog::info("stopped");
  return 0;
}

}  // namespace benchfleet::agent
