// RFC 9457 problem details (application/problem+json): every error response of the API.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/http/types.h"
#include "common/result.h"

namespace benchfleet::http {

inline constexpr std::string_view kProblemContentType = "application/problem+json";

// Body {"type", "title", "status", "detail", ...extra}. "type" is "about:blank" unless `extra`
// carries a "type" URI; other members of `extra` (an object, or null for none) are added as
// extension members but never replace title/status/detail. Version and keep-alive follow `req`.
Response problem(boost::beast::http::status status, std::string_view title, std::string_view detail, const Request& req,
                 nlohmann::json extra = {});

// invalid->400, not_found->404, conflict->409, unauthenticated->401, permission_denied->403,
// payload_too_large->413, unavailable->503, internal->500.
boost::beast::http::status status_for(ErrorCode code);

// The problem for an Error: title is the status's reason phrase, detail is error.describe()
// ("measurement.min_iterations: must be >= 1") and a non-empty field is also given as the
// extension member "field". 401 carries "WWW-Authenticate: Bearer". Internal errors are logged
// and answered with a generic detail, so storage messages do not leak to clients.
Response problem_from_error(const Error& error, const Request& req);

}  // namespace benchfleet::http
