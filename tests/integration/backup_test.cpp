// Integration: `benchfleet-coordinator backup` while a real coordinator stores results as fast as
// an agent can post them, then `restore` (refused while the coordinator serves) and a coordinator
// started on the restored database: every result acknowledged before the backup began is there.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/coordinator_child.h"
#include "tests/support/coordinator_process.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct ToolRun {
  int code = -1;
  std::string output;
};

// benchfleet-coordinator with `args`, to its exit; its stdout and stderr.
ToolRun coordinator_tool(const std::string& dir, const std::vector<std::string>& args) {
  static int counter = 0;
  ChildOptions o;
  o.argv = {coordinator_binary()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.log_file = dir + "/tool-" + std::to_string(++counter) + ".log";
  auto child = ChildProcess::start(o);
  if (!child.ok()) return {};
  const auto status = child->wait_exit(120s);
  return {status ? exit_code(*status) : -1, file_tail(o.log_file, 4096)};
}

// The job ids of the run's stored results, through the API (all pages).
std::set<std::int64_t> stored_job_ids(CoordinatorProcess& coord, const json& run) {
  std::set<std::int64_t> ids;
  std::string cursor;
  do {
    const json page = coord.get_json(run_url(run) + "/results?limit=500" + (cursor.empty() ? "" : "&cursor=" + cursor));
    for (const auto& r : page["results"]) ids.insert(r["job_id"].get<std::int64_t>());
    cursor = page.value("next_cursor", json()).is_string() ? page["next_cursor"].get<std::string>() : "";
  } while (!cursor.empty());
  return ids;
}

TEST(Backup, TakenUnderLoadRestoresEveryAcknowledgedResult) {
  CoordinatorProcess coord;
  std::vector<std::string> models;
  const json catalog = coord.get_json("/api/v1/models");  // iterating a member of a temporary would dangle
  for (const auto& m : catalog["models"]) models.push_back(m["id"]);
  const json run = coord.submit(matrix(models, {1, 2, 4, 8, 16, 32}, {"eager"}));
  const int jobs = run["job_count"];
  ASSERT_GE(jobs, 60);

  // An agent posting results back to back; each acknowledged job id with when it was acknowledged.
  std::mutex mu;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::int64_t>> acknowledged;
  std::atomic<bool> stop{false};
  std::thread poster([&] {
    FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
    while (!stop.load()) {
      auto lease = agent.lease_job("gpu0");
      if (!lease) break;
      if (agent.post_result(*lease, ok_result(7.0)).status == 201u) {
        std::lock_guard lock(mu);
        acknowledged.emplace_back(std::chrono::steady_clock::now(), lease->job_id);
      }
    }
  });
  while (true) {  // a third of the run stored before the backup starts
    std::this_thread::sleep_for(5ms);
    std::lock_guard lock(mu);
    if (acknowledged.size() >= static_cast<std::size_t>(jobs / 3)) break;
  }
  const std::string backup = coord.dir() + "/backup.db";
  const auto backup_started = std::chrono::steady_clock::now();
  const ToolRun backed_up = coordinator_tool(coord.dir(), {"backup", "--db", coord.db_path(), "--to", backup});
  ASSERT_EQ(backed_up.code, 0) << backed_up.output;
  std::this_thread::sleep_for(200ms);
  stop.store(true);
  poster.join();
  std::set<std::int64_t> before;
  std::size_t after = 0;
  for (const auto& [at, id] : acknowledged) {
    if (at < backup_started) {
      before.insert(id);
    } else {
      ++after;
    }
  }
  EXPECT_GT(after, 0u) << "the agent kept posting once the backup began";

  // Refused while the coordinator serves the database, and for a file that is not a backup.
  ToolRun restore = coordinator_tool(coord.dir(), {"restore", "--db", coord.db_path(), "--from", backup});
  EXPECT_EQ(restore.code, 1) << restore.output;
  EXPECT_NE(restore.output.find("a coordinator is serving"), std::string::npos) << restore.output;
  const std::set<std::int64_t> live = stored_job_ids(coord, run);
  coord.stop();
  const std::string junk = coord.dir() + "/junk.db";
  ASSERT_EQ(coordinator_tool(coord.dir(), {"backup", "--db", coord.db_path() + "-missing", "--to", junk}).code, 1);
  restore = coordinator_tool(coord.dir(), {"restore", "--db", coord.db_path(), "--from", coord.log_path()});
  EXPECT_EQ(restore.code, 1) << restore.output;

  restore = coordinator_tool(coord.dir(), {"restore", "--db", coord.db_path(), "--from", backup});
  ASSERT_EQ(restore.code, 0) << restore.output;
  coord.restart();
  const std::set<std::int64_t> restored = stored_job_ids(coord, run);
  for (std::int64_t id : before)
    EXPECT_TRUE(restored.contains(id)) << "job " << id << " acknowledged before the backup";
  EXPECT_LE(restored.size(), live.size());
  EXPECT_GE(restored.size(), before.size());
  // The restored run is whole: its job count and its states agree with the results it holds.
  EXPECT_EQ(coord.get_json(run_url(run))["job_count"], jobs);
}

// A backup written over the live database, its WAL or its shared memory, by any path to them,
// once exited 0 and destroyed the store (the coordinator went on writing to the deleted file):
// every such target is refused, and the store keeps every result.
TEST(Backup, RefusesToWriteOverTheLiveDatabaseByAnyPath) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({"microsoft/resnet-50"}, {1, 2, 4}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  for (int i = 0; i < 2; ++i) {
    auto lease = agent.lease_job("gpu0");
    ASSERT_TRUE(lease);
    ASSERT_EQ(agent.post_result(*lease, ok_result(7.0)).status, 201u);
  }
  const std::string db = coord.db_path();
  ASSERT_EQ(::symlink(coord.dir().c_str(), (coord.dir() + "/alias").c_str()), 0);
  ASSERT_EQ(::link(db.c_str(), (coord.dir() + "/hard.db").c_str()), 0);
  for (const std::string& target : {db, db + "-wal", db + "-shm", coord.dir() + "/alias/benchfleet.db",
                                    coord.dir() + "/./sub/../benchfleet.db-wal", coord.dir() + "/hard.db"}) {
    if (target.find("/sub/") != std::string::npos) std::filesystem::create_directories(coord.dir() + "/sub");
    const ToolRun refused = coordinator_tool(coord.dir(), {"backup", "--db", db, "--to", target});
    EXPECT_EQ(refused.code, 1) << target << ": " << refused.output;
    EXPECT_NE(refused.output.find("would destroy the store"), std::string::npos) << refused.output;
  }
  // A database named like another's partial file is not removed by a backup beside it.
  EXPECT_EQ(coordinator_tool(coord.dir(), {"backup", "--db", db, "--to", db.substr(0, db.size() - 3)}).code, 0);
  EXPECT_EQ(coordinator_tool(coord.dir(), {"backup", "--db", db, "--to", coord.dir() + "/fine.db"}).code, 0);

  // Still serving and writing the same file: a third result is acknowledged and survives a restart.
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease);
  ASSERT_EQ(agent.post_result(*lease, ok_result(7.0)).status, 201u);
  EXPECT_EQ(coord.stop(), 0);
  coord.restart();
  EXPECT_EQ(stored_job_ids(coord, run).size(), 3u);
}

// A database file replaced under a serving coordinator (here by a rename, as a copy tool or an
// old backup did) gets no more writes: the next write is refused 503, nothing is acknowledged
// into the deleted file, and the coordinator stops with exit status 1, naming the file.
TEST(Backup, ADatabaseReplacedWhileServingStopsTheCoordinator) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({"microsoft/resnet-50"}, {1, 2}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto first = agent.lease_job("gpu0");
  ASSERT_TRUE(first);
  ASSERT_EQ(agent.post_result(*first, ok_result(7.0)).status, 201u);
  auto second = agent.lease_job("gpu0");
  ASSERT_TRUE(second);

  const std::string copy = coord.dir() + "/copy.db";
  ASSERT_EQ(coordinator_tool(coord.dir(), {"backup", "--db", coord.db_path(), "--to", copy}).code, 0);
  std::filesystem::rename(copy, coord.db_path());

  // 503 naming the file; or no answer, when another write (the lease sweeper's) found it first
  // and the coordinator had stopped already. Never 201.
  http::ClientResponse refused;
  try {
    refused = agent.post_result(*second, ok_result(7.0));
  } catch (const std::exception&) {
    refused.status = 0;  // the connection refused: it had stopped
  }
  EXPECT_NE(refused.status, 201u) << refused.body;
  if (refused.status != 0) {
    EXPECT_EQ(refused.status, 503u) << refused.body;
    EXPECT_NE(refused.body.find("was replaced or removed"), std::string::npos) << refused.body;
  }
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    gone = !coord.make_client()->get("/healthz").ok();
    if (!gone) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(gone) << "the coordinator kept serving a replaced database";
  EXPECT_EQ(exit_code(coord.stop()), 1);
  EXPECT_NE(coord.log_tail().find("was replaced or removed while this coordinator serves"), std::string::npos)
      << coord.log_tail();
  // The file in place now is whole: a coordinator starts on it, with the acknowledged result.
  coord.restart();
  EXPECT_EQ(stored_job_ids(coord, run), (std::set<std::int64_t>{first->job_id}));
}

// A damaged store is refused at start with the restore command to run, not served.
TEST(Backup, ADamagedStoreIsRefusedAtStart) {
  CoordinatorProcess coord;
  (void)coord.submit(matrix({"microsoft/resnet-50"}, {1, 2, 4, 8, 16, 32}, {"eager"}));
  ASSERT_EQ(coord.stop(), 0);
  {  // garbage over every page but the first (the header)
    std::fstream f(coord.db_path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<std::size_t>(f.tellg());
    ASSERT_GT(size, 8192u);
    f.seekp(4096);
    const std::string junk(size - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const ToolRun refused = coordinator_tool(coord.dir(), {"--db", coord.db_path(), "--listen", "127.0.0.1:0"});
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_NE(refused.output.find("the store is damaged"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("benchfleet-coordinator restore --db " + coord.db_path()), std::string::npos)
      << refused.output;
}

// Two coordinators on one database would interleave their writes: the second is refused.
TEST(Backup, ASecondCoordinatorOnTheSameDatabaseIsRefused) {
  CoordinatorProcess coord;
  const ToolRun second = coordinator_tool(coord.dir(), {"--db", coord.db_path(), "--listen", "127.0.0.1:0"});
  EXPECT_EQ(second.code, 1) << second.output;
  EXPECT_NE(second.output.find("a coordinator is serving"), std::string::npos) << second.output;
  EXPECT_EQ(coord.get("/healthz").status, 200u);
}

}  // namespace
}  // namespace benchfleet::testing
