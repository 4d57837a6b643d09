// The query plans of every statement the store runs per lease and per result (and at
// an agent's enrolment, which judges what its builds lack).
//
// The statements are the store's own: a test observer (Store::observe_statements) records the
// SQL text of each statement the lease and result paths prepare, on a migrated database holding
// a few thousand jobs and results; each is then explained (EXPLAIN QUERY PLAN) on a second
// connection. Like production, the database is not ANALYZE-d: the planner works from the schema.
//
// The rule: on these paths no statement reads a table or an index from end to end, and none
// sorts what it found. So a plan step may be
//   - SEARCH (a rowid or index lookup, or a range of an index bounded by the statement's keys),
//   - SCAN of json_each (the bound list of what a slot can run) or of a constant row,
// and a plan fails on any other SCAN (of a table, or of a whole index: "SCAN t USING [COVERING]
// INDEX i" reads all of i) and on "USE TEMP B-TREE" (a sort reads the whole range before its
// LIMIT applies). A SEARCH's range can still be long (a run's queued jobs, the queue of a GPU
// class filtered row by row): a plan does not show that, so the second test counts what each
// statement does (SQLite's virtual machine steps, not time) per run at a short and at a long
// queue, and fails when it grows with the queue.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/catalog.h"
#include "common/matrix.h"
#include "coordinator/services/change_detection.h"
#include "coordinator/store/store.h"
#include "tests/unit/query_plan.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kModels = {"torchvision/resnet18", "torchvision/mobilenet_v3_small",
                                          "torchvision/squeezenet1_1", "microsoft/resnet-50"};

class StoreQueryPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bf-plan-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.path = (dir_ / "bf.db").string();
    options_.lease_ttl_ms = 10'000;
    options_.max_attempts = 3;
    auto s = Store::open(options_, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::int64_t enroll(const std::string& name, const std::string& gpu_class, std::vector<Mode> modes,
                      bool nightly = true) {
    AgentDescriptor d;
    d.name = name;
    d.slots = {{"gpu0", gpu_class, std::nullopt, std::nullopt}};
    d.torch_builds = {{"stable", "2.11.0", {{Runtime::kLibtorch, modes}}}};
    if (nightly) d.torch_builds.push_back({"nightly", "2.12.0", {{Runtime::kLibtorch, {Mode::kEager}}}});
    auto id = store_->agents().enroll_agent(d, {"salt", "hash"}, store::EnrolmentClaim::anyone());
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : 0;
  }

  // models x batches x {eager, default, reduce-overhead} x {stable, nightly} x {a100, t4} x reps.
  std::int64_t submit(const std::string& name, std::vector<int> batches, int repetitions) {
    MatrixSpec spec;
    spec.name = name;
    spec.models = kModels;
    spec.batch_sizes = std::move(batches);
    spec.modes = {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead};
    spec.torch_builds = {"stable", "nightly"};
    spec.gpus = {"a100", "t4"};
    spec.repetitions = repetitions;
    return create(spec);
  }
  std::int64_t create(const MatrixSpec& spec) {
    auto catalog = Catalog::load_file(default_catalog_path());
    EXPECT_TRUE(catalog.ok());
    auto jobs = expand_matrix(spec, *catalog, {});
    EXPECT_TRUE(jobs.ok());
    auto run = store_->runs().create_run(spec, *jobs);
    EXPECT_TRUE(run.ok()) << run.error().message;
    return run.ok() ? run->run_id : 0;
  }

  LeaseGrant lease(std::int64_t agent) {
    auto a = store_->leases().lease(agent, "gpu0");
    EXPECT_TRUE(a.ok()) << a.error().message;
    EXPECT_TRUE(a.ok() && a->grant.has_value()) << "the queue ran dry";
    return a.ok() && a->grant ? *a->grant : LeaseGrant{};
  }

  static JobResult ok_result(double ms) { return testing::ok_result(ms); }
  static JobResult oom_result() { return testing::oom_result(); }

  // `cycles` lease -> result cycles of `agent`, every 16th an OOM; with `releases`, every 6th
  // lease is given back instead (requeued).
  void complete(std::int64_t agent, int cycles, bool releases = false) {
    for (int i = 0; i < cycles; ++i) {
      const auto g = lease(agent);
      clock_.advance_ms(5);
      if (releases && i % 6 == 5) {
        ASSERT_TRUE(store_->leases().release(agent, {g.job_id, g.lease_id}).ok());
        continue;
      }
      const auto r = (i % 16 == 15) ? oom_result() : ok_result(10 + i % 7);
      auto out = store_->results().record_result(agent, {g.job_id, g.lease_id}, g.attempt, r);
      ASSERT_TRUE(out.ok()) << out.error().message;
    }
  }

  // Every path that runs per lease or per result, once or more, each statement recorded.
  // `v1` and `v2` are two slots of a GPU class whose only queued group is 2 jobs.
  std::set<std::string> per_lease_and_result_statements(std::int64_t a, std::int64_t lacking, std::int64_t v1,
                                                        std::int64_t v2) {
    std::set<std::string> seen;
    store_->observe_statements([&seen](const std::string& sql) { seen.insert(sql); });
    // The last tier: v2 finds nothing of its own nor unowned, and takes what v1's group left.
    lease(v1);
    lease(v2);
    // An agent (re-)enrolling judges what its builds lack (mark_unsupported).
    enroll("late", "a100", {Mode::kEager});
    // Grant (the three candidate windows, the take, the attempt, the group's owner), renew,
    // heartbeat, an ok result, a repeated result, an OOM (implied OOMs, run finished).
    auto g = lease(a);
    EXPECT_TRUE(store_->leases().renew(a, {g.job_id, g.lease_id}).ok());
    EXPECT_TRUE(store_->leases().heartbeat(a, {{g.job_id, g.lease_id}}).ok());
    EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, g.attempt, ok_result(3)).value().kind,
              RecordKind::kStored);
    EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, g.attempt, ok_result(3)).value().kind,
              RecordKind::kDuplicate);
    g = lease(a);
    EXPECT_TRUE(store_->results().record_result(a, {g.job_id, g.lease_id}, g.attempt, oom_result()).ok());
    // Hand-over: asking again gets the unacknowledged lease; once acknowledged, asking again
    // releases it (requeue_or_fail); an expired lease is requeued by the next poll, by a late
    // renewal and by the sweep.
    g = lease(lacking);
    g = lease(lacking);
    EXPECT_TRUE(store_->leases().heartbeat(lacking, {{g.job_id, g.lease_id}}).ok());
    g = lease(lacking);
    EXPECT_EQ(store_->leases().release(lacking, {g.job_id, g.lease_id}).value(), LeaseState::kActive);
    g = lease(a);
    clock_.advance_ms(options_.lease_ttl_ms + 1);
    g = lease(a);
    clock_.advance_ms(options_.lease_ttl_ms + 1);
    EXPECT_EQ(store_->leases().renew(a, {g.job_id, g.lease_id}).value().state, LeaseState::kLost);
    g = lease(a);
    clock_.advance_ms(options_.lease_ttl_ms + 1);
    EXPECT_GE(store_->leases().expire_leases().value(), 1);
    // A result posted after its lease expired, and a withdrawn grant (its answer never sent).
    g = lease(a);
    clock_.advance_ms(options_.lease_ttl_ms + 1);
    EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, g.attempt, ok_result(3)).value().kind,
              RecordKind::kLost);
    g = lease(a);
    EXPECT_TRUE(store_->leases().withdraw_lease(a, {g.job_id, g.lease_id}).value());
    // A draining agent's poll withdraws its unacknowledged lease.
    g = lease(a);
    EXPECT_TRUE(store_->agents().set_self_draining(a, true).ok());
    EXPECT_FALSE(store_->leases().lease(a, "gpu0").value().grant);
    EXPECT_TRUE(store_->agents().set_self_draining(a, false).ok());
    store_->observe_statements({});
    return seen;
  }

  fs::path dir_;
  ManualClock clock_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

// The rule in the file's comment: what a plan step may not do, or "" when it is bounded.
std::string unbounded(const std::string& detail) {
  if (detail.starts_with("USE TEMP B-TREE")) return "sorts everything it found";
  if (!detail.starts_with("SCAN ")) return "";
  if (detail.starts_with("SCAN json_each VIRTUAL TABLE") || detail == "SCAN CONSTANT ROW") return "";
  // The detector's pass reads the partial index of the points it has not seen:
  // its length is the work waiting, not the history.
  if (detail.starts_with("SCAN series_points USING ") && detail.ends_with("INDEX series_points_pending")) return "";
  // Enrolling a new name compares it with every enrolled one (look-alikes are one name): the
  // fleet's size, once per enrolment.
  if (detail == "SCAN agents USING COVERING INDEX sqlite_autoindex_agents_1") return "";
  return "reads a whole table or index";
}

// Explains every statement (the plan of each printed), adds a failure for each unbounded plan
// and returns how many there were.
int check_plans(const std::string& path, const std::set<std::string>& statements) {
  std::string report;
  int failures = 0;
  for (const auto& sql : statements) {
    const auto plan = testing::explain(path, sql);
    std::string why;
    for (const auto& step : plan) {
      if (auto w = unbounded(step); !w.empty()) why += "\n    " + step + ": " + w;
    }
    report += (why.empty() ? "ok    " : "SCANS ") + sql + "\n";
    for (const auto& step : plan) report += "        " + step + "\n";
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << "an unbounded plan:\n  " << sql << why;
    }
  }
  std::cout << report;
  return failures;
}

TEST_F(StoreQueryPlanTest, EveryStatementPerLeaseAndPerResultIsAnIndexLookup) {
  const auto a = enroll("a", "a100", {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead});
  const auto t4 = enroll("t4", "t4", {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead});
  const auto lacking = enroll("lacking", "a100", {Mode::kEager});
  // Two runs of 4 models x 4 batches x 3 modes x 2 builds x 2 GPU classes x 10 repetitions:
  // 3,840 jobs; 800 results posted (1 in 16 an OOM, which implies more), unsupported verdicts.
  submit("first", {1, 2, 4, 8}, 10);
  submit("second", {1, 2, 4, 8}, 10);
  complete(a, 400);
  complete(t4, 400);
  const auto v1 = enroll("v1", "v100", {Mode::kEager, Mode::kDefault});
  const auto v2 = enroll("v2", "v100", {Mode::kEager, Mode::kDefault});
  MatrixSpec group;
  group.name = "one-group";
  group.models = {kModels[0]};
  group.batch_sizes = {1};
  group.modes = {Mode::kEager, Mode::kDefault};
  group.torch_builds = {"stable"};
  group.gpus = {"v100"};
  create(group);

  const auto statements = per_lease_and_result_statements(a, lacking, v1, v2);
  ASSERT_GT(statements.size(), 20u) << "the observer saw too little";
  // Every stored result adds its series point: the series' update (its series
  // known, as here; else one upsert on the series' key) and the point's insert.
  auto ran = [&](const std::string& prefix) {
    return std::any_of(statements.begin(), statements.end(),
                       [&](const std::string& sql) { return sql.starts_with(prefix); });
  };
  EXPECT_TRUE(ran("UPDATE series SET points = points + 1"));
  EXPECT_TRUE(ran("INSERT INTO series_points"));
  EXPECT_EQ(check_plans(options_.path, statements), 0);
}

// The history's reads (a series and its points, the series list, the regressions view
// under each filter, a regression, the alert outbox) and the detector's pass are index lookups
// too, so they stay fast as a year of nightly results accumulates.
TEST_F(StoreQueryPlanTest, EveryStatementOfTheHistoryIsAnIndexLookup) {
  const auto a = enroll("a", "a100", {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead});
  submit("first", {1, 2, 4, 8}, 10);
  complete(a, 400);

  std::set<std::string> seen;
  store_->observe_statements([&seen](const std::string& sql) { seen.insert(sql); });
  const auto series = store_->series().list_series({}, std::nullopt, 50).value();
  ASSERT_FALSE(series.items.empty());
  SeriesFilter of_model;
  of_model.model = kModels[0];
  of_model.batch = 4;
  EXPECT_TRUE(store_->series().list_series(of_model, std::nullopt, 50).ok());
  const auto id = series.items[0].id;
  EXPECT_EQ(store_->series().find_series(series.items[0].key).value(), id);
  const auto first = store_->series().get_series(id, std::nullopt, 2).value();
  ASSERT_TRUE(first.next_cursor.has_value());
  EXPECT_TRUE(store_->series().get_series(id, first.next_cursor, 2).ok());
  EXPECT_TRUE(services::detect_changes(store_->series(), rules::DetectorOptions{}, true).ok());
  const std::vector<std::optional<RegressionState>> states = {std::nullopt, RegressionState::kOpen};
  const std::vector<std::optional<rules::ChangeDirection>> directions = {std::nullopt,
                                                                         rules::ChangeDirection::kRegression};
  for (const auto& state : states) {
    for (const auto& direction : directions) {
      for (const auto& of_series : {std::optional<std::int64_t>(), std::optional<std::int64_t>(id)}) {
        EXPECT_TRUE(store_->regressions().list_regressions({state, direction, of_series}, 1000, 100).ok());
      }
    }
  }
  EXPECT_FALSE(store_->regressions().get_regression(1).ok());
  EXPECT_TRUE(store_->regressions().due_alerts(clock_.now_ms(), 10).ok());
  EXPECT_TRUE(store_->regressions().next_alert_due().ok());
  store_->observe_statements({});
  ASSERT_GT(seen.size(), 12u) << "the observer saw too little";
  EXPECT_EQ(check_plans(options_.path, seen), 0);
}

// Per run of each statement, the virtual machine steps `after` adds to `before`.
std::map<std::string, double> steps_per_run(const std::map<std::string, StatementWork>& before,
                                            const std::map<std::string, StatementWork>& after) {
  std::map<std::string, double> out;
  for (const auto& [sql, w] : after) {
    StatementWork b;
    if (auto it = before.find(sql); it != before.end()) b = it->second;
    if (w.runs > b.runs) out[sql] = static_cast<double>(w.vm_steps - b.vm_steps) / static_cast<double>(w.runs - b.runs);
  }
  return out;
}

// Each lease read the queue of its GPU class row by row past jobs the slot cannot
// run, and each OOM or requeue read every queued job of the run; both plans are index SEARCHes.
TEST_F(StoreQueryPlanTest, NoStatementPerLeaseOrResultDoesMoreWorkWithALongerQueue) {
  const auto a = enroll("a", "a100", {Mode::kEager, Mode::kDefault}, /*nightly=*/false);
  // Ahead of the slot's work (higher priority), jobs of a build it does not have; behind it, the
  // run it works on, mostly cells of other builds. Every cell: 4 batches x 5 repetitions.
  auto queue = [&](const std::string& name, int priority, int other_builds, const std::string& first_build,
                   int repetitions) {
    MatrixSpec spec;
    spec.name = name;
    spec.models = kModels;
    spec.batch_sizes = {1, 2, 4, 8};
    spec.modes = {Mode::kEager, Mode::kDefault};
    spec.torch_builds = {first_build};
    for (int i = 1; i <= other_builds; ++i) spec.torch_builds.push_back("other" + std::to_string(i));
    spec.gpus = {"a100"};
    spec.repetitions = repetitions;
    spec.priority = priority;
    return create(spec);
  };
  auto phase = [&]() {
    const auto before = store_->statement_work();
    complete(a, 48, /*releases=*/true);
    return steps_per_run(before, store_->statement_work());
  };
  // Short: 160 jobs ahead, a run of 160. Long: 22,400 ahead, a run of 19,200.
  const auto short_ahead = queue("short-ahead", 10, 0, "other1", 5);
  const auto short_run = queue("short", 0, 0, "stable", 5);
  complete(a, 8);  // every statement prepared
  const auto short_queue = phase();
  ASSERT_TRUE(store_->runs().cancel_run(short_ahead).ok());
  ASSERT_TRUE(store_->runs().cancel_run(short_run).ok());
  queue("long-ahead", 10, 6, "other0", 100);
  queue("long", 0, 119, "stable", 5);
  const auto long_queue = phase();

  for (const auto& [sql, steps] : long_queue) {
    auto it = short_queue.find(sql);
    if (it == short_queue.end()) continue;
    std::cout << "steps per run " << it->second << " -> " << steps << ": " << sql.substr(0, 160) << "\n";
    EXPECT_LE(steps, 2 * it->second + 1000) << "virtual machine steps per run: " << it->second
                                            << " with 320 jobs queued, " << steps << " with 41,600:\n  " << sql;
  }
}

}  // namespace
}  // namespace benchfleet::store
