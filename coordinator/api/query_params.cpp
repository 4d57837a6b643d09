#include "coordinator/api/query_params.h"

#include <charconv>

#include "common/codecs.h"

namespace benchfleet::api {

bool parse_int64(std::string_view text, std::int64_t& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

Result<std::int64_t> id_param(const http::RouteMatch& match, std::string_view name) {
  auto it = match.params.find(name);
  std::int64_t id = 0;
  if (it == match.params.end() || !parse_int64(it->second, id) || id <= 0) {
    return Error::invalid("path." + std::string(name), "must be a positive integer");
  }
  return id;
}

Result<std::optional<std::int64_t>> int_query(const http::RouteMatch& match, std::string_view name, std::int64_t min,
                                              std::int64_t max) {
  auto it = match.query.find(name);
  if (it == match.query.end()) return std::optional<std::int64_t>();
  std::int64_t v = 0;
  if (!parse_int64(it->second, v) || v < min || v > max) {
    return Error::invalid("query." + std::string(name),
                          "must be an integer between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return std::optional<std::int64_t>(v);
}

std::optional<std::string> str_query(const http::RouteMatch& match, std::string_view name) {
  auto it = match.query.find(name);
  if (it == match.query.end()) return std::nullopt;
  return it->second;
}

Result<bool> bool_query(const http::RouteMatch& match, std::string_view name) {
  const auto value = str_query(match, name);
  if (!value || *value == "false") return false;
  if (*value == "true") return true;
  return Error::invalid("query." + std::string(name), "must be true or false");
}

Result<CellQuery> cell_query(const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const auto batch, int_query(m, "batch", 1, 65536));
  CellQuery q;
  q.model = str_query(m, "model");
  q.mode = str_query(m, "mode");
  q.dtype = str_query(m, "dtype");
  q.runtime = str_query(m, "runtime");
  q.gpu = str_query(m, "gpu");
  q.torch_build = str_query(m, "build");
  if (batch) q.batch = static_cast<int>(*batch);
  if (q.mode && !parse_mode(*q.mode)) return Error::invalid("query.mode", "unknown mode");
  if (q.dtype && !parse_dtype(*q.dtype)) return Error::invalid("query.dtype", "unknown dtype");
  if (q.runtime && !parse_runtime(*q.runtime)) return Error::invalid("query.runtime", "unknown runtime");
  return q;
}

}  // namespace benchfleet::api
