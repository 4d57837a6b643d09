// Route table: maps (method, path pattern) to a coroutine handler, like the Boost.URL router
// example. Patterns are literal segments and `{name}` segments that capture one decoded path
// segment: "/api/v1/runs/{id}/report". A fallback may answer the GETs no pattern matches (the
// coordinator serves its dashboard's files that way). HEAD is answered by the GET route.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>

#include "common/http/exchange.h"
#include "common/http/types.h"

namespace benchfleet::http {

// Route name reported for requests that matched no route (404, 405, malformed target) and for
// requests the server refused before routing (413, 431, 400). Keeps metric labels bounded.
inline constexpr std::string_view kUnmatchedRoute = "unmatched";

// How the fallback's paths appear in RouteMatch::pattern and Router::fallback(): any path,
// one or more segments.
inline constexpr std::string_view kFallbackPattern = "/{path}";

struct RouteMatch {
  std::string route_name;                                  // as given to Router::add, e.g. "runs.report"
  std::string pattern;                                     // e.g. "/api/v1/runs/{id}/report"
  std::map<std::string, std::string, std::less<>> params;  // {name} -> percent-decoded segment
  // The whole path, one percent-decoded segment each ("/a/b%2Fc" -> {"a", "b/c"}; "/" -> {}).
  std::vector<std::string> segments;
  // Percent-decoded query parameters ('+' is a space); the first of repeated keys wins and a
  // key without '=' maps to "".
  std::map<std::string, std::string, std::less<>> query;
  // The server's view of the connection while the handler runs (client gone, response
  // written); null when dispatch() was called without one (tests).
  std::shared_ptr<Exchange> exchange;
  // Who the route's guard found the request comes from (Admission::principal), for the handler,
  // which so need not check the credential again; empty when the route has no guard or the guard
  // names nobody.
  std::string principal;
};

// `req` and `match` stay valid until the returned awaitable completes. A handler may throw:
// the router answers 500 and logs the exception.
using Handler = std::function<boost::asio::awaitable<Response>(const Request& req, const RouteMatch& match)>;

// A guard's verdict on a request's headers.
struct Admission {
  std::optional<Response> refusal;  // set: answer this (401, 403...) and do not run the handler
  // The request showed a credential that checked (a token, not merely an open route): the server
  // then treats its connection as trusted (ServerLimits::reserved_connections).
  bool credentialed = false;
  // Who the credential belongs to, in the guard's own terms (e.g. "agent:12"): handed to the
  // handler as RouteMatch::principal.
  std::string principal;

  static Admission admitted(bool credentialed, std::string principal = {}) {
    return Admission{std::nullopt, credentialed, std::move(principal)};
  }
  static Admission refused(Response res) { return Admission{std::move(res), false, {}}; }
};

// Decides from a request's headers alone (the server has not read its body yet, so `head`'s body
// is empty) whether the route's handler may run. It runs before the body is read so that a client
// the route will refuse cannot make the server buffer its body. May throw like a Handler (500).
// `head` and `match` outlive the awaitable.
using Guard = std::function<boost::asio::awaitable<Admission>(const Request& head, const RouteMatch& match)>;

struct RouteOptions {
  Guard guard;  // empty: every request is admitted
  // The largest body this route accepts (413 beyond, unread); nullopt: the server's body_limit.
  // The server never applies more than its own body_limit, except to a route with a body_sink.
  std::optional<std::size_t> body_limit;
  // Set: the body is streamed into the sink this makes for each admitted request (an upload,
  // never held in memory) and the handler sees an empty body. Called after the guard admitted the
  // request's headers; null refuses the request (the server answers 503).
  std::function<std::shared_ptr<BodySink>(const Request& head, const RouteMatch& match)> body_sink;
};

class Router;

// What a request's headers select (Router::admit): the route and its match, or the answer that
// ends the request without its handler (400 malformed target, 404, 405, or the guard's refusal).
class RouteDecision {
 public:
  // The route's name, or kUnmatchedRoute when routing itself answered.
  const std::string& route_name() const { return route_name_; }
  // Set: answer this; the handler does not run and the body need not be read.
  std::optional<Response>& refusal() { return refusal_; }
  const std::optional<std::size_t>& body_limit() const { return body_limit_; }
  // A new sink for this request's body (RouteOptions::body_sink); null for routes without one,
  // or when the route refuses one now.
  std::shared_ptr<BodySink> make_body_sink(const Request& head) const {
    return body_sink_ ? body_sink_(head, match_) : nullptr;
  }
  bool streams_body() const { return static_cast<bool>(body_sink_); }
  // The route's guard found a credential that checked (Admission::credentialed).
  bool credentialed() const { return credentialed_; }

 private:
  friend class Router;
  std::string route_name_;
  std::optional<Response> refusal_;
  std::optional<std::size_t> body_limit_;
  std::function<std::shared_ptr<BodySink>(const Request&, const RouteMatch&)> body_sink_;
  bool credentialed_ = false;
  const Handler* handler_ = nullptr;
  RouteMatch match_;
};

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
  void add(boost::beast::http::verb method, std::string_view pattern, std::string name, Handler handler,
           RouteOptions options = {});

  // Answers GET and HEAD requests whose path matches no route's pattern (for any method), with
  // RouteMatch::pattern kFallbackPattern. Replaces an earlier fallback.
  void set_fallback(std::string name, Handler handler, RouteOptions options = {});

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

  // dispatch() in two steps, so a server can refuse a request before reading its body:
  // admit() routes `head` (the request line and headers) as dispatch() does and runs the
  // route's guard; handle() then runs the handler on the whole request.
  // REQUIRES (handle): !decision.refusal(); `decision` and `req` outlive the awaitable.
  boost::asio::awaitable<RouteDecision> admit(const Request& head) const;
  boost::asio::awaitable<Response> handle(RouteDecision& decision, const Request& req) const;
  // As handle(), handing `exchange` to the handler (RouteMatch::exchange).
  boost::asio::awaitable<Response> handle(RouteDecision& decision, const Request& req,
                                          std::shared_ptr<Exchange> exchange) const;

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
    RouteOptions options;
  };

  static bool match_path(const Route& route, const std::vector<std::string>& path, RouteMatch& match);
  static bool more_specific(const Route& a, const Route& b);

  std::vector<Route> routes_;
  std::string fallback_name_;
  Handler fallback_;
  RouteOptions fallback_options_;
};

}  // namespace benchfleet::http
