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

// One version of a model: the shipped catalog's entries (version 1) and the models operators
// register (docs/models.md).
struct CatalogModel {
  std::string id;            // the id used in matrices, e.g. "google/vit-base-patch16-224"
  std::string source;        // huggingface, torchvision, timm, python or exported
  std::string task;          // e.g. "Image Classification"
  std::string name;          // short name as in the seeds' tables, e.g. "ViT"
  std::string architecture;  // transformers class, torchvision builder or timm name; may be ""
  // The whole definition (common/model_definition.h), defaults filled in: what a job carries
  // to the agent. From YAML, plain scalars that read as integers, floats or booleans become
  // numbers/booleans and quoted scalars stay strings.
  nlohmann::json definition = nlohmann::json::object();
  int version = 1;       // a redefinition with results makes the next version
  std::string digest;    // "sha256:..." of the definition as stored; "" outside the coordinator
  bool current = true;   // the version a matrix naming the id gets
  bool retired = false;  // kept with its results; new runs refuse it

  // What jobs, series and reports name this version by: the id for version 1, "id@N" after.
  std::string key() const;
  // "<task>/<name>", the row label of the report tables, e.g. "Image Classification/ViT"; a
  // version after the first adds " (vN)".
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

  // The models given, in this order (the store's registered models). REQUIRES: unique keys.
  static Catalog of(std::vector<CatalogModel> models) { return Catalog(std::move(models)); }

  // The model version with this key (CatalogModel::key), or nullptr if unknown. The pointer
  // lives as long as the Catalog.
  const CatalogModel* find(std::string_view key) const;

  // The key a user's `given` name stands for: `given` itself when it is a key ("acme/x@1"); the
  // current version's key when it is an id; else that of the one current id ending with it after
  // a '/', '-' or '_', compared without case ("resnet18" -> "torchvision/resnet18",
  // "ViT-Base-Patch16-224" -> "google/vit-base-patch16-224").
  // kInvalidArgument naming `field` when no id does (with the nearest id, if one is near) or
  // when several do (listing them).
  Result<std::string> resolve_id(std::string_view given, const std::string& field) const;
  // The keys `given` may stand for, as resolve_id matches them: {given} for a key, the current
  // key for an id, else the current ids whose name after the '/' is it, else those ending with it
  // after a '/', '-' or '_'.
  std::vector<std::string> ids_matching(std::string_view given) const;

  // All models in file (or registration) order, every version.
  const std::vector<CatalogModel>& models() const { return models_; }

  // Position of a key in file order, for sorting report rows; npos if unknown.
  std::size_t index_of(std::string_view key) const;

 private:
  explicit Catalog(std::vector<CatalogModel> models) : models_(std::move(models)) {}

  std::vector<CatalogModel> models_;
};

// $BENCHFLEET_CATALOG when set and non-empty, else the installed <bin>/../share/benchfleet/
// catalog/models.yaml; a program run from its build tree without one there uses the source
// tree's common/catalog/models.yaml (install_dirs.h).
std::string default_catalog_path();

}  // namespace benchfleet
