// The model catalog (docs/design.md §4): common/catalog/models.yaml, read by every component.
//   Result<Catalog> catalog = Catalog::load_file(default_catalog_path());
//   if (!catalog) return catalog.error();
//   const CatalogModel* m = catalog->find("microsoft/resnet-50");
// A Catalog is an immutable value after loading; const access is thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace benchfleet {

struct CatalogModel {
  std::string id;            // catalog id used in matrices, e.g. "google/vit-base-patch16-224"
  std::string source;        // "huggingface" or "torchvision"
  std::string task;          // e.g. "Image Classification"
  std::string name;          // short name as in the seeds' tables, e.g. "ViT"
  std::string architecture;  // transformers class or torchvision builder, e.g. "resnet18"
  // Free-form details for the worker (input specs, export options), converted from YAML:
  // plain scalars that read as integers, floats or booleans become numbers/booleans, quoted
  // scalars stay strings. Always an object; {} when the entry has no `worker` key.
  nlohmann::json worker = nlohmann::json::object();

  // "<task>/<name>", the row label of the report tables, e.g. "Image Classification/ViT".
  std::string display_name() const;

  bool operator==(const CatalogModel&) const = default;
};

class Catalog {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  Catalog() = default;  // empty catalog

  // Reads and validates a catalog file. Errors: kNotFound if the file cannot be read;
  // kInvalidArgument (see parse) otherwise. The path is the origin in messages.
  static Result<Catalog> load_file(const std::string& path);

  // Validates catalog YAML text. `origin` (a file name) prefixes every message together with
  // the line and column. Errors are kInvalidArgument with `field` naming the offending key,
  // e.g. "models[3].task": malformed YAML (field empty), a non-mapping where a mapping is
  // expected, missing or empty required keys, unknown keys, duplicate ids, unknown source,
  // or an empty model list.
  static Result<Catalog> parse(std::string_view yaml_text, std::string_view origin);

  // The model with this id, or nullptr if unknown. The pointer lives as long as the Catalog.
  const CatalogModel* find(std::string_view id) const;

  // The catalog id a user's `given` name stands for: `given` itself when it is an id; else the
  // one id ending with it after a '/', '-' or '_', compared without case ("resnet18" ->
  // "torchvision/resnet18", "ViT-Base-Patch16-224" -> "google/vit-base-patch16-224").
  // kInvalidArgument naming `field` when no id does (with the nearest id, if one is near) or
  // when several do (listing them).
  Result<std::string> resolve_id(std::string_view given, const std::string& field) const;
  // The ids `given` may stand for, as resolve_id matches them: {given} for an id, else the ids
  // whose name after the '/' is it, else those ending with it after a '/', '-' or '_'.
  std::vector<std::string> ids_matching(std::string_view given) const;

  // All models in file order.
  const std::vector<CatalogModel>& models() const { return models_; }

  // Position in file order, for sorting report rows; npos if unknown.
  std::size_t index_of(std::string_view id) const;

 private:
  explicit Catalog(std::vector<CatalogModel> models) : models_(std::move(models)) {}

  std::vector<CatalogModel> models_;
};

// $BENCHFLEET_CATALOG when set and non-empty, else the installed <bin>/../share/benchfleet/
// catalog/models.yaml; a program run from its build tree without one there uses the source
// tree's common/catalog/models.yaml (install_dirs.h).
std::string default_catalog_path();

}  // namespace benchfleet
