// The store with the parts: the dtype axis (stored, leased back, part of a cell), the
// shape walk a python compiled lease carries, the result columns reports read (accuracy,
// compile, memory, noise flags).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/codecs.h"
#include "coordinator/store/sqlite.h"
#include "coordinator/store/store.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

MatrixSpec resnet_matrix(std::vector<int> batches, std::vector<Dtype> dtypes, std::vector<Mode> modes) {
  MatrixSpec spec =
      testing::stable_a100_matrix("dtypes", {"torchvision/resnet18"}, std::move(batches), std::move(modes));
  spec.dtypes = std::move(dtypes);
  return spec;
}

class StoreDtypeTest : public StoreTest {
 protected:
  // Every job of the run as list_jobs gives it: spec -> status.
  std::map<std::tuple<int, Dtype, Mode>, JobStatus> job_states(std::int64_t run) {
    std::map<std::tuple<int, Dtype, Mode>, JobStatus> out;
    auto page = store_->runs().list_jobs(run, std::nullopt, 100);
    EXPECT_TRUE(page.ok());
    if (!page.ok()) return out;
    for (const auto& j : page->items) out[{j.spec.batch, j.spec.dtype, j.spec.mode}] = j.status;
    return out;
  }
  // One row of the results table, read past the store (the columns reports read).
  struct Columns {
    std::optional<std::string> accuracy, compile_cache;
    std::optional<double> accuracy_error, accuracy_tolerance, compile_ms;
    std::optional<std::int64_t> peak_memory_bytes, recompiles;
    std::string flags;
  };
  Columns stored_columns(std::int64_t result_id) {
    Columns c;
    auto db = Database::open(options_.path);
    EXPECT_TRUE(db.ok());
    if (!db.ok()) return c;
    auto row = (*db)->query_one(
        "SELECT accuracy, accuracy_error, accuracy_tolerance, compile_ms, compile_cache, peak_memory_bytes, recompiles,"
        " flags FROM results WHERE id = ?",
        result_id);
    EXPECT_TRUE(row.ok() && row->found());
    if (!row.ok() || !row->found()) return c;
    c.accuracy = (*row)->opt_text(0);
    c.accuracy_error = (*row)->opt_real(1);
    c.accuracy_tolerance = (*row)->opt_real(2);
    c.compile_ms = (*row)->opt_real(3);
    c.compile_cache = (*row)->opt_text(4);
    c.peak_memory_bytes = (*row)->opt_int64(5);
    c.recompiles = (*row)->opt_int64(6);
    c.flags = (*row)->text(7);
    return c;
  }
};

TEST_F(StoreDtypeTest, EachDtypeIsAJobStoredAndLeasedBackWithIt) {
  const auto a = enroll("a", "a100", {Mode::kEager});
  const auto run = submit_spec(resnet_matrix({1}, {Dtype::kFloat32, Dtype::kBfloat16}, {Mode::kEager}));
  EXPECT_EQ(store_->runs().get_run(run).value().job_count, 2);
  std::set<Dtype> leased;
  for (int i = 0; i < 2; ++i) {
    const auto g = lease(a);
    leased.insert(g.spec.dtype);
    // The agent reads the spec back from the lease's JSON (what the worker is told to run in).
    EXPECT_EQ(decode<LeasedJob>(nlohmann::json(static_cast<const LeasedJob&>(g))).value().spec.dtype, g.spec.dtype);
    ASSERT_TRUE(store_->results()
                    .record_result(a, {g.job_id, g.lease_id}, 1, ok_result(g.spec.dtype == Dtype::kBfloat16 ? 1 : 2))
                    .ok());
  }
  EXPECT_EQ(leased, (std::set<Dtype>{Dtype::kFloat32, Dtype::kBfloat16}));

  ResultFilter bf16;
  bf16.dtype = "bfloat16";
  const auto page = store_->results().list_results(run, bf16, std::nullopt, 10).value();
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].spec.dtype, Dtype::kBfloat16);
  EXPECT_EQ(page.items[0].result.stats->mean_ms, 1);
  EXPECT_EQ(store_->results().get_result(page.items[0].id).value().spec.dtype, Dtype::kBfloat16);
  EXPECT_EQ(store_->results().list_results(run, {}, std::nullopt, 10).value().items.size(), 2u);
}

TEST_F(StoreDtypeTest, AnOomInOneDtypeImpliesNothingForAnother) {
  const auto a = enroll("a", "a100", {Mode::kEager});
  const auto run = submit_spec(resnet_matrix({1, 4, 16}, {Dtype::kFloat16, Dtype::kFloat32}, {Mode::kEager}));
  // Scheduling order: batch, then dtype: batch 1 float16 first.
  const auto g = lease(a);
  ASSERT_EQ(g.spec.batch, 1);
  ASSERT_EQ(g.spec.dtype, Dtype::kFloat16);
  const auto out = store_->results().record_result(a, {g.job_id, g.lease_id}, 1, oom_result()).value();
  EXPECT_EQ(out.implied_oom, 2) << "batches 4 and 16 in float16";
  auto states = job_states(run);
  EXPECT_EQ((states[{4, Dtype::kFloat16, Mode::kEager}]), JobStatus::kDone);
  EXPECT_EQ((states[{16, Dtype::kFloat16, Mode::kEager}]), JobStatus::kDone);
  for (int batch : {1, 4, 16}) EXPECT_EQ((states[{batch, Dtype::kFloat32, Mode::kEager}]), JobStatus::kQueued) << batch;
  ResultFilter implied;
  implied.status = "oom_implied";
  const auto rows = store_->results().list_results(run, implied, std::nullopt, 10).value().items;
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.spec.dtype, Dtype::kFloat16);
    EXPECT_NE(r.result.error.value_or("").find("float16"), std::string::npos) << r.result.error.value_or("");
  }
}

TEST_F(StoreDtypeTest, OnlyPythonCompiledLeasesCarryDynamicAndTheShapeWalk) {
  AgentDescriptor d = testing::one_slot_agent("a");
  d.torch_builds = {
      {"stable",
       "2.6.0",
       {{Runtime::kLibtorch, {Mode::kEager, Mode::kDefault}}, {Runtime::kPython, {Mode::kEager, Mode::kDefault}}}}};
  const auto a = enroll_agent(d);
  MatrixSpec spec = resnet_matrix({16, 1, 4}, {Dtype::kFloat32}, {Mode::kEager, Mode::kDefault});
  spec.runtimes = {Runtime::kLibtorch, Runtime::kPython};
  spec.dynamic = true;
  spec.shape_walk = true;
  const auto run = submit_spec(spec);
  EXPECT_EQ(store_->runs().get_run(run).value().job_count, 12);
  int walked = 0;
  for (int i = 0; i < 12; ++i) {
    auto answer = store_->leases().lease(a, "gpu0").value();
    ASSERT_TRUE(answer.grant.has_value()) << i;
    const LeaseGrant& g = *answer.grant;
    SCOPED_TRACE(std::string(to_string(g.spec.runtime)) + "/" + std::string(to_string(g.spec.mode)));
    if (g.spec.runtime == Runtime::kPython && g.spec.mode == Mode::kDefault) {
      ++walked;
      EXPECT_TRUE(g.dynamic);
      EXPECT_EQ(g.walk_batches, (std::vector<int>{1, 4, 16})) << "the matrix's batch sizes, ascending";
      // Handed over again (a retried poll), the lease says the same.
      const auto again = store_->leases().lease(a, "gpu0").value();
      ASSERT_TRUE(again.grant && again.grant->redelivered);
      EXPECT_TRUE(again.grant->dynamic);
      EXPECT_EQ(again.grant->walk_batches, g.walk_batches);
    } else {
      EXPECT_FALSE(g.dynamic);
      EXPECT_TRUE(g.walk_batches.empty());
    }
    ASSERT_TRUE(store_->results().record_result(a, {g.job_id, g.lease_id}, g.attempt, ok_result(1)).ok());
  }
  EXPECT_EQ(walked, 3);

  // Without shape_walk a dynamic run walks nothing.
  spec.shape_walk = false;
  spec.runtimes = {Runtime::kPython};
  spec.modes = {Mode::kDefault};
  submit_spec(spec);
  const auto g = lease(a);
  EXPECT_TRUE(g.dynamic);
  EXPECT_TRUE(g.walk_batches.empty());
}

TEST_F(StoreDtypeTest, APostedResultFillsTheReportColumnsWithTheRunsNoiseThresholds) {
  const auto a = enroll("a", "a100", {Mode::kDefault});
  MatrixSpec spec = resnet_matrix({1}, {Dtype::kFloat32}, {Mode::kDefault});
  spec.noise.max_cv = 0.05;
  const auto run = submit_spec(spec);
  const auto g = lease(a);
  JobResult r = testing::spread_result(2, 0.14);  // the time bound left the CI wide
  ASSERT_GT(r.stats->cv, 0.05);                   // above the run's 0.05, below the default 0.10
  ASSERT_LT(r.stats->cv, 0.10);
  r.export_s = 41.25;
  r.telemetry = {{"artifact_cached", false}, {"export_inductor_cache", "cold"}};
  r.memory.emplace();
  r.memory->peak_rss_bytes = 700'000'000;
  r.accuracy = AccuracyInfo{AccuracyVerdict::kWrong, 0.049, 4.3e-7, 1.0129e-4, std::nullopt, "output0", ""};
  const auto stored = store_->results().record_result(a, {g.job_id, g.lease_id}, 1, r).value();
  ASSERT_EQ(stored.kind, RecordKind::kStored);

  const Columns c = stored_columns(stored.result_id);
  EXPECT_EQ(c.accuracy, "wrong");
  EXPECT_EQ(c.accuracy_error, 0.049);
  EXPECT_EQ(c.accuracy_tolerance, 1.0129e-4);
  EXPECT_EQ(c.compile_ms, 41250);
  EXPECT_EQ(c.compile_cache, "cold");
  EXPECT_EQ(c.peak_memory_bytes, 700'000'000);
  EXPECT_FALSE(c.recompiles.has_value());
  EXPECT_EQ(c.flags, "high_cv,ci_not_met");

  const auto page = store_->results().list_results(run, {}, std::nullopt, 10).value();
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].flags, (std::vector<std::string>{"high_cv", "ci_not_met"}));
  EXPECT_EQ(page.items[0].result.accuracy, r.accuracy);
  EXPECT_EQ(store_->results().get_result(stored.result_id).value().flags, page.items[0].flags);
}

}  // namespace
}  // namespace benchfleet::store
