// Regressions in the store: the webhook deliveries they owe, their states, and the
// deliveries' retries. A real SQLite file, a manual clock.
#include <gtest/gtest.h>

#include "tests/unit/store_history_fixture.h"

namespace benchfleet::store {
namespace {

TEST_F(StoreHistoryTest, ImprovementsAndUnalertedRegressionsOweNoDelivery) {
  for (int i = 0; i < 6; ++i) post(version(i), 10);
  for (int i = 6; i < 8; ++i) post(version(i), 8);  // faster
  const auto pass = detect();
  ASSERT_EQ(pass.changes.size(), 1u);
  EXPECT_EQ(pass.changes[0].direction, rules::ChangeDirection::kImprovement);
  EXPECT_TRUE(store_->regressions().due_alerts(clock_.now_ms(), 10).value().empty());
  EXPECT_EQ(store_->gauges(1000).value().open_regressions, 0) << "an improvement is no open regression";

  for (int i = 8; i < 13; ++i) post(version(i), 8);
  for (int i = 13; i < 15; ++i) post(version(i), 10);  // slower again: a regression
  const auto quiet = detect(/*enqueue_alerts=*/false);
  ASSERT_EQ(quiet.changes.size(), 1u);
  EXPECT_EQ(quiet.changes[0].direction, rules::ChangeDirection::kRegression);
  EXPECT_TRUE(store_->regressions().due_alerts(clock_.now_ms(), 10).value().empty()) << "alerts off: none owed";

  // The view's filters: regressions by default, improvements, or both; newest first.
  RegressionFilter open_regressions{RegressionState::kOpen, rules::ChangeDirection::kRegression, std::nullopt};
  auto page = store_->regressions().list_regressions(open_regressions, std::nullopt, 10).value();
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].id, quiet.changes[0].id);
  RegressionFilter any_open{RegressionState::kOpen, std::nullopt, std::nullopt};
  page = store_->regressions().list_regressions(any_open, std::nullopt, 1).value();
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].id, quiet.changes[0].id);
  ASSERT_TRUE(page.next_cursor.has_value());
  page = store_->regressions().list_regressions(any_open, page.next_cursor, 1).value();
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].id, pass.changes[0].id);
  EXPECT_FALSE(page.next_cursor.has_value());
  RegressionFilter improvements{std::nullopt, rules::ChangeDirection::kImprovement, std::nullopt};
  EXPECT_EQ(store_->regressions().list_regressions(improvements, std::nullopt, 10).value().items.size(), 1u);
  RegressionFilter of_series{std::nullopt, std::nullopt, resnet_series()};
  EXPECT_EQ(store_->regressions().list_regressions(of_series, std::nullopt, 10).value().items.size(), 2u);
  RegressionFilter of_other{std::nullopt, std::nullopt, resnet_series() + 1};
  EXPECT_TRUE(store_->regressions().list_regressions(of_other, std::nullopt, 10).value().items.empty());
}

TEST_F(StoreHistoryTest, RegressionStatesMoveOnlyAlongTheirTransitions) {
  for (int i = 0; i < 6; ++i) post(version(i), 10);
  for (int i = 6; i < 8; ++i) post(version(i), 12);
  const auto id = detect().changes.at(0).id;

  clock_.advance_ms(5000);
  auto acked = store_->regressions().set_regression_state(id, RegressionState::kAcknowledged, "looking").value();
  EXPECT_EQ(acked.state, RegressionState::kAcknowledged);
  EXPECT_EQ(acked.acknowledged_at, clock_.now_ms());
  EXPECT_EQ(acked.note, "looking");
  auto g = store_->gauges(1000).value();
  EXPECT_EQ(g.open_regressions, 0);
  EXPECT_EQ(g.acknowledged_regressions, 1);
  EXPECT_EQ(store_->series().get_series(resnet_series(), std::nullopt, 1).value().series.open_regressions, 1)
      << "acknowledged is still open work";

  auto again = store_->regressions().set_regression_state(id, RegressionState::kAcknowledged, std::nullopt).value();
  EXPECT_EQ(again.acknowledged_at, acked.acknowledged_at) << "setting the same state is a no-op";
  EXPECT_EQ(again.note, "looking");
  // Taking an acknowledgement back reopens it and forgets when it was acknowledged.
  auto back = store_->regressions().set_regression_state(id, RegressionState::kOpen, std::nullopt).value();
  EXPECT_EQ(back.state, RegressionState::kOpen);
  EXPECT_FALSE(back.acknowledged_at.has_value());
  EXPECT_EQ(store_->gauges(1000).value().open_regressions, 1);
  clock_.advance_ms(1000);
  acked = store_->regressions().set_regression_state(id, RegressionState::kAcknowledged, std::nullopt).value();

  clock_.advance_ms(5000);
  auto resolved = store_->regressions().set_regression_state(id, RegressionState::kResolved, "fixed upstream").value();
  EXPECT_EQ(resolved.state, RegressionState::kResolved);
  EXPECT_EQ(resolved.resolved_at, clock_.now_ms());
  EXPECT_EQ(resolved.acknowledged_at, acked.acknowledged_at);
  EXPECT_EQ(resolved.note, "fixed upstream");
  EXPECT_EQ(store_->regressions().set_regression_state(id, RegressionState::kAcknowledged, std::nullopt).error().code,
            ErrorCode::kConflict);

  auto reopened = store_->regressions().set_regression_state(id, RegressionState::kOpen, std::nullopt).value();
  EXPECT_EQ(reopened.state, RegressionState::kOpen);
  EXPECT_FALSE(reopened.resolved_at.has_value());
  EXPECT_FALSE(reopened.acknowledged_at.has_value());
  EXPECT_EQ(store_->regressions().set_regression_state(id, RegressionState::kResolved, std::nullopt).value().state,
            RegressionState::kResolved)
      << "open -> resolved directly";
  EXPECT_EQ(store_->regressions().set_regression_state(id + 1, RegressionState::kResolved, std::nullopt).error().code,
            ErrorCode::kNotFound);
  EXPECT_EQ(store_->regressions().get_regression(id + 1).error().code, ErrorCode::kNotFound);

  for (auto s : {RegressionState::kOpen, RegressionState::kAcknowledged, RegressionState::kResolved}) {
    EXPECT_EQ(parse_regression_state(to_string(s)), s);
  }
  EXPECT_FALSE(parse_regression_state("closed").has_value());
}

TEST_F(StoreHistoryTest, AlertDeliveriesAreRetriedDeliveredOrGivenUp) {
  // Two regressions, in two series: two deliveries.
  for (int batch : {1, 2}) {
    for (int i = 0; i < 6; ++i) post(version(i), 10, ResultStatus::kOk, batch);
    for (int i = 6; i < 8; ++i) post(version(i), 12, ResultStatus::kOk, batch);
  }
  ASSERT_EQ(detect().changes.size(), 2u);
  const TimestampMs now = clock_.now_ms();
  auto due = store_->regressions().due_alerts(now, 10).value();
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(store_->regressions().next_alert_due().value(), now);

  ASSERT_TRUE(store_->regressions().alert_attempt_failed(due[0].id, "HTTP 503", now + 30'000).ok());
  ASSERT_TRUE(store_->regressions().alert_delivered(due[1].id, now).ok());
  EXPECT_TRUE(store_->regressions().due_alerts(now, 10).value().empty()) << "the failed one waits for its retry";
  EXPECT_EQ(store_->regressions().next_alert_due().value(), now + 30'000);
  auto retried = store_->regressions().due_alerts(now + 30'000, 10).value();
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_EQ(retried[0].attempts, 1);
  EXPECT_EQ(store_->regressions().alert_delivered(due[1].id, now).error().code, ErrorCode::kNotFound)
      << "delivered once";

  ASSERT_TRUE(store_->regressions().alert_attempt_failed(due[0].id, "HTTP 503", std::nullopt).ok());  // given up
  EXPECT_TRUE(store_->regressions().due_alerts(now + 1'000'000, 10).value().empty());
  EXPECT_FALSE(store_->regressions().next_alert_due().value().has_value());
  const auto g = store_->gauges(1000).value();
  EXPECT_EQ(g.alerts_pending, 0);
  EXPECT_EQ(g.alerts_failed, 1);
  EXPECT_EQ(store_->regressions().alert_attempt_failed(due[0].id, "late", std::nullopt).error().code,
            ErrorCode::kNotFound);
}

// A series of more unseen runs than the detector judges per call (16) is finished over several
// calls (pass.more), finding the changes rules::find_changes finds in the whole series at once.

}  // namespace
}  // namespace benchfleet::store
