// Path and query parameters as the handlers read them, each value checked, errors naming
// "path.<name>" or "query.<name>". Pure: the request readers the fuzz targets reach use it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/router.h"
#include "common/result.h"

namespace benchfleet::api {

// The whole of `text` as a decimal integer (no sign other than '-', no spaces).
bool parse_int64(std::string_view text, std::int64_t& out);
// A positive integer path parameter; "path.<name>" in errors.
Result<std::int64_t> id_param(const http::RouteMatch& match, std::string_view name);
// An optional integer query parameter within [min, max]; "query.<name>" in errors.
Result<std::optional<std::int64_t>> int_query(const http::RouteMatch& match, std::string_view name, std::int64_t min,
                                              std::int64_t max);
std::optional<std::string> str_query(const http::RouteMatch& match, std::string_view name);
// An optional true/false query parameter (false when absent); anything else is refused naming
// "query.<name>".
Result<bool> bool_query(const http::RouteMatch& match, std::string_view name);

// The cell axes a listing filters on, from its query (?model, mode, dtype, runtime, gpu, build,
// batch), each value checked ("query.<name>" in errors): the one parse of the results and the
// series listings.
struct CellQuery {
  std::optional<std::string> model, mode, dtype, runtime, gpu, torch_build;
  std::optional<int> batch;
};
Result<CellQuery> cell_query(const http::RouteMatch& match);

}  // namespace benchfleet::api
