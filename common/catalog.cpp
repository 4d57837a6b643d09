#include "common/catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "common/install_dirs.h"
#include "common/model_definition.h"
#include "common/suggest.h"

namespace benchfleet {
namespace {

// "origin:line:column: " with 1-based positions, as compilers print them.
std::string where(std::string_view origin, const YAML::Mark& mark) {
  std::string out(origin);
  if (!mark.is_null()) {
    out += ':';
    out += std::to_string(mark.line + 1);
    out += ':';
    out += std::to_string(mark.column + 1);
  }
  out += ": ";
  return out;
}

Error invalid_at(std::string field, std::string_view origin, const YAML::Mark& mark, std::string_view message) {
  std::string text = where(origin, mark);
  text += message;
  return Error::invalid(std::move(field), std::move(text));
}

std::string entry_path(std::size_t index) {
  std::string path = "models[";
  path += std::to_string(index);
  path += ']';
  return path;
}

std::string key_path(std::size_t index, std::string_view key) {
  std::string path = entry_path(index);
  path += '.';
  path += key;
  return path;
}

// Types a plain YAML scalar the way YAML's core schema would (ints, floats, booleans);
// anything else, and every quoted scalar, stays a string.
nlohmann::json scalar_to_json(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() != "?") return text;  // quoted ("!") or explicitly tagged
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(first, last, i); ec == std::errc() && p == last) return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(first, last, d, std::chars_format::general);
      ec == std::errc() && p == last && std::isfinite(d)) {
    return d;
  }
  return text;
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(node);
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

// Reads one `models:` entry by the rule of every model definition; returns the first problem.
Result<CatalogModel> parse_entry(const YAML::Node& node, std::size_t index, std::string_view origin) {
  if (!node.IsMap()) {
    return invalid_at(entry_path(index), origin, node.Mark(), "expected a mapping (a model definition)");
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      return invalid_at(entry_path(index), origin, kv.first.Mark(), "keys must be strings");
    }
    if (!seen.insert(kv.first.Scalar()).second) {
      return invalid_at(key_path(index, kv.first.Scalar()), origin, kv.first.Mark(), "duplicate key");
    }
  }
  Result<CatalogModel> model = check_model_definition(yaml_to_json(node), entry_path(index));
  if (!model) {
    // The key's own position where the message names one.
    const std::string& field = model.error().field;
    const std::string key = field.substr(std::min(field.size(), entry_path(index).size() + 1));
    const std::string top = key.substr(0, key.find_first_of(".["));
    YAML::Mark mark = node.Mark();
    for (const auto& kv : node) {
      if (kv.first.Scalar() == top) mark = kv.first.Mark();
    }
    return invalid_at(field, origin, mark, field + ": " + model.error().message);
  }
  return model;
}

}  // namespace

std::string CatalogModel::key() const { return version <= 1 ? id : id + "@" + std::to_string(version); }

std::string CatalogModel::display_name() const {
  std::string out = task;
  out += '/';
  out += name;
  if (version > 1) out += " (v" + std::to_string(version) + ")";
  return out;
}

Result<Catalog> Catalog::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string message = "cannot read model catalog ";
    message += path;
    message += ": ";
    message += std::strerror(errno);
    return Error::not_found(std::move(message));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Result<Catalog> Catalog::parse(std::string_view yaml_text, std::string_view origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    // e.msg omits the position that e.what() embeds; we print it in our own format.
    std::string message = "malformed YAML: ";
    message += e.msg;
    return invalid_at("", origin, e.mark, message);
  }

  if (!root.IsMap()) {
    return invalid_at("", origin, root.Mark(), "expected a mapping with a 'models' list");
  }
  for (const auto& kv : root) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != "models") {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      std::string message = "unknown top-level key '";
      message += key;
      message += "' (allowed: models)";
      return invalid_at(std::move(key), origin, kv.first.Mark(), message);
    }
  }
  const YAML::Node list = root["models"];
  if (!list) return invalid_at("models", origin, root.Mark(), "required key is missing");
  if (!list.IsSequence() || list.size() == 0) {
    return invalid_at("models", origin, list.Mark(), "expected a non-empty list of models");
  }

  std::vector<CatalogModel> models;
  models.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    Result<CatalogModel> model = parse_entry(list[i], i, origin);
    if (!model) return model.error();
    for (std::size_t j = 0; j < models.size(); ++j) {
      if (models[j].id == model->id) {
        std::string message = "duplicate id '";
        message += model->id;
        message += "' (first at ";
        message += entry_path(j);
        message += ')';
        return invalid_at(key_path(i, "id"), origin, list[i]["id"].Mark(), message);
      }
    }
    models.push_back(std::move(model).value());
  }
  return Catalog(std::move(models));
}

const CatalogModel* Catalog::find(std::string_view key) const {
  const std::size_t i = index_of(key);
  return i == npos ? nullptr : &models_[i];
}

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Whether `id` ends with `given` (without case) right after one of `boundaries`, or is it.
bool ends_with_part(std::string_view id, std::string_view given, std::string_view boundaries) {
  if (given.empty() || given.size() > id.size()) return false;
  const std::size_t start = id.size() - given.size();
  if (start > 0 && boundaries.find(id[start - 1]) == std::string_view::npos) return false;
  for (std::size_t i = 0; i < given.size(); ++i) {
    if (lower(id[start + i]) != lower(given[i])) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> Catalog::ids_matching(std::string_view given) const {
  if (find(given) != nullptr && given.find('@') != std::string_view::npos) return {std::string(given)};
  for (const CatalogModel& m : models_) {
    if (m.current && m.id == given) return {m.key()};
  }
  // A whole name after the '/' first ("resnet-50" is microsoft/resnet-50, not also
  // facebook/detr-resnet-50), then a trailing part of one.
  std::vector<std::string> matches;
  for (std::string_view boundaries : {std::string_view("/"), std::string_view("/-_")}) {
    for (const CatalogModel& m : models_) {
      if (m.current && ends_with_part(m.id, given, boundaries)) matches.push_back(m.key());
    }
    if (!matches.empty()) break;
  }
  return matches;
}

Result<std::string> Catalog::resolve_id(std::string_view given, const std::string& field) const {
  const std::vector<std::string> matches = ids_matching(given);
  if (matches.size() == 1) return matches.front();
  std::vector<std::string> ids;
  for (const CatalogModel& m : models_) {
    if (m.current) ids.push_back(m.id);
  }
  std::string message = (matches.empty() ? "unknown model \"" : "ambiguous model \"") + std::string(given) + "\"";
  if (matches.empty()) {
    // The nearest by the part after the last '/' as well as by the whole id.
    std::vector<std::string> names;
    for (const std::string& id : ids) names.push_back(id.substr(id.rfind('/') + 1));
    std::string hint = did_you_mean(given, ids);
    if (hint.empty()) {
      if (auto near = nearest_word(given, names)) {
        hint = " (did you mean \"" +
               ids[static_cast<std::size_t>(std::find(names.begin(), names.end(), *near) - names.begin())] + "\"?)";
      }
    }
    message += " (not in the model catalog" + hint + "; GET /api/v1/models or `benchfleet models` lists the ids)";
  } else {
    message += ": it ends " + std::to_string(matches.size()) + " catalog ids (";
    for (std::size_t i = 0; i < matches.size(); ++i) message += (i > 0 ? ", " : "") + matches[i];
    message += "); name one in full";
  }
  return Error::invalid(field, std::move(message));
}

std::size_t Catalog::index_of(std::string_view key) const {
  // Linear: catalogs hold tens of models, a fleet's registry hundreds.
  for (std::size_t i = 0; i < models_.size(); ++i) {
    const CatalogModel& m = models_[i];
    if (m.version <= 1 ? m.id == key
                       : key.size() > m.id.size() && key.substr(0, m.id.size()) == m.id && m.key() == key) {
      return i;
    }
  }
  return npos;
}

std::string default_catalog_path() {
  if (const char* env = std::getenv("BENCHFLEET_CATALOG"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::filesystem::path exe = running_executable();
  const std::filesystem::path installed = installed_share_dir(exe) / "catalog" / "models.yaml";
  if (std::error_code ec; !std::filesystem::exists(installed, ec)) {
    if (const auto tree = build_tree_of(exe)) return (tree->source_dir / "common" / "catalog" / "models.yaml").string();
  }
  return installed.string();
}

}  // namespace benchfleet
