// The agent's rules (docs/design.md §7, §10), free of sockets, processes and real time: each
// slot's loop (lease -> run -> spool -> upload), the heartbeat loop and the spool replay; drain
// on the first stop request and abort on the second; enrolling again when the coordinator
// rejects the token (401); retries that back off; the intervals the coordinator dictates; in a
// batch allocation (§10.1), a deadline no job may run past and an exit when idle.
// What they act through is injected (AgentLoopParts), so unit tests drive them with fakes; the
// Daemon (daemon.h) wires the real coordinator client, job runner and clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/allocation.h"
#include "agent/daemon/backoff.h"
#include "agent/daemon/coordinator_api.h"
#include "agent/daemon/job_runner.h"
#include "agent/daemon/spool.h"
#include "agent/daemon/wait_clock.h"
#include "common/agent_protocol.h"
#include "common/types.h"

namespace benchfleet::agent {

// A new CoordinatorApi for the calling thread (the real one owns a keep-alive connection),
// sending and replacing the credentials held in `identity`.
using ConnectToCoordinator = std::function<std::unique_ptr<CoordinatorApi>(AgentIdentity& identity)>;

// The agent in a batch allocation (docs/design.md §10.1). The defaults: no deadline, no idle exit.
struct AllocationRules {
  // The allocation's end on the WaitClock's time line (nullopt: none), asked once at the start
  // and again after each job (an admin may move the limit). Called from the slot threads; it
  // must not throw. Null: no deadline.
  std::function<std::optional<std::chrono::steady_clock::time_point>()> read_deadline;
  // A leased job starts only if its estimate (allocation.h) plus this ends before the deadline;
  // with less than this left, the agent drains.
  std::chrono::milliseconds end_margin{30000};
  // Drain after this long with no job on any slot (0: never).
  std::chrono::milliseconds idle_exit{0};
  int kill_grace_s = 10;  // part of a job's estimate
};

struct AgentLoopParts {
  ConnectToCoordinator connect;
  JobRunner* runner = nullptr;  // must outlive the loops, as must spool and clock
  Spool* spool = nullptr;       // opened; results are put here before their first upload
  WaitClock* clock = nullptr;
  UniformInt uniform = random_uniform_int();  // the jitter of backoffs and heartbeats
  // Called after each enrolment with the coordinator's answer (the daemon saves the token).
  std::function<void(const EnrollResponse&)> enrolled;
  AgentDescriptor descriptor;  // what enrolment sends; one slot loop per descriptor.slots
  std::string enrollment_token;
  // The agent token saved by an earlier run, even one with another descriptor: shown when
  // enrolling again under the same name (CoordinatorApi::enroll).
  std::string held_token;
  // The key this agent keeps in its state directory (agent_key()), shown on every enrolment.
  std::string agent_key;
  AllocationRules allocation;
};

class AgentLoops {
 public:
  explicit AgentLoops(AgentLoopParts parts);
  ~AgentLoops();
  AgentLoops(const AgentLoops&) = delete;
  AgentLoops& operator=(const AgentLoops&) = delete;

  // The agent's credentials: set them from a saved token before run(); replaced on enrolment.
  AgentIdentity& identity() { return identity_; }

  // The whole agent: enrols unless it has credentials, sends a first heartbeat (it clears a
  // drain announced before a restart, and finds out at once if a saved token is refused), then
  // runs the spool replay, the heartbeat loop and each slot's loop on threads of their own, and
  // returns when they are done: drained or aborted. No exception escapes a thread.
  void run();

  // The first request drains: running jobs finish and report, nothing new is leased, the loops
  // end. The second aborts: running jobs are stopped and their leases released. Wakes every
  // wait. Returns how many stops have been requested. Thread-safe.
  int request_stop();
  // Drains as the first stop request would, without counting as one (a later SIGTERM drains,
  // a second aborts). `why` is kept as the exit reason unless one came first. Thread-safe.
  void drain_by_itself(const std::string& why);
  bool draining() const { return stop_requests_.load() >= 1 || drained_by_itself_.load(); }
  bool aborting() const { return stop_requests_.load() >= 2; }
  // Why the loops ended (or are ending): the first drain's reason, or the abort. Thread-safe.
  std::string exit_reason() const;
  // Jobs whose verdict this agent reported (or spooled). Thread-safe.
  int jobs_run() const { return jobs_run_.load(); }

  // The intervals in force: the built-in defaults until the coordinator dictates others.
  Intervals current_intervals() const;

  // The parts of run(), public for tests. Each may be called from its own thread.
  //
  // Enrols until it works (true), backing off between failures, unless credentials other than
  // `rejected` are already there (another thread enrolled). False when aborting, or draining
  // with no credentials.
  bool ensure_enrolled(const std::string& rejected = "");
  // Slot `index`'s loop (of descriptor.slots) until drained or aborted. An exception gives the
  // slot's lease back and the slot serves on after 5 s, unless the agent is draining.
  void serve_slot(std::size_t index);
  // Heartbeats each interval (with ±10% jitter) until aborted, or draining with no job left.
  void send_heartbeats();
  // One heartbeat: renews the running jobs' leases, stops the jobs whose lease is lost or
  // cancelled, enrols again on a 401. False when the loop is over: the agent drains and holds
  // no lease (the coordinator was told once).
  bool heartbeat_once();
  // Uploads the spooled results left from before a restart.
  void replay_spool();
  // Uploads one spooled result until acknowledged or refused (then removes it from the spool),
  // or abort. A result refused as invalid (400/413) is replaced, in the spool too, by an error
  // verdict saying why; if even that is refused, the entry is dropped.
  void upload(SpoolEntry entry);

 private:
  struct Slot {
    SlotDescriptor descriptor;
    std::mutex mu;
    std::optional<LeaseRef> current;  // under mu: the lease being worked on
    // Set when a heartbeat says the lease is gone: kLost or kCancelled (kActive: keep going).
    std::atomic<LeaseState> stop_job{LeaseState::kActive};
  };

  void sleep_for(std::chrono::milliseconds d, bool or_new_intervals = false, bool or_reachable_again = false);
  void adopt_intervals(const Intervals& dictated);
  void coordinator_reachable_again();
  Status enrol(const std::string& rejected);
  void slot_loop(Slot& slot);
  std::optional<JobResult> run_job(CoordinatorApi& client, Slot& slot, const LeasedJob& job);
  void give_back_untouched(CoordinatorApi& client, Slot& slot, const std::optional<LeasedJob>& job);
  void give_back_current(Slot& slot) noexcept;
  void heartbeat_loop();
  // The allocation's end (AllocationRules::read_deadline), read on first use; refresh: read again.
  std::optional<std::chrono::steady_clock::time_point> deadline(bool refresh = false);
  // Whether `job` may start now: it fits before the deadline (or there is none). When not, the
  // agent drains, saying why.
  bool fits_before_the_end(const Slot& slot, const LeasedJob& job);
  // The lease poll's wait: the coordinator's long poll, shortened so that the idle exit and the
  // margin before the deadline are noticed on time.
  int lease_wait_s(int long_poll_s);
  // Drains when less than the margin is left, or after idle_exit with no job on any slot.
  void drain_if_time_is_up(bool after_no_work);
  void slot_busy(bool busy);

  AgentLoopParts parts_;
  std::vector<std::unique_ptr<Slot>> slots_;
  AgentIdentity identity_;
  std::mutex enrol_mu_;
  mutable std::mutex intervals_mu_;
  Intervals intervals_;  // under intervals_mu_
  std::atomic<int> stop_requests_{0};
  std::atomic<bool> drained_by_itself_{false};
  mutable std::mutex reason_mu_;
  std::string exit_reason_;  // under reason_mu_: the first drain's
  std::atomic<int> jobs_run_{0};
  std::mutex deadline_mu_;
  bool deadline_read_ = false;                                     // under deadline_mu_
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // under deadline_mu_
  DurationRecord durations_;
  std::mutex idle_mu_;
  int busy_slots_ = 0;                                  // under idle_mu_: slots holding a job
  std::chrono::steady_clock::time_point idle_since_{};  // under idle_mu_: when the last one ended
  std::atomic<int> interval_changes_{0};                // wakes the heartbeat when the coordinator's pace changes
  std::atomic<int> reachable_again_{0};                 // wakes uploads waiting out a backoff when it answers again
  // The heartbeat thread's own (heartbeat_once is called from one thread at a time).
  std::unique_ptr<CoordinatorApi> heartbeat_client_;
  bool heartbeat_failing_ = false;  // the last heartbeat went unanswered or unread
};

}  // namespace benchfleet::agent
