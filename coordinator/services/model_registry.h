// The models the coordinator knows (docs/models.md): the store's registered models as one
// immutable Catalog, replaced whole after each change, so a handler reads a consistent set
// without a lock held while it works.
//   auto catalog = registry.catalog();           // std::shared_ptr<const Catalog>
//   auto added = registry.add(definition, false);  // checked, stored, published
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/catalog.h"
#include "common/result.h"
#include "coordinator/store/model_store.h"

namespace benchfleet::services {

class ModelRegistry {
 public:
  // `path_roots`: the directories a definition's `path` may name (the coordinator's model_roots).
  ModelRegistry(store::ModelStore& store, std::vector<std::string> path_roots);
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Registers the ids of `shipped` the store lacks (the first start registers them all), then
  // loads every model. Returns how many it registered.
  Result<int> start(const Catalog& shipped);

  // The models now: every version, registration order. Never null after start().
  std::shared_ptr<const Catalog> catalog() const;

  // Checks `definition` (check_model_definition with the path roots; the artifacts it names must
  // be stored), registers it (ModelStore::register_model) and publishes the new set.
  Result<store::Registration> add(const nlohmann::json& definition, bool new_version);

  // ModelStore::remove_model, then publishes the new set. Returns whether it retired the model.
  Result<bool> remove(const std::string& id, bool retire);

  // "sha256:" of a definition's canonical JSON (sorted keys, no spaces).
  static std::string digest_of(const nlohmann::json& definition);

 private:
  Status reload();

  store::ModelStore& store_;
  const std::vector<std::string> path_roots_;
  std::mutex change_mu_;   // one change at a time, so a reload never publishes an older set
  mutable std::mutex mu_;  // guards catalog_ (the pointer; the Catalog itself is immutable)
  std::shared_ptr<const Catalog> catalog_ = std::make_shared<const Catalog>();
};

}  // namespace benchfleet::services
