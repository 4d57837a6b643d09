// Integration: a real benchfleet-agent talks to the real coordinator through
// FaultyProxy (tests/support/faulty_proxy.h), which replaces the coordinator's successful
// answers to enrolment, lease, heartbeat and result with malformed ones (truncated, wrong types,
// negative ids, a 1 MiB string, deep nesting, an HTML page, an empty body, a problem document
// sent with 200) or closes the connection mid-body. The agent must survive each as a decode
// error it logs, start no worker for a lease it could not read, and still run every job exactly
// once: a grant it could not read stays the slot's unacknowledged lease, and the slot's retried
// poll (same request id) gets that same lease back, at the same attempt.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "tests/integration/agent_test_util.h"
#include "tests/support/faulty_proxy.h"

namespace benchfleet::testing {
namespace {

using F = ProxyFault;

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The workers seen running under `agent`: pid -> (job, attempt) from their command lines.
void sample_workers(const AgentProcess& agent, std::map<pid_t, std::pair<std::int64_t, int>>& seen) {
  for (pid_t w : agent.children_named("benchfleet-work")) {
    if (auto job = worker_job(w)) seen.emplace(w, *job);
  }
}

TEST(AgentProtocolFaults, MalformedAnswersAreLoggedDecodeErrorsAndEveryJobRunsExactlyOnce) {
  // A lease lives 10 s: longer than the agent's backoff between the retries of one grant.
  CoordinatorProcess coord({{"--lease-ttl-s", "10"}, {"--heartbeat-interval-s", "1"}, {"--long-poll-timeout-s", "2"}});
  FaultyProxy proxy(coord.base_url());
  proxy.corrupt(ProxyRoute::kEnroll, {F::kTruncated, F::kNegativeIds, F::kProblem, F::kDropMidBody});
  proxy.corrupt(ProxyRoute::kHeartbeat, {F::kWrongTypes, F::kHugeString, F::kDeepNesting, F::kEmpty, F::kProblem,
                                         F::kHtml, F::kTruncated, F::kDropMidBody});
  // Grants only, three jobs: the first unreadable three times, the second four, the third twice;
  // nullopt lets a grant through.
  proxy.corrupt(ProxyRoute::kLease,
                {F::kTruncated, F::kNegativeIds, F::kWrongTypes, std::nullopt, F::kHugeString, F::kDeepNesting,
                 F::kHtml, F::kEmpty, std::nullopt, F::kProblem, F::kDropMidBody, std::nullopt},
                /*only_grants=*/true);
  // The result is stored either way: only its acknowledgement is unreadable or cut.
  proxy.corrupt(ProxyRoute::kResult, {F::kDropMidBody, F::kProblem, F::kHtml, F::kTruncated});

  AgentOptions options = agent_options(coord, "a1");
  options.coordinator_url = proxy.base_url();
  AgentProcess a1(options);
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"})) << a1.log_tail();
  const json run = coord.submit(cpu_matrix({kMobilenet}, {1, 2, 3}, {"eager"}));
  ASSERT_EQ(run["job_count"], 3);
  // Meanwhile, every worker the agent starts is noted (sampled every 50 ms).
  std::map<pid_t, std::pair<std::int64_t, int>> workers;
  int polls = 0;
  ASSERT_TRUE(poll_until(
      [&] {
        sample_workers(a1, workers);
        return ++polls % 20 == 0 && run_of(coord, run).value("state", "") == "done";
      },
      200s, 50ms))
      << run_of(coord, run).dump(1) << a1.log_tail();
  ASSERT_TRUE(poll_until([&] { return proxy.pending(ProxyRoute::kHeartbeat) == 0; }, 30s));
  for (ProxyRoute route : {ProxyRoute::kEnroll, ProxyRoute::kLease, ProxyRoute::kResult}) {
    EXPECT_EQ(proxy.pending(route), 0u) << to_string(route) << " answers were left uncorrupted";
  }

  // Exactly one result per job, from its first attempt: no grant was lost or burned.
  const auto results = results_of(coord, run);
  ASSERT_EQ(results.size(), 3u) << json(results).dump(1);
  std::set<std::int64_t> jobs;
  for (const auto& r : results) {
    jobs.insert(r["job_id"].get<std::int64_t>());
    EXPECT_EQ(r["attempt"], 1) << r.dump(1);
    const std::string status = r["result"].value("status", "");
    EXPECT_TRUE(status == "ok" || status == "invalid") << r.dump(1);  // invalid: this loaded box missed the CI
  }
  EXPECT_EQ(jobs.size(), 3u);

  // Each unreadable grant was the coordinator's lease for one of those jobs; the retried poll got
  // the same lease back (same lease id, attempt 1) until an answer was read.
  std::map<std::int64_t, std::set<std::string>> unread_leases;
  for (const std::string& body : proxy.corrupted(ProxyRoute::kLease)) {
    const json grant = json::parse(body).at("job");
    EXPECT_EQ(grant["attempt"], 1) << body.substr(0, 500);
    unread_leases[grant["id"].get<std::int64_t>()].insert(grant["lease_id"].get<std::string>());
  }
  ASSERT_EQ(unread_leases.size(), 3u) << "each job's grant was corrupted at least once";
  for (const auto& [job, lease_ids] : unread_leases) {
    EXPECT_TRUE(jobs.contains(job)) << job;
    EXPECT_EQ(lease_ids.size(), 1u) << "job " << job << " was granted anew instead of handed over again";
  }

  // Workers only for the jobs' first attempts, never two for one job: none for an answer the
  // agent could not read. (A worker shorter than the sampling step may go unseen.)
  EXPECT_FALSE(workers.empty());
  std::set<std::int64_t> jobs_with_worker;
  for (const auto& [pid, job] : workers) {
    EXPECT_TRUE(jobs.contains(job.first)) << "worker " << pid << " for job " << job.first;
    EXPECT_EQ(job.second, 1) << "worker " << pid << " for job " << job.first;
    EXPECT_TRUE(jobs_with_worker.insert(job.first).second) << "a second worker for job " << job.first;
  }

  // Never a crash; every malformed answer a decode error naming what is wrong.
  EXPECT_TRUE(a1.running());
  const std::string log = a1.log();
  EXPECT_EQ(log.find("terminate"), std::string::npos) << a1.log_tail();
  EXPECT_EQ(log.find("unexpected exception"), std::string::npos) << a1.log_tail();
  EXPECT_EQ(count_of(log, "slot cpu: job "), 3u + 3u) << "one lease line and one verdict line per job\n" << log;
  for (const std::string expected : {
           "enrolment failed: unreadable answer: enrolment answer: malformed JSON",
           "enrolment failed: unreadable answer: enrolment answer.agent_id: must be > 0",
           "enrolment failed: unreadable answer: enrolment answer.agent_id: is required",
           "slot cpu: lease failed: unreadable answer: lease answer: malformed JSON",
           "slot cpu: lease failed: unreadable answer: lease answer.job.id: must be > 0",
           "slot cpu: lease failed: unreadable answer: lease answer.draining: must be a boolean, got string",
           "slot cpu: lease failed: unreadable answer: lease answer.job.lease_id: is longer than 65536 bytes",
           "slot cpu: lease failed: unreadable answer: lease answer: JSON nesting is deeper than 32 levels",
           "slot cpu: lease failed: unreadable answer: lease answer.job: is required",
           "heartbeat failed: unreadable answer: heartbeat answer",
           "result upload failed, will retry",
       }) {
    EXPECT_NE(log.find(expected), std::string::npos) << "no \"" << expected << "\" in the log:\n" << log;
  }
  // Truncated, HTML and empty lease answers are all malformed JSON; the cut one a transport error.
  EXPECT_EQ(count_of(log, "slot cpu: lease failed: unreadable answer: lease answer: malformed JSON"), 3u) << log;
  EXPECT_EQ(count_of(log, "slot cpu: lease failed: "), 9u) << log;
  EXPECT_GE(count_of(log, "heartbeat failed: unreadable answer: heartbeat answer"), 6u) << log;

  // Everything acknowledged (the spool is empty), no worker left, and a clean drain.
  EXPECT_TRUE(poll_until([&] { return a1.spool_entries().empty(); }, 20s)) << a1.log_tail();
  EXPECT_TRUE(poll_until([&] { return a1.children().empty(); }, 20s)) << "a worker outlived its job";
  a1.sigterm();
  const auto status = a1.wait_exit(60s);
  ASSERT_TRUE(status) << "the agent did not exit after SIGTERM\n" << a1.log_tail();
  EXPECT_EQ(describe_wait_status(*status), "exit code 0");
  EXPECT_TRUE(a1.children().empty());
  EXPECT_EQ(results_of(coord, run).size(), 3u);
}

// A grant the agent could not read, then SIGTERM before the retried poll: nothing would poll that
// slot again, and the lease would wait out its expiry and count an attempt. The draining slot
// settles its unanswered poll instead (it tells the coordinator it drains, then polls once more),
// so the coordinator withdraws the lease: the job is queued again at once, no attempt used.
TEST(AgentProtocolFaults, AGrantUnreadWhenTheAgentDrainsIsWithdrawnNotLeftToExpire) {
  CoordinatorProcess coord({{"--lease-ttl-s", "60"}, {"--heartbeat-interval-s", "1"}, {"--long-poll-timeout-s", "2"}});
  FaultyProxy proxy(coord.base_url());
  proxy.corrupt(ProxyRoute::kLease, std::vector<std::optional<ProxyFault>>(50, F::kHtml), /*only_grants=*/true);
  AgentOptions options = agent_options(coord, "a1");
  options.coordinator_url = proxy.base_url();
  AgentProcess a1(options);
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"})) << a1.log_tail();
  const json run = coord.submit(cpu_matrix({kMobilenet}, {1}, {"eager"}));
  ASSERT_TRUE(poll_until([&] { return a1.log().find("lease failed: unreadable answer") != std::string::npos; }, 60s))
      << a1.log_tail();
  a1.sigterm();
  const auto status = a1.wait_exit(60s);
  ASSERT_TRUE(status) << "the draining agent did not exit\n" << a1.log_tail();
  EXPECT_EQ(describe_wait_status(*status), "exit code 0");
  EXPECT_EQ(a1.log().find("slot cpu: job "), std::string::npos) << "a worker ran for an unread grant\n" << a1.log();
  EXPECT_TRUE(a1.children().empty());
  EXPECT_NE(a1.log().find("slot cpu: draining; the coordinator took back the lease it may have granted"),
            std::string::npos)
      << a1.log_tail();

  // Queued again long before the 60 s lease would have expired, at no attempt.
  const auto job_of_run = [&] { return coord.get_json(run_url(run) + "/jobs").at("jobs").at(0); };
  ASSERT_TRUE(poll_until([&] { return job_of_run().value("status", "") == "queued"; }, 10s))
      << job_of_run().dump(1) << a1.log_tail();
  EXPECT_EQ(job_of_run()["attempt"], 0) << job_of_run().dump(1);

  // Another agent runs it, at attempt 1.
  AgentProcess a2(agent_options(coord, "a2"));
  a2.start();
  ASSERT_TRUE(wait_run_state(coord, run, "done")) << run_of(coord, run).dump(1) << a2.log_tail();
  const auto results = results_of(coord, run);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["attempt"], 1);
  EXPECT_EQ(results[0].value("agent", ""), "a2");
}

// A heartbeat answer is about the leases it carried. One that comes back late, after the slot
// finished that job and started its next, says "lost" of the ended lease: it must not stop the
// next job's worker (before the fix it did, and the job ran again at attempt 2).
TEST(AgentProtocolFaults, ALateHeartbeatAnswerForAnEndedLeaseDoesNotStopTheNextJob) {
  CoordinatorProcess coord({{"--lease-ttl-s", "60"}, {"--heartbeat-interval-s", "1"}, {"--long-poll-timeout-s", "2"}});
  FaultyProxy proxy(coord.base_url());
  AgentOptions options = agent_options(coord, "a1");
  options.coordinator_url = proxy.base_url();
  AgentProcess a1(options);
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"})) << a1.log_tail();
  const json run = coord.submit(cpu_matrix({kMobilenet}, {1, 2}, {"eager"}));

  // The first job's worker runs: hold the next heartbeat (it carries that job's lease) until the
  // slot has finished the job and its second worker runs, then let it reach the coordinator.
  std::map<pid_t, std::pair<std::int64_t, int>> workers;
  ASSERT_TRUE(poll_until(
      [&] {
        sample_workers(a1, workers);
        return !workers.empty();
      },
      180s, 20ms))
      << a1.log_tail();
  const std::int64_t first_job = workers.begin()->second.first;
  proxy.hold(ProxyRoute::kHeartbeat);
  ASSERT_TRUE(poll_until([&] { return proxy.held(ProxyRoute::kHeartbeat) == 1; }, 10s, 20ms)) << a1.log_tail();
  ASSERT_TRUE(poll_until(
      [&] {
        sample_workers(a1, workers);
        for (pid_t w : a1.children_named("benchfleet-work")) {
          if (auto job = worker_job(w); job && job->first != first_job) return true;
        }
        return false;
      },
      120s, 20ms))
      << a1.log_tail();
  proxy.release(ProxyRoute::kHeartbeat);

  ASSERT_TRUE(wait_run_state(coord, run, "done")) << run_of(coord, run).dump(1) << a1.log_tail();
  const auto results = results_of(coord, run);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) EXPECT_EQ(r["attempt"], 1) << r.dump(1) << a1.log_tail();
  EXPECT_EQ(a1.log().find("lost its lease"), std::string::npos) << a1.log_tail();
}

}  // namespace
}  // namespace benchfleet::testing
