// A report rendered (coordinator/report/render.h): Markdown, CSV and JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "coordinator/report/render.h"
#include "coordinator/rules/report.h"
#include "tests/unit/report_cases.h"

namespace benchfleet::rules {

// The renderers under test, over the rules' tables.
using report::render_csv;
using report::render_json;
using report::render_markdown;
using report::to_json;
namespace {

using nlohmann::json;
using namespace cases;  // NOLINT(google-build-using-namespace): the inputs of report_cases.h

TEST(Markdown, MatchesTheSeedsFormat) {
  const std::string expected =
      "# seeds (run 7, mean latency in ms)\n"
      "\n"
      "### A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager** | **stable - default** |"
      " **stable - default speedup** |\n"
      "|:---:|:---:|:---:|:---:|\n"
      "| Image Classification/ViT | 9.325 | 7.584 | 1.23x |\n"
      "| Object Detection/DETR | 34.619 | OOM | - |\n"
      "\n"
      "- Geomean speedup stable - default: 1.23x (1/2)\n"
      "- Pass rate stable - default: 0/2 (0%): 1 OOM, 1 not judged\n"
      "\n"
      "#### Compile time and memory, A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - default compile** | **stable - eager peak MB** | **stable - default peak MB** |"
      " **stable - default memory ratio** |\n"
      "|:---:|:---:|:---:|:---:|:---:|\n"
      "| Image Classification/ViT | - | - | - | - |\n"
      "| Object Detection/DETR | - | - | - | - |\n";
  EXPECT_EQ(render_markdown(build_report(small_case())), expected);
}

TEST(Markdown, WithoutSpeedupColumnsHasNoGeomeanOrPassRateList) {
  ReportInput in = small_case();
  in.matrix.modes = {Mode::kEager};
  in.run_name = "eager only";
  const std::string expected =
      "# eager only (run 7, mean latency in ms)\n"
      "\n"
      "### A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager** |\n"
      "|:---:|:---:|\n"
      "| Image Classification/ViT | 9.325 |\n"
      "| Object Detection/DETR | 34.619 |\n"
      "\n"
      "#### Compile time and memory, A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager peak MB** |\n"
      "|:---:|:---:|\n"
      "| Image Classification/ViT | - |\n"
      "| Object Detection/DETR | - |\n";
  EXPECT_EQ(render_markdown(build_report(in)), expected);
}

TEST(Markdown, ABatchAboveOneGetsAThroughputTable) {
  ReportInput in;
  in.run_id = 3;
  in.run_name = "batches";
  in.matrix.models = {kVit};
  in.matrix.batch_sizes = {1, 4};
  in.matrix.modes = {Mode::kEager};
  in.matrix.torch_builds = {"stable"};
  in.matrix.gpus = {"a100"};
  in.labels = {{kVit, "Image Classification/ViT"}};
  in.cells = {ok(job(kVit, 1, Mode::kEager), 10.0, 10.0), ok(job(kVit, 4, Mode::kEager), 20.0, 20.0)};
  const std::string md = render_markdown(build_report(in));
  EXPECT_EQ(md.find("Throughput (samples/s), A100 (batch size: 1)"), std::string::npos)
      << "at batch 1 it is 1000 / latency:\n"
      << md;
  EXPECT_NE(md.find("#### Throughput (samples/s), A100 (batch size: 4)\n\n"
                    "| **Task/Model** | **stable - eager** |\n"
                    "|:---:|:---:|\n"
                    "| Image Classification/ViT | 200 |\n"),
            std::string::npos)
      << "4 samples in 20 ms:\n"
      << md;
  in.cells.back() = verdict(job(kVit, 4, Mode::kEager), ResultStatus::kOom, "phase=warmup");
  EXPECT_EQ(render_markdown(build_report(in)).find("Throughput"), std::string::npos)
      << "no table for a batch where nothing has a latency";
}

TEST(Markdown, EscapesPipesAndNewlines) {
  ReportInput in = small_case();
  in.run_name = "a|b";
  in.labels[0].display_name = "Image|Classification\nViT";
  const std::string md = render_markdown(build_report(in));
  EXPECT_NE(md.find("# a\\|b (run 7"), std::string::npos);
  EXPECT_NE(md.find("| Image\\|Classification ViT | 9.325 |"), std::string::npos);
}

// Data in a cell cannot format, link or split the table.
TEST(Markdown, EscapesMarkupAndControlCharacters) {
  ReportInput in = small_case();
  in.run_name = "a\\|b *c* _d_ `e` [f](g) <h>";
  in.labels[0].display_name = std::string("x\0y\ty", 5);
  const std::string md = render_markdown(build_report(in));
  EXPECT_NE(md.find("# a\\\\\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\](g) \\<h\\> (run 7"), std::string::npos) << md;
  EXPECT_NE(md.find("| x\\\\x00y y | 9.325 |"), std::string::npos) << md;  // NUL shown, the tab a space
}

// Text an agent or operator wrote cannot drive a terminal that shows the report: escape
// sequences and bidirectional overrides arrive as visible escapes.
TEST(Markdown, TerminalControlsAndBidiOverridesAreShownNotActedOn) {
  ReportInput in = small_case();
  in.run_name = "r\x1b]0;title\a\x1b[2J";
  in.labels[0].display_name =
      "exe.\xe2\x80\xae"
      "txt";
  const std::string md = render_markdown(build_report(in));
  EXPECT_EQ(md.find('\x1b'), std::string::npos) << md;
  EXPECT_EQ(md.find("\xe2\x80\xae"), std::string::npos) << md;
  EXPECT_NE(md.find("# r\\\\x1b\\]0;title\\\\x07\\\\x1b\\[2J (run 7"), std::string::npos) << md;
  EXPECT_NE(md.find("| exe.\\\\u{202e}txt | 9.325 |"), std::string::npos) << md;
}

// A ratio that overflows is no speedup ("infx"), and the geomean does not
// count it.
TEST(Report, AnOverflowingSpeedupIsUnavailable) {
  ReportInput in = seeds_like();
  in.matrix.batch_sizes = {1};
  in.cells = {ok(job(kVit, 1, Mode::kEager), 1.7e308, 1.7e308), ok(job(kVit, 1, Mode::kDefault), 1e-3, 1e-3)};
  const Report r = build_report(in);
  const std::string md = render_markdown(r);
  EXPECT_EQ(md.find("infx"), std::string::npos) << md;
  EXPECT_NE(md.find("(0/"), std::string::npos) << md;
}

TEST(Csv, HeaderRowsAndQuoting) {
  ReportInput in = small_case();
  in.labels[0].display_name = "Classification, \"fast\"";
  const std::string csv = render_csv(build_report(in));
  EXPECT_EQ(csv.rfind("gpu,batch,dtype,task_model,model_id,column,build,runtime,mode,kind,value,status,"
                      "text,accuracy,flags,compile_ms,compile_cache,peak_memory_mb,samples_per_s,stat,ci_low_ms,"
                      "ci_high_ms,change\r\n",
                      0),
            0u);
  EXPECT_NE(
      csv.find("a100,1,float32,\"Classification, \"\"fast\"\"\",google/vit-base-patch16-224,"
               "stable - eager,stable,libtorch,eager,latency_ms,9.325,ok,9.325,,,,,,107.23860589812334,mean,9.325,"
               "9.325,\r\n"),
      std::string::npos);
  EXPECT_NE(csv.find("a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,stable - default,"
                     "stable,libtorch,default,latency_ms,,oom,OOM,,,,,,,mean,,,\r\n"),
            std::string::npos);
  EXPECT_NE(csv.find("a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,"
                     "stable - default speedup,stable,libtorch,default,speedup,,unavailable,-,,,,,,,mean,,,\r\n"),
            std::string::npos);
  EXPECT_NE(
      csv.find("a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,"
               "stable - default memory ratio,stable,libtorch,default,memory_ratio,,unavailable,-,,,,,,,mean,,,\r\n"),
      std::string::npos);
  // header + 2 models x 7 columns (eager, default, speedup, compile, 2 x memory, memory ratio)
  std::size_t lines = 0;
  for (std::size_t p = csv.find("\r\n"); p != std::string::npos; p = csv.find("\r\n", p + 2)) {
    ++lines;
  }
  EXPECT_EQ(lines, 15u);
}

// A spreadsheet opening the CSV runs no formula and no terminal escape from stored text; numbers
// (negative ones included) and the empty cell's "-" are left as they are.
TEST(Csv, FormulasAreKeptAsTextAndControlsEscaped) {
  ReportInput in = small_case();
  in.labels[0].display_name = "=HYPERLINK(\"http://x\")";
  in.labels[1].display_name = "@SUM(A1)\x1b[41m";
  const std::string csv = render_csv(build_report(in));
  EXPECT_NE(csv.find(",\"'=HYPERLINK(\"\"http://x\"\")\",google/vit-base-patch16-224,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",'@SUM(A1)\\x1b[41m,facebook/detr-resnet-50,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find('\x1b'), std::string::npos) << csv;
  EXPECT_NE(csv.find(",unavailable,-,"), std::string::npos) << csv;
}

TEST(Json, SelfDescribingShape) {
  ReportInput in = small_case();
  in.run_id = 42;
  json j = to_json(build_report(in));
  EXPECT_EQ(j["run_id"], 42);
  EXPECT_EQ(j["run_name"], "seeds");
  EXPECT_EQ(j["stat"], "mean");
  EXPECT_EQ(j["exclude_flagged"], false);
  ASSERT_EQ(j["tables"].size(), 1u);
  const json& t = j["tables"][0];
  EXPECT_EQ(t["gpu"], "a100");
  EXPECT_EQ(t["gpu_label"], "A100");
  EXPECT_EQ(t["batch"], 1);
  EXPECT_EQ(t["dtype"], "float32");
  EXPECT_EQ(t["title"], "A100 (batch size: 1)");
  ASSERT_EQ(t["columns"].size(), 7u);
  EXPECT_EQ(t["columns"][0], (json{{"key", "latency/stable/libtorch/eager"},
                                   {"header", "stable - eager"},
                                   {"kind", "latency_ms"},
                                   {"build", "stable"},
                                   {"runtime", "libtorch"},
                                   {"mode", "eager"},
                                   {"torch_versions", json::array()},
                                   {"fingerprints", json::array()}}));
  EXPECT_EQ(t["columns"][2]["kind"], "speedup");
  EXPECT_EQ(t["columns"][2]["mode"], "default");
  EXPECT_EQ(t["columns"][3]["kind"], "compile_ms");
  EXPECT_EQ(t["columns"][3]["key"], "compile/stable/libtorch/default");
  EXPECT_EQ(t["columns"][4]["kind"], "peak_memory_mb");
  EXPECT_EQ(t["columns"][4]["key"], "memory/stable/libtorch/eager");
  EXPECT_EQ(t["columns"][6]["kind"], "memory_ratio");
  EXPECT_EQ(t["columns"][6]["key"], "memory_ratio/stable/libtorch/default");

  const json& vit = t["rows"][0];
  EXPECT_EQ(vit["model"], kVit);
  EXPECT_EQ(vit["label"], "Image Classification/ViT");
  ASSERT_EQ(vit["cells"].size(), 7u);
  const json& eager = vit["cells"][0];
  for (const char* key : {"text",
                          "status",
                          "value",
                          "value_ms",
                          "ci_low_ms",
                          "ci_high_ms",
                          "throughput_per_s",
                          "detail",
                          "result_ids",
                          "n",
                          "repetitions",
                          "accuracy",
                          "flags",
                          "compile_ms",
                          "compile_cache",
                          "peak_memory_bytes",
                          "recompiles",
                          "change",
                          "run_to_run_spread",
                          "run_to_run_cv"}) {
    EXPECT_TRUE(eager.contains(key)) << key;
  }
  EXPECT_EQ(eager.size(), 20u);
  EXPECT_TRUE(eager["change"].is_null()) << "a latency cell has no verdict";
  EXPECT_TRUE(eager["run_to_run_spread"].is_null()) << "one repetition: no spread";
  EXPECT_NEAR(eager["throughput_per_s"].get<double>(), 1000 / 9.325, 1e-9) << "batch 1: one sample per call";
  EXPECT_TRUE(vit["cells"][2]["throughput_per_s"].is_null()) << "a speedup has none";
  EXPECT_TRUE(eager["accuracy"].is_null());
  EXPECT_EQ(eager["flags"], json::array());
  EXPECT_TRUE(eager["compile_ms"].is_null());
  EXPECT_TRUE(eager["compile_cache"].is_null());
  EXPECT_TRUE(eager["peak_memory_bytes"].is_null());
  EXPECT_TRUE(eager["recompiles"].is_null());
  EXPECT_EQ(eager["text"], "9.325");
  EXPECT_EQ(eager["status"], "ok");
  EXPECT_DOUBLE_EQ(eager["value_ms"].get<double>(), 9.325);
  EXPECT_DOUBLE_EQ(eager["ci_low_ms"].get<double>(), 9.325);  // the mean's CI: no spread in this input
  EXPECT_TRUE(eager["result_ids"].is_array());
  EXPECT_EQ(eager["n"], 1);
  EXPECT_EQ(eager["repetitions"][0]["status"], "ok");
  EXPECT_EQ(eager["repetitions"][0]["repetition"], 0);

  const json& speedup = vit["cells"][2];
  EXPECT_TRUE(speedup["value_ms"].is_null());
  EXPECT_TRUE(speedup["ci_low_ms"].is_null());
  EXPECT_NEAR(speedup["value"].get<double>(), 9.325 / 7.584, 1e-12);
  EXPECT_TRUE(speedup["repetitions"].empty());
  EXPECT_EQ(speedup["change"], "faster") << "23% apart, beyond a GPU's 5% floor";

  const json& oom = t["rows"][1]["cells"][1];
  EXPECT_EQ(oom["status"], "oom");
  EXPECT_TRUE(oom["value"].is_null());
  EXPECT_TRUE(oom["value_ms"].is_null());
  EXPECT_EQ(oom["detail"], "phase=compile");

  ASSERT_EQ(t["geomeans"].size(), 1u);
  EXPECT_EQ(t["geomeans"][0]["column"], "speedup/stable/libtorch/default");
  EXPECT_EQ(t["geomeans"][0]["header"], "stable - default speedup");
  EXPECT_EQ(t["geomeans"][0]["covered"], 1);
  EXPECT_EQ(t["geomeans"][0]["total"], 2);
  EXPECT_EQ(t["geomeans"][0]["text"], "Geomean speedup stable - default: 1.23x (1/2)");
  EXPECT_NEAR(t["geomeans"][0]["value"].get<double>(), 9.325 / 7.584, 1e-12);
  EXPECT_EQ(t["geomeans"][0]["excluded_inaccurate"], 0);
  EXPECT_EQ(t["geomeans"][0]["excluded_flagged"], 0);
  EXPECT_EQ(t["geomeans"][0].size(), 8u);
  EXPECT_EQ(t["pass_rates"], json::array({{{"column", "latency/stable/libtorch/default"},
                                           {"header", "stable - default"},
                                           {"passed", 0},
                                           {"attempted", 2},
                                           {"oom", 1},
                                           {"errors", 0},
                                           {"wrong", 0},
                                           {"unjudged", 1},
                                           {"unsupported", 0},
                                           {"text", "Pass rate stable - default: 0/2 (0%): 1 OOM, 1 not judged"}}}));
}

// render_json writes its text directly: what it writes must read back as the values
// it was given, whatever the strings hold.
TEST(ReportJson, StringsAreEscapedAndNumbersReadBackExactly) {
  Report r;
  r.run_id = 42;
  r.run_name = "quote \" backslash \\ tab \t newline \n bell \x07 é";
  Table t;
  t.gpu = "a100";
  t.gpu_label = "A100";
  t.batch = 16;
  t.title = "A100 (batch size: 16)";
  Column latency;
  latency.key = "latency/stable/libtorch/eager";
  latency.header = "stable - eager";
  latency.torch_versions = {"2.6.0"};
  Column speedup = latency;
  speedup.kind = ColumnKind::kSpeedup;
  speedup.key = "speedup/stable/libtorch/default";
  t.columns = {latency, speedup};
  Cell a;
  a.text = "9.325";
  a.status = "ok";
  a.value = 9.324999999999999;
  a.ci_low_ms = 1e-7;
  a.ci_high_ms = 1e300;
  a.detail = std::string("invalid utf-8: \xff\xfe end");
  a.result_ids = {7, 9};
  a.n = 2;
  a.repetitions = {{1, "ok", 3.0, "", 7}, {2, "oom", std::nullopt, "phase=warmup", 9}};
  Cell b;
  b.text = "1.23x";
  b.status = "ok";
  b.value = 1.0;
  t.rows = {{"google/vit-base-patch16-224", "ViT", {a, b}}};
  t.geomeans = {{speedup.key, "stable - default speedup", std::nullopt, 0, 1, "Geomean: -"}};
  r.tables = {t};

  const std::string text = render_json(r);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_EQ(j["run_id"], 42);
  EXPECT_EQ(j["run_name"], r.run_name);
  EXPECT_EQ(j["stat"], "median");  // the default statistic
  const auto& cell = j["tables"][0]["rows"][0]["cells"][0];
  EXPECT_EQ(cell["value"].get<double>(), 9.324999999999999);
  EXPECT_EQ(cell["value_ms"].get<double>(), 9.324999999999999);
  EXPECT_EQ(cell["ci_low_ms"].get<double>(), 1e-7);
  EXPECT_EQ(cell["ci_high_ms"].get<double>(), 1e300);
  EXPECT_EQ(cell["detail"], "invalid utf-8: \xEF\xBF\xBD\xEF\xBF\xBD end") << "replaced, as json_response does";
  EXPECT_EQ(cell["result_ids"], nlohmann::json({7, 9}));
  EXPECT_EQ(cell["repetitions"][0]["value_ms"].get<double>(), 3.0);
  EXPECT_TRUE(cell["repetitions"][0]["value_ms"].is_number_float()) << "doubles stay doubles: 3.0, not 3";
  EXPECT_TRUE(cell["repetitions"][1]["value_ms"].is_null());
  const auto& speedup_cell = j["tables"][0]["rows"][0]["cells"][1];
  EXPECT_EQ(speedup_cell["value"].get<double>(), 1.0);
  EXPECT_TRUE(speedup_cell["value_ms"].is_null()) << "speedup cells have no latency";
  EXPECT_TRUE(j["tables"][0]["geomeans"][0]["value"].is_null());
  EXPECT_EQ(j["tables"][0]["columns"][1]["kind"], "speedup");
  EXPECT_EQ(j, to_json(r));
}

TEST(ReportJson, NonFiniteNumbersAreNull) {
  Report r;
  Table t;
  t.columns = {Column{}};
  Cell c;
  c.value = std::numeric_limits<double>::infinity();
  c.ci_low_ms = std::numeric_limits<double>::quiet_NaN();
  t.rows = {{"m", "M", {c}}};
  r.tables = {t};
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_TRUE(j["tables"][0]["rows"][0]["cells"][0]["value"].is_null());
  EXPECT_TRUE(j["tables"][0]["rows"][0]["cells"][0]["ci_low_ms"].is_null());
}

}  // namespace
}  // namespace benchfleet::rules
