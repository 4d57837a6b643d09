#include "agent/daemon/model_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "agent/daemon/file_digest.h"
#include "agent/daemon/file_lock.h"
#include "common/model_definition.h"
#include "common/process_spawn.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

// The uploader's file name, reduced to a safe base name (it keeps the extension the python side
// reads: .py, .pt2, .safetensors).
std::string safe_name(std::string_view name) {
  const std::size_t slash = name.find_last_of('/');
  std::string base(slash == std::string_view::npos ? name : name.substr(slash + 1));
  std::replace_if(
      base.begin(), base.end(),
      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-'; }, '_');
  if (base.empty() || base.front() == '.') base = "artifact" + base;
  return base;
}

Status unpack(const std::string& tar, const std::string& into) {
  return run_to_end(
      {"tar", "--extract", "--file", tar, "--directory", into, "--no-same-owner", "--no-same-permissions"},
      into + ".tar-log");
}

}  // namespace

ModelFiles::ModelFiles(std::string dir, std::vector<std::string> roots, Fetch fetch)
    : dir_(std::move(dir)), roots_(std::move(roots)), fetch_(std::move(fetch)) {}

std::vector<std::string> ModelFiles::readable() const {
  std::vector<std::string> out = roots_;
  out.push_back(dir_);
  return out;
}

Result<nlohmann::json> ModelFiles::resolve(const nlohmann::json& definition) const {
  nlohmann::json out = definition;
  if (definition.contains("artifact")) {
    BF_ASSIGN_OR_RETURN(out["local_path"], artifact(definition["artifact"].get<std::string>()));
  } else if (definition.contains("path")) {
    // The coordinator checked the path against its roots; this host has its own.
    const std::string path = definition["path"].get<std::string>();
    auto checked = check_model_definition(definition, "model", roots_);
    if (!checked.ok()) {
      return Error::invalid("model.path",
                            checked.error().message + " (this agent's model_roots; the coordinator's allowed it)");
    }
    std::error_code ec;
    if (!fs::exists(path, ec)) return Error::not_found("model.path: " + path + " does not exist on this host");
    out["local_path"] = path;
  }
  return out;
}

Result<std::string> ModelFiles::artifact(const std::string& digest) const {
  if (!is_digest(digest)) return Error::invalid("model.artifact", "model.artifact: not a digest: " + digest);
  const std::string hex = digest.substr(kDigestPrefix.size());
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error::internal("cannot create the model artifact cache " + dir_ + ": " + ec.message());
  const fs::path home = fs::path(dir_) / hex;
  const fs::path ready = fs::path(dir_) / (hex + ".ready");  // holds local_path once unpacked
  FileLock lock((fs::path(dir_) / (hex + ".lock")).string());
  if (!lock.held()) return Error::internal("cannot lock " + dir_ + " for artifact " + digest);
  if (std::ifstream in(ready); in) {
    std::string local;
    std::getline(in, local);
    if (!local.empty() && fs::exists(local, ec)) return local;
  }
  fs::remove_all(home, ec);
  const std::string part = (fs::path(dir_) / (hex + ".part")).string();
  BF_ASSIGN_OR_RETURN(http::ClientResponse answer, fetch_("/api/v1/artifacts/" + digest, part));
  if (answer.status != 200) {
    return Error{answer.status == 404 ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
                 "artifact " + digest + ": the coordinator answered HTTP " + std::to_string(answer.status) + ": " +
                     answer.problem_detail(),
                 {}};
  }
  BF_ASSIGN_OR_RETURN(const std::string got, file_sha256(part));
  if (got != hex) {
    fs::remove(part, ec);
    return Error{ErrorCode::kInternal,
                 "artifact " + digest + " arrived corrupt: its bytes hash to sha256:" + got + " (not kept)",
                 {}};
  }
  fs::create_directories(home, ec);
  std::string local;
  const auto kind = answer.headers.find("x-artifact-kind");
  const auto name = answer.headers.find("x-artifact-name");
  if (kind != answer.headers.end() && kind->second == "tar") {
    const fs::path tree = home / "tree";
    fs::create_directories(tree, ec);
    if (auto unpacked = unpack(part, tree.string()); !unpacked.ok()) {
      fs::remove_all(home, ec);
      fs::remove(part, ec);
      return Error{
          ErrorCode::kInternal, "artifact " + digest + " (a tar) cannot be unpacked: " + unpacked.error().message, {}};
    }
    fs::remove(part, ec);
    // A tar of one directory ("my-vit/...") stands for that directory.
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(tree, ec)) entries.push_back(e.path());
    local = (entries.size() == 1 && fs::is_directory(entries.front())) ? entries.front().string() : tree.string();
  } else {
    const fs::path file = home / safe_name(name != answer.headers.end() ? name->second : "");
    fs::rename(part, file, ec);
    if (ec) return Error::internal("cannot keep artifact " + digest + " as " + file.string() + ": " + ec.message());
    local = file.string();
  }
  std::ofstream(ready) << local << '\n';
  return local;
}

}  // namespace benchfleet::agent
