// HTTP message types shared by the server, the router, handlers and tests.
#pragma once

#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

namespace benchfleet::http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// A response with the request's HTTP version and keep-alive choice, `content_type` and `body`.
inline Response make_response(boost::beast::http::status status, std::string body, std::string_view content_type,
                              const Request& req) {
  Response res{status, req.version()};
  res.set(boost::beast::http::field::content_type, content_type);
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// Serializes `body` as JSON (invalid UTF-8 in strings is replaced, never thrown on).
inline Response json_response(boost::beast::http::status status, const nlohmann::json& body, const Request& req) {
  return make_response(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json",
                       req);
}

inline Response text_response(boost::beast::http::status status, std::string body, const Request& req,
                              std::string_view content_type = "text/plain; charset=utf-8") {
  return make_response(status, std::move(body), content_type, req);
}

}  // namespace benchfleet::http
