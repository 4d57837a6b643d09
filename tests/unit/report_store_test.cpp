// What a report reads from the store (Store::report_cells, store_report.cpp): the
// dtype of each job and the result columns of migration 009 (accuracy, compile, memory, noise
// flags), through the store's real result path; and that the query stays an index read.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/accuracy.h"
#include "common/catalog.h"
#include "common/clock.h"
#include "common/matrix.h"
#include "coordinator/rules/report.h"
#include "coordinator/store/store.h"
#include "tests/unit/query_plan.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

namespace fs = std::filesystem;

constexpr const char* kResnet = "torchvision/resnet18";
constexpr const char* kMobilenet = "torchvision/mobilenet_v3_small";

class ReportStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bf-report-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.path = (dir_ / "bf.db").string();
    options_.lease_ttl_ms = 60'000;
    auto s = Store::open(options_, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  // resnet18 and mobilenet_v3_small x batch 1 x {eager, default} x `dtypes`.
  std::int64_t submit(std::vector<Dtype> dtypes) {
    MatrixSpec spec =
        testing::stable_a100_matrix("accuracy study", {kResnet, kMobilenet}, {1}, {Mode::kEager, Mode::kDefault});
    spec.dtypes = std::move(dtypes);
    auto catalog = Catalog::load_file(default_catalog_path());
    EXPECT_TRUE(catalog.ok());
    auto jobs = expand_matrix(spec, *catalog, {});
    EXPECT_TRUE(jobs.ok()) << jobs.error().message;
    auto run = store_->runs().create_run(spec, *jobs);
    EXPECT_TRUE(run.ok()) << run.error().message;
    return run.ok() ? run->run_id : 0;
  }

  fs::path dir_;
  StoreOptions options_;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

// What the worker would post for `job`: compiled resnet18 in float32 is wrong (as
// measured with Inductor), every other compiled cell passes; float16 eager of mobilenet is noisy
// (high CV, CI target not met).
JobResult result_for(const JobSpec& job) {
  const bool compiled = is_compiled(job.mode);
  const bool half = job.dtype == Dtype::kFloat16;
  JobResult r = testing::ok_result(compiled ? 5.0 : 8.0);
  r.memory.emplace();
  r.memory->peak_allocated_bytes = (compiled ? 300LL : 400LL) << 20;
  r.memory->peak_reserved_bytes = 512LL << 20;
  r.memory->peak_rss_bytes = 1LL << 30;
  if (compiled) {
    r.export_s = half ? 0.85 : 12.4;
    if (half) r.telemetry["artifact_cached"] = true;
    AccuracyInfo a;
    a.verdict = job.model == kResnet && !half ? AccuracyVerdict::kWrong : AccuracyVerdict::kPass;
    a.compiled_error = a.verdict == AccuracyVerdict::kWrong ? 0.049 : 2e-7;
    a.eager_error = 4.3e-7;
    a.tolerance = 3 * a.eager_error + error_floor(job.dtype, job.gpu != "cpu");  // the rule's bound
    a.output = "output0";
    r.accuracy = a;
  }
  if (half && job.model == kMobilenet && job.mode == Mode::kEager) {
    // The time bound came first (any count) and left the CI wide, the samples spread (CV 0.25).
    JobResult noisy = testing::spread_result(8.0, 0.43);
    noisy.memory = r.memory;
    r = noisy;
  }
  return r;
}

TEST_F(ReportStoreTest, CellsCarryDtypeAccuracyCompileMemoryAndFlagsFromTheStoredResults) {
  AgentDescriptor agent = testing::one_slot_agent("a", "a100", {Mode::kEager, Mode::kDefault});
  const auto agent_id = store_->agents().enroll_agent(agent, {"salt", "hash"}, store::EnrolmentClaim::anyone()).value();
  const std::int64_t run = submit({Dtype::kFloat32, Dtype::kFloat16});
  for (int i = 0; i < 8; ++i) {
    auto answer = store_->leases().lease(agent_id, "gpu0");
    ASSERT_TRUE(answer.ok() && answer->grant) << "job " << i;
    const LeaseGrant& g = *answer->grant;
    auto stored = store_->results().record_result(agent_id, {g.job_id, g.lease_id}, g.attempt, result_for(g.spec));
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    ASSERT_EQ(stored->kind, RecordKind::kStored);
  }

  const auto cells = store_->results().report_cells(run).value();
  ASSERT_EQ(cells.size(), 8u);
  std::map<std::tuple<std::string, Mode, Dtype>, CellResult> by_cell;
  for (const auto& c : cells) by_cell[{c.job.model, c.job.mode, c.job.dtype}] = c;
  ASSERT_EQ(by_cell.size(), 8u) << "each (model, mode, dtype) once: the dtype is read back";

  const auto& wrong = by_cell.at({kResnet, Mode::kDefault, Dtype::kFloat32});
  EXPECT_EQ(wrong.accuracy, AccuracyVerdict::kWrong);
  EXPECT_DOUBLE_EQ(wrong.accuracy_error.value_or(0), 0.049);
  EXPECT_DOUBLE_EQ(wrong.accuracy_tolerance.value_or(0), 1.0129e-4);
  EXPECT_DOUBLE_EQ(wrong.compile_ms.value_or(0), 12'400);
  EXPECT_EQ(wrong.compile_cache, "cold");
  EXPECT_EQ(wrong.peak_memory_bytes, 300LL << 20) << "the allocator's peak before RSS";
  EXPECT_TRUE(wrong.flags.empty());

  const auto& warm = by_cell.at({kResnet, Mode::kDefault, Dtype::kFloat16});
  EXPECT_EQ(warm.accuracy, AccuracyVerdict::kPass);
  EXPECT_EQ(warm.compile_cache, "warm");

  const auto& eager = by_cell.at({kResnet, Mode::kEager, Dtype::kFloat32});
  EXPECT_FALSE(eager.accuracy.has_value());
  EXPECT_FALSE(eager.accuracy_error.has_value());
  EXPECT_FALSE(eager.compile_ms.has_value());
  EXPECT_EQ(eager.compile_cache, "");
  EXPECT_EQ(eager.peak_memory_bytes, 400LL << 20);
  EXPECT_FALSE(eager.recompiles.has_value());

  const auto& noisy = by_cell.at({kMobilenet, Mode::kEager, Dtype::kFloat16});
  EXPECT_EQ(noisy.flags, (std::vector<std::string>{"high_cv", "ci_not_met"}));

  // The report built from them: one table per dtype, the wrong speedup out of its geomean.
  rules::ReportInput in;
  in.run_id = run;
  in.run_name = "accuracy study";
  in.matrix = store_->runs().get_run(run).value().spec;
  in.cells = cells;
  const rules::Report r = rules::build_report(in);
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].title, "A100 (batch size: 1, float32)");
  EXPECT_EQ(r.tables[1].title, "A100 (batch size: 1, float16)");
  ASSERT_EQ(r.tables[0].geomeans.size(), 1u);
  EXPECT_EQ(r.tables[0].geomeans[0].excluded_inaccurate, 1);
  EXPECT_EQ(r.tables[0].geomeans[0].covered, 1);
  EXPECT_EQ(r.tables[0].pass_rates.at(0).text, "Pass rate stable - default: 1/2 (50%): 1 wrong");
  EXPECT_EQ(r.tables[1].pass_rates.at(0).text, "Pass rate stable - default: 2/2 (100%)");
}

// A run's report reads its jobs by run and each job's result from the results_cells index alone:
// never a results row (whose body can be large), never a whole table, no sort.
TEST_F(ReportStoreTest, TheReportQueryReadsTheCoveringIndex) {
  const std::int64_t run = submit({Dtype::kFloat32});
  std::vector<std::string> seen;
  store_->observe_statements([&seen](const std::string& sql) { seen.push_back(sql); });
  ASSERT_TRUE(store_->results().report_cells(run).ok());
  store_->observe_statements(nullptr);
  const auto it = std::find_if(seen.begin(), seen.end(), [](const std::string& sql) {
    return sql.find("LEFT JOIN results r") != std::string::npos;
  });
  ASSERT_NE(it, seen.end()) << "the report query was not seen";
  const auto plan = testing::explain(options_.path, *it);
  std::string all;
  for (const auto& step : plan) all += step + "\n";
  std::cout << *it << "\n" << all;
  EXPECT_NE(all.find("SEARCH r USING COVERING INDEX results_cells (job_id=?)"), std::string::npos) << all;
  EXPECT_NE(all.find("SEARCH j USING INDEX"), std::string::npos) << all;
  EXPECT_EQ(all.find("SCAN "), std::string::npos) << all;
  EXPECT_EQ(all.find("TEMP B-TREE"), std::string::npos) << all;
}

}  // namespace
}  // namespace benchfleet::store
