#include "agent/worker/accuracy_reference.h"

// ivalue.h before Functions.h: clang (clang-tidy) cannot parse LibTorch 1.13's Functions.h
// after Tensor.h alone (IValue incomplete in ivalue_inl.h); GCC can.
#include <ATen/core/ivalue.h>

#include <ATen/Functions.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "common/json_reader.h"

namespace benchfleet::worker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kField = "accuracy_reference";
// reference.bin holds one model's inputs and outputs; no entry may claim more than this.
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{16} << 30;
constexpr std::size_t kMaxEntries = 256;
constexpr std::size_t kMaxRank = 16;

struct DtypeInfo {
  std::size_t size;
  at::ScalarType type;
};

const std::map<std::string, DtypeInfo, std::less<>>& dtypes() {
  static const std::map<std::string, DtypeInfo, std::less<>> known = {
      {"float64", {8, at::kDouble}},    {"float32", {4, at::kFloat}}, {"float16", {2, at::kHalf}},
      {"bfloat16", {2, at::kBFloat16}}, {"int64", {8, at::kLong}},    {"int32", {4, at::kInt}},
      {"int16", {2, at::kShort}},       {"int8", {1, at::kChar}},     {"uint8", {1, at::kByte}},
      {"bool", {1, at::kBool}}};
  return known;
}

// Reads one entry; `output` entries carry eager_error (required, null allowed).
std::optional<Error> decode_entry(const nlohmann::json& j, const std::string& path, bool output, ReferenceEntry& out) {
  if (auto err = expect_object(j, path)) return err;
  const nlohmann::json known = known_members(j, {"name", "dtype", "shape", "offset", "nbytes", "eager_error"});
  JsonReader r(known, path);
  std::int64_t offset = -1;
  std::int64_t nbytes = -1;
  r.required("name", out.name);
  r.required("dtype", out.dtype);
  r.required("shape", out.shape);
  r.required("offset", offset);
  r.required("nbytes", nbytes);
  if (output) {
    if (!j.contains("eager_error")) {
      r.check(false, "eager_error", "is required");
    } else {
      r.required("eager_error", out.eager_error);
    }
  }
  r.check(!out.name.empty(), "name", "must not be empty");
  r.check(offset >= 0, "offset", "must be >= 0");
  r.check(nbytes >= 0 && static_cast<std::uint64_t>(nbytes) <= kMaxEntryBytes, "nbytes",
          "must be between 0 and 16 GiB");
  r.check(!out.eager_error || (std::isfinite(*out.eager_error) && *out.eager_error >= 0), "eager_error",
          "must be null or a finite number >= 0");
  const auto size = element_size(out.dtype);
  r.check(size.has_value(), "dtype",
          "must be one of float64, float32, float16, bfloat16, int64, int32, int16, "
          "int8, uint8, bool, not '" +
              out.dtype.substr(0, 40) + "'");
  r.check(out.shape.size() <= kMaxRank, "shape", "must have at most 16 dimensions");
  // elements x element size, refusing negative dimensions and overflow.
  std::uint64_t bytes = size.value_or(1);
  bool shape_ok = true;
  for (const std::int64_t dim : out.shape) {
    if (dim < 0) {
      shape_ok = false;
      break;
    }
    if (dim != 0 && bytes > kMaxEntryBytes / static_cast<std::uint64_t>(dim)) {
      shape_ok = false;
      break;
    }
    bytes *= static_cast<std::uint64_t>(dim);
  }
  r.check(shape_ok, "shape", "must hold non-negative dimensions of at most 16 GiB in all");
  if (!r.failed()) {
    out.offset = static_cast<std::uint64_t>(offset);
    out.nbytes = static_cast<std::uint64_t>(nbytes);
    r.check(bytes == out.nbytes, "nbytes",
            "is " + std::to_string(out.nbytes) + ", but the shape's elements x " + std::to_string(size.value_or(0)) +
                " bytes (" + out.dtype + ") make " + std::to_string(bytes));
  }
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

std::optional<Error> decode_entries(const nlohmann::json& j, const std::string& path, bool output,
                                    std::vector<ReferenceEntry>& out) {
  if (!j.is_array()) return Error::invalid(path, "must be an array");
  if (j.size() > kMaxEntries) return Error::invalid(path, "must list at most 256 tensors");
  out.clear();
  for (std::size_t i = 0; i < j.size(); ++i) {
    ReferenceEntry entry;
    if (auto err = decode_entry(j[i], path + "[" + std::to_string(i) + "]", output, entry)) return err;
    out.push_back(std::move(entry));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::size_t> element_size(const std::string& dtype) {
  const auto it = dtypes().find(dtype);
  if (it == dtypes().end()) return std::nullopt;
  return it->second.size;
}

Result<ReferenceLayout> parse_reference_layout(const nlohmann::json& accuracy_reference) {
  if (auto err = expect_object(accuracy_reference, kField)) return *err;
  const auto& j = accuracy_reference;
  ReferenceLayout out;
  const nlohmann::json known = known_members(j, {"file", "eager_deterministic"});
  JsonReader r(known, kField);
  r.required("file", out.file);
  r.required("eager_deterministic", out.eager_deterministic);
  r.check(!out.file.empty() && out.file != "." && out.file != ".." && out.file.find('/') == std::string::npos &&
              out.file.find('\0') == std::string::npos,
          "file", "must be a plain file name beside the artifact");
  if (auto s = r.finish(); !s) return s.error();
  for (const char* key : {"inputs", "outputs"}) {
    const std::string path = std::string(kField) + "." + key;
    if (!j.contains(key)) return Error::invalid(path, "is required");
    const bool output = std::string_view(key) == "outputs";
    if (auto err = decode_entries(j[key], path, output, output ? out.outputs : out.inputs)) return *err;
  }
  if (out.outputs.empty()) return Error::invalid(std::string(kField) + ".outputs", "must list at least one output");
  return out;
}

Status check_layout_fits(const ReferenceLayout& layout, std::uint64_t file_size) {
  const auto fits = [&](const std::vector<ReferenceEntry>& entries, const char* key) -> Status {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      if (e.offset > file_size || e.nbytes > file_size - e.offset) {
        return Error::invalid(std::string(kField) + "." + key + "[" + std::to_string(i) + "]",
                              "bytes " + std::to_string(e.offset) + " + " + std::to_string(e.nbytes) + " lie beyond " +
                                  layout.file + " (" + std::to_string(file_size) + " bytes)");
      }
    }
    return Status::Ok();
  };
  BF_RETURN_IF_ERROR(fits(layout.inputs, "inputs"));
  return fits(layout.outputs, "outputs");
}

Result<Reference> read_reference(const ReferenceLayout& layout, const std::string& dir) {
  const fs::path path = fs::path(dir) / layout.file;
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return Error::invalid(std::string(kField) + ".file", "cannot read " + path.string() + ": " + ec.message());
  BF_RETURN_IF_ERROR(check_layout_fits(layout, size));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::invalid(std::string(kField) + ".file", "cannot open " + path.string());
  const auto read = [&](const ReferenceEntry& e, at::Tensor& out) -> bool {
    out = at::empty(e.shape, at::TensorOptions().dtype(dtypes().find(e.dtype)->second.type));
    if (e.nbytes == 0) return true;
    in.seekg(static_cast<std::streamoff>(e.offset));
    in.read(static_cast<char*>(out.data_ptr()), static_cast<std::streamsize>(e.nbytes));
    return static_cast<bool>(in);
  };
  Reference ref;
  ref.eager_deterministic = layout.eager_deterministic;
  for (const auto& e : layout.inputs) {
    if (!read(e, ref.inputs.emplace_back()))
      return Error::internal("cannot read input " + e.name + " from " + path.string());
  }
  for (const auto& e : layout.outputs) {
    if (!read(e, ref.outputs.emplace_back()))
      return Error::internal("cannot read output " + e.name + " from " + path.string());
  }
  ref.output_entries = layout.outputs;
  return ref;
}

}  // namespace benchfleet::worker
