// Where a job's model definition (docs/models.md) finds its files on this host. An artifact is
// fetched from the coordinator once per digest into <dir>/<hex>/ (a lock per digest, so slots
// asking at once wait for one download), checked against its digest before it is used, and a
// tar unpacked there (GNU tar, which refuses members outside it); a path must lie under the
// agent's model_roots. Nothing here throws: a missing or corrupt artifact is an error the job
// reports, naming the digest.
//   ModelFiles files(dir, roots, fetch);
//   Result<nlohmann::json> ready = files.resolve(definition);  // with "local_path" when it names a file
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "common/result.h"

namespace benchfleet::agent {

class ModelFiles {
 public:
  // GETs `target` (an artifact's URL path) into the file `path`: the coordinator's answer.
  using Fetch = std::function<Result<http::ClientResponse>(const std::string& target, const std::string& path)>;

  ModelFiles(std::string dir, std::vector<std::string> roots, Fetch fetch);

  // `definition` with "local_path" set to the file or directory its artifact or path stands for
  // on this host (unchanged when it names neither). Errors (kInvalidArgument for a path outside
  // the roots; kNotFound, kUnavailable or kInternal for an artifact) say what to do.
  Result<nlohmann::json> resolve(const nlohmann::json& definition) const;

  // The directories jobs must be able to read (bound into a build's root): the cache and roots.
  std::vector<std::string> readable() const;

 private:
  Result<std::string> artifact(const std::string& digest) const;

  std::string dir_;
  std::vector<std::string> roots_;
  Fetch fetch_;
};

}  // namespace benchfleet::agent
