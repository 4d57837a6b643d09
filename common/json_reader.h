// Validating JSON -> C++ decoding. Every error names the JSON path of the offending field
// ("measurement.min_iterations", "models[2]"), so HTTP and file errors tell users what to fix.
//
// Usage (see codecs.cpp):
//   JsonReader r(json, path);
//   r.required("name", spec.name);
//   r.optional("priority", spec.priority);
//   r.check(spec.priority >= 0, "priority", "must be >= 0");
//   if (auto s = r.finish(); !s) return s.error();
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace benchfleet {

// Parses `text` as JSON, refusing nesting deeper than `max_depth` before building the tree.
Result<nlohmann::json> parse_json(std::string_view text, int max_depth = 32);

// "a" + "b" -> "a.b"; "" + "b" -> "b".
std::string join_path(std::string_view parent, std::string_view key);

// Value decoders: return an Error naming `path` when `j` has the wrong type or range.
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, bool& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, int& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, std::int64_t& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, double& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, std::string& out);
// Any JSON object (used for free-form maps such as the environment fingerprint).
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, nlohmann::json& out);

template <class T>
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, std::vector<T>& out) {
  if (!j.is_array()) return Error::invalid(path, "must be an array");
  out.clear();
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    T item{};
    if (auto err = decode_value(j[i], path + "[" + std::to_string(i) + "]", item)) return err;
    out.push_back(std::move(item));
  }
  return std::nullopt;
}

template <class T>
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, std::optional<T>& out) {
  if (j.is_null()) {
    out.reset();
    return std::nullopt;
  }
  T value{};
  if (auto err = decode_value(j, path, value)) return err;
  out = std::move(value);
  return std::nullopt;
}

// Reads the members of one JSON object. Keeps the first error; later calls are no-ops.
class JsonReader {
 public:
  // `path` is where this object sits in the document ("" for the root).
  JsonReader(const nlohmann::json& object, std::string path);

  JsonReader(const JsonReader&) = delete;
  JsonReader& operator=(const JsonReader&) = delete;

  // Missing member -> "is required", or, when the object has a member no reader call asked
  // for that looks like a misspelling of it, "<that member>: is not a known field (did you mean
  // "<key>"?)". Told at finish(), once every field is known; checks are skipped until then.
  template <class T>
  void required(std::string_view key, T& out) {
    if (error_) return;
    seen_.emplace(key);
    auto it = object_.find(std::string(key));
    if (it == object_.end()) {
      if (!missing_) missing_ = std::string(key);
      return;
    }
    if (auto err = decode_value(*it, join_path(path_, key), out)) error_ = std::move(err);
  }

  // Missing member leaves `out` as it was (its default).
  template <class T>
  void optional(std::string_view key, T& out) {
    if (error_) return;
    seen_.emplace(key);
    auto it = object_.find(std::string(key));
    if (it == object_.end()) return;
    if (auto err = decode_value(*it, join_path(path_, key), out)) error_ = std::move(err);
  }

  // Records "<path>.<key>: <message>" unless `condition` holds.
  void check(bool condition, std::string_view key, std::string message);

  // Path of a member of this object, for errors found after reading.
  std::string path_of(std::string_view key) const { return join_path(path_, key); }

  bool failed() const { return error_.has_value() || missing_.has_value(); }

  // The first error, or an error for the first member never asked for (unknown field), naming
  // the nearest field asked for when it looks like a misspelling of one.
  Status finish();

 private:
  Error missing(std::string_view key) const;

  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
  std::optional<Error> error_;
  std::optional<std::string> missing_;  // the first required member found missing
};

// Checks a JSON value is an object before reading members from it.
std::optional<Error> expect_object(const nlohmann::json& j, const std::string& path);

// A copy of the object `j` with only the members named in `known` (`j` itself when it is not an
// object, so the reader reports the wrong type): how a reader of another program's answers
// ignores the members it does not know.
nlohmann::json known_members(const nlohmann::json& j, std::initializer_list<std::string_view> known);

}  // namespace benchfleet
