// A run's time left (coordinator/rules/eta.h), from its jobs' times.
#include "coordinator/rules/eta.h"

#include <gtest/gtest.h>

#include <vector>

namespace benchfleet::rules {
namespace {

ModeTimes mode(Mode m, int queued, int timed, double timed_ms, std::vector<double> running = {},
               Runtime runtime = Runtime::kPython, const char* build = "stable") {
  ModeTimes t;
  t.build = build;
  t.runtime = runtime;
  t.mode = m;
  t.queued = queued;
  t.timed = timed;
  t.timed_ms = timed_ms;
  t.running_elapsed_ms = std::move(running);
  return t;
}

TEST(Eta, NoneBeforeAnyJobFinished) { EXPECT_FALSE(seconds_left({mode(Mode::kEager, 4, 0, 0, {1000})}).has_value()); }

TEST(Eta, CountsDownWhileAJobRuns) {
  // Two eager jobs took 10 s each; one runs, two wait.
  const auto at = [](double elapsed_ms) { return *seconds_left({mode(Mode::kEager, 2, 2, 20'000, {elapsed_ms})}); };
  EXPECT_DOUBLE_EQ(at(1'000), 9 + 20);
  EXPECT_DOUBLE_EQ(at(4'000), 6 + 20) << "re-estimated as the job runs, not frozen until it ends";
}

TEST(Eta, AJobPastItsExpectedTimeKeepsTheEstimateMoving) {
  // A compiled job takes longer than the run's compiled jobs did: taken to run half as long again.
  EXPECT_DOUBLE_EQ(*seconds_left({mode(Mode::kDefault, 0, 1, 30'000, {40'000})}), 20);
  EXPECT_DOUBLE_EQ(*seconds_left({mode(Mode::kDefault, 0, 1, 30'000, {60'000})}), 30);
}

TEST(Eta, ACompiledModeWithoutTimesOfItsOwnTakesTheRunsCompiledTimesNotEagers) {
  const std::vector<ModeTimes> times = {
      mode(Mode::kEager, 0, 4, 4 * 2'000),     // eager: 2 s a job
      mode(Mode::kDefault, 0, 2, 2 * 60'000),  // compiled (default): 60 s a job, compile included
      mode(Mode::kMaxAutotune, 3, 0, 0, {}),   // not started yet
  };
  EXPECT_DOUBLE_EQ(*expected_ms(times, times[2]), 60'000);
  EXPECT_DOUBLE_EQ(*seconds_left(times), 3 * 60);
  // Its own times win once it has some.
  const std::vector<ModeTimes> own = {mode(Mode::kDefault, 0, 2, 2 * 60'000), mode(Mode::kMaxAutotune, 1, 1, 90'000)};
  EXPECT_DOUBLE_EQ(*expected_ms(own, own[1]), 90'000);
}

TEST(Eta, ByRuntimeFirstThenAnyRuntime) {
  const std::vector<ModeTimes> times = {
      mode(Mode::kDefault, 0, 1, 50'000, {}, Runtime::kPython),
      mode(Mode::kDefault, 0, 1, 10'000, {}, Runtime::kLibtorch, "other"),
      mode(Mode::kMaxAutotune, 1, 0, 0, {}, Runtime::kLibtorch),
  };
  EXPECT_DOUBLE_EQ(*expected_ms(times, times[2]), 10'000) << "the libtorch compiled jobs";
  const std::vector<ModeTimes> eager_only = {mode(Mode::kEager, 0, 2, 4'000), mode(Mode::kDefault, 1, 0, 0)};
  EXPECT_DOUBLE_EQ(*expected_ms(eager_only, eager_only[1]), 2'000) << "no compiled job finished: all jobs";
}

TEST(Eta, SharedByTheJobsRunningAtOnce) {
  // Eight queued 10 s jobs and two slots busy (each 5 s in): (8 x 10 + 2 x 5) / 2.
  EXPECT_DOUBLE_EQ(*seconds_left({mode(Mode::kEager, 8, 3, 30'000, {5'000, 5'000})}), 45);
}

TEST(Eta, NothingLeftIsZero) { EXPECT_DOUBLE_EQ(*seconds_left({mode(Mode::kEager, 0, 3, 30'000)}), 0); }

}  // namespace
}  // namespace benchfleet::rules
