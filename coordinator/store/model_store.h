// Registered models and their artifacts (docs/models.md): every version of every definition, and
// the content-addressed files definitions name. The bytes of an artifact are a file under the
// artifact directory (coordinator/services/artifact_files.h); this store keeps their rows.
// Thread-safe: every method is one operation of the store's group commit (store_core.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/result.h"

namespace benchfleet::store {

class StoreCore;

// What registering a definition did.
enum class Registered {
  kCreated,     // a new id, version 1
  kUnchanged,   // the current version already is this definition
  kReplaced,    // the current version had no results: its definition was replaced in place
  kNewVersion,  // the current version has results: this is the next version
};
std::string_view to_string(Registered r);

struct Registration {
  Registered outcome = Registered::kCreated;
  CatalogModel model;  // as stored (version, digest)
};

struct ArtifactRow {
  std::string digest;  // "sha256:<hex>"
  std::int64_t size = 0;
  std::string kind;  // file | tar
  std::string name;
  TimestampMs created_at = 0;
};

class ModelStore {
 public:
  explicit ModelStore(StoreCore& core) : core_(core) {}
  ModelStore(const ModelStore&) = delete;
  ModelStore& operator=(const ModelStore&) = delete;

  // Every version of every model, in registration order (CatalogModel::current and ::retired
  // set). Read once at start and after each change, by the coordinator's model registry.
  Result<std::vector<CatalogModel>> all_models();

  // Registers `model` (checked by check_model_definition; `digest` of its definition). A new id
  // is version 1. The same definition as the current version changes nothing. A different one
  // replaces the current version when no job of it has a result (done or failed); else it is
  // kConflict naming the results, unless `new_version`, which adds the next version. A retired
  // model registered again is in service again.
  Result<Registration> register_model(const CatalogModel& model, const std::string& digest, bool new_version);

  // How many jobs of the model's versions have a result.
  Result<std::int64_t> results_of(const std::string& id);

  // Removes every version of a model without results; one with results is kConflict unless
  // `retire`, which marks it retired (kept with its results, refused to new runs). kNotFound
  // for an unknown id. Returns whether it was retired (false: removed).
  Result<bool> remove_model(const std::string& id, bool retire);

  // Registers each model of `catalog` whose id the store lacks, as version 1, in catalog order.
  // Returns how many it added.
  Result<int> register_catalog(const Catalog& catalog, const std::vector<std::string>& digests);

  // Artifacts: the row of a file the caller already placed under the artifact directory.
  // Adding a digest that exists changes nothing (and returns false).
  Result<bool> add_artifact(const ArtifactRow& row);
  Result<std::optional<ArtifactRow>> find_artifact(const std::string& digest);
  Result<std::vector<ArtifactRow>> list_artifacts();

 private:
  StoreCore& core_;
};

}  // namespace benchfleet::store
