#include "common/model_definition.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <utility>

#include "common/display_text.h"

namespace benchfleet {
namespace {

// Every key a definition may hold; which source takes which is kSourceKeys' business.
const std::set<std::string, std::less<>> kKeys = {"id",      "source", "task",         "name",    "architecture",
                                                  "hub_id",  "config", "config_class", "path",    "artifact",
                                                  "factory", "inputs", "outputs",      "formats", "allow_pickle"};
// The keys each source takes beyond id, source, task, name, inputs, formats and allow_pickle.
struct SourceKeys {
  std::string_view source;
  std::set<std::string, std::less<>> keys;
};
const std::array<SourceKeys, 5> kSourceKeys = {{
    {"huggingface", {"architecture", "hub_id", "config", "config_class", "path", "artifact", "outputs"}},
    {"torchvision", {"architecture", "path", "artifact", "outputs"}},
    {"timm", {"architecture", "path", "artifact", "outputs"}},
    {"python", {"factory", "path", "artifact"}},
    {"exported", {"path", "artifact"}},
}};
const std::set<std::string, std::less<>> kCommonKeys = {"id",     "source",  "task",        "name",
                                                        "inputs", "formats", "allow_pickle"};
const std::set<std::string, std::less<>> kFormats = {"torchscript", "torchscript-frozen", "aotinductor"};
const std::set<std::string, std::less<>> kTensorDtypes = {"float32", "float16", "bfloat16", "int64", "int32", "bool"};

std::string at(const std::string& field, std::string_view key) {
  return field.empty() ? std::string(key) : field + "." + std::string(key);
}

// The field in Error::field; a problem document or Error::describe() puts it before the message.
Error bad(const std::string& field, std::string_view key, std::string message) {
  return Error::invalid(at(field, key), std::move(message));
}

bool id_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' || c == '/';
}

std::optional<std::string> id_problem(std::string_view id) {
  if (id.empty()) return "must not be empty";
  if (id.size() > kMaxModelIdBytes) return "longer than " + std::to_string(kMaxModelIdBytes) + " bytes";
  if (std::isalnum(static_cast<unsigned char>(id.front())) == 0) return "must start with a letter or a digit";
  if (!std::all_of(id.begin(), id.end(), id_char)) {
    return "may hold only letters, digits and . _ - / (an id names a model in URLs, files and series)";
  }
  if (id.find("..") != std::string_view::npos || id.find("//") != std::string_view::npos || id.back() == '/') {
    return "must not hold \"..\" or \"//\" or end with '/'";
  }
  return std::nullopt;
}

// A non-empty string under the display-text rule, or the error naming `key`.
Result<std::string> text_member(const nlohmann::json& d, const std::string& field, std::string_view key,
                                std::size_t max_bytes = 1024) {
  const auto& v = d.at(std::string(key));
  if (!v.is_string()) return bad(field, key, "must be a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (auto why = display_name_problem(s, max_bytes)) return bad(field, key, *why);
  return s;
}

Status check_path(const std::string& s, const std::string& field,
                  const std::optional<std::vector<std::string>>& roots) {
  namespace fs = std::filesystem;
  const fs::path p(s);
  if (!p.is_absolute()) return bad(field, "path", "must be absolute (a path on the agents)");
  for (const auto& part : p) {
    if (part == "..") return bad(field, "path", "must not hold \"..\"");
  }
  if (!roots) return Status::Ok();
  const fs::path normal = p.lexically_normal();
  for (const std::string& root : *roots) {
    const fs::path r = fs::path(root).lexically_normal();
    auto [root_end, path_it] = std::mismatch(r.begin(), r.end(), normal.begin(), normal.end());
    // A trailing separator makes an empty last element: "/srv/models/" is under "/srv/models".
    if (root_end == r.end() || (std::next(root_end) == r.end() && root_end->empty())) return Status::Ok();
  }
  std::string message = "is under none of the coordinator's model_roots (";
  if (roots->empty()) message += "none configured: set model_roots to allow paths on the agents";
  for (std::size_t i = 0; i < roots->size(); ++i) message += (i > 0 ? ", " : "") + (*roots)[i];
  message += "); upload the file as an artifact instead";
  return bad(field, "path", std::move(message));
}

Status check_factory(const std::string& s, const std::string& field) {
  const std::size_t colon = s.find(':');
  auto identifier = [](std::string_view part) {
    return !part.empty() && std::isdigit(static_cast<unsigned char>(part.front())) == 0 &&
           std::all_of(part.begin(), part.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
  };
  bool ok = colon != std::string::npos && s.find(':', colon + 1) == std::string::npos &&
            identifier(std::string_view(s).substr(colon + 1));
  if (ok) {
    std::string_view module = std::string_view(s).substr(0, colon);
    std::size_t start = 0;
    while (ok) {
      const std::size_t dot = module.find('.', start);
      ok = identifier(module.substr(start, dot == std::string_view::npos ? dot : dot - start));
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
  }
  if (!ok) return bad(field, "factory", "must be \"package.module:function\" (Python identifiers)");
  return Status::Ok();
}

Status check_inputs(const nlohmann::json& v, const std::string& field) {
  if (!v.is_array() || v.empty()) return bad(field, "inputs", "must be a non-empty list of {name, shape, dtype}");
  if (v.size() > 3) return bad(field, "inputs", "at most 3 inputs (the exported forward takes them positionally)");
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string where = "inputs[" + std::to_string(i) + "]";
    const auto& item = v[i];
    if (!item.is_object()) return bad(field, where, "must be an object {name, shape, dtype}");
    for (const auto& [key, value] : item.items()) {
      if (key != "name" && key != "shape" && key != "dtype" && key != "range" && key != "per_image_rows") {
        return bad(field, where + "." + key, "unknown key (allowed: name, shape, dtype, range, per_image_rows)");
      }
    }
    if (!item.contains("name") || !item["name"].is_string() || item["name"].get_ref<const std::string&>().empty()) {
      return bad(field, where + ".name", "must be a non-empty string");
    }
    if (auto why = display_name_problem(item["name"].get_ref<const std::string&>(), 128)) {
      return bad(field, where + ".name", *why);
    }
    const auto shape = item.value("shape", nlohmann::json());
    if (!shape.is_array() || shape.empty() || shape.size() > 8 ||
        !std::all_of(shape.begin(), shape.end(), [](const nlohmann::json& d) {
          return d.is_number_integer() && d.get<std::int64_t>() > 0 && d.get<std::int64_t>() <= 1 << 20;
        })) {
      return bad(field, where + ".shape", "must be 1 to 8 positive integers (per image, without the batch)");
    }
    if (item.contains("dtype") &&
        (!item["dtype"].is_string() || kTensorDtypes.count(item["dtype"].get_ref<const std::string&>()) == 0)) {
      return bad(field, where + ".dtype", "must be one of float32, float16, bfloat16, int64, int32, bool");
    }
    if (item.contains("range")) {
      const auto& r = item["range"];
      if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer() ||
          r[0].get<std::int64_t>() >= r[1].get<std::int64_t>()) {
        return bad(field, where + ".range", "must be [low, high) with low < high");
      }
    }
    if (item.contains("per_image_rows") &&
        (!item["per_image_rows"].is_number_integer() || item["per_image_rows"].get<std::int64_t>() != shape[0])) {
      return bad(field, where + ".per_image_rows", "must equal shape[0]");
    }
  }
  return Status::Ok();
}

Status check_name_list(const nlohmann::json& v, const std::string& field, std::string_view key,
                       const std::set<std::string, std::less<>>* allowed) {
  if (!v.is_array()) return bad(field, key, "must be a list of strings");
  for (const auto& item : v) {
    if (!item.is_string()) return bad(field, key, "must be a list of strings");
    const std::string& s = item.get_ref<const std::string&>();
    if (auto why = display_name_problem(s, 128)) return bad(field, key, *why);
    if (allowed != nullptr && allowed->count(s) == 0) {
      return bad(field, key, "unknown format '" + s + "' (torchscript, torchscript-frozen, aotinductor)");
    }
  }
  return Status::Ok();
}

std::string default_task(std::string_view source) {
  return source == "torchvision" || source == "timm" ? "Image Classification" : "Model";
}

nlohmann::json default_formats(std::string_view source) {
  if (source == "python") return nlohmann::json::array();
  if (source == "exported") return nlohmann::json::array({"aotinductor"});
  return nlohmann::json::array({"torchscript", "torchscript-frozen", "aotinductor"});
}

}  // namespace

bool is_digest(std::string_view text) {
  if (text.size() != kDigestPrefix.size() + 64 || text.substr(0, kDigestPrefix.size()) != kDigestPrefix) return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(kDigestPrefix.size()), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::vector<std::string> artifacts_of(const nlohmann::json& definition) {
  std::vector<std::string> out;
  if (definition.is_object() && definition.contains("artifact") && definition["artifact"].is_string()) {
    out.push_back(definition["artifact"].get<std::string>());
  }
  return out;
}

Result<CatalogModel> check_model_definition(const nlohmann::json& definition, const std::string& field,
                                            const std::optional<std::vector<std::string>>& path_roots) {
  if (!definition.is_object()) return Error::invalid(field, "must be an object (a model definition)");
  for (const auto& [key, value] : definition.items()) {
    if (kKeys.count(key) == 0) {
      return bad(field, key,
                 "unknown key (docs/models.md lists them: id, source, task, name, architecture, "
                 "hub_id, config, config_class, path, artifact, factory, inputs, outputs, formats, "
                 "allow_pickle)");
    }
  }
  for (std::string_view key : {"id", "source"}) {
    if (!definition.contains(std::string(key))) return bad(field, key, "is required");
  }
  CatalogModel m;
  BF_ASSIGN_OR_RETURN(m.id, text_member(definition, field, "id", kMaxModelIdBytes));
  if (auto why = id_problem(m.id)) return bad(field, "id", *why);
  BF_ASSIGN_OR_RETURN(m.source, text_member(definition, field, "source"));
  const auto source =
      std::find_if(kSourceKeys.begin(), kSourceKeys.end(), [&](const SourceKeys& s) { return s.source == m.source; });
  if (source == kSourceKeys.end()) {
    return bad(field, "source",
               "unknown source '" + m.source + "' (huggingface, torchvision, timm, python or exported)");
  }
  for (const auto& [key, value] : definition.items()) {
    if (kCommonKeys.count(key) == 0 && source->keys.count(key) == 0) {
      return bad(field, key, "a " + m.source + " model takes no '" + key + "'");
    }
  }
  for (std::string_view key : {"architecture", "hub_id", "config_class", "task", "name"}) {
    if (!definition.contains(std::string(key))) continue;
    if (auto checked = text_member(definition, field, key, 256); !checked.ok()) return checked.error();
  }
  nlohmann::json out = definition;
  m.task = definition.contains("task") ? definition["task"].get<std::string>() : default_task(m.source);
  m.name = definition.contains("name") ? definition["name"].get<std::string>() : m.id.substr(m.id.rfind('/') + 1);
  m.architecture = definition.value("architecture", std::string());
  out["task"] = m.task;
  out["name"] = m.name;

  if (definition.contains("path")) {
    if (!definition["path"].is_string()) return bad(field, "path", "must be a string");
    const auto& p = definition["path"].get_ref<const std::string&>();
    if (auto why = display_text_problem(p, 4096)) return bad(field, "path", *why);
    BF_RETURN_IF_ERROR(check_path(p, field, path_roots));
  }
  if (definition.contains("artifact") &&
      (!definition["artifact"].is_string() || !is_digest(definition["artifact"].get_ref<const std::string&>()))) {
    return bad(field, "artifact",
               "must be \"sha256:\" and 64 lower-case hex digits (POST /api/v1/artifacts answers it)");
  }
  if (definition.contains("path") && definition.contains("artifact")) {
    return bad(field, "artifact", "give either path or artifact, not both");
  }
  if (definition.contains("config") && !definition["config"].is_object()) {
    return bad(field, "config", "must be an object (the hyperparameters of a config.json)");
  }
  if (definition.contains("allow_pickle") && !definition["allow_pickle"].is_boolean()) {
    return bad(field, "allow_pickle", "must be true or false");
  }
  if (definition.contains("inputs")) BF_RETURN_IF_ERROR(check_inputs(definition["inputs"], field));
  if (definition.contains("outputs")) {
    BF_RETURN_IF_ERROR(check_name_list(definition["outputs"], field, "outputs", nullptr));
  }
  if (definition.contains("formats")) {
    BF_RETURN_IF_ERROR(check_name_list(definition["formats"], field, "formats", &kFormats));
  } else {
    out["formats"] = default_formats(m.source);
  }

  const bool located = definition.contains("path") || definition.contains("artifact");
  if (m.source == "huggingface") {
    const int given = static_cast<int>(definition.contains("hub_id")) + static_cast<int>(located) +
                      static_cast<int>(definition.contains("config"));
    if (given != 1) {
      return bad(field, "source", "a huggingface model needs exactly one of hub_id, path, artifact and config");
    }
    if (definition.contains("config") && m.architecture.empty()) {
      return bad(field, "architecture", "is required with config (the transformers model class)");
    }
    if (definition.contains("config_class") && !definition.contains("config")) {
      return bad(field, "config_class", "goes with config only (a checkpoint's config.json names its class)");
    }
  } else if (m.source == "torchvision" || m.source == "timm") {
    if (m.architecture.empty()) {
      return bad(field, "architecture",
                 m.source == "torchvision" ? "is required (a builder of torchvision.models.list_models())"
                                           : "is required (a name of timm.list_models())");
    }
  } else if (m.source == "python") {
    if (!definition.contains("factory") || !definition["factory"].is_string()) {
      return bad(field, "factory", "is required (\"package.module:function\")");
    }
    BF_RETURN_IF_ERROR(check_factory(definition["factory"].get<std::string>(), field));
  } else if (m.source == "exported" && !located) {
    return bad(field, "source", "an exported model needs path or artifact (a torch.export .pt2 archive)");
  }
  m.definition = std::move(out);
  return m;
}

}  // namespace benchfleet
