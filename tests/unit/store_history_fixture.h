// The fixture of the history tests in the store: a store with one agent posting results of
// known medians and samples, run after run (post), and the seam between a series' detection
// read and its write (between_steps_).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/codecs.h"
#include "common/stats.h"
#include "coordinator/services/change_detection.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/sqlite.h"
#include "coordinator/store/store.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {

namespace {

struct Posted {
  std::int64_t run_id = 0;
  std::int64_t result_id = 0;
};

class StoreHistoryTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    agent_ = enroll("a", "a100", {Mode::kEager, Mode::kDefault});
  }

  // `n` latency samples around `ms` (+-2%, deterministic), as a run measures them: in pairs
  // mirrored around `ms`, so that their median is `ms`.
  std::vector<double> samples_around(double ms, int n = 40) {
    std::vector<double> out;
    for (int i = 0; i < n / 2; ++i) {
      seed_ = seed_ * 6364136223846793005ULL + 1442695040888963407ULL;
      const double u = static_cast<double>(seed_ >> 11) / static_cast<double>(1ULL << 53);  // [0, 1)
      out.push_back(ms * (1 + 0.02 * u));
      out.push_back(ms * (1 - 0.02 * u));
    }
    return out;
  }

  // A run of one job (resnet18, batch `batch`, eager) and its result: ok around `ms` recorded
  // with torch `version` (none when empty), or `status` with no measurement.
  Posted post(const std::string& version, double ms, ResultStatus status = ResultStatus::kOk, int batch = 1,
              const std::string& git = "") {
    const auto run = submit({"torchvision/resnet18"}, {batch}, {Mode::kEager});
    const auto g = lease(agent_);
    JobResult r;
    if (status == ResultStatus::kOk) {
      r = ok_result(ms);
      r.samples_ms = samples_around(ms);
      posted_runs_.push_back({r.samples_ms, ms});
      r.stats = compute_statistics(r.samples_ms);  // as the worker computes them: the store checks
    } else if (status == ResultStatus::kOom) {
      r = oom_result();
    } else {
      r.status = status;
      r.error = "failed";
    }
    if (!version.empty()) r.environment["torch_version"] = version;
    if (!git.empty()) r.environment["torch_git"] = git;
    clock_.advance_ms(1000);
    auto out = store_->results().record_result(agent_, {g.job_id, g.lease_id}, g.attempt, r);
    EXPECT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(out->kind, RecordKind::kStored);
    return {run, out.ok() ? out->result_id : 0};
  }

  SeriesKey resnet_key(int batch = 1) {
    SeriesKey k;
    k.model = "torchvision/resnet18";
    k.batch = batch;
    k.mode = Mode::kEager;
    k.gpu = "a100";
    k.torch_build = "stable";
    return k;
  }
  std::int64_t resnet_series(int batch = 1) {
    auto id = store_->series().find_series(resnet_key(batch));
    EXPECT_TRUE(id.ok() && id->has_value());
    return id.ok() ? id->value_or(0) : 0;
  }
  std::vector<std::optional<std::string>> versions_of(const std::vector<SeriesPoint>& points) {
    std::vector<std::optional<std::string>> out;
    for (const auto& p : points) out.push_back(p.torch_version);
    return out;
  }
  // 2.<minor>.0 for the i-th nightly-like version.
  static std::string version(int i) { return "2." + std::to_string(i) + ".0"; }

  DetectionPass detect(bool enqueue_alerts = true) {
    auto pass =
        services::detect_changes(store_->series(), rules::DetectorOptions{}, enqueue_alerts, 64, between_steps_);
    EXPECT_TRUE(pass.ok()) << pass.error().message;
    return pass.ok() ? *pass : DetectionPass{};
  }

  // Called between a series' detection read and its write (services::detect_changes).
  std::function<void(std::int64_t series_id)> between_steps_;
  std::int64_t agent_ = 0;
  std::uint64_t seed_ = 42;
  std::vector<rules::RunSamples> posted_runs_;  // each ok result post() stored, in order
};

}  // namespace
}  // namespace benchfleet::store
