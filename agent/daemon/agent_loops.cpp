// AgentLoops: what the loops share (stop requests, intervals, credentials), the heartbeat, the
// uploads and run(). Each slot's loop is in slot_loop.cpp.
#include "agent/daemon/agent_loops.h"

#include <spdlog/spdlog.h>

#include <thread>

namespace benchfleet::agent {

using namespace std::chrono_literals;

AgentLoops::AgentLoops(AgentLoopParts parts) : parts_(std::move(parts)) {
  for (const auto& d : parts_.descriptor.slots) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->descriptor = d;
  }
  idle_since_ = parts_.clock->now();
}

AgentLoops::~AgentLoops() = default;

int AgentLoops::request_stop() {
  const int stops = stop_requests_.fetch_add(1) + 1;
  {
    std::lock_guard lock(reason_mu_);
    if (exit_reason_.empty()) exit_reason_ = "drained on a stop request";
  }
  parts_.clock->wake_all();
  return stops;
}

void AgentLoops::drain_by_itself(const std::string& why) {
  {
    std::lock_guard lock(reason_mu_);
    if (exit_reason_.empty()) exit_reason_ = why;
  }
  if (!drained_by_itself_.exchange(true)) spdlog::info("draining: {}", why);
  parts_.clock->wake_all();
}

std::string AgentLoops::exit_reason() const {
  if (aborting()) return "aborted on a second stop request";
  std::lock_guard lock(reason_mu_);
  return exit_reason_;
}

// Sleeps up to `d`, waking early on drain/abort (and, with `or_new_intervals`, when the
// coordinator dictates other intervals: see adopt_intervals; with `or_reachable_again`, when a
// heartbeat is answered after failures).
void AgentLoops::sleep_for(std::chrono::milliseconds d, bool or_new_intervals, bool or_reachable_again) {
  const int seen = stop_requests_.load();
  const bool seen_drained = drained_by_itself_.load();
  const int seen_intervals = interval_changes_.load();
  const int seen_reachable = reachable_again_.load();
  parts_.clock->sleep_for(d, [&] {
    return stop_requests_.load() != seen || drained_by_itself_.load() != seen_drained ||
           (or_new_intervals && interval_changes_.load() != seen_intervals) ||
           (or_reachable_again && reachable_again_.load() != seen_reachable);
  });
}

// The coordinator answered a heartbeat after it had failed (a partition healed, a restart):
// spooled results waiting out their backoff (up to 30 s) are sent now.
void AgentLoops::coordinator_reachable_again() {
  reachable_again_.fetch_add(1);
  parts_.clock->wake_all();
}

Intervals AgentLoops::current_intervals() const {
  std::lock_guard lock(intervals_mu_);
  return intervals_;
}

// The coordinator dictates the intervals (docs/design.md §7) at enrolment and in every lease answer.
// An agent restarted on its saved token does not enrol: until a lease answer came it runs on
// the built-in defaults, so a change wakes the heartbeat, which may be asleep for the default
// interval while a lease of a shorter TTL needs renewing.
void AgentLoops::adopt_intervals(const Intervals& dictated) {
  {
    std::lock_guard lock(intervals_mu_);
    if (intervals_ == dictated) return;
    intervals_ = dictated;
  }
  interval_changes_.fetch_add(1);
  parts_.clock->wake_all();
}

// Enrols unless the token that failed (`rejected`) was already replaced by another thread.
Status AgentLoops::enrol(const std::string& rejected) {
  std::lock_guard lock(enrol_mu_);
  if (identity_.valid() && identity_.get().second != rejected) return Status::Ok();
  // The token held now (even the one just rejected: the coordinator checks it) or, before the
  // first enrolment of this run, the one an earlier run saved.
  const std::string held = identity_.valid() ? identity_.get().second : parts_.held_token;
  auto client = parts_.connect(identity_);
  BF_ASSIGN_OR_RETURN(EnrollResponse e, client->enroll(parts_.descriptor, parts_.enrollment_token,
                                                       EnrolmentProof{parts_.agent_key, held}));
  identity_.set(e.agent_id, e.agent_token);
  adopt_intervals(e.intervals);
  if (parts_.enrolled) parts_.enrolled(e);
  spdlog::info("enrolled as agent {} with {} slot(s)", e.agent_id, parts_.descriptor.slots.size());
  return Status::Ok();
}

bool AgentLoops::ensure_enrolled(const std::string& rejected) {
  Backoff backoff(parts_.uniform);
  while (!aborting() && !(draining() && !identity_.valid())) {
    auto s = enrol(rejected);
    if (s.ok()) return true;
    spdlog::warn("enrolment failed: {}", s.error().message);
    sleep_for(backoff.next());
  }
  return identity_.valid();
}

void AgentLoops::upload(SpoolEntry entry) {
  auto client = parts_.connect(identity_);
  Backoff backoff(parts_.uniform);
  bool replaced = false;
  while (!aborting()) {
    auto r = client->upload(entry);
    if (r.ok() && r->outcome == Upload::kInvalid && !replaced) {
      spdlog::error(
          "job {}: the coordinator refused the worker's result as invalid: {}; posting an error verdict "
          "instead",
          entry.job_id, r->detail);
      entry.result = refused_result_verdict(entry.result, r->detail);
      replaced = true;
      if (auto put = parts_.spool->put(entry); !put.ok()) {
        spdlog::warn("job {}: spool: {}", entry.job_id, put.error().message);
      }
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
      (void)parts_.spool->remove(entry.job_id, entry.attempt);
      return;
    }
    if (r.error().code == ErrorCode::kUnauthenticated) {
      ensure_enrolled(identity_.get().second);
      continue;
    }
    spdlog::warn("job {}: result upload failed, will retry: {}", entry.job_id, r.error().message);
    sleep_for(backoff.next(), /*or_new_intervals=*/false, /*or_reachable_again=*/true);
  }
}

// The spool replayer's body: results from before a restart. An entry whose upload throws
// stays in the spool for the next start; the others are still sent.
void AgentLoops::replay_spool() {
  std::vector<SpoolEntry> entries;
  try {
    std::vector<std::string> skipped;
    entries = parts_.spool->list(&skipped);
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

bool AgentLoops::heartbeat_once() {
  if (!heartbeat_client_) heartbeat_client_ = parts_.connect(identity_);
  CoordinatorApi& client = *heartbeat_client_;
  std::vector<LeaseRef> leases;
  std::vector<Slot*> owners;
  for (auto& s : slots_) {
    std::lock_guard lock(s->mu);
    if (s->current) {
      leases.push_back(*s->current);
      owners.push_back(s.get());
    }
  }
  if (draining() && leases.empty()) {
    // Tell the coordinator once, so lease requests still waiting return at once.
    (void)client.heartbeat({}, true);
    return false;
  }
  auto answer = client.heartbeat(leases, draining());
  if (answer.ok() && heartbeat_failing_) coordinator_reachable_again();
  heartbeat_failing_ = !answer.ok();
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
    ensure_enrolled(identity_.get().second);
  } else {
    // Unreachable, or an unreadable answer: the leases stand until a heartbeat is read.
    spdlog::warn("heartbeat failed: {}", answer.error().message);
  }
  return true;
}

void AgentLoops::heartbeat_loop() {
  while (!aborting()) {
    if (!heartbeat_once()) return;
    const std::int64_t base_ms = std::int64_t{current_intervals().heartbeat_interval_s} * 1000;
    sleep_for(std::chrono::milliseconds(base_ms + parts_.uniform(-base_ms / 10, base_ms / 10)),
              /*or_new_intervals=*/true);
  }
}

// The heartbeat thread's body under a guard: logged and started again after a pause.
void AgentLoops::send_heartbeats() {
  while (true) {
    try {
      heartbeat_loop();
      return;
    } catch (const std::exception& e) {
      spdlog::error("heartbeat: unexpected exception: {}; heartbeats go on", e.what());
    } catch (...) {
      spdlog::error("heartbeat: unexpected exception; heartbeats go on");
    }
    heartbeat_client_.reset();  // a fresh connection for the next try
    if (aborting()) return;
    sleep_for(1s);
  }
}

void AgentLoops::run() {
  if (!identity_.valid() && !ensure_enrolled()) return;
  // A first heartbeat before any lease: it clears a drain this agent announced before a
  // restart (and finds out at once if a saved token is no longer accepted).
  {
    auto client = parts_.connect(identity_);
    auto first = client->heartbeat({}, false);
    if (!first.ok() && first.error().code == ErrorCode::kUnauthenticated) ensure_enrolled(identity_.get().second);
  }
  std::vector<std::thread> threads;
  threads.reserve(slots_.size() + 2);
  // Every thread body is guarded: no exception ends the agent (see serve_slot).
  threads.emplace_back([this] { replay_spool(); });
  threads.emplace_back([this] { send_heartbeats(); });
  for (std::size_t i = 0; i < slots_.size(); ++i) threads.emplace_back([this, i] { serve_slot(i); });
  for (auto& t : threads) t.join();
}

}  // namespace benchfleet::agent
