// benchfleet-worker: measures one job in this process and prints one result JSON.
//   benchfleet-worker --job job.json [--out result.json]
//   benchfleet-worker --capabilities
// The exit code mirrors the result's status (common/measurement.h: exit_code_for).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agent/worker/capabilities.h"
#include "agent/worker/measure.h"
#include "agent/worker/result_output.h"
#include "common/codecs.h"
#include "common/measurement.h"

namespace {

using namespace benchfleet;

Result<WorkerJob> read_job(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) return Error::invalid("", "cannot read the job file " + path);
    text << in.rdbuf();
  }
  auto json = parse_json(text.str(), 32);
  if (!json.ok()) return json.error();
  return decode<WorkerJob>(*json);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "benchfleet-worker: loads one model artifact, measures it as the job says (first call, warm-up,\n"
      "then timed iterations under the stopping rule) and prints exactly one result JSON.\n"
      "Progress goes to stderr. The exit code mirrors the status: 0 ok, 1 error, 3 oom,\n"
      "4 unsupported, 5 invalid (2: usage error)."};
  std::string job_path = "-";
  std::string out_path;
  bool capabilities = false;
  app.add_option("--job", job_path, "job JSON file, or - for stdin")->capture_default_str();
  app.add_option("--out", out_path, "write the result here (atomically, fsynced) instead of stdout");
  app.add_flag("--capabilities", capabilities, "print what this build can run (JSON) and exit");
  app.set_version_flag("--version", std::string("benchfleet-worker ") + BENCHFLEET_VERSION);
  CLI11_PARSE(app, argc, argv);

  const worker::Capabilities caps = worker::this_build();
  if (capabilities) {
    nlohmann::json out = {
        {"torch_version", caps.torch_version},
        {"aoti", caps.aoti},
        {"aoti_cuda_graphs", caps.aoti_cuda_graphs},
        {"cuda_compiled", caps.cuda_compiled},
        {"cuda_available", caps.cuda_available},
        {"modes", {{"cpu", worker::runnable_modes(caps, "cpu")}, {"cuda", worker::runnable_modes(caps, "cuda")}}}};
    std::cout << out.dump() << "\n";
    return 0;
  }

  const worker::ResultOutput output(out_path);
  JobResult result;
  auto job = read_job(job_path);
  if (!job.ok()) {
    result.status = ResultStatus::kError;
    result.error = "job: " + job.error().describe();
  } else {
    result = worker::run_job(
        *job, caps,
        [](std::string_view phase, std::size_t n, double s) {
          std::fprintf(stderr, "progress phase=%.*s iterations=%zu seconds=%.2f\n", static_cast<int>(phase.size()),
                       phase.data(), n, s);
        },
        &output);
  }
  if (!output.write({nlohmann::json(result).dump()})) {
    std::fprintf(stderr, "benchfleet-worker: cannot write the result to %s\n", output.describe().c_str());
    return 1;
  }
  return exit_code_for(result.status);
}
