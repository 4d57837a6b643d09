// The store's agents and leases against a real SQLite file, with a manual clock for lease
// timing: what a slot is leased, expiry, renewal, release, drain and withdrawal.
#include "coordinator/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "common/codecs.h"
#include "common/matrix.h"
#include "coordinator/store/migrations.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

TEST_F(StoreTest, LeasesOnlyWhatTheSlotCanRunAndKeepsAGroupOnOneSlot) {
  const auto a = enroll("a", "a100", {Mode::kEager, Mode::kDefault});
  const auto b = enroll("b", "a100", {Mode::kEager, Mode::kDefault});
  const auto t4 = enroll("t4host", "t4");
  submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager, Mode::kDefault, Mode::kMaxAutotune});

  auto none = store_->leases().lease(t4, "gpu0");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->grant) << "no a100 job may go to a t4 slot";

  const auto first_a = lease(a);
  const auto first_b = lease(b);
  EXPECT_NE(first_a.spec.batch, first_b.spec.batch) << "each slot starts its own group";
  ASSERT_EQ(store_->results().record_result(a, {first_a.job_id, first_a.lease_id}, 1, ok_result(2)).value().kind,
            RecordKind::kStored);
  const auto second_a = lease(a);
  EXPECT_EQ(second_a.spec.batch, first_a.spec.batch) << "a's next job is the other mode of its group";
  EXPECT_EQ(second_a.spec.mode, Mode::kDefault);
  ASSERT_TRUE(store_->results().record_result(a, {second_a.job_id, second_a.lease_id}, 1, ok_result(1)).ok());
  // max-autotune is offered by no slot: it became unsupported, so a's next job is b's default.
  auto after = store_->leases().lease(a, "gpu0");
  ASSERT_TRUE(after.ok());
  ASSERT_TRUE(after->grant) << "a takes b's remaining default job instead of idling";
  EXPECT_EQ(after->grant->spec.batch, first_b.spec.batch);
  EXPECT_EQ(after->grant->spec.mode, Mode::kDefault);
}

TEST_F(StoreTest, ModesNoSlotOffersBecomeUnsupportedInsteadOfWaitingForever) {
  const auto a = enroll("a", "a100", {Mode::kEager});
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager, Mode::kDefault});
  const auto g = lease(a);
  EXPECT_EQ(g.spec.mode, Mode::kEager);
  auto cells = store_->results().report_cells(run).value();
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1].result_status, ResultStatus::kUnsupported);
  EXPECT_NE(cells[1].detail.find("does not offer mode default"), std::string::npos) << cells[1].detail;
  ASSERT_TRUE(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(1)).ok());
  EXPECT_EQ(store_->runs().get_run(run).value().state, "done");
}

// Only the modes the slot's own build/runtime lacks: a mode another of its builds offers stays
// queued for that build, and a build it does not have at all is not its to judge.
TEST_F(StoreTest, UnsupportedIsJudgedPerBuildTheSlotOffers) {
  AgentDescriptor d;
  d.name = "a";
  d.slots = {{"gpu0", "a100", std::nullopt, std::nullopt}};
  d.torch_builds = {{"stable", "2.11.0", {{Runtime::kLibtorch, {Mode::kEager}}}},
                    {"nightly", "2.12.0", {{Runtime::kLibtorch, {Mode::kEager, Mode::kDefault}}}}};
  const auto a = store_->agents().enroll_agent(d, {"salt", "hash"}, store::EnrolmentClaim::anyone()).value();
  MatrixSpec spec;
  spec.name = "builds";
  spec.models = {"torchvision/resnet18"};
  spec.batch_sizes = {1};
  spec.modes = {Mode::kEager, Mode::kDefault};
  spec.torch_builds = {"stable", "nightly", "other"};
  spec.gpus = {"a100"};
  auto catalog = Catalog::load_file(default_catalog_path());
  ASSERT_TRUE(catalog.ok());
  const auto run = store_->runs().create_run(spec, expand_matrix(spec, *catalog, {}).value()).value().run_id;

  ASSERT_TRUE(store_->leases().lease(a, "gpu0").value().grant);
  std::map<std::pair<std::string, Mode>, JobRow> jobs;
  const auto page = store_->runs().list_jobs(run, std::nullopt, 100);
  ASSERT_TRUE(page.ok());
  for (const auto& j : page->items) jobs[std::make_pair(j.spec.torch_build, j.spec.mode)] = j;
  ASSERT_EQ(jobs.size(), 6u);
  const auto job = [&](const std::string& build, Mode mode) { return jobs[std::make_pair(build, mode)]; };
  EXPECT_EQ(job("stable", Mode::kDefault).result_status, ResultStatus::kUnsupported);
  EXPECT_EQ(job("nightly", Mode::kDefault).result_status, std::nullopt) << "nightly offers default";
  EXPECT_EQ(job("other", Mode::kEager).status, JobStatus::kQueued);
  EXPECT_EQ(job("other", Mode::kDefault).status, JobStatus::kQueued) << "a build the slot lacks is not its to judge";
}

// Unsupported cells are judged when a run is submitted (by every enrolled slot) and when
// an agent enrols, not on each lease; a job no enrolled slot has the build of waits queued.
TEST_F(StoreTest, UnsupportedIsJudgedAtSubmissionAndAtEnrolmentWithoutALease) {
  enroll("a", "a100", {Mode::kEager});
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager, Mode::kDefault});
  auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.results_by_status[ResultStatus::kUnsupported], 1) << "judged at submission";
  EXPECT_EQ(info.jobs_by_status[JobStatus::kQueued], 1);

  MatrixSpec spec;
  spec.name = "nightly";
  spec.models = {"torchvision/resnet18"};
  spec.batch_sizes = {1};
  spec.modes = {Mode::kEager, Mode::kDefault};
  spec.torch_builds = {"nightly"};
  spec.gpus = {"a100"};
  auto catalog = Catalog::load_file(default_catalog_path());
  ASSERT_TRUE(catalog.ok());
  const auto nightly = store_->runs().create_run(spec, expand_matrix(spec, *catalog, {}).value()).value().run_id;
  EXPECT_EQ(store_->runs().get_run(nightly).value().jobs_by_status[JobStatus::kQueued], 2)
      << "no enrolled slot has the nightly build: its jobs wait for one";

  AgentDescriptor d;
  d.name = "n";
  d.slots = {{"gpu0", "a100", std::nullopt, std::nullopt}};
  d.torch_builds = {{"nightly", "2.12.0", {{Runtime::kLibtorch, {Mode::kEager}}}}};
  ASSERT_TRUE(store_->agents().enroll_agent(d, {"salt", "hash"}, store::EnrolmentClaim::anyone()).ok());
  info = store_->runs().get_run(nightly).value();
  EXPECT_EQ(info.results_by_status[ResultStatus::kUnsupported], 1) << "judged when the agent enrolled";
  EXPECT_EQ(info.jobs_by_status[JobStatus::kQueued], 1);
}

// Finding the jobs that became unsupported read every queued job of the class on
// each lease (~100 ms at 96,000 jobs queued, under the store's lock), so 100 agents reconnecting
// after a coordinator restart waited 13-27 s. A lease's CPU time must not grow with the queue.
TEST_F(StoreTest, ALeaseCostsTheSameWithAShortOrALongQueue) {
  const auto a = enroll("a", "a100", {Mode::kEager});
  auto cpu_ms_per_lease = [&](int leases) {
    timespec t0{}, t1{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (int i = 0; i < leases; ++i) {
      const auto g = lease(a);
      EXPECT_TRUE(store_->leases().release(a, {g.job_id, g.lease_id}).ok());
    }
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    return ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / leases;
  };
  auto queue = [&](int batches) {  // 100 jobs a batch size
    MatrixSpec spec;
    spec.name = "queue";
    spec.models = {"torchvision/resnet18"};
    for (int b = 1; b <= batches; ++b) spec.batch_sizes.push_back(b);
    spec.modes = {Mode::kEager};
    spec.torch_builds = {"stable"};
    spec.gpus = {"a100"};
    spec.repetitions = 100;
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok());
    ASSERT_TRUE(store_->runs().create_run(spec, expand_matrix(spec, *catalog, {}).value()).ok());
  };
  queue(2);             // 200 jobs
  cpu_ms_per_lease(5);  // warm the statement cache
  const double short_queue = cpu_ms_per_lease(20);
  queue(200);  // 20,000 more
  const double long_queue = cpu_ms_per_lease(20);
  EXPECT_LT(long_queue, 5 * short_queue + 0.5)
      << "ms of CPU per lease: " << short_queue << " with 200 jobs queued, " << long_queue << " with 20,200";
}

TEST_F(StoreTest, ExpiredLeaseRequeuesThenFailsAfterMaxAttempts) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g1 = lease(a);
  EXPECT_EQ(g1.attempt, 1);
  clock_.advance_ms(options_.lease_ttl_ms - 1);
  EXPECT_EQ(store_->leases().expire_leases().value(), 0);
  clock_.advance_ms(1);
  EXPECT_EQ(store_->leases().expire_leases().value(), 1);

  const auto g2 = lease(b);
  EXPECT_EQ(g2.job_id, g1.job_id);
  EXPECT_EQ(g2.attempt, 2);
  EXPECT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}).value().state, LeaseState::kLost);
  EXPECT_EQ(store_->results().record_result(a, {g1.job_id, g1.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kLost);

  clock_.advance_ms(options_.lease_ttl_ms);
  EXPECT_EQ(store_->leases().expire_leases().value(), 1);
  auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.jobs_by_status[JobStatus::kFailed], 1);
  EXPECT_EQ(info.state, "done");
  EXPECT_TRUE(info.finished_at.has_value());
}

TEST_F(StoreTest, AnExpiredLeaseIsStaleEvenBeforeTheSweep) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager});
  const auto g1 = lease(a);
  const auto g2 = lease(b);
  int notified = 0;
  store_->on_work_available([&] { ++notified; });
  clock_.advance_ms(options_.lease_ttl_ms);
  EXPECT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}).value().state, LeaseState::kLost);
  EXPECT_EQ(store_->results().record_result(b, {g2.job_id, g2.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kLost);
  EXPECT_EQ(notified, 2) << "both jobs went back to the queue and waiting agents must hear of it";
  EXPECT_EQ(store_->leases().expire_leases().value(), 0) << "nothing left for the sweep";
  EXPECT_EQ(lease(b).attempt, 2);
}

TEST_F(StoreTest, OnlyTheLeaseHolderLearnsOfAStoredResult) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  ASSERT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kStored);
  EXPECT_EQ(store_->results().record_result(b, {g.job_id, g.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kLost);
  EXPECT_EQ(store_->results().record_result(a, {g.job_id, "other"}, 1, ok_result(2)).value().kind, RecordKind::kLost);
  EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kDuplicate);
}

TEST_F(StoreTest, RenewalExtendsTheLease) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  clock_.advance_ms(options_.lease_ttl_ms - 1000);
  auto r = store_->leases().renew(a, {g.job_id, g.lease_id});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state, LeaseState::kActive);
  EXPECT_EQ(r->expires_at, clock_.now_ms() + options_.lease_ttl_ms);
  clock_.advance_ms(options_.lease_ttl_ms - 1000);
  EXPECT_EQ(store_->leases().expire_leases().value(), 0);
  auto hb = store_->leases().heartbeat(a, {{g.job_id, g.lease_id}, {g.job_id, "not-the-lease"}});
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ((*hb)[0].state, LeaseState::kActive);
  EXPECT_EQ((*hb)[1].state, LeaseState::kLost);
}

// A lease is never lost for the coordinator's own lateness: a heartbeat, a progress report or a
// result that arrived before the expiry is judged as of its arrival, however late the store comes
// to it; and while such a request is being handled, the sweep expires nothing it may renew.
TEST_F(StoreTest, ARequestThatArrivedInTimeKeepsItsLeaseHoweverLateItIsHandled) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto c = enroll("c");
  submit({"torchvision/resnet18", "torchvision/squeezenet1_1", "torchvision/mobilenet_v3_small"}, {1}, {Mode::kEager});
  const auto g1 = lease(a);
  const auto g2 = lease(b);
  const auto g3 = lease(c);
  clock_.advance_ms(options_.lease_ttl_ms - 10);  // 10 ms before the expiry
  {
    // The requests arrived; the store is busy (the clock runs on) and the sweep runs meanwhile.
    const LeaseStore::Arrivals::Ticket ticket(store_->leases().arrivals(), clock_.now_ms());
    clock_.advance_ms(3000);
    EXPECT_EQ(store_->leases().expire_leases().value(), 0) << "requests that arrived in time are being handled";
    auto hb = store_->leases().heartbeat(a, {{g1.job_id, g1.lease_id}}, ticket.at());
    ASSERT_TRUE(hb.ok());
    EXPECT_EQ((*hb)[0].state, LeaseState::kActive);
    EXPECT_EQ((*hb)[0].expires_at, clock_.now_ms() + options_.lease_ttl_ms) << "renewed from now, not from then";
    EXPECT_EQ(store_->leases().renew(b, {g2.job_id, g2.lease_id}, ticket.at()).value().state, LeaseState::kActive);
    EXPECT_EQ(store_->results().record_result(c, {g3.job_id, g3.lease_id}, 1, ok_result(1), ticket.at()).value().kind,
              RecordKind::kStored);
  }
  // A request that arrived after the expiry is late: the lease is lost.
  clock_.advance_ms(options_.lease_ttl_ms + 1);
  const LeaseStore::Arrivals::Ticket late(store_->leases().arrivals(), clock_.now_ms());
  EXPECT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}, late.at()).value().state, LeaseState::kLost);
}

TEST_F(StoreTest, TheSweepWaitsOnlyForRequestsThatArrivedBeforeAnExpiry) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  (void)lease(a);
  clock_.advance_ms(options_.lease_ttl_ms + 5000);
  // A request that arrived after the lease had expired holds nothing back.
  const LeaseStore::Arrivals::Ticket after(store_->leases().arrivals(), clock_.now_ms() - 1000);
  EXPECT_EQ(store_->leases().expire_leases().value(), 1);
}

TEST_F(StoreTest, RestartGivesLiveLeasesAGracePeriod) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  clock_.advance_ms(options_.lease_ttl_ms + 5000);  // the coordinator was down past the TTL
  reopen();
  EXPECT_EQ(store_->leases().expire_leases().value(), 0) << "the restart must not requeue live work";
  EXPECT_EQ(store_->leases().renew(a, {g.job_id, g.lease_id}).value().state, LeaseState::kActive);
}

TEST_F(StoreTest, CancelStopsQueuedJobsAndTellsLeaseHolders) {
  const auto a = enroll("a");
  const auto run = submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager});
  const auto g = lease(a);
  auto c = store_->runs().cancel_run(run);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->cancelled_jobs, 2);
  EXPECT_EQ(store_->leases().renew(a, {g.job_id, g.lease_id}).value().state, LeaseState::kCancelled);
  EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kCancelled);
  EXPECT_FALSE(store_->leases().lease(a, "gpu0").value().grant);
  EXPECT_TRUE(store_->runs().cancel_run(run).value().already_cancelled);
  EXPECT_EQ(store_->runs().get_run(run).value().state, "cancelled");
}

TEST_F(StoreTest, ReleaseRequeuesAtOnceAndOnlyForTheHolder) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  EXPECT_EQ(store_->leases().release(b, {g.job_id, g.lease_id}).value(), LeaseState::kLost) << "not b's lease";
  EXPECT_EQ(store_->leases().release(a, {g.job_id, "other"}).value(), LeaseState::kLost);
  EXPECT_EQ(store_->leases().release(a, {g.job_id, g.lease_id}).value(), LeaseState::kActive);
  EXPECT_EQ(store_->leases().renew(a, {g.job_id, g.lease_id}).value().state, LeaseState::kLost);
  const auto again = lease(b);
  EXPECT_EQ(again.job_id, g.job_id) << "requeued without waiting for the TTL";
  EXPECT_EQ(again.attempt, 2);
}

TEST_F(StoreTest, ASlotAskingAgainGetsItsUnacknowledgedLeaseAgain) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g1 = lease(a);  // the answer may never have reached the agent: it polls again
  const auto g2 = lease(a);
  EXPECT_EQ(g2.job_id, g1.job_id);
  EXPECT_EQ(g2.lease_id, g1.lease_id) << "the same lease, handed over again";
  EXPECT_EQ(g2.attempt, 1) << "a retried poll burns no attempt";
  EXPECT_TRUE(g2.redelivered);
  EXPECT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}).value().state, LeaseState::kActive);
}

TEST_F(StoreTest, ASlotAskingAgainReleasesWhatItAcknowledged) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g1 = lease(a);
  ASSERT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}).value().state, LeaseState::kActive);  // acknowledged
  const auto g2 = lease(a);  // e.g. the agent restarted and lost its worker
  EXPECT_EQ(g2.job_id, g1.job_id);
  EXPECT_NE(g2.lease_id, g1.lease_id);
  EXPECT_EQ(g2.attempt, 2);
  EXPECT_FALSE(g2.redelivered);
  EXPECT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}).value().state, LeaseState::kLost);
}

TEST_F(StoreTest, DrainingAgentsGetNoWork) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  ASSERT_TRUE(store_->agents().set_draining(a, true).ok());
  auto answer = store_->leases().lease(a, "gpu0").value();
  EXPECT_FALSE(answer.grant);
  EXPECT_TRUE(answer.draining);
  EXPECT_EQ(store_->agents().set_draining(999, true).error().code, ErrorCode::kNotFound);
}

TEST_F(StoreTest, AnAgentsOwnDrainIsApartFromTheOperators) {
  const auto a = enroll("a");
  submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  ASSERT_TRUE(store_->agents().set_self_draining(a, true).ok());
  EXPECT_TRUE(store_->leases().lease(a, "gpu0").value().draining);
  ASSERT_TRUE(store_->agents().set_draining(a, true).ok());
  ASSERT_TRUE(store_->agents().set_self_draining(a, false).ok());  // the agent restarted
  EXPECT_TRUE(store_->leases().lease(a, "gpu0").value().draining) << "the operator's drain still holds";
  ASSERT_TRUE(store_->agents().set_draining(a, false).ok());
  EXPECT_TRUE(store_->leases().lease(a, "gpu0").value().grant.has_value());
}

// ---- withdraw_lease and drain: a grant that never reached a draining agent -------------------

TEST_F(StoreTest, ALeaseWithdrawnWhileTheAgentDrainsIsQueuedAgainAtTheSameAttempt) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  int woken = 0;
  store_->on_work_available([&] { ++woken; });
  const auto g = lease(a);
  ASSERT_EQ(g.attempt, 1);
  ASSERT_TRUE(store_->agents().set_self_draining(a, true).ok());  // SIGTERM while the answer was on its way
  woken = 0;
  EXPECT_TRUE(store_->leases().withdraw_lease(a, {g.job_id, g.lease_id}).value());
  EXPECT_EQ(woken, 1) << "waiting polls are woken: the job is queued again";
  const auto page = store_->runs().list_jobs(run, std::nullopt, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 1u);
  const JobRow job = page->items[0];
  EXPECT_EQ(job.status, JobStatus::kQueued);
  EXPECT_EQ(job.attempt, 0) << "the withdrawn attempt is undone, not counted";
  EXPECT_FALSE(job.agent_name) << "nobody holds it";
  // The withdrawn lease is stale; the job goes to the next poll at attempt 1 again.
  EXPECT_EQ(store_->leases().renew(a, {g.job_id, g.lease_id}).value().state, LeaseState::kLost);
  EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kLost);
  const auto again = lease(b);
  EXPECT_EQ(again.job_id, g.job_id);
  EXPECT_EQ(again.attempt, 1);
  EXPECT_NE(again.lease_id, g.lease_id);
  EXPECT_EQ(store_->results().record_result(b, {again.job_id, again.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kStored);
}

TEST_F(StoreTest, WithdrawingTheLastAttemptsLeaseUnderDrainDoesNotFailTheJob) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g1 = lease(a);
  clock_.advance_ms(options_.lease_ttl_ms);
  ASSERT_EQ(store_->leases().expire_leases().value(), 1);
  const auto g2 = lease(b);  // max_attempts is 2: this is the job's last attempt
  ASSERT_EQ(g2.attempt, 2);
  ASSERT_TRUE(store_->agents().set_draining(b, true).ok());
  EXPECT_TRUE(store_->leases().withdraw_lease(b, {g2.job_id, g2.lease_id}).value());
  EXPECT_EQ(store_->runs().get_run(run).value().jobs_by_status[JobStatus::kQueued], 1) << "not failed";
  const auto g3 = lease(a);
  EXPECT_EQ(g3.job_id, g1.job_id);
  EXPECT_EQ(g3.attempt, 2) << "the withdrawn attempt was not burned";
}

TEST_F(StoreTest, ADrainingAgentsPollWithdrawsItsUnacknowledgedLeaseAndGetsNothingNew) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto run = submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager});
  const auto g = store_->leases().lease(a, "gpu0", std::string("poll-1")).value().grant.value();
  ASSERT_TRUE(store_->agents().set_self_draining(a, true).ok());
  // Even the retry of the very poll that got it: a draining agent would only give it back.
  for (const auto& request_id : {std::optional<std::string>("poll-1"), std::optional<std::string>()}) {
    auto answer = store_->leases().lease(a, "gpu0", request_id).value();
    EXPECT_FALSE(answer.grant) << "a draining agent is granted nothing";
    EXPECT_TRUE(answer.draining);
  }
  auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.jobs_by_status[JobStatus::kQueued], 2) << "its lease was withdrawn, the other job left alone";
  EXPECT_FALSE(store_->leases().withdraw_lease(a, {g.job_id, g.lease_id}).value()) << "already withdrawn";
  EXPECT_TRUE(store_->agents().get_agent(a).value().leases.empty());
  const auto next = lease(b);
  EXPECT_EQ(next.attempt, 1);
  ASSERT_TRUE(store_->agents().set_self_draining(a, false).ok());  // restarted: serves again
  EXPECT_EQ(lease(a).attempt, 1);
}

TEST_F(StoreTest, WithdrawingAnAcknowledgedOrForeignLeaseDoesNothing) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto run = submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager});
  const auto renewed = lease(a);
  const auto beaten = lease(b);
  ASSERT_EQ(store_->leases().renew(a, {renewed.job_id, renewed.lease_id}).value().state, LeaseState::kActive);
  ASSERT_EQ(store_->leases().heartbeat(b, {{beaten.job_id, beaten.lease_id}}).value().at(0).state, LeaseState::kActive);
  ASSERT_TRUE(store_->agents().set_draining(a, true).ok());
  ASSERT_TRUE(store_->agents().set_self_draining(b, true).ok());
  int woken = 0;
  store_->on_work_available([&] { ++woken; });
  for (const auto& [agent, g] : {std::pair{a, renewed}, std::pair{b, beaten}}) {
    EXPECT_FALSE(store_->leases().withdraw_lease(agent, {g.job_id, g.lease_id}).value())
        << "acknowledged: it reached its agent";
    EXPECT_EQ(store_->leases().renew(agent, {g.job_id, g.lease_id}).value().state, LeaseState::kActive) << "still held";
  }
  EXPECT_FALSE(store_->leases().withdraw_lease(b, {renewed.job_id, renewed.lease_id}).value()) << "not b's lease";
  EXPECT_FALSE(store_->leases().withdraw_lease(a, {renewed.job_id, "other"}).value());
  EXPECT_FALSE(store_->leases().withdraw_lease(a, {999, renewed.lease_id}).value());
  EXPECT_EQ(woken, 0);
  const auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.jobs_by_status.at(JobStatus::kRunning), 2) << "both still running";
  // The draining agents finish their jobs: each result is stored at attempt 1.
  EXPECT_EQ(store_->results().record_result(a, {renewed.job_id, renewed.lease_id}, 1, ok_result(1)).value().kind,
            RecordKind::kStored);
  EXPECT_EQ(store_->results().record_result(b, {beaten.job_id, beaten.lease_id}, 1, ok_result(2)).value().kind,
            RecordKind::kStored);
  EXPECT_FALSE(store_->leases().withdraw_lease(a, {renewed.job_id, renewed.lease_id}).value()) << "ended";
  EXPECT_EQ(store_->runs().get_run(run).value().state, "done");
}

TEST_F(StoreTest, WithdrawingALeaseOfACancelledRunDoesNothing) {
  const auto a = enroll("a");
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  ASSERT_TRUE(store_->agents().set_self_draining(a, true).ok());
  ASSERT_EQ(store_->runs().cancel_run(run).value().cancelled_jobs, 1);
  EXPECT_FALSE(store_->leases().withdraw_lease(a, {g.job_id, g.lease_id}).value());
  EXPECT_EQ(store_->runs().get_run(run).value().jobs_by_status.at(JobStatus::kCancelled), 1) << "not queued again";
}

// ---- list_jobs: the dashboard's progress grid -----------------------------------------------

}  // namespace
}  // namespace benchfleet::store
