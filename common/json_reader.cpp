#include "common/json_reader.h"

#include <limits>

#include "common/suggest.h"

namespace benchfleet {
namespace {

constexpr std::size_t kMaxStringBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxErrorBytes = 400;  // of a parser's message quoted in an Error

std::string type_name(const nlohmann::json& j) { return j.type_name(); }

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text, int max_depth) {
  // Depth scan first: nlohmann's parser is recursive, so bound the recursion before it runs.
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return Error::invalid("", "JSON nesting is deeper than " + std::to_string(max_depth) + " levels");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann quotes the token it failed in ("last read: '...'"), which may be most of the
    // text: an unterminated string of a 16 MiB body would come back whole in the answer.
    std::string what = e.what();
    if (what.size() > kMaxErrorBytes) {
      const std::size_t elided = what.size() - kMaxErrorBytes;
      what = what.substr(0, kMaxErrorBytes - 100) + "[... " + std::to_string(elided) + " bytes elided ...]" +
             what.substr(what.size() - 100);
    }
    return Error::invalid("", "malformed JSON: " + what);
  }
}

std::string join_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string out(parent);
  out += '.';
  out += key;
  return out;
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, bool& out) {
  if (!j.is_boolean()) return Error::invalid(path, "must be a boolean, got " + type_name(j));
  out = j.get<bool>();
  return std::nullopt;
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, std::int64_t& out) {
  if (j.is_number_unsigned()) {
    auto v = j.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Error::invalid(path, "is out of range");
    }
    out = static_cast<std::int64_t>(v);
    return std::nullopt;
  }
  if (j.is_number_integer()) {
    out = j.get<std::int64_t>();
    return std::nullopt;
  }
  return Error::invalid(path, "must be an integer, got " + type_name(j));
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, int& out) {
  std::int64_t wide = 0;
  if (auto err = decode_value(j, path, wide)) return err;
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    return Error::invalid(path, "is out of range");
  }
  out = static_cast<int>(wide);
  return std::nullopt;
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, double& out) {
  if (!j.is_number()) return Error::invalid(path, "must be a number, got " + type_name(j));
  out = j.get<double>();
  if (!std::isfinite(out)) return Error::invalid(path, "must be finite");
  return std::nullopt;
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, std::string& out) {
  if (!j.is_string()) return Error::invalid(path, "must be a string, got " + type_name(j));
  const auto& s = j.get_ref<const std::string&>();
  if (s.size() > kMaxStringBytes) return Error::invalid(path, "is longer than 65536 bytes");
  out = s;
  return std::nullopt;
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, nlohmann::json& out) {
  if (!j.is_object()) return Error::invalid(path, "must be an object, got " + type_name(j));
  out = j;
  return std::nullopt;
}

std::optional<Error> expect_object(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) {
    return Error::invalid(path, std::string("must be an object, got ") + j.type_name());
  }
  return std::nullopt;
}

nlohmann::json known_members(const nlohmann::json& j, std::initializer_list<std::string_view> known) {
  if (!j.is_object()) return j;
  nlohmann::json out = nlohmann::json::object();
  for (std::string_view key : known) {
    auto it = j.find(std::string(key));
    if (it != j.end()) out[std::string(key)] = *it;
  }
  return out;
}

JsonReader::JsonReader(const nlohmann::json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (auto err = expect_object(object_, path_)) error_ = std::move(err);
}

void JsonReader::check(bool condition, std::string_view key, std::string message) {
  if (error_ || missing_ || condition) return;
  error_ = Error::invalid(join_path(path_, key), std::move(message));
}

Error JsonReader::missing(std::string_view key) const {
  for (const auto& [member, value] : object_.items()) {
    if (seen_.contains(member)) continue;
    if (nearest_word(member, {std::string(key)})) {
      return Error::invalid(join_path(path_, member),
                            "is not a known field (did you mean \"" + std::string(key) + "\"?)");
    }
  }
  return Error::invalid(join_path(path_, key), "is required");
}

Status JsonReader::finish() {
  if (error_) return *error_;
  if (missing_) return missing(*missing_);
  const std::vector<std::string> known(seen_.begin(), seen_.end());
  for (const auto& [key, value] : object_.items()) {
    if (!seen_.contains(key))
      return Error::invalid(join_path(path_, key), "is not a known field" + did_you_mean(key, known));
  }
  return Status::Ok();
}

}  // namespace benchfleet
