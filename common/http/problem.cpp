#include "common/http/problem.h"

#include <string>

#include <spdlog/spdlog.h>
#include <boost/beast/http/field.hpp>

namespace benchfleet::http {

namespace bhttp = boost::beast::http;

Response problem(bhttp::status status, std::string_view title, std::string_view detail, const Request& req,
                 nlohmann::json extra) {
  nlohmann::json body = {
      {"type", "about:blank"},
      {"title", title},
      {"status", static_cast<unsigned>(status)},
      {"detail", detail},
  };
  if (extra.is_object()) {
    for (auto& [key, value] : extra.items()) {
      if (key == "type" || !body.contains(key)) body[key] = std::move(value);
    }
  }
  return make_response(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kProblemContentType,
                       req);
}

bhttp::status status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return bhttp::status::bad_request;
    case ErrorCode::kNotFound:
      return bhttp::status::not_found;
    case ErrorCode::kConflict:
      return bhttp::status::conflict;
    case ErrorCode::kUnauthenticated:
      return bhttp::status::unauthorized;
    case ErrorCode::kPermissionDenied:
      return bhttp::status::forbidden;
    case ErrorCode::kPayloadTooLarge:
      return bhttp::status::payload_too_large;
    case ErrorCode::kUnavailable:
      return bhttp::status::service_unavailable;
    case ErrorCode::kInternal:
      return bhttp::status::internal_server_error;
  }
  return bhttp::status::internal_server_error;
}

Response problem_from_error(const Error& error, const Request& req) {
  const bhttp::status status = status_for(error.code);
  const std::string title(bhttp::obsolete_reason(status));
  if (error.code == ErrorCode::kInternal) {
    spdlog::error("internal error answering {} {}: {}", std::string_view(req.method_string()),
                  std::string_view(req.target()), error.describe());
    return problem(status, title, "internal error; see the server log", req);
  }
  nlohmann::json extra = nlohmann::json::object();
  if (!error.field.empty()) extra["field"] = error.field;
  Response res = problem(status, title, error.describe(), req, std::move(extra));
  if (status == bhttp::status::unauthorized) res.set(bhttp::field::www_authenticate, "Bearer");
  return res;
}

}  // namespace benchfleet::http
