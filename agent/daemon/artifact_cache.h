// Exported model artifacts, cached by (model, torch build, format, mode, batch, device arch, dtype).
// An export runs at most once per key at a time (a lock file per key), so two slots asking
// for the same artifact wait for one export instead of racing. Failed exports are not cached.
// Each artifact's SHA-256 is computed once, at export (or at the first use of an artifact cached
// before the agent hashed them), and kept beside it with the file's identity; a file changed or
// replaced since is hashed again, so a result never names an old artifact's hash.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/daemon/agent_codecs.h"
#include "agent/daemon/process.h"
#include "common/types.h"

namespace benchfleet::agent {

struct ArtifactKey {
  std::string model;  // the job's model key ("id", or "id@N" for a later version)
  // The model's definition (docs/models.md, "local_path" resolved on this host) the exporter
  // builds from, and its digest, so a redefined model exports again; nullopt: the catalog's.
  std::optional<nlohmann::json> model_definition;
  std::string model_digest;
  std::string build;          // torch build name
  std::string build_version;  // its exact version, so an upgraded build re-exports
  std::string build_root_id;  // its root's identity ("" on the host), so a changed root re-exports
  std::string format;         // torchscript, torchscript-frozen, aotinductor
  Mode mode = Mode::kEager;
  int batch = 1;
  std::string device;             // cpu | cuda
  std::string device_arch;        // "cpu", or the GPU's compute capability ("8.0")
  Dtype dtype = Dtype::kFloat32;  // the exporter's --dtype (never amp: python runtime only)
  // Test only: BENCHFLEET_TEST_PERTURB_COMPILED as the agent (and so the exporter) sees it; a
  // perturbed package must never be served for an unperturbed job, or the other way round.
  std::string test_perturbation;
};

struct Exporter {
  std::string python;   // the torch build's interpreter
  std::string script;   // agent/python/benchfleet_export.py
  std::string catalog;  // the model catalog
  int timeout_s = 3600;
  // Makes the exporter's process run for the build (BuildLauncher::wrap); none: as given.
  std::function<SpawnOptions(SpawnOptions)> launch;
};

struct Artifact {
  std::string path;          // the model file
  std::string sha256;        // lower-case hex SHA-256 of that file, computed by the agent
  ExporterAnswer exported;   // the exporter's metadata.json, decoded (exported.metadata: as written)
  bool cached = false;       // reused from an earlier export
  double export_wall_s = 0;  // wall time of this call's export (0 when cached)
};

// What became of a preparation: an artifact, or the verdict of a failed export.
struct Prepared {
  std::optional<Artifact> artifact;
  // error or unsupported when no artifact; crash when a signal ended the exporter (`signal`: a
  // SIGTERM from outside, such as Slurm ending the allocation, is not the job's fault).
  ResultStatus failure = ResultStatus::kError;
  std::optional<int> signal;
  std::string message;
};

class ArtifactCache {
 public:
  explicit ArtifactCache(std::string dir);

  // Returns the cached artifact or exports it (blocking, under the key's lock).
  Prepared prepare(const ArtifactKey& key, const Exporter& exporter);

  // The directory name of a key (readable prefix + hash).
  static std::string dir_name(const ArtifactKey& key);

 private:
  std::string dir_;
};

}  // namespace benchfleet::agent
