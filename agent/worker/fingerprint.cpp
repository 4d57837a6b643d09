#include "agent/worker/fingerprint.h"

#include <ATen/Parallel.h>
#include <unistd.h>

#include <fstream>

#include "agent/worker/cuda.h"

namespace benchfleet::worker {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "";
}

}  // namespace

nlohmann::json fingerprint(const WorkerJob& job, const Capabilities& caps) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json env = {{"runtime", "libtorch"},
                        {"torch_version", caps.torch_version},
                        {"worker_version", BENCHFLEET_VERSION},
                        {"host", host},
                        {"cpu_model", cpu_model()},
                        {"cpu_threads", at::get_num_threads()},
                        {"device", job.device},
                        {"format", job.format}};
  for (const char* key : {"torch_git", "torch_version", "python", "sha256"}) {
    auto it = job.artifact_metadata.find(key);
    if (it != job.artifact_metadata.end() && it->is_primitive()) env[std::string("exporter_") + key] = *it;
  }
  // The vector ISA of an AOTInductor package's CPU kernels ("none": scalar code), as compiled.
  if (auto it = job.artifact_metadata.find("inductor_vec_isa"); it != job.artifact_metadata.end() && it->is_string()) {
    env["inductor_vec_isa"] = *it;
  }
  if (job.device == "cuda" && caps.cuda_available) {
    const nlohmann::json gpu = cuda::fingerprint();
    for (const auto& [k, v] : gpu.items()) env[k] = v;
  }
  return env;
}

}  // namespace benchfleet::worker
