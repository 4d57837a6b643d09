// The CLI's progress display and exit codes, from Run JSON as the coordinator sends it.
#include <gtest/gtest.h>

#include <string>

#include "cli/progress.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

json run_json(const std::string& state, int done, int total, json results, json jobs = json::object()) {
  json all_jobs = {{"queued", 0}, {"leased", 0}, {"running", 0}, {"done", done}, {"failed", 0}, {"cancelled", 0}};
  for (const auto& [k, v] : jobs.items()) all_jobs[k] = v;
  json all_results = {{"ok", 0},      {"oom", 0},   {"oom_implied", 0}, {"error", 0},
                      {"timeout", 0}, {"crash", 0}, {"unsupported", 0}, {"invalid", 0}};
  for (const auto& [k, v] : results.items()) all_results[k] = v;
  return {{"id", 7},
          {"name", "demo"},
          {"state", state},
          {"job_count", total},
          {"finished_jobs", done},
          {"jobs", all_jobs},
          {"results", all_results},
          {"extra_member", true}};
}

TEST(Progress, ParsesTheRunAndIgnoresUnknownMembers) {
  auto p = progress_from_json(run_json("running", 12, 36, {{"ok", 10}, {"oom", 2}}, {{"running", 1}}));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->finished_jobs, 12);
  EXPECT_EQ(p->results.at("oom"), 2);
  EXPECT_FALSE(p->ended());
  auto bad = progress_from_json(json{{"id", 1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "name");
}

TEST(Progress, BarShowsFractionCountsAndEta) {
  auto p = progress_from_json(run_json("running", 12, 36, {{"ok", 10}, {"oom", 2}}, {{"running", 1}, {"leased", 1}}))
               .value();
  const std::string bar = render_bar(p, 80.0, 120);
  EXPECT_NE(bar.find("run 7 ["), std::string::npos) << bar;
  EXPECT_NE(bar.find(" 12/36 33%"), std::string::npos) << bar;
  EXPECT_NE(bar.find("ok 10 · oom 2 · running 2"), std::string::npos) << bar;  // leased counts as running
  EXPECT_NE(bar.find("ETA 1m20s"), std::string::npos) << bar;
  // A third of the bar is filled.
  const auto open = bar.find('['), close = bar.find(']');
  const std::string cells = bar.substr(open + 1, close - open - 1);
  EXPECT_EQ(std::count(cells.begin(), cells.end(), '#') * 3, static_cast<long>(cells.size()));
  EXPECT_EQ(render_bar(p, std::nullopt, 120).find("ETA --") != std::string::npos, true);
  // Never wider than the terminal.
  EXPECT_LE(render_bar(p, 80.0, 40).size(), 40u);
  // The bar stays put while the counts after it grow: its brackets where they were.
  auto later = progress_from_json(run_json("running", 30, 36, {{"ok", 20}, {"oom", 5}, {"error", 3}, {"timeout", 2}},
                                           {{"running", 1}}))
                   .value();
  const std::string busier = render_bar(later, 5.0, 120);
  EXPECT_EQ(busier.find(']'), close) << bar << "\n" << busier;
}

TEST(Progress, PlainLineAndSummary) {
  auto p = progress_from_json(run_json("running", 3, 6, {{"ok", 3}})).value();
  EXPECT_EQ(render_plain(p, 30.0), "run 7 running: 3/6 jobs finished (ok 3); ETA 30s");
  auto done = progress_from_json(run_json("done", 6, 6, {{"ok", 5}, {"oom", 1}})).value();
  EXPECT_EQ(render_summary(done, 133), "run 7 done after 2m13s: 6/6 jobs (ok 5 · oom 1)");
}

TEST(Progress, TheCoordinatorsEtaIsTakenWhenItGivesOne) {
  EXPECT_DOUBLE_EQ(*coordinator_eta_s(nlohmann::json{{"eta_s", 42.5}}), 42.5);
  EXPECT_FALSE(coordinator_eta_s(nlohmann::json{{"eta_s", nullptr}}).has_value()) << "no basis yet";
  EXPECT_FALSE(coordinator_eta_s(nlohmann::json::object()).has_value()) << "none given";
  EXPECT_FALSE(coordinator_eta_s(nlohmann::json{{"eta_s", -1}}).has_value());
  EXPECT_FALSE(coordinator_eta_s(nlohmann::json{{"eta_s", "soon"}}).has_value());
}

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7620), "2h07m");
}

TEST(Progress, ExitCodes) {
  EXPECT_EQ(
      exit_code_for(progress_from_json(run_json("done", 6, 6, {{"ok", 4}, {"oom", 1}, {"unsupported", 1}})).value()),
      kExitOk);
  EXPECT_EQ(exit_code_for(progress_from_json(run_json("done", 6, 6, {{"ok", 5}, {"crash", 1}})).value()),
            kExitRunFailed);
  EXPECT_EQ(exit_code_for(progress_from_json(run_json("done", 6, 6, {{"ok", 5}}, {{"failed", 1}})).value()),
            kExitRunFailed);
  EXPECT_EQ(exit_code_for(progress_from_json(run_json("cancelled", 6, 6, {{"ok", 1}})).value()), kExitRunCancelled);
}

}  // namespace
}  // namespace benchfleet::cli
