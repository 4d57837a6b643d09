#include "cli/matrix_file.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <regex>

#include "common/codecs.h"
#include "common/json_reader.h"

namespace benchfleet::cli {
namespace {

constexpr std::size_t kMaxFileBytes = 4 << 20;
constexpr int kMaxDepth = 32;

// "line <n>: <message>" as an invalid-argument Error without a field.
Error at_line(int line, std::string message) {
  return Error::invalid("", "line " + std::to_string(line) + ": " + std::move(message));
}

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

// A plain (unquoted, untagged) scalar under YAML 1.2's core schema.
Result<nlohmann::json> plain_scalar(const std::string& text, int line) {
  static const std::regex kNull("null|Null|NULL|~|");
  static const std::regex kTrue("true|True|TRUE");
  static const std::regex kFalse("false|False|FALSE");
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  static const std::regex kSpecial("[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (std::regex_match(text, kNull)) return nlohmann::json(nullptr);
  if (std::regex_match(text, kTrue)) return nlohmann::json(true);
  if (std::regex_match(text, kFalse)) return nlohmann::json(false);
  if (std::regex_match(text, kInt)) {
    std::int64_t v = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return at_line(line, "integer " + text + " is out of range");
    }
    return nlohmann::json(v);
  }
  if (std::regex_match(text, kFloat)) {
    double v = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
      return at_line(line, "number " + text + " is out of range");
    }
    return nlohmann::json(v);
  }
  if (std::regex_match(text, kSpecial)) return at_line(line, text + " is not a number JSON can carry");
  return nlohmann::json(text);
}

Result<nlohmann::json> convert(const YAML::Node& node, const std::string& path, int depth, JsonDocument& doc) {
  if (depth > kMaxDepth) return at_line(line_of(node), "nested deeper than " + std::to_string(kMaxDepth));
  doc.lines.emplace(path, line_of(node));
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nlohmann::json(nullptr);
    case YAML::NodeType::Scalar: {
      // yaml-cpp tags plain scalars "?" and quoted ones "!"; anything else is an explicit tag.
      const std::string& tag = node.Tag();
      if (tag == "?") return plain_scalar(node.Scalar(), line_of(node));
      if (tag == "!" || tag == "tag:yaml.org,2002:str") return nlohmann::json(node.Scalar());
      return at_line(line_of(node), "tag " + tag + " is not supported");
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      std::size_t i = 0;
      for (const YAML::Node& item : node) {
        BF_ASSIGN_OR_RETURN(auto value, convert(item, path + "[" + std::to_string(i++) + "]", depth + 1, doc));
        out.push_back(std::move(value));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) return at_line(line_of(kv.first), "mapping keys must be strings");
        const std::string key = kv.first.Scalar();
        if (out.contains(key)) return at_line(line_of(kv.first), "duplicate key \"" + key + "\"");
        BF_ASSIGN_OR_RETURN(auto value, convert(kv.second, join_path(path, key), depth + 1, doc));
        // A key with no value has no mark of its own; point at the key.
        if (kv.second.IsNull()) doc.lines[join_path(path, key)] = line_of(kv.first);
        out[key] = std::move(value);
      }
      return out;
    }
  }
  return at_line(line_of(node), "unsupported YAML node");
}

}  // namespace

int JsonDocument::line_of(std::string_view path) const {
  std::string p(path);
  while (true) {
    if (auto it = lines.find(p); it != lines.end()) return it->second;
    if (p.empty()) return 0;
    // Strip the last component: "a.b[2]" -> "a.b" -> "a" -> "".
    const std::size_t cut = p.find_last_of(".[");
    p.resize(cut == std::string::npos ? 0 : cut);
  }
}

Result<JsonDocument> yaml_to_json(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return at_line(e.mark.line + 1, e.msg);
  }
  JsonDocument doc;
  BF_ASSIGN_OR_RETURN(doc.json, convert(root, "", 0, doc));
  return doc;
}

Result<MatrixFile> parse_matrix(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  auto doc = yaml_to_json(text);
  if (!doc.ok()) return Error::invalid("", where + ": " + doc.error().message);
  if (!doc->json.is_object()) {
    return Error::invalid("", where + ": a matrix file must be a mapping (name, models, batch_sizes, ...)");
  }
  auto spec = decode<MatrixSpec>(doc->json);
  if (!spec.ok()) {
    const Error& e = spec.error();
    return Error::invalid(e.field, where + ": line " + std::to_string(doc->line_of(e.field)) + ": " + e.describe());
  }
  MatrixFile out;
  out.job_count = spec->models.size() * spec->batch_sizes.size() * spec->modes.size() * spec->torch_builds.size() *
                  spec->gpus.size() * spec->runtimes.size() * spec->dtypes.size() *
                  static_cast<std::size_t>(spec->repetitions);
  out.spec = std::move(spec).value();
  out.document = std::move(doc).value();
  return out;
}

Result<MatrixFile> load_matrix_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::invalid("", "cannot read matrix file " + path);
  std::string text;
  text.resize(kMaxFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxFileBytes) return Error::invalid("", path + ": larger than 4 MiB");
  return parse_matrix(text, path);
}

}  // namespace benchfleet::cli
