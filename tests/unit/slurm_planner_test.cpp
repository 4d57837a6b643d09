// The Slurm launcher's decisions (slurm/planner.h): how many allocations, the rate limit, and a
// simulated cluster over many passes (never floods, stops when the queue is empty).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "slurm/planner.h"

namespace benchfleet::slurm {
namespace {

LauncherConfig two_classes(int max_a100 = 4, int max_cpu = 2, int per_minute = 4) {
  LauncherConfig c;
  c.max_submissions_per_minute = per_minute;
  ClassConfig a100;
  a100.gpu_class = "a100";
  a100.builds = {"stable", "nightly"};
  a100.max_allocations = max_a100;
  a100.agent_command = "agent";
  ClassConfig cpu;
  cpu.gpu_class = "cpu";
  cpu.max_allocations = max_cpu;
  cpu.agent_command = "agent";
  c.classes = {a100, cpu};
  return c;
}

TEST(SlurmPlanner, ParsesTheQueueSummary) {
  auto r = parse_queue_summary(
      R"({"cells": [{"gpu_class": "a100", "torch_build": "stable", "queued": 12, "active": 1},
                    {"gpu_class": "cpu", "torch_build": "debian12", "queued": 0, "active": 3}]})");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].gpu_class, "a100");
  EXPECT_EQ((*r)[0].queued, 12);
  EXPECT_EQ((*r)[1].active, 3);
  EXPECT_TRUE(parse_queue_summary(R"({"cells": []})").ok());
  EXPECT_EQ(parse_queue_summary("[]").error().field, "");
  EXPECT_EQ(parse_queue_summary(R"({"cell": []})").error().field, "cells");
  EXPECT_EQ(parse_queue_summary(R"({"cells": [{"gpu_class": "a", "torch_build": "b", "queued": -1, "active": 0}]})")
                .error()
                .field,
            "cells[0].queued");
  EXPECT_EQ(parse_queue_summary(R"({"cells": [{"gpu_class": 1, "torch_build": "b", "queued": 1, "active": 0}]})")
                .error()
                .field,
            "cells[0].gpu_class");
}

TEST(SlurmPlanner, CountsTheClassAndItsBuilds) {
  const auto config = two_classes();
  const std::vector<QueueCell> cells{
      {"a100", "nightly", 5, 0}, {"a100", "stable", 7, 2}, {"a100", "debian12", 100, 0},  // not a build of this class
      {"cpu", "debian12", 3, 0}, {"cpu", "trixie", 4, 0},  // cpu lists no builds: all count
      {"v100", "stable", 50, 0}};
  EXPECT_EQ(queued_for_class(config.classes[0], cells), 12);
  EXPECT_EQ(queued_for_class(config.classes[1], cells), 7);
}

TEST(SlurmPlanner, ParsesTheQueuedJobsByTimeout) {
  auto r = parse_queue_summary(
      R"({"cells": [{"gpu_class": "a100", "torch_build": "stable", "queued": 12, "active": 1,
                     "queued_by_timeout": [{"timeout_s": 600, "queued": 10}, {"timeout_s": 7200, "queued": 2}]}]})");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_TRUE((*r)[0].queued_by_timeout.has_value());
  EXPECT_EQ(*(*r)[0].queued_by_timeout, (std::vector<std::pair<int, std::int64_t>>{{600, 10}, {7200, 2}}));
  EXPECT_EQ(parse_queue_summary(R"({"cells": [{"gpu_class": "a", "torch_build": "b", "queued": 1, "active": 0,
                                               "queued_by_timeout": [{"timeout_s": 0, "queued": 1}]}]})")
                .error()
                .field,
            "cells[0].queued_by_timeout[0].timeout_s");
  EXPECT_EQ(parse_queue_summary(R"({"cells": [{"gpu_class": "a", "torch_build": "b", "queued": 1, "active": 0,
                                               "queued_by_timeout": {}}]})")
                .error()
                .field,
            "cells[0].queued_by_timeout");
}

// A job whose timeout_s (+ the agent's start and margins) does not fit in the class's time_limit
// is never started by an allocation's agent: it does not count, or allocations would start, give
// it back and end, over and over.
TEST(SlurmPlanner, LeavesOutJobsWhoseTimeoutDoesNotFitTheTimeLimit) {
  auto config = two_classes();
  ClassConfig& a100 = config.classes[0];
  a100.time_limit = "30:00";  // 1800 s
  QueueCell stable{"a100", "stable", 13, 0, std::vector<std::pair<int, std::int64_t>>{{600, 10}, {1740, 2}, {1741, 1}}};
  std::int64_t too_long = 0;
  EXPECT_EQ(queued_for_class(a100, {stable}, &too_long), 12);  // 1740 + 60 fits exactly
  EXPECT_EQ(too_long, 1);
  a100.time_limit = "10";  // 10 minutes: only the 600 s jobs' 660 s do not fit either
  too_long = 0;
  EXPECT_EQ(queued_for_class(a100, {stable}, &too_long), 0);
  EXPECT_EQ(too_long, 13);
  std::map<std::string, int> none;
  RateLimiter limiter(4);
  const auto decisions = plan_pass(config, {stable}, none, limiter, 0);
  EXPECT_EQ(decisions[0].wanted, 0);
  EXPECT_EQ(decisions[0].too_long, 13);
  EXPECT_EQ(limiter.taken(0), 0);  // nothing submitted for them
  a100.time_limit = "UNLIMITED";
  EXPECT_EQ(queued_for_class(a100, {stable}), 13);
  // A coordinator before queued_by_timeout: every queued job counts.
  a100.time_limit = "10";
  EXPECT_EQ(queued_for_class(a100, {QueueCell{"a100", "stable", 13, 0}}), 13);
}

TEST(SlurmPlanner, AllocationsToSubmit) {
  EXPECT_EQ(allocations_to_submit(4, 0, 0), 0);    // empty queue: nothing
  EXPECT_EQ(allocations_to_submit(4, 0, 3), 0);    // ... and never negative
  EXPECT_EQ(allocations_to_submit(4, 2, 0), 2);    // no more allocations than queued jobs
  EXPECT_EQ(allocations_to_submit(4, 100, 0), 4);  // at most max_allocations
  EXPECT_EQ(allocations_to_submit(4, 100, 3), 1);
  EXPECT_EQ(allocations_to_submit(4, 100, 4), 0);
  EXPECT_EQ(allocations_to_submit(4, 100, 6), 0);  // over (max lowered): none, none cancelled
  EXPECT_EQ(allocations_to_submit(4, 3, 2), 1);
}

TEST(SlurmRateLimiter, SlidingSixtySecondWindow) {
  RateLimiter limiter(2);
  const TimestampMs t0 = 1'000'000;
  EXPECT_TRUE(limiter.try_acquire(t0));
  EXPECT_TRUE(limiter.try_acquire(t0 + 30'000));
  EXPECT_FALSE(limiter.try_acquire(t0 + 59'999));
  EXPECT_EQ(limiter.taken(t0 + 59'999), 2);
  EXPECT_EQ(limiter.next_free(t0 + 59'999), t0 + 60'000);
  EXPECT_TRUE(limiter.try_acquire(t0 + 60'000));  // the first left the window
  EXPECT_FALSE(limiter.try_acquire(t0 + 89'999));
  EXPECT_EQ(limiter.next_free(t0 + 89'999), t0 + 90'000);
  EXPECT_TRUE(limiter.try_acquire(t0 + 90'000));
  EXPECT_EQ(limiter.next_free(t0 + 200'000), t0 + 200'000);
}

TEST(SlurmPlanner, PassTakesOneRateSlotPerSubmittingClass) {
  const auto config = two_classes(4, 2, 1);
  RateLimiter limiter(config.max_submissions_per_minute);
  const std::vector<QueueCell> cells{{"a100", "stable", 10, 0}, {"cpu", "debian12", 10, 0}};
  auto d = plan_pass(config, cells, {}, limiter, 0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].submit, 4);  // one sbatch (an array of 4)
  EXPECT_TRUE(d[1].rate_limited);
  EXPECT_EQ(d[1].wanted, 2);
  EXPECT_EQ(d[1].submit, 0);
  d = plan_pass(config, cells, {{"a100", 4}}, limiter, 60'000);
  EXPECT_EQ(d[0].wanted, 0);
  EXPECT_EQ(d[1].submit, 2);
  // Nothing wanted takes no slot.
  RateLimiter idle(1);
  d = plan_pass(config, {}, {}, idle, 0);
  EXPECT_EQ(d[0].submit + d[1].submit, 0);
  EXPECT_EQ(idle.taken(0), 0);
}

// A tiny model of Slurm: allocations pend, start when a node is free, and end (idle exit, time
// limit, scancel) at random. The launcher's decisions drive it for simulated hours.
struct Simulation {
  struct Allocation {
    std::string gpu_class;
    TimestampMs submitted = 0;
    TimestampMs started = -1;
    TimestampMs ends = -1;
  };
  std::vector<Allocation> live;
  std::mt19937 rng{21};

  std::map<std::string, int> active() const {
    std::map<std::string, int> a;
    for (const auto& x : live) ++a[x.gpu_class];
    return a;
  }
  void step(TimestampMs now, int nodes) {
    std::erase_if(live, [&](const Allocation& a) { return a.ends >= 0 && a.ends <= now; });
    int running = 0;
    for (const auto& a : live) running += a.started >= 0;
    for (auto& a : live) {
      if (a.started < 0 && running < nodes && now - a.submitted >= 5'000) {
        a.started = now;
        a.ends = now + std::uniform_int_distribution<TimestampMs>(10'000, 600'000)(rng);
        ++running;
      }
    }
  }
};

TEST(SlurmPlanner, NeverFloodsWithABigQueue) {
  const auto config = two_classes(/*max_a100=*/5, /*max_cpu=*/3, /*per_minute=*/4);
  RateLimiter limiter(config.max_submissions_per_minute);
  Simulation slurm;
  const std::vector<QueueCell> cells{{"a100", "stable", 100'000, 0}, {"cpu", "debian12", 100'000, 0}};
  std::vector<TimestampMs> sbatch_calls;
  int submitted = 0;
  const TimestampMs poll_ms = 1'000;  // far faster than poll_s allows: the limiter must hold
  for (TimestampMs now = 0; now < TimestampMs{6} * 3'600'000; now += poll_ms) {
    slurm.step(now, /*nodes=*/4);
    for (const auto& d : plan_pass(config, cells, slurm.active(), limiter, now)) {
      if (d.submit == 0) continue;
      sbatch_calls.push_back(now);
      for (int i = 0; i < d.submit; ++i) slurm.live.push_back({d.gpu_class, now});
      submitted += d.submit;
    }
    const auto active = slurm.active();
    ASSERT_LE(active.count("a100") ? active.at("a100") : 0, 5) << "at " << now;
    ASSERT_LE(active.count("cpu") ? active.at("cpu") : 0, 3) << "at " << now;
  }
  // In every 60 s window, at most 4 sbatch calls.
  for (std::size_t i = 0; i < sbatch_calls.size(); ++i) {
    std::size_t in_window = 0;
    for (std::size_t j = i; j < sbatch_calls.size() && sbatch_calls[j] < sbatch_calls[i] + 60'000; ++j) ++in_window;
    ASSERT_LE(in_window, 4u) << "window starting at " << sbatch_calls[i];
  }
  // It kept the cluster fed: allocations ended and were replaced many times.
  EXPECT_GT(submitted, 100);
  EXPECT_GT(sbatch_calls.size(), 50u);
}

TEST(SlurmPlanner, StopsWhenTheQueueIsEmpty) {
  const auto config = two_classes(4, 2, 4);
  RateLimiter limiter(config.max_submissions_per_minute);
  Simulation slurm;
  std::int64_t queued = 30;  // each started allocation takes one job a minute
  int calls_after_empty = 0;
  TimestampMs emptied = -1;
  for (TimestampMs now = 0; now < 3'600'000; now += 15'000) {
    slurm.step(now, 8);
    for (const auto& a : slurm.live) {
      if (a.started >= 0 && queued > 0 && (now - a.started) % 60'000 < 15'000) --queued;
    }
    if (queued == 0 && emptied < 0) emptied = now;
    const std::vector<QueueCell> cells{{"a100", "stable", queued, 0}};
    for (const auto& d : plan_pass(config, cells, slurm.active(), limiter, now)) {
      if (d.submit == 0) continue;
      EXPECT_NE(d.gpu_class, "cpu");  // nothing queued for cpu, ever
      if (emptied >= 0) ++calls_after_empty;
      for (int i = 0; i < d.submit; ++i) slurm.live.push_back({d.gpu_class, now});
    }
  }
  EXPECT_GE(emptied, 0);
  EXPECT_EQ(calls_after_empty, 0);
}

}  // namespace
}  // namespace benchfleet::slurm
