#include "agent/daemon/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/codecs.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

Status write_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error::internal("cannot create " + tmp);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n <= 0) {
      ::close(fd);
      return Error::internal("cannot write " + tmp);
    }
    written += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) return Error::internal("cannot commit " + path);
  // The rename itself must survive a power cut: sync the directory entry too.
  const int dir = ::open(fs::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

}  // namespace

Spool::Spool(std::string dir) : dir_(std::move(dir)) {}

Status Spool::open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error::internal("cannot create the spool directory " + dir_ + ": " + ec.message());
  return Status::Ok();
}

std::string Spool::path_of(std::int64_t job_id, int attempt) const {
  return dir_ + "/job-" + std::to_string(job_id) + "-attempt-" + std::to_string(attempt) + ".json";
}

Status Spool::put(const SpoolEntry& e) {
  const nlohmann::json j = {
      {"job_id", e.job_id}, {"lease_id", e.lease_id}, {"attempt", e.attempt}, {"result", e.result}};
  return write_durably(path_of(e.job_id, e.attempt), j.dump());
}

std::vector<SpoolEntry> Spool::list(std::vector<std::string>* skipped) const {
  std::vector<SpoolEntry> out;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(dir_, ec)) {
    const std::string name = file.path().filename().string();
    if (name.rfind("job-", 0) != 0 || file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    std::stringstream text;
    text << in.rdbuf();
    SpoolEntry e;
    auto j = nlohmann::json::parse(text.str(), nullptr, false);
    bool ok = j.is_object() && j.contains("job_id") && j.contains("lease_id") && j.contains("attempt") &&
              j.contains("result") && j["job_id"].is_number_integer() && j["lease_id"].is_string() &&
              j["attempt"].is_number_integer();
    if (ok) {
      auto result = decode<JobResult>(j["result"]);
      ok = result.ok();
      if (ok) {
        e = {j["job_id"].get<std::int64_t>(), j["lease_id"].get<std::string>(), j["attempt"].get<int>(),
             std::move(*result)};
      }
    }
    if (!ok) {
      fs::rename(file.path(), file.path().string() + ".bad", ec);
      if (skipped) skipped->push_back(name);
      continue;
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const SpoolEntry& a, const SpoolEntry& b) {
    return std::tie(a.job_id, a.attempt) < std::tie(b.job_id, b.attempt);
  });
  return out;
}

Status Spool::remove(std::int64_t job_id, int attempt) {
  std::error_code ec;
  fs::remove(path_of(job_id, attempt), ec);
  if (ec) return Error::internal("cannot remove a spooled result: " + ec.message());
  return Status::Ok();
}

}  // namespace benchfleet::agent
