#include "agent/worker/fingerprint.h"

#include <ATen/Parallel.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <fstream>
#include <memory>

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

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return "";
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

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
                        {"format", job.format},
                        {"artifact_sha256", file_sha256(job.artifact)}};
  for (const char* key : {"torch_git", "torch_version", "python", "sha256"}) {
    auto it = job.artifact_metadata.find(key);
    if (it != job.artifact_metadata.end() && it->is_primitive()) env[std::string("exporter_") + key] = *it;
  }
  if (job.device == "cuda" && caps.cuda_available) {
    const nlohmann::json gpu = cuda::fingerprint();
    for (const auto& [k, v] : gpu.items()) env[k] = v;
  }
  return env;
}

}  // namespace benchfleet::worker
