#include "agent/daemon/build_probe.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "agent/daemon/agent_codecs.h"
#include "agent/daemon/process.h"

namespace benchfleet::agent {
namespace {

using namespace std::chrono_literals;

// Runs `argv` (a worker or runner with --capabilities) and returns its decoded answer, or
// nullopt when it failed, timed out or printed something unreadable. Its stdout is kept in
// <work_dir>/capabilities-<name>.json.
// `why_not` gets the reason when there is no answer (exit status and the end of stderr, kept in
// <work_dir>/capabilities-<name>.err, or what is wrong with the answer).
std::optional<Capabilities> capabilities_of(const BuildLauncher& launcher, const TorchBuild& build,
                                            const std::string& work_dir, const std::string& record_dir,
                                            const std::string& name, std::vector<std::string> argv,
                                            std::chrono::seconds limit, std::string& why_not) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.stdout_path = work_dir + "/capabilities-" + name + ".json";
  o.stderr_path = work_dir + "/capabilities-" + name + ".err";
  o = launcher.wrap(build, std::move(o));
  o.record_dir = record_dir;
  auto child = Child::spawn(o);
  if (!child.ok()) {
    why_not = child.error().message;
    return std::nullopt;
  }
  const ExitInfo exit = supervise(*child, limit, 1s, 1h, {});
  if (exit.exit_code != 0) {
    why_not = (exit.timed_out ? "no answer within " + std::to_string(limit.count()) + " s"
               : exit.signal  ? "killed by signal " + std::to_string(exit.signal)
                              : "exit " + std::to_string(exit.exit_code)) +
              ": " + tail_of_file(o.stderr_path, 3);
    return std::nullopt;
  }
  auto text = read_file_bounded(o.stdout_path, 1 << 20);
  auto caps = text.ok() ? decode_capabilities(*text) : Result<Capabilities>(text.error());
  if (!caps.ok()) {
    why_not = "its --capabilities answer is unusable: " + caps.error().describe();
    return std::nullopt;
  }
  return std::move(*caps);
}

// The modes a --capabilities answer lists for `device` ("cpu" or "cuda").
std::vector<Mode> modes_on(const Capabilities& caps, const std::string& device) {
  auto it = caps.modes.find(device);
  return it == caps.modes.end() ? std::vector<Mode>{} : it->second;
}

}  // namespace

void probe_build(const AgentConfig& c, const BuildLauncher& launcher, const std::string& records,
                 const std::string& device, TorchBuild& b) {
  b.runtimes.clear();
  b.broken.clear();
  auto offer_everything = [&](std::string why) {
    b.broken = std::move(why);
    b.runtimes = {{Runtime::kLibtorch, all_modes()}, {Runtime::kPython, all_modes()}};
    spdlog::error("torch build {}: {}; its jobs will end as errors", b.name, b.broken);
  };
  if (!b.root.empty()) {
    auto info = read_root_info(b.root);
    if (!info.ok()) return offer_everything(info.error().message);
    b.root_info = *info;
  }
  // The runner first: it names the build's native library folders (pip's nvidia/*/lib), which
  // the worker, its --capabilities included, then finds on its library path.
  // Importing torch in a cold python takes a while on a loaded host: a longer bound.
  std::string runner_failure;
  const auto runner_caps = capabilities_of(launcher, b, c.work_dir, records, b.name + "-python",
                                           {b.python, c.runner, "--capabilities"}, 180s, runner_failure);
  std::optional<RuntimeSupport> python_runtime;
  if (runner_caps) {
    b.torch_git = runner_caps->torch_git;
    b.library_dirs = runner_caps->library_dirs;
    python_runtime = RuntimeSupport{Runtime::kPython, modes_on(*runner_caps, device)};
  } else {
    spdlog::error("torch build {}: {} {} --capabilities failed ({}); the build is offered without the python runtime",
                  b.name, b.python, c.runner, runner_failure);
  }
  std::string worker_failure = "the build names no worker";
  const auto worker_caps = b.worker.empty() ? std::nullopt
                                            : capabilities_of(launcher, b, c.work_dir, records, b.name + "-libtorch",
                                                              {b.worker, "--capabilities"}, 60s, worker_failure);
  if (worker_caps) {
    b.version = worker_caps->torch_version;
    b.runtimes.push_back({Runtime::kLibtorch, modes_on(*worker_caps, device)});
  } else if (b.worker.empty()) {
    spdlog::info("torch build {}: no worker named; the build is offered with the python runtime only", b.name);
  } else {
    spdlog::error("torch build {}: {} --capabilities failed ({}); the build is offered without the libtorch runtime",
                  b.name, b.worker, worker_failure);
  }
  if (python_runtime) {
    if (b.version.empty()) b.version = runner_caps->torch_version;
    b.runtimes.push_back(std::move(*python_runtime));
  }
  if (!b.library_dirs.empty()) {
    spdlog::info("torch build {}: {} native library folders on its programs' library path", b.name,
                 b.library_dirs.size());
  }
  if (b.runtimes.empty()) {
    return offer_everything("neither its worker nor its python runner answers --capabilities (worker: " +
                            worker_failure + "; runner: " + runner_failure + ")");
  }
  for (const auto& rt : b.runtimes) {
    spdlog::info("torch build {}: torch {} {} runtime ({}), {} modes on {}{}", b.name, b.version, to_string(rt.runtime),
                 rt.runtime == Runtime::kLibtorch ? b.worker : c.runner, rt.modes.size(), device,
                 b.root.empty() ? "" : " in root " + b.root + " (" + b.root_info.id + ")");
  }
}

}  // namespace benchfleet::agent
