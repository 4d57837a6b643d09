// Nightly history in the store: results form series across torch versions, and the change
// detector's pass finds the changes in them. A real SQLite file, a manual clock.
#include <gtest/gtest.h>

#include "tests/unit/store_history_fixture.h"

namespace benchfleet::store {
namespace {

TEST_F(StoreHistoryTest, ResultsFormASeriesInTorchVersionOrder) {
  post("2.10.0", 10);
  post("2.9.0", 11);
  post("2.11.0.dev20250102", 12, ResultStatus::kOk, 1, "abc123");
  post("2.11.0.dev20250101", 13);
  post("", 14, ResultStatus::kError);  // failed before torch ran: no version, sorts first
  post("2.9.0", 0, ResultStatus::kOom);
  post("2.9.0", 0, ResultStatus::kUnsupported);  // no point
  post("2.9.0", 9, ResultStatus::kOk, 4);        // another series

  const auto id = resnet_series();
  const auto s = store_->series().get_series(id, std::nullopt, 100).value();
  EXPECT_EQ(versions_of(s.points),
            (std::vector<std::optional<std::string>>{std::nullopt, "2.9.0", "2.9.0", "2.10.0", "2.11.0.dev20250101",
                                                     "2.11.0.dev20250102"}));
  EXPECT_EQ(s.points[0].status, ResultStatus::kError);
  EXPECT_FALSE(s.points[0].median_ms.has_value());
  EXPECT_NEAR(s.points[1].median_ms.value_or(0), 11, 1e-9);
  EXPECT_EQ(s.points[2].status, ResultStatus::kOom) << "same version: in the order recorded";
  EXPECT_EQ(s.points[5].torch_git, "abc123");
  EXPECT_GT(s.points[5].ci_low_ms.value_or(0), 12 * 0.98);  // the bootstrap CI of the median
  EXPECT_LT(s.points[5].ci_low_ms.value_or(12), 12);
  EXPECT_FALSE(s.next_cursor.has_value());

  EXPECT_EQ(s.series.key, resnet_key());
  EXPECT_EQ(s.series.points, 6);
  EXPECT_EQ(s.series.last_torch_version, "2.11.0.dev20250102") << "last in series order, not in time";
  EXPECT_NEAR(s.series.last_median_ms.value_or(0), 12, 1e-9);
  EXPECT_EQ(s.series.last_status, ResultStatus::kOk);
  EXPECT_EQ(s.series.last_point_at, clock_.now_ms() - 2000) << "the unsupported and batch-4 results came after";

  auto all = store_->series().list_series({}, std::nullopt, 10).value();
  ASSERT_EQ(all.items.size(), 2u);
  EXPECT_EQ(all.items[0].id, id);
  EXPECT_EQ(all.items[1].key.batch, 4);
  SeriesFilter only4;
  only4.batch = 4;
  EXPECT_EQ(store_->series().list_series(only4, std::nullopt, 10).value().items.size(), 1u);
  SeriesFilter other;
  other.model = "torchvision/resnet50";
  EXPECT_TRUE(store_->series().list_series(other, std::nullopt, 10).value().items.empty());
  SeriesKey missing = resnet_key();
  missing.dtype = Dtype::kFloat16;
  EXPECT_FALSE(store_->series().find_series(missing).value().has_value());
  EXPECT_EQ(store_->series().get_series(id + 100, std::nullopt, 10).error().code, ErrorCode::kNotFound);
}

TEST_F(StoreHistoryTest, SeriesAndPointsPageInOrder) {
  for (int i = 7; i >= 1; --i) post(version(i), 10 + i);
  post(version(1), 5, ResultStatus::kOk, 2);
  post(version(1), 5, ResultStatus::kOk, 4);
  const auto id = resnet_series();
  std::vector<std::optional<std::string>> seen;
  std::optional<std::int64_t> after;
  int pages = 0;
  do {
    auto page = store_->series().get_series(id, after, 3).value();
    EXPECT_LE(page.points.size(), 3u);
    for (const auto& v : versions_of(page.points)) seen.push_back(v);
    after = page.next_cursor;
    ++pages;
  } while (after && pages < 10);
  EXPECT_EQ(pages, 3);
  std::vector<std::optional<std::string>> expected;
  for (int i = 1; i <= 7; ++i) expected.push_back(version(i));
  EXPECT_EQ(seen, expected);

  // A point of another series is not a cursor of this one.
  const auto other = store_->series().get_series(resnet_series(2), std::nullopt, 1).value();
  auto wrong = store_->series().get_series(id, other.points[0].id, 3);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kNotFound);

  auto first = store_->series().list_series({}, std::nullopt, 2).value();
  ASSERT_EQ(first.items.size(), 2u);
  ASSERT_TRUE(first.next_cursor.has_value());
  auto second = store_->series().list_series({}, first.next_cursor, 2).value();
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.items[0].key.batch, 4);
  EXPECT_FALSE(second.next_cursor.has_value());
}

TEST_F(StoreHistoryTest, AStepBecomesOneRegressionAtItsFirstRun) {
  for (int i = 0; i < 6; ++i) post(version(i), 10);
  for (int i = 6; i < 9; ++i) post(version(i), 11);  // +10% from 2.6.0 on
  const auto pass = detect();
  EXPECT_EQ(pass.series_examined, 1);
  EXPECT_FALSE(pass.more);
  ASSERT_EQ(pass.changes.size(), 1u);
  const RegressionInfo& r = pass.changes[0];
  EXPECT_EQ(r.direction, rules::ChangeDirection::kRegression);
  EXPECT_EQ(r.state, RegressionState::kOpen);
  EXPECT_EQ(r.key, resnet_key());
  EXPECT_EQ(r.first_bad.torch_version, version(6));
  ASSERT_TRUE(r.last_good.has_value());
  EXPECT_EQ(r.last_good->torch_version, version(5));
  EXPECT_NEAR(r.first_bad.median_ms.value_or(0), 11, 1e-9);
  // Medians of the samples (+-2% around 10 and 11 ms).
  EXPECT_NEAR(r.ratio, 1.1, 0.01);
  EXPECT_NEAR(r.before_median_ms, 10, 0.1);
  EXPECT_NEAR(r.after_median_ms, 11, 0.1);
  EXPECT_LT(r.p_value, 0.001);
  EXPECT_EQ(r.confirm_runs, 2);
  EXPECT_EQ(r.baseline_runs, 5);
  EXPECT_EQ(store_->regressions().get_regression(r.id).value().first_bad.point_id, r.first_bad.point_id);

  // Seen: nothing more to examine, and the runs after the step are the new level.
  EXPECT_EQ(detect().series_examined, 0);
  for (int i = 9; i < 12; ++i) post(version(i), 11);
  const auto later = detect();
  EXPECT_EQ(later.series_examined, 1);
  EXPECT_TRUE(later.changes.empty()) << "the new level raises nothing more";

  // One webhook delivery owed, with the event and the regression's id.
  const auto due = store_->regressions().due_alerts(clock_.now_ms(), 10).value();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].regression_id, r.id);
  EXPECT_EQ(due[0].event, "regression.opened");
  EXPECT_EQ(nlohmann::json::parse(due[0].body),
            (nlohmann::json{{"event", "regression.opened"}, {"regression_id", r.id}}));
  EXPECT_EQ(due[0].attempts, 0);
  const auto g = store_->gauges(1000).value();
  EXPECT_EQ(g.open_regressions, 1);
  EXPECT_EQ(g.alerts_pending, 1);
  EXPECT_EQ(store_->series().get_series(resnet_series(), std::nullopt, 1).value().series.open_regressions, 1);
}

TEST_F(StoreHistoryTest, DetectingAfterEveryRunFindsTheSameChange) {
  std::vector<RegressionInfo> found;
  for (int i = 0; i < 10; ++i) {
    post(version(i), i < 6 ? 10 : 11);
    for (auto& c : detect().changes) found.push_back(c);
  }
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].first_bad.torch_version, version(6));
  EXPECT_EQ(found[0].last_good->torch_version, version(5));
  EXPECT_EQ(store_->regressions().due_alerts(clock_.now_ms(), 10).value().size(), 1u) << "one alert per regression";
}

TEST_F(StoreHistoryTest, ASingleOutlierOrAFailedRunIsNoChange) {
  for (int i = 0; i < 6; ++i) post(version(i), 10);
  post(version(6), 15);  // one slow run
  post(version(7), 0, ResultStatus::kOom);
  post(version(8), 0, ResultStatus::kError);
  for (int i = 9; i < 12; ++i) post(version(i), 10);
  EXPECT_TRUE(detect().changes.empty());
  EXPECT_TRUE(store_->regressions().list_regressions({}, std::nullopt, 10).value().items.empty());
  EXPECT_TRUE(store_->regressions().due_alerts(clock_.now_ms(), 10).value().empty());
}

TEST_F(StoreHistoryTest, RepetitionsOfARunPoolTheirSamples) {
  // Two results per run (repetitions): the detector sees one run of two points, so a step
  // needs two runs (four results), not two results.
  auto post_run = [&](const std::string& v, double ms) {
    MatrixSpec spec = testing::stable_a100_matrix("reps", {"torchvision/resnet18"}, {1}, {Mode::kEager});
    spec.repetitions = 2;
    submit_spec(spec);
    for (int rep = 0; rep < 2; ++rep) {
      const auto g = lease(agent_);
      JobResult r = ok_result(ms);
      r.samples_ms = samples_around(ms);
      r.stats = compute_statistics(r.samples_ms);
      r.environment["torch_version"] = v;
      clock_.advance_ms(10);
      ASSERT_TRUE(store_->results().record_result(agent_, {g.job_id, g.lease_id}, g.attempt, r).ok());
    }
  };
  for (int i = 0; i < 5; ++i) post_run(version(i), 10);
  post_run(version(5), 12);
  EXPECT_TRUE(detect().changes.empty()) << "one suspect run confirms nothing";
  post_run(version(6), 12);
  const auto pass = detect();
  ASSERT_EQ(pass.changes.size(), 1u);
  EXPECT_EQ(pass.changes[0].first_bad.torch_version, version(5));
  EXPECT_EQ(pass.changes[0].last_good->torch_version, version(4));
  const auto points = store_->series().get_series(resnet_series(), std::nullopt, 100).value().points;
  ASSERT_EQ(points.size(), 14u);
  EXPECT_EQ(pass.changes[0].first_bad.point_id, points[10].id) << "the first point of the run";
  EXPECT_EQ(pass.changes[0].last_good->point_id, points[9].id) << "the last point of the run before";
}

TEST_F(StoreHistoryTest, ManyUnseenRunsAreJudgedOverSeveralCallsWithTheSameChanges) {
  for (int i = 0; i < 40; ++i) post(version(i), i < 10 ? 10 : i < 24 ? 11 : i < 33 ? 9 : 10.5);
  const auto expected = rules::find_changes(posted_runs_, rules::DetectorOptions{});
  ASSERT_EQ(expected.size(), 3u) << "the three steps";

  std::vector<RegressionInfo> found;
  int calls = 0;
  for (bool more = true; more && calls < 10; ++calls) {
    const auto pass = detect();
    EXPECT_EQ(pass.series_examined, 1);
    for (const auto& c : pass.changes) found.push_back(c);
    more = pass.more;
  }
  EXPECT_EQ(calls, 3) << "16 runs per call";
  EXPECT_EQ(detect().series_examined, 0) << "all seen";

  const auto points = store_->series().get_series(resnet_series(), std::nullopt, 100).value().points;
  ASSERT_EQ(found.size(), expected.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(found[i].first_bad.point_id, points[expected[i].first_index].id);
    EXPECT_EQ(found[i].last_good->point_id, points[expected[i].first_index - 1].id);
    EXPECT_EQ(found[i].direction, expected[i].direction);
    EXPECT_EQ(found[i].p_value, expected[i].p_value);
    EXPECT_EQ(found[i].ratio, expected[i].ratio);
    EXPECT_EQ(found[i].before_median_ms, expected[i].before_median_ms);
    EXPECT_EQ(found[i].baseline_runs, expected[i].baseline_runs);
  }
  EXPECT_EQ(found[0].first_bad.torch_version, version(10));
  EXPECT_EQ(found[1].first_bad.torch_version, version(24));
  EXPECT_EQ(found[2].first_bad.torch_version, version(33));
}

// A point of an older torch version arriving late is walked again with the seen runs after it,
// 16 runs per call too: the call that stops at a seen run leaves it for the next call.
TEST_F(StoreHistoryTest, ALatePointIsWalkedWithTheSeenRunsAfterItOverSeveralCalls) {
  for (int i = 0; i < 20; ++i) post(version(i + 1), 10);
  EXPECT_TRUE(detect().more);
  EXPECT_FALSE(detect().more);
  post(version(0), 10);  // first in series order, 21 runs to walk
  post(version(0), 0, ResultStatus::kOom);
  const auto first = detect();
  EXPECT_EQ(first.series_examined, 1);
  EXPECT_TRUE(first.more);
  const auto second = detect();
  EXPECT_EQ(second.series_examined, 1) << "the walk goes on where it stopped";
  EXPECT_FALSE(second.more);
  EXPECT_TRUE(first.changes.empty() && second.changes.empty());
  EXPECT_EQ(detect().series_examined, 0);
}

// The detector parses and tests the samples without the store's lock: a point stored meanwhile
// among the runs it walked (an older torch version's) makes it write nothing for the series,
// which the next call walks again; one after them (a newer version's) waits for the next call.
TEST_F(StoreHistoryTest, APointStoredAmongTheWalkedRunsMeanwhileVoidsTheWalk) {
  for (int i = 0; i < 6; ++i) post(version(i), 10);
  EXPECT_TRUE(detect().changes.empty());
  for (int i = 6; i < 8; ++i) post(version(i), 11);  // +10%: confirmed by 2.7.0

  int calls = 0;
  between_steps_ = [&](std::int64_t) {
    if (++calls == 1) post(version(4), 10);  // ordered among the level's runs
  };
  const auto voided = detect();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(voided.series_examined, 1);
  EXPECT_TRUE(voided.changes.empty()) << "nothing written for a series that changed under the walk";
  EXPECT_TRUE(voided.more) << "its points are still unseen";
  EXPECT_TRUE(store_->regressions().list_regressions({}, std::nullopt, 10).value().items.empty());

  between_steps_ = [&](std::int64_t) {
    if (++calls == 2) post(version(8), 11);  // after every run read
  };
  const auto pass = detect();
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(pass.changes.size(), 1u);
  EXPECT_EQ(pass.changes[0].first_bad.torch_version, version(6));
  EXPECT_EQ(pass.changes[0].last_good->torch_version, version(5));
  EXPECT_FALSE(pass.more);
  between_steps_ = {};
  const auto after = detect();
  EXPECT_EQ(after.series_examined, 1) << "the point stored during the walk is unseen";
  EXPECT_TRUE(after.changes.empty()) << "and of the new level";
  EXPECT_EQ(detect().series_examined, 0);
  EXPECT_EQ(store_->regressions().due_alerts(clock_.now_ms(), 10).value().size(), 1u) << "one alert";
}

}  // namespace
}  // namespace benchfleet::store
