#include "coordinator/services/model_registry.h"

#include <utility>

#include "common/model_definition.h"
#include "coordinator/rules/tokens.h"

namespace benchfleet::services {

ModelRegistry::ModelRegistry(store::ModelStore& store, std::vector<std::string> path_roots)
    : store_(store), path_roots_(std::move(path_roots)) {}

std::string ModelRegistry::digest_of(const nlohmann::json& definition) {
  return std::string(kDigestPrefix) + rules::sha256_hex(definition.dump());
}

Result<int> ModelRegistry::start(const Catalog& shipped) {
  std::lock_guard change(change_mu_);
  std::vector<std::string> digests;
  for (const CatalogModel& m : shipped.models()) digests.push_back(digest_of(m.definition));
  BF_ASSIGN_OR_RETURN(int added, store_.register_catalog(shipped, digests));
  BF_RETURN_IF_ERROR(reload());
  return added;
}

std::shared_ptr<const Catalog> ModelRegistry::catalog() const {
  std::lock_guard lock(mu_);
  return catalog_;
}

Status ModelRegistry::reload() {
  BF_ASSIGN_OR_RETURN(auto models, store_.all_models());
  auto next = std::make_shared<const Catalog>(Catalog::of(std::move(models)));
  std::lock_guard lock(mu_);
  catalog_ = std::move(next);
  return Status::Ok();
}

Result<store::Registration> ModelRegistry::add(const nlohmann::json& definition, bool new_version) {
  std::lock_guard change(change_mu_);
  BF_ASSIGN_OR_RETURN(CatalogModel model, check_model_definition(definition, "", path_roots_));
  for (const std::string& digest : artifacts_of(model.definition)) {
    BF_ASSIGN_OR_RETURN(auto artifact, store_.find_artifact(digest));
    if (!artifact) {
      return Error::invalid("artifact",
                            "no artifact " + digest + " is stored (POST /api/v1/artifacts uploads it; GET lists them)");
    }
  }
  BF_ASSIGN_OR_RETURN(store::Registration registered,
                      store_.register_model(model, digest_of(model.definition), new_version));
  BF_RETURN_IF_ERROR(reload());  // registering is rare: the set is read again whatever it did
  return registered;
}

Result<bool> ModelRegistry::remove(const std::string& id, bool retire) {
  std::lock_guard change(change_mu_);
  BF_ASSIGN_OR_RETURN(bool retired, store_.remove_model(id, retire));
  BF_RETURN_IF_ERROR(reload());
  return retired;
}

}  // namespace benchfleet::services
