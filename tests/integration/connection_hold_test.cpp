// Integration: anonymous clients holding every connection the coordinator serves — silent
// sockets and keep-alive probes from many addresses, each closed socket opened again — while a
// real agent daemon enrols, leases, heartbeats and posts a real worker's result, and an operator
// submits and reads over fresh connections. Nobody without a token may stop the fleet: the holders
// give way (the oldest idle anonymous connection is closed for a newcomer) and the connections
// that showed a token keep their slots.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/http/client.h"
#include "tests/integration/agent_test_util.h"
#include "tests/support/connection_hold.h"

namespace benchfleet::testing {
namespace {

// A 2,500-socket hold of the 2,048 slots (with /healthz probes every 50 s) kept every agent and
// operator out for as long as it lasted; a running job's heartbeats got 503, its lease was lost
// and its finished result refused. Here the same shape at a 64-slot scale: 160 sockets from 20
// addresses against 64 slots (16 reserved, 8 anonymous per address).
TEST(ConnectionHold, AHeldCoordinatorStillServesARealAgentAndAnOperator) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES,
                            {"--max-connections", "64"},
                            {"--reserved-connections", "16"},
                            {"--max-connections-per-peer", "8"}});
  const unsigned short port = static_cast<unsigned short>(std::stoi(coord.base_url().substr(17)));
  // Each socket the coordinator closes is opened again a second later: about 110 newcomers a
  // second, so the anonymous pool turns over in under half a second. (A faster churn can close a
  // legitimate newcomer before its first request arrives, when every older anonymous connection
  // has already gone; bench/connection_hold measures that case.)
  ConnectionHold hold(HoldOptions{port, 160, 20, std::chrono::milliseconds(500), std::chrono::milliseconds(1000)});
  // The anonymous pool (48 slots) is full before anyone legitimate arrives.
  ASSERT_TRUE(poll_until([&] { return hold.counts().open_now >= 48; }, 30s))
      << "the hold never filled the pool: " << hold.counts().open_now << " open";

  AgentProcess agent(agent_options(coord, "held"));
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"held"})) << agents_of(coord).dump(1);

  // The operator, each request on a new connection: every one answered.
  const std::string token = CoordinatorProcess::kOperatorToken;
  int operator_requests = 1;
  int operator_ok = 0;
  std::string refusals;
  auto submitted = coord.make_client()->post_json("/api/v1/runs", cpu_matrix({kMobilenet}, {1}, {"eager"}), token);
  ASSERT_TRUE(submitted.ok()) << submitted.error().describe();
  ASSERT_EQ(submitted->status, 201u) << submitted->body;
  ++operator_ok;
  const json created = json::parse(submitted->body);
  const std::string run = run_url(created);
  bool done = false;
  for (int i = 0; i < 240 && !done; ++i) {
    auto r = coord.make_client()->get(run, token);
    ++operator_requests;
    if (r.ok() && r->status == 200u) {
      ++operator_ok;
      done = json::parse(r->body).value("state", "") == "done";
    } else {
      refusals += (r.ok() ? std::to_string(r->status) + " " + r->problem_detail() : r.error().describe()) + "\n";
    }
    if (!done) std::this_thread::sleep_for(500ms);
  }
  EXPECT_EQ(operator_ok, operator_requests) << "operator requests refused under the hold:\n" << refusals;
  ASSERT_TRUE(done) << run_of(coord, created).dump(1) << coord.log_tail();

  // The agent's job ran to ok on its first lease: no heartbeat was refused long enough to lose it.
  const auto results = results_of(coord, created);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["result"].value("status", ""), "ok") << results[0].dump(1);
  EXPECT_EQ(results[0].value("attempt", 0), 1) << results[0].dump(1);

  // The hold was real throughout: its sockets were closed to make room and opened again.
  const HoldCounts counts = hold.counts();
  EXPECT_GT(counts.closed, 0) << "no anonymous connection ever gave way";
  EXPECT_GE(counts.open_now, 40) << "the hold let go of the pool";
  EXPECT_GT(counts.probes_answered, 0) << "the keep-alive probes were never served";
}

}  // namespace
}  // namespace benchfleet::testing
