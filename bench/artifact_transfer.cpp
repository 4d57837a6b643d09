// artifact_transfer: how fast a real benchfleet-coordinator takes and serves a model artifact
// (docs/models.md), and what its resident memory does meanwhile. Uploads a file of --mb MiB
// (random bytes, made once in the work directory) with POST /api/v1/artifacts as an operator
// would (benchfleet artifacts add), then fetches it back with GET /api/v1/artifacts/{digest} into a
// file as an agent does, checking the bytes; prints MB/s of each and the coordinator's RSS before,
// at its peak during each transfer (sampled every 20 ms) and after. An upload is streamed to disk
// while hashed, so the peak stays flat whatever the size. Not a pass/fail test.
//
//   artifact_transfer [--mb 1024] [--dir DIR]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
namespace fs = std::filesystem;
constexpr const char* kToken = "artifact-transfer-operator-token";

std::int64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

// Runs `f` while sampling the RSS of `pid`; returns (seconds, peak KiB).
template <class F>
std::pair<double, std::int64_t> timed(pid_t pid, F f) {
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> peak{rss_kib(pid)};
  std::thread sampler([&] {
    while (!done.load()) {
      peak = std::max<std::int64_t>(peak.load(), rss_kib(pid));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  f();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done = true;
  sampler.join();
  return {s, peak.load()};
}

bool same_files(const std::string& a, const std::string& b) {
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  std::vector<char> p(1 << 20), q(1 << 20);
  while (x && y) {
    x.read(p.data(), static_cast<std::streamsize>(p.size()));
    y.read(q.data(), static_cast<std::streamsize>(q.size()));
    if (x.gcount() != y.gcount() || !std::equal(p.begin(), p.begin() + x.gcount(), q.begin())) return false;
  }
  return !x && !y;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Upload and fetch rates of a model artifact, and the coordinator's memory meanwhile"};
  int mb = 1024;
  std::string dir = (fs::temp_directory_path() / ("bf-artifact-transfer-" + std::to_string(::getpid()))).string();
  app.add_option("--mb", mb, "artifact size in MiB")->check(CLI::Range(1, 65536))->capture_default_str();
  app.add_option("--dir", dir, "work directory (removed at the end)");
  CLI11_PARSE(app, argc, argv);
  fs::create_directories(dir);

  const std::string source = dir + "/artifact.bin";
  {
    std::ofstream out(source, std::ios::binary);
    std::mt19937_64 rng(42);
    std::vector<std::uint64_t> block(1 << 17);  // 1 MiB
    for (int i = 0; i < mb; ++i) {
      for (auto& w : block) w = rng();
      out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size() * 8));
    }
  }

  testing::LaunchOptions options;
  options.flags = {{"--db", dir + "/bench.db"},
                   {"--operator-token", kToken},
                   {"--log-level", "warn"},
                   {"--max-artifact-bytes", std::to_string(std::int64_t{mb + 1} << 20)}};
  options.port_file = dir + "/port";
  options.log_file = dir + "/coordinator.log";
  options.clean_environment = true;
  auto child = testing::CoordinatorChild::start(options);
  if (!child.ok()) {
    std::fprintf(stderr, "artifact_transfer: %s\n", child.error().message.c_str());
    return 1;
  }
  const pid_t pid = (*child)->pid();
  const std::string url = "http://127.0.0.1:" + std::to_string((*child)->port());
  http::Client client(url);
  const http::Client::Headers auth = {{"Authorization", std::string("Bearer ") + kToken}};
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::int64_t before = rss_kib(pid);

  Result<http::ClientResponse> up = Error::internal("not run");
  const auto [up_s, up_peak] = timed(pid, [&] {
    up = client.post_file("/api/v1/artifacts?kind=file&name=artifact.bin", source, auth, std::chrono::hours(1));
  });
  if (!up.ok() || up->status != 201) {
    std::fprintf(stderr, "artifact_transfer: upload failed: %s\n",
                 up.ok() ? up->body.c_str() : up.error().message.c_str());
    return 1;
  }
  const std::string digest = nlohmann::json::parse(up->body).value("digest", "");
  const std::string fetched = dir + "/fetched.bin";
  Result<http::ClientResponse> down = Error::internal("not run");
  const auto [down_s, down_peak] = timed(pid, [&] {
    down =
        client.get_to_file("/api/v1/artifacts/" + digest, fetched, auth, std::uint64_t{1} << 40, std::chrono::hours(1));
  });
  if (!down.ok() || down->status != 200 || !same_files(source, fetched)) {
    std::fprintf(stderr, "artifact_transfer: the fetch failed or its bytes differ\n");
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::int64_t after = rss_kib(pid);
  (*child)->stop();

  const double size_mb = mb * 1.048576;  // MiB -> MB
  std::printf("artifact of %d MiB (%s)\n", mb, digest.c_str());
  std::printf("| transfer | MB/s | coordinator RSS before | peak | after (MiB) |\n|---|---|---|---|---|\n");
  std::printf("| upload (POST, streamed to disk, hashed) | %.0f | %lld | %lld | - |\n", size_mb / up_s,
              static_cast<long long>(before / 1024), static_cast<long long>(up_peak / 1024));
  std::printf("| fetch (GET, streamed from disk) | %.0f | - | %lld | %lld |\n", size_mb / down_s,
              static_cast<long long>(down_peak / 1024), static_cast<long long>(after / 1024));
  fs::remove_all(dir);
  return 0;
}
