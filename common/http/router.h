// Route table: maps (method, path pattern) to a coroutine handler, like the Boost.URL router
// example. Patterns are literal segments and `{name}` segments that capture one decoded path
// segment: "/api/v1/runs/{id}/report". A fallback may answer the GETs no pattern matches (the
// coordinator serves its dashboard's files that way). HEAD is answered by the GET route.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>

#include "common/http/types.h"

namespace benchfleet::http {

// Route name reported for requests that matched no route (404, 405, malformed target) and for
// requests the server refused before routing (413, 431, 400). Keeps metric labels bounded.
inline constexpr std::string_view kUnmatchedRoute = "unmatched";

// How the fallback's paths appear in RouteMatch::pattern and Router::fallback(): any path,
// one or more segments.
inline constexpr std::string_view kFallbackPattern = "/{path}";

struct RouteMatch {
  std::string route_name;  // as given to Router::add, e.g. "runs.report"
  std::string pattern;     // e.g. "/api/v1/runs/{id}/report"
  std::map<std::string, std::string, std::less<>> params;  // {name} -> percent-decoded segment
  // The whole path, one percent-decoded segment each ("/a/b%2Fc" -> {"a", "b/c"}; "/" -> {}).
  std::vector<std::string> segments;
  // Percent-decoded query parameters ('+' is a space); the first of repeated keys wins and a
  // key without '=' maps to "".
  std::map<std::string, std::string, std::less<>> query;
};

// `req` and `match` stay valid until the returned awaitable completes. A handler may throw:
// the router answers 500 and logs the exception.
using Handler =
    std::function<boost::asio::awaitable<Response>(const Request& req, const RouteMatch& match)>;

struct RouteInfo {
  boost::beast::http::verb method;
  std::string pattern;
  std::string name;
};

// Thread safety: add() all routes before serving; dispatch() and routes() are then safe to call
// from many threads at once.
class Router {
 public:
  Router() = default;
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Throws std::invalid_argument for a malformed pattern (not starting with '/', a '{' that does
  // not span a whole segment, a repeated parameter name) or a (method, pattern) already added.
  void add(boost::beast::http::verb method, std::string_view pattern, std::string name,
           Handler handler);

  // Answers GET and HEAD requests whose path matches no route's pattern (for any method), with
  // RouteMatch::pattern kFallbackPattern. Replaces an earlier fallback.
  void set_fallback(std::string name, Handler handler);

  // Every route in insertion order, e.g. to check the OpenAPI document covers them all.
  std::vector<RouteInfo> routes() const;
  // The fallback as {GET, kFallbackPattern, name}; nullopt when none is set.
  std::optional<RouteInfo> fallback() const;

  // Picks the route whose pattern matches the path and method; where several patterns match,
  // a literal segment beats a parameter at the first segment where they differ. HEAD uses the
  // GET route when no HEAD route matches (the server then sends the headers only).
  // Unknown path -> the fallback for GET/HEAD if set, else 404 problem; known path, other
  // method -> 405 problem with `Allow`; a target that is not a valid origin-form URL -> 400
  // problem; a handler that throws -> 500.
  boost::asio::awaitable<Response> dispatch(const Request& req) const;

  // As above, also setting `route_name` to the matched route's name or kUnmatchedRoute.
  // REQUIRES: `route_name` outlives the returned awaitable.
  boost::asio::awaitable<Response> dispatch(const Request& req, std::string& route_name) const;

 private:
  struct Segment {
    std::string text;  // literal text, or the parameter name
    bool is_param = false;
  };
  struct Route {
    boost::beast::http::verb method;
    std::string pattern;
    std::string name;
    std::vector<Segment> segments;
    Handler handler;
  };

  static bool match_path(const Route& route, const std::vector<std::string>& path,
                         RouteMatch& match);
  static bool more_specific(const Route& a, const Route& b);

  std::vector<Route> routes_;
  std::string fallback_name_;
  Handler fallback_;
};

}  // namespace benchfleet::http
