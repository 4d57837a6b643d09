// The change rule (rules/change_rule.h) and the comparison of two reports (rules/compare.h), with
// its renderers: run-to-run noise decides, an A/A is said, cells without a counterpart are counted.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "coordinator/report/render.h"
#include "coordinator/rules/change_rule.h"
#include "coordinator/rules/compare.h"
#include "report_cases.h"

namespace benchfleet {
namespace {

using rules::ChangeSide;
using rules::judge_change;

// One process's statistic with a tight within-run CI (+/-1%), as this VM's processes have.
ChangeSide one_process(double ms) { return {ms, Interval{ms * 0.99, ms * 1.01}, {ms}}; }

ChangeSide processes(const std::vector<double>& ms) {
  ChangeSide s;
  double sum = 0, lo = 1e300, hi = 0;
  for (double v : ms) {
    sum += v;
    lo = std::min(lo, v * 0.99);
    hi = std::max(hi, v * 1.01);
  }
  s.value_ms = sum / static_cast<double>(ms.size());
  s.ci = Interval{lo, hi};  // widened across repetitions, as the report does
  s.per_process_ms = ms;
  return s;
}

TEST(ChangeRule, TheFloorsAreTheSharedRulesAndTheCpuOneIsAboveThisVmsSpread) {
  EXPECT_GT(rules::noise_floor("cpu"), 0.67);  // one process a cell moved up to 67% here
  EXPECT_GT(rules::noise_floor("cuda"), 0);
  EXPECT_LT(rules::noise_floor("cuda"), rules::noise_floor("cpu"));
  EXPECT_EQ(rules::device_kind_of("CPU"), "cpu");
  EXPECT_EQ(rules::device_kind_of("h200"), "cuda");
}

TEST(ChangeRule, ApartCisWithinTheFloorAreNoChange) {
  // An A/A of this VM: 46.138 -> 31.075 ms of one build, CIs far apart: 1.48x, inside a 50% floor.
  auto v = judge_change(one_process(46.138), one_process(31.075), 0.5);
  EXPECT_EQ(v.verdict, "same");
  EXPECT_EQ(v.noise, "floor");
  EXPECT_NEAR(v.ratio, 1.4847, 1e-3);
  EXPECT_NE(v.why.find("within the run-to-run noise floor (50%)"), std::string::npos) << v.why;
  // Beyond it, both ways.
  EXPECT_EQ(judge_change(one_process(50), one_process(30), 0.5).verdict, "faster");
  EXPECT_EQ(judge_change(one_process(30), one_process(50), 0.5).verdict, "slower");
}

TEST(ChangeRule, OverlappingCisAreNoChangeWhateverTheRatio) {
  auto v = judge_change({10, Interval{5, 20}, {10}}, {30, Interval{19, 40}, {30}}, 0.05);
  EXPECT_EQ(v.verdict, "same");
  EXPECT_EQ(v.why, "the within-run confidence intervals overlap");
}

TEST(ChangeRule, WithoutACiOrAValueTheVerdictIsUnknown) {
  EXPECT_EQ(judge_change({10, std::nullopt, {}}, one_process(5), 0.1).verdict, "unknown");
  EXPECT_EQ(judge_change(one_process(0), one_process(5), 0.1).verdict, "unknown");
}

TEST(ChangeRule, RepetitionsMeasureTheNoiseAndFindATenPercentStep) {
  // Five fresh processes a side with a 2% spread: 10% slower is beyond their noise.
  const std::vector<double> a = {40.0, 40.8, 39.6, 40.4, 39.9};
  std::vector<double> b;
  for (double v : a) b.push_back(v * 1.10);
  b[0] *= 1.01;
  const auto v = judge_change(processes(a), processes(b), 0.5);
  EXPECT_EQ(v.noise, "repetitions");
  ASSERT_TRUE(v.ratio_ci);
  EXPECT_LT(v.ratio_ci->high, 1.0);
  EXPECT_EQ(v.verdict, "slower") << v.why;
  // The floor does not apply where the repetitions measured the noise: 10% is below 50%.
  EXPECT_LT(1 / v.ratio - 1, 0.35);
}

TEST(ChangeRule, RepetitionsAsSpreadAsThisVmsHideATenPercentStep) {
  // This VM's ResNet-18 processes (33-45 ms) against the same, 10% slower: no finding.
  const std::vector<double> a = {39.1, 33.2, 44.8, 42.4};
  std::vector<double> b = {45.5, 45.6, 45.5, 47.5};
  const auto v = judge_change(processes(a), processes(b), 0.5);
  EXPECT_EQ(v.noise, "repetitions");
  EXPECT_EQ(v.verdict, "same") << v.why;
  ASSERT_TRUE(v.ratio_ci);
  EXPECT_LT(v.ratio_ci->low, 1.0);
  EXPECT_GT(v.ratio_ci->high, 1.0);
}

TEST(ChangeRule, OneSideRepeatedTheOtherNotFallsBackToTheFloor) {
  const auto v = judge_change(processes({40, 41, 39}), one_process(44), 0.35);
  EXPECT_EQ(v.noise, "floor");
  EXPECT_EQ(v.verdict, "same");
}

// Simulated A/As at this VM's measured spread (log sd 0.09 per process): one process a side, the
// CPU floor calls well under 1% of them a change; with repetitions the false positives stay near
// the interval's 5%, and a real step is found: 20% with five a side, 10% with twelve, mostly.
TEST(ChangeRule, SimulatedAaFalsePositivesAndDetection) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.09);
  const double floor = rules::noise_floor("cpu");
  int single_fp = 0, rep_fp = 0, found_20 = 0, found_10 = 0;
  constexpr int kTrials = 2000;
  const auto draw = [&](double scale) { return 40 * scale * std::exp(noise(rng)); };
  const auto draws = [&](int n, double scale) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(draw(scale));
    return v;
  };
  for (int t = 0; t < kTrials; ++t) {
    single_fp += judge_change(one_process(draw(1)), one_process(draw(1)), floor).verdict != "same";
    const auto a = draws(5, 1);
    rep_fp += judge_change(processes(a), processes(draws(5, 1)), floor).verdict != "same";
    found_20 += judge_change(processes(a), processes(draws(5, 1.2)), floor).verdict == "slower";
    found_10 += judge_change(processes(draws(12, 1)), processes(draws(12, 1.1)), floor).verdict == "slower";
  }
  EXPECT_LT(single_fp, kTrials / 100);
  EXPECT_LT(rep_fp, kTrials * 7 / 100);
  EXPECT_GT(found_20, kTrials * 70 / 100);
  EXPECT_GT(found_10, kTrials * 60 / 100);
}

// Welch's p agrees with its interval: an interval that excludes 1 has p below 0.05.
TEST(ChangeRule, ThePValueAgreesWithTheInterval) {
  const auto found = judge_change(processes({40.0, 40.8, 39.6, 40.4}), processes({44.0, 44.9, 43.6, 44.4}), 0.5);
  ASSERT_TRUE(found.p);
  EXPECT_LT(*found.p, 0.05);
  EXPECT_NE(found.why.find("p < 0.001"), std::string::npos) << found.why;
  const auto hidden = judge_change(processes({39.1, 33.2, 44.8, 42.4}), processes({45.5, 45.6, 45.5, 47.5}), 0.5);
  ASSERT_TRUE(hidden.p);
  EXPECT_GT(*hidden.p, 0.05);
  EXPECT_FALSE(judge_change(one_process(40), one_process(44), 0.5).p);  // the floor's: no test
}

std::vector<rules::ChangeVerdict*> pointers(std::vector<rules::ChangeVerdict>& verdicts) {
  std::vector<rules::ChangeVerdict*> out;
  for (auto& v : verdicts) out.push_back(&v);
  return out;
}

rules::ChangeVerdict tested(double p, const std::string& verdict) {
  rules::ChangeVerdict v;
  v.verdict = verdict;
  v.noise = "repetitions";
  v.p = p;
  v.why = "A/B 0.90: beyond the run-to-run noise";
  return v;
}

TEST(ChangeRule, FalseDiscoveryControlStepsUp) {
  // Four tests at 5%: thresholds 0.0125, 0.025, 0.0375, 0.05. The largest k with p_(k) <= k/4 *
  // 0.05 is 3 (0.03 <= 0.0375): the three smallest stand, the fourth (0.2) does not.
  std::vector<rules::ChangeVerdict> v = {tested(0.03, "slower"), tested(0.001, "slower"), tested(0.2, "same"),
                                         tested(0.02, "faster")};
  rules::control_false_discoveries(pointers(v));
  EXPECT_EQ(v[0].verdict, "slower");
  EXPECT_EQ(v[1].verdict, "slower");
  EXPECT_EQ(v[3].verdict, "faster");
  EXPECT_EQ(v[2].verdict, "same");
  // One change at p = 0.04 among 24 unchanged cells is what an A/A makes: not a finding.
  std::vector<rules::ChangeVerdict> aa(24, tested(0.6, "same"));
  aa[5] = tested(0.04, "slower");
  rules::control_false_discoveries(pointers(aa));
  EXPECT_EQ(aa[5].verdict, "same");
  EXPECT_NE(aa[5].why.find("within the run-to-run noise, as one of 24 cells judged by repetitions"), std::string::npos)
      << aa[5].why;
  EXPECT_EQ(aa[5].why.find("beyond"), std::string::npos) << aa[5].why;
  // A floor verdict carries no p and is left alone; one test alone keeps its own 95% rule.
  std::vector<rules::ChangeVerdict> mixed = {tested(0.04, "slower"), rules::ChangeVerdict{}};
  mixed[1].verdict = "faster";
  rules::control_false_discoveries(pointers(mixed));
  EXPECT_EQ(mixed[0].verdict, "slower");
  EXPECT_EQ(mixed[1].verdict, "faster");
}

// Simulated comparisons of 24 cells with 4 repetitions a side at a log sd of 0.03 per process:
// an A/A calls a cell a change in about 5% of comparisons (not 5% of cells), and a build 10%
// slower in every cell is found in most cells.
TEST(ChangeRule, SimulatedComparisonsOfManyCellsHoldTheFalseDiscoveryRate) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 0.03);
  const double floor = rules::noise_floor("cpu");
  const auto draws = [&](int n, double scale) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(40 * scale * std::exp(noise(rng)));
    return v;
  };
  constexpr int kTrials = 400, kCells = 24;
  int aa_with_any = 0, unadjusted_with_any = 0, found = 0;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<rules::ChangeVerdict> aa, slow;
    for (int c = 0; c < kCells; ++c) {
      aa.push_back(judge_change(processes(draws(4, 1)), processes(draws(4, 1)), floor));
      slow.push_back(judge_change(processes(draws(4, 1)), processes(draws(4, 1.1)), floor));
    }
    bool any = false;
    for (const auto& v : aa) any = any || v.verdict != "same";
    unadjusted_with_any += any;
    rules::control_false_discoveries(pointers(aa));
    rules::control_false_discoveries(pointers(slow));
    any = false;
    for (const auto& v : aa) any = any || v.verdict != "same";
    aa_with_any += any;
    for (const auto& v : slow) found += v.verdict == "slower";
  }
  EXPECT_GT(unadjusted_with_any, kTrials * 50 / 100);  // each cell's own 95%: most A/As find something
  EXPECT_LT(aa_with_any, kTrials * 9 / 100);
  EXPECT_GT(found, kTrials * kCells * 80 / 100);
}

using rules::cases::job;
using rules::cases::ok;

rules::ReportInput run_of(std::int64_t id, const std::vector<double>& resnet_ms, double squeezenet_ms,
                          const std::string& torch = "2.14.1", bool with_b4 = false) {
  rules::ReportInput in;
  in.run_id = id;
  in.run_name = "aa";
  in.matrix.name = "aa";
  in.matrix.models = {"torchvision/resnet18", "torchvision/squeezenet1_1"};
  in.matrix.batch_sizes = with_b4 ? std::vector<int>{1, 4} : std::vector<int>{1};
  in.matrix.modes = {Mode::kEager};
  in.matrix.torch_builds = {"unstable"};
  in.matrix.gpus = {"cpu"};
  in.matrix.runtimes = {Runtime::kPython};
  in.matrix.repetitions = static_cast<int>(resnet_ms.size());
  in.stat = rules::Stat::kMedian;
  in.labels = {{"torchvision/resnet18", "ResNet-18"}, {"torchvision/squeezenet1_1", "SqueezeNet 1.1"}};
  const std::string fp = R"({"cpu_model":"AMD EPYC","cpu_threads":2,"high_load":false})";
  for (std::size_t r = 0; r < resnet_ms.size(); ++r) {
    auto c = ok(job("torchvision/resnet18", 1, Mode::kEager, "cpu", "unstable", Runtime::kPython, static_cast<int>(r)),
                resnet_ms[r], resnet_ms[r], 10 + static_cast<std::int64_t>(r), torch);
    c.fingerprint = fp;
    in.cells.push_back(c);
  }
  auto s = ok(job("torchvision/squeezenet1_1", 1, Mode::kEager, "cpu", "unstable", Runtime::kPython), squeezenet_ms,
              squeezenet_ms, 20, torch);
  s.fingerprint = fp;
  in.cells.push_back(s);
  if (with_b4) {
    auto c = ok(job("torchvision/resnet18", 4, Mode::kEager, "cpu", "unstable", Runtime::kPython), 120, 120, 30, torch);
    c.fingerprint = fp;
    in.cells.push_back(c);
  }
  return in;
}

TEST(Compare, AnAaOfOneBuildSaysSoAndCallsTheIssuesRatioNoChange) {
  const auto ra = rules::build_report(run_of(1, {46.138}, 5.2));
  const auto rb = rules::build_report(run_of(4, {31.075}, 4.6));
  const auto c = rules::compare_reports({&ra, "unstable"}, {&rb, "unstable"});
  ASSERT_EQ(c.cells.size(), 2u);
  EXPECT_TRUE(c.aa) << c.aa_text;
  EXPECT_NE(c.aa_text.find("torch 2.14.1"), std::string::npos);
  EXPECT_EQ(c.expected, 2);
  for (const auto& x : c.cells) EXPECT_EQ(x.change.verdict, "same") << x.label << ": " << x.change.why;
  EXPECT_EQ(c.cells[0].change.noise, "floor");
  // Other torch versions: not an A/A.
  const auto rc = rules::build_report(run_of(5, {31.075}, 4.6, "2.6.0"));
  EXPECT_FALSE(rules::compare_reports({&ra, "unstable"}, {&rc, "unstable"}).aa);
}

TEST(Compare, RepetitionsDecideWhereBothSidesHaveThem) {
  const auto ra = rules::build_report(run_of(1, {40.0, 40.5, 39.8, 40.2}, 5));
  const auto rb = rules::build_report(run_of(2, {44.1, 44.6, 43.9, 44.3}, 5));
  const auto c = rules::compare_reports({&ra, "unstable"}, {&rb, "unstable"});
  const auto& resnet = c.cells.at(0);
  EXPECT_EQ(resnet.label, "ResNet-18");
  EXPECT_EQ(resnet.a_n, 4);
  EXPECT_EQ(resnet.change.noise, "repetitions");
  EXPECT_EQ(resnet.change.verdict, "slower") << resnet.change.why;
  ASSERT_EQ(rules::slowdowns(c, 5).size(), 1u);
  EXPECT_TRUE(rules::slowdowns(c, 15).empty());
}

// 3 models x 4 batch sizes, each cell `reps` fresh processes drawn at this VM's spread (a log sd
// of 0.12 a process: 6 processes span about 35%), `scale` times a base latency.
rules::ReportInput noisy_run(std::int64_t id, double scale, int reps, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 0.12);
  rules::ReportInput in;
  in.run_id = id;
  in.run_name = "noisy";
  in.matrix.name = "noisy";
  in.matrix.models = {"torchvision/resnet18", "torchvision/squeezenet1_1", "torchvision/mobilenet_v3_small"};
  in.matrix.batch_sizes = {1, 2, 4, 8};
  in.matrix.modes = {Mode::kEager};
  in.matrix.torch_builds = {"unstable"};
  in.matrix.gpus = {"cpu"};
  in.matrix.runtimes = {Runtime::kPython};
  in.matrix.repetitions = reps;
  in.stat = rules::Stat::kMedian;
  std::int64_t result_id = 1;
  for (const auto& model : in.matrix.models) {
    for (int batch : in.matrix.batch_sizes) {
      for (int r = 0; r < reps; ++r) {
        const double ms = 10.0 * batch * scale * std::exp(noise(rng));
        auto c =
            ok(job(model, batch, Mode::kEager, "cpu", "unstable", Runtime::kPython, r), ms, ms, result_id++, "2.14.1");
        c.fingerprint = R"({"cpu_model":"AMD EPYC","cpu_threads":2,"high_load":false})";
        in.cells.push_back(c);
      }
    }
  }
  return in;
}

// A change every cell shares is found over the cells though no cell's own noise lets it be (the
// A/A benchmark here: 6 processes a cell, a 10% slower build, 0 of 24 cells found one by one);
// A/As are called a change overall rarely; without repetitions there is no overall verdict.
TEST(Compare, ABuildSlowerInEveryCellIsFoundOverallWhereNoCellIsFoundAlone) {
  std::mt19937_64 rng(3);
  constexpr int kTrials = 100;
  int found = 0, aa_called = 0, cells_found = 0;
  for (int t = 0; t < kTrials; ++t) {
    const auto a = rules::build_report(noisy_run(1, 1.0, 6, rng));
    const auto slow = rules::build_report(noisy_run(2, 1.1, 6, rng));
    const auto same = rules::build_report(noisy_run(3, 1.0, 6, rng));
    const auto c = rules::compare_reports({&a, "unstable"}, {&slow, "unstable"});
    ASSERT_TRUE(c.overall.has_value());
    EXPECT_EQ(c.overall->cells, 12);
    found += c.overall->verdict == "slower";
    cells_found += static_cast<int>(rules::slowdowns(c, 0).size());
    aa_called += rules::compare_reports({&a, "unstable"}, {&same, "unstable"}).overall->verdict != "same";
  }
  EXPECT_GT(found, kTrials * 85 / 100);
  EXPECT_LT(aa_called, kTrials * 8 / 100);
  EXPECT_LT(cells_found, kTrials * 12 / 10) << "cell by cell, about one in ten comparisons finds a cell";
  // The gate reads it: 20% slower everywhere is beyond 5%, not beyond 50%.
  const auto base = rules::build_report(noisy_run(6, 1.0, 6, rng));
  const auto slower = rules::build_report(noisy_run(7, 1.2, 6, rng));
  const auto gate = rules::compare_reports({&base, "unstable"}, {&slower, "unstable"});
  EXPECT_TRUE(rules::overall_slowdown(gate, 5)) << gate.overall->why;
  EXPECT_FALSE(rules::overall_slowdown(gate, 50));
  // One process a cell: no overall verdict (two runs' machine state moves every cell together).
  const auto a1 = rules::build_report(noisy_run(4, 1.0, 1, rng));
  const auto b1 = rules::build_report(noisy_run(5, 1.1, 1, rng));
  EXPECT_FALSE(rules::compare_reports({&a1, "unstable"}, {&b1, "unstable"}).overall.has_value());
}

TEST(Compare, CellsWithoutACounterpartAreCountedAndSaid) {
  const auto ra = rules::build_report(run_of(1, {40}, 5, "2.14.1", /*with_b4=*/true));
  const auto rb = rules::build_report(run_of(2, {40}, 5));
  const auto c = rules::compare_reports({&ra, "unstable"}, {&rb, "unstable"});
  EXPECT_EQ(c.expected, 3);
  EXPECT_EQ(c.cells.size(), 2u);
  ASSERT_EQ(c.uncompared.size(), 1u);
  EXPECT_EQ(c.uncompared[0].why, "B has no CPU (batch size: 4) table");
  // A build B does not have: nothing compared, each of A's cells said.
  const auto none = rules::compare_reports({&ra, "unstable"}, {&rb, "stable"});
  EXPECT_TRUE(none.cells.empty());
  EXPECT_EQ(none.expected, 3);
  EXPECT_EQ(none.uncompared.size(), 3u);
  EXPECT_FALSE(none.aa);
}

// The dashboard draws the comparison's tables as they come: a row per model of either side, each
// pair's ratio and the coordinator's verdict on it, and per column the geomean over every pair and
// over the unflagged ones, so that it computes nothing of its own.
TEST(Compare, TablesPairTheSidesWithTheVerdictsAndGeomeansTheDashboardDraws) {
  auto in_a = run_of(1, {40}, 5);
  auto in_b = run_of(2, {20}, 10, "2.6.0");
  in_b.cells.back().flags = {"high_cv"};  // B's SqueezeNet is noisy
  // A model only B measured comes after A's rows, its A side empty.
  in_b.matrix.models.push_back("torchvision/mobilenet_v3_small");
  in_b.labels.push_back({"torchvision/mobilenet_v3_small", "MobileNetV3 Small"});
  in_b.cells.push_back(ok(job("torchvision/mobilenet_v3_small", 1, Mode::kEager, "cpu", "unstable", Runtime::kPython),
                          3, 3, 40, "2.6.0"));
  const auto ra = rules::build_report(in_a);
  const auto rb = rules::build_report(in_b);
  const auto c = rules::compare_reports({&ra, "unstable"}, {&rb, "unstable"});
  ASSERT_EQ(c.tables.size(), 1u);
  const rules::PairedTable& t = c.tables[0];
  EXPECT_EQ(t.title, "CPU (batch size: 1)");
  EXPECT_EQ(t.gpu_label, "CPU");
  ASSERT_EQ(t.columns.size(), 1u);
  EXPECT_EQ(t.columns[0].text, "eager");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].label, "ResNet-18");
  EXPECT_EQ(t.rows[2].label, "MobileNetV3 Small");
  const rules::PairedCell& resnet = t.rows[0].cells.at(0);
  ASSERT_TRUE(resnet.ratio.has_value());
  EXPECT_DOUBLE_EQ(*resnet.ratio, 2.0);
  EXPECT_EQ(resnet.verdict, c.cells.at(0).change.verdict);
  EXPECT_EQ(resnet.why, c.cells.at(0).change.why);
  EXPECT_TRUE(resnet.flags.empty());
  const rules::PairedCell& squeeze = t.rows[1].cells.at(0);
  EXPECT_DOUBLE_EQ(squeeze.ratio.value_or(0), 0.5);
  EXPECT_EQ(squeeze.flags, std::vector<std::string>{"high_cv"});
  const rules::PairedCell& mobile = t.rows[2].cells.at(0);
  EXPECT_FALSE(mobile.a.has_value());
  ASSERT_TRUE(mobile.b.has_value());
  EXPECT_FALSE(mobile.ratio.has_value());
  EXPECT_EQ(mobile.verdict, "unavailable");
  // Every pair: sqrt(2 x 0.5) = 1; without the flagged one: 2.
  EXPECT_DOUBLE_EQ(t.columns[0].all.value.value_or(0), 1.0);
  EXPECT_EQ(t.columns[0].all.covered, 2);
  EXPECT_DOUBLE_EQ(t.columns[0].unflagged.value.value_or(0), 2.0);
  EXPECT_EQ(t.columns[0].unflagged.covered, 1);
  EXPECT_EQ(t.columns[0].flagged, 1);
  EXPECT_EQ(c.torch_a, std::vector<std::string>{"2.14.1"});
  EXPECT_EQ(c.torch_b, std::vector<std::string>{"2.6.0"});
  // In the JSON the API serves, the sides are report cells.
  const auto j = report::comparison_json(c);
  EXPECT_EQ(j["tables"][0]["rows"][0]["cells"][0]["a"]["status"], "ok");
  EXPECT_EQ(j["tables"][0]["rows"][0]["cells"][0]["a"]["result_ids"], nlohmann::json::array({10}));
  EXPECT_TRUE(j["tables"][0]["rows"][2]["cells"][0]["a"].is_null());
  EXPECT_EQ(j["tables"][0]["columns"][0]["geomean_unflagged"], 2.0);
}

TEST(Compare, RenderersNameTheStatisticTheNoiseAndTheCoverage) {
  const auto ra = rules::build_report(run_of(1, {46.138}, 5.2, "2.14.1", true));
  const auto rb = rules::build_report(run_of(4, {31.075}, 4.6));
  const auto c = rules::compare_reports({&ra, "unstable"}, {&rb, "unstable"});
  const std::string md = report::render_comparison_markdown(c);
  EXPECT_NE(md.find("(median latency in ms; A/B above 1: B is faster)"), std::string::npos) << md;
  EXPECT_NE(md.find("ℹ A/A: torch 2.14.1"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.48x | ≈ no significant change | floor 80% |"), std::string::npos) << md;
  EXPECT_NE(md.find("Compared 2 of A's 3 measured cells."), std::string::npos) << md;
  EXPECT_NE(md.find("Not compared:\n- CPU (batch size: 4) | ResNet-18 | eager: B has no CPU (batch size: 4) table"),
            std::string::npos)
      << md;
  const std::string csv = report::render_comparison_csv(c);
  EXPECT_EQ(
      csv.substr(0, csv.find("\r\n")),
      "table,model,column,stat,a_ms,b_ms,a_n,b_n,ratio,ratio_ci_low,ratio_ci_high,p,verdict,noise,noise_floor,flags");
  EXPECT_NE(csv.find("CPU (batch size: 1),ResNet-18,eager,median,46.138,31.075,1,1,1.4847,,,,same,floor,"),
            std::string::npos)
      << csv;
  const auto j = report::comparison_json(c);
  EXPECT_EQ(j["stat"], "median");
  EXPECT_EQ(j["expected"], 3);
  EXPECT_EQ(j["compared"], 2);
  EXPECT_TRUE(j["aa"].get<bool>());
  EXPECT_TRUE(j["cells"][0]["ratio_ci_low"].is_null());
  EXPECT_EQ(j["cells"][0]["verdict"], "same");
}

}  // namespace
}  // namespace benchfleet
