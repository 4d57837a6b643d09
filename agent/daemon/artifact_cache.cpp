#include "agent/daemon/artifact_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "agent/daemon/file_digest.h"
#include "agent/daemon/file_lock.h"
#include "agent/daemon/process.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

// The exporter prints one small JSON object; anything larger is not an answer.
constexpr std::size_t kMaxExporterAnswerBytes = 1 << 20;

std::optional<nlohmann::json> read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  auto j = nlohmann::json::parse(s.str(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// What identifies one version of a file without reading it: device, inode, size, modification
// and status-change times. Replacing the file or writing to it changes at least one of them
// (short of a same-size rewrite within one tick of the file system's clock).
std::optional<nlohmann::json> file_identity(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto ns = [](const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; };
  return nlohmann::json{{"device", static_cast<std::uint64_t>(st.st_dev)},
                        {"inode", static_cast<std::uint64_t>(st.st_ino)},
                        {"size", static_cast<std::int64_t>(st.st_size)},
                        {"mtime_ns", ns(st.st_mtim)},
                        {"ctime_ns", ns(st.st_ctim)}};
}

// The artifact's SHA-256 from its record (sha256.json beside it) when the record describes the
// file as it is now; otherwise hashed and recorded again. REQUIRES: the key's lock is held.
Result<std::string> artifact_sha256(const fs::path& file) {
  const fs::path record = file.parent_path() / "sha256.json";
  auto identity = file_identity(file);
  if (!identity) return Error::internal("the artifact " + file.string() + " is missing or not a file");
  if (auto known = read_json(record);
      known && known->is_object() && known->value("file", "") == file.filename().string() &&
      known->value("identity", nlohmann::json()) == *identity && known->value("sha256", "").size() == 64) {
    return known->value("sha256", "");
  }
  // A file that changed while it was read is read again, so the record never pairs a hash with
  // an identity the hashed bytes did not have.
  std::string sha256;
  for (int attempt = 0;; ++attempt) {
    BF_ASSIGN_OR_RETURN(sha256, file_sha256(file.string()));
    auto after = file_identity(file);
    if (after && *after == *identity) break;
    if (!after || attempt == 2) {
      return Error::internal("the artifact " + file.string() + " kept changing while it was hashed");
    }
    identity = std::move(after);
  }
  // Written beside and renamed: a reader never sees half a record. A record that cannot be
  // written only costs a hash at the next use.
  const fs::path partial = record.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << nlohmann::json{{"file", file.filename().string()}, {"identity", *identity}, {"sha256", sha256}}.dump()
        << '\n';
  }
  std::error_code ec;
  fs::rename(partial, record, ec);
  return sha256;
}

std::string describe_exit(const ExitInfo& exit) {
  return exit.signal != 0 ? "killed by signal " + std::to_string(exit.signal)
                          : "exit " + std::to_string(exit.exit_code);
}

std::string sanitize(std::string_view s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return out;
}

}  // namespace

ArtifactCache::ArtifactCache(std::string dir) : dir_(std::move(dir)) {}

std::string ArtifactCache::dir_name(const ArtifactKey& k) {
  const std::string full = k.model + "|" + k.model_digest + "|" + k.build + "|" + k.build_version + "|" +
                           k.build_root_id + "|" + k.format + "|" + std::string(to_string(k.mode)) + "|" +
                           std::to_string(k.batch) + "|" + k.device + "|" + k.device_arch + "|" +
                           std::string(to_string(k.dtype)) + "|" + k.test_perturbation;
  std::ostringstream hash;
  hash << std::hex << std::hash<std::string>{}(full);
  return sanitize(k.model) + "-b" + std::to_string(k.batch) + "-" + k.format + "-" + std::string(to_string(k.dtype)) +
         "-" + hash.str();
}

Prepared ArtifactCache::prepare(const ArtifactKey& key, const Exporter& exporter) {
  Prepared out;
  const fs::path dir = fs::path(dir_) / dir_name(key);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  FileLock lock((fs::path(dir_) / (dir_name(key) + ".lock")).string());
  if (!lock.held()) {
    out.message = "cannot lock the artifact cache in " + dir_;
    return out;
  }
  // A finished export whose file is gone (removed by hand) is exported again, and so is one
  // whose metadata cannot be read (it is replaced below).
  if (auto meta = read_json(dir / "metadata.json")) {
    auto cached = decode_exporter_metadata(*meta);
    if (cached.ok() && cached->status == "ok" && fs::exists(dir / cached->artifact)) {
      const fs::path file = dir / cached->artifact;
      auto sha256 = artifact_sha256(file);
      if (!sha256.ok()) {
        out.message = "the cached artifact cannot be hashed: " + sha256.error().message;
        return out;
      }
      out.artifact = Artifact{file.string(), std::move(*sha256), std::move(*cached), true, 0};
      return out;
    }
  }

  const fs::path staging = fs::path(dir_) / (dir_name(key) + ".partial");
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  SpawnOptions o;
  o.argv = {exporter.python, exporter.script,  "--catalog", exporter.catalog,
            "--model",       key.model,        "--batch",   std::to_string(key.batch),
            "--format",      key.format,       "--device",  key.device,
            "--out",         staging.string(), "--dtype",   std::string(to_string(key.dtype))};
  if (key.model_definition) {
    const fs::path definition = staging / "model.json";
    std::ofstream(definition) << key.model_definition->dump();
    o.argv.push_back("--model-json");
    o.argv.push_back(definition.string());
  }
  if (key.format == "aotinductor") {
    o.argv.push_back("--mode");
    o.argv.push_back(std::string(to_string(key.mode)));
  }
  o.stdout_path = (fs::path(dir_) / (dir_name(key) + ".export.out")).string();
  o.stderr_path = (fs::path(dir_) / (dir_name(key) + ".export.err")).string();
  if (exporter.launch) o = exporter.launch(std::move(o));
  auto child = Child::spawn(o);
  if (!child.ok()) {
    out.message = "cannot start the exporter: " + child.error().message;
    return out;
  }
  const auto start = std::chrono::steady_clock::now();
  const ExitInfo exit =
      supervise(*child, std::chrono::seconds(exporter.timeout_s), std::chrono::seconds(5), std::chrono::hours(1), {});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (exit.timed_out) {
    out.message = "the export timed out after " + std::to_string(exporter.timeout_s) + " s";
    return out;
  }
  auto text = read_file_bounded(o.stdout_path, kMaxExporterAnswerBytes);
  auto answer = text.ok() ? decode_exporter_answer(*text) : Result<ExporterAnswer>(text.error());
  if (!answer.ok() || answer->status != "ok") {
    out.failure = answer.ok() && answer->status == "unsupported" ? ResultStatus::kUnsupported : ResultStatus::kError;
    if (answer.ok() && !answer->message.empty()) {
      out.message = "export: " + answer->message;
    } else if (exit.exit_code == 0 && exit.signal == 0 && !answer.ok()) {
      out.message = "the exporter's answer is unusable: " + answer.error().describe();
    } else {
      out.message = "export failed (" + describe_exit(exit) + "): " + tail_of_file(o.stderr_path, 5);
      if (exit.signal != 0) {
        out.failure = ResultStatus::kCrash;
        out.signal = exit.signal;
      }
    }
    return out;
  }
  // Hashed in the staging directory, so the artifact enters the cache with its record.
  const std::string file_name = answer->artifact;
  auto sha256 = artifact_sha256(staging / file_name);
  if (!sha256.ok()) {
    out.message = "the exported artifact cannot be hashed: " + sha256.error().message;
    return out;
  }
  fs::remove_all(dir, ec);
  fs::rename(staging, dir, ec);
  if (ec) {
    out.message = "cannot move the export into the cache: " + ec.message();
    return out;
  }
  out.artifact = Artifact{(dir / file_name).string(), std::move(*sha256), std::move(*answer), false, wall};
  return out;
}

}  // namespace benchfleet::agent
