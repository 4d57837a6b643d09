#include "common/http/router.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/beast/http/field.hpp>
#include <boost/url/encoding_opts.hpp>
#include <boost/url/parse.hpp>

#include "common/http/problem.h"

namespace benchfleet::http {

namespace bhttp = boost::beast::http;

namespace {

bool valid_param_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::invalid_argument bad_pattern(std::string_view pattern, std::string_view why) {
  std::string message = "route pattern \"";
  message += pattern;
  message += "\": ";
  message += why;
  return std::invalid_argument(message);
}

}  // namespace

void Router::add(bhttp::verb method, std::string_view pattern, std::string name, Handler handler,
                 RouteOptions options) {
  if (method == bhttp::verb::unknown) throw bad_pattern(pattern, "method is unknown");
  if (!handler) throw bad_pattern(pattern, "handler is empty");
  if (pattern.empty() || pattern.front() != '/') throw bad_pattern(pattern, "must start with '/'");

  Route route{method, std::string(pattern), std::move(name), {}, std::move(handler), std::move(options)};
  if (pattern != "/") {
    std::string_view rest = pattern.substr(1);
    while (true) {
      const auto slash = rest.find('/');
      const std::string_view text = rest.substr(0, slash);
      if (text.find_first_of("{}") == std::string_view::npos) {
        route.segments.push_back({std::string(text), false});
      } else {
        if (text.size() < 2 || text.front() != '{' || text.back() != '}' ||
            !valid_param_name(text.substr(1, text.size() - 2))) {
          throw bad_pattern(pattern, "a parameter must be a whole segment such as {id}");
        }
        std::string param(text.substr(1, text.size() - 2));
        for (const Segment& s : route.segments) {
          if (s.is_param && s.text == param) throw bad_pattern(pattern, "repeats a parameter name");
        }
        route.segments.push_back({std::move(param), true});
      }
      if (slash == std::string_view::npos) break;
      rest = rest.substr(slash + 1);
    }
  }

  // Same method and same shape (parameter names aside) would make one route unreachable.
  for (const Route& other : routes_) {
    if (other.method != method || other.segments.size() != route.segments.size()) continue;
    const bool same_shape = std::equal(other.segments.begin(), other.segments.end(), route.segments.begin(),
                                       [](const Segment& a, const Segment& b) {
                                         return a.is_param == b.is_param && (a.is_param || a.text == b.text);
                                       });
    if (same_shape) {
      std::string why = "conflicts with the route \"";
      why += other.pattern;
      why += "\" for the same method";
      throw bad_pattern(pattern, why);
    }
  }
  routes_.push_back(std::move(route));
}

void Router::set_fallback(std::string name, Handler handler, RouteOptions options) {
  if (!handler) throw std::invalid_argument("router fallback: handler is empty");
  fallback_name_ = std::move(name);
  fallback_ = std::move(handler);
  fallback_options_ = std::move(options);
}

std::vector<RouteInfo> Router::routes() const {
  std::vector<RouteInfo> out;
  out.reserve(routes_.size());
  for (const Route& r : routes_) out.push_back({r.method, r.pattern, r.name});
  return out;
}

std::optional<RouteInfo> Router::fallback() const {
  if (!fallback_) return std::nullopt;
  return RouteInfo{bhttp::verb::get, std::string(kFallbackPattern), fallback_name_};
}

bool Router::match_path(const Route& route, const std::vector<std::string>& path, RouteMatch& match) {
  if (route.segments.size() != path.size()) return false;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const Segment& seg = route.segments[i];
    if (seg.is_param) {
      if (path[i].empty()) return false;
      match.params.insert_or_assign(seg.text, path[i]);
    } else if (seg.text != path[i]) {
      return false;
    }
  }
  return true;
}

bool Router::more_specific(const Route& a, const Route& b) {
  for (std::size_t i = 0; i < a.segments.size() && i < b.segments.size(); ++i) {
    if (a.segments[i].is_param != b.segments[i].is_param) return !a.segments[i].is_param;
  }
  return false;
}

boost::asio::awaitable<Response> Router::dispatch(const Request& req) const {
  std::string route_name;
  co_return co_await dispatch(req, route_name);
}

namespace {

// Runs a handler; its exception stays inside the server: logged, answered with a generic 500.
boost::asio::awaitable<Response> call_handler(const Handler& handler, std::string_view name, const Request& req,
                                              const RouteMatch& match) {
  std::optional<Response> res;
  std::string failure;
  try {
    res = co_await handler(req, match);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  if (!res) {
    spdlog::error("route {} ({} {}) threw: {}", name, std::string_view(req.method_string()),
                  std::string_view(req.target()), failure);
    co_return problem(bhttp::status::internal_server_error, "Internal Server Error",
                      "the server failed to handle the request; see the server log", req);
  }
  co_return std::move(*res);
}

// Runs a guard; an exception is answered like a handler's (logged, generic 500).
boost::asio::awaitable<Admission> call_guard(const Guard& guard, std::string_view name, const Request& head,
                                             const RouteMatch& match) {
  std::string failure;
  try {
    co_return co_await guard(head, match);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  spdlog::error("route {} ({} {}) guard threw: {}", name, std::string_view(head.method_string()),
                std::string_view(head.target()), failure);
  co_return Admission::refused(problem(bhttp::status::internal_server_error, "Internal Server Error",
                                       "the server failed to handle the request; see the server log", head));
}

}  // namespace

boost::asio::awaitable<Response> Router::dispatch(const Request& req, std::string& route_name) const {
  RouteDecision decision = co_await admit(req);
  route_name = decision.route_name();
  if (decision.refusal()) co_return std::move(*decision.refusal());
  co_return co_await handle(decision, req);
}

boost::asio::awaitable<Response> Router::handle(RouteDecision& decision, const Request& req) const {
  co_return co_await call_handler(*decision.handler_, decision.route_name_, req, decision.match_);
}

boost::asio::awaitable<Response> Router::handle(RouteDecision& decision, const Request& req,
                                                std::shared_ptr<Exchange> exchange) const {
  decision.match_.exchange = std::move(exchange);
  co_return co_await call_handler(*decision.handler_, decision.route_name_, req, decision.match_);
}

boost::asio::awaitable<RouteDecision> Router::admit(const Request& req) const {
  RouteDecision decision;
  decision.route_name_ = kUnmatchedRoute;
  const auto parsed = boost::urls::parse_origin_form(req.target());
  if (!parsed) {
    decision.refusal_ =
        problem(bhttp::status::bad_request, "Bad Request", "the request target is not a valid origin-form URL", req);
    co_return decision;
  }
  std::vector<std::string> path;
  for (std::string segment : parsed->segments()) path.push_back(std::move(segment));

  // HEAD falls back to GET unless a HEAD route matches.
  const bool head = req.method() == bhttp::verb::head;
  const Route* best = nullptr;
  const Route* best_get = nullptr;
  RouteMatch best_match;
  RouteMatch best_get_match;
  std::vector<std::string_view> allowed;
  for (const Route& route : routes_) {
    RouteMatch match;
    if (!match_path(route, path, match)) continue;
    const std::string_view method = bhttp::to_string(route.method);
    if (std::find(allowed.begin(), allowed.end(), method) == allowed.end()) {
      allowed.push_back(method);
    }
    if (route.method == req.method()) {
      if (best == nullptr || more_specific(route, *best)) {
        best = &route;
        best_match = std::move(match);
      }
    } else if (head && route.method == bhttp::verb::get) {
      if (best_get == nullptr || more_specific(route, *best_get)) {
        best_get = &route;
        best_get_match = std::move(match);
      }
    }
  }
  if (best == nullptr && best_get != nullptr) {
    best = best_get;
    best_match = std::move(best_get_match);
  }

  const auto add_query = [&](RouteMatch& match) {
    for (const auto& param : parsed->params(boost::urls::encoding_opts(/*space_as_plus=*/true))) {
      match.query.emplace(param.key, param.has_value ? param.value : std::string());
    }
  };

  const Handler* handler = nullptr;
  const RouteOptions* options = nullptr;
  if (best == nullptr && allowed.empty() && fallback_ && (req.method() == bhttp::verb::get || head)) {
    decision.match_.route_name = fallback_name_;
    decision.match_.pattern = kFallbackPattern;
    decision.route_name_ = fallback_name_;
    handler = &fallback_;
    options = &fallback_options_;
  } else if (best == nullptr) {
    std::string detail = "no route for ";
    detail += req.method_string();
    detail += ' ';
    detail += parsed->encoded_path();
    if (allowed.empty()) {
      decision.refusal_ = problem(bhttp::status::not_found, "Not Found", detail, req);
      co_return decision;
    }
    if (std::find(allowed.begin(), allowed.end(), bhttp::to_string(bhttp::verb::get)) != allowed.end() &&
        std::find(allowed.begin(), allowed.end(), bhttp::to_string(bhttp::verb::head)) == allowed.end()) {
      allowed.push_back(bhttp::to_string(bhttp::verb::head));
    }
    std::string allow;
    for (std::string_view m : allowed) {
      if (!allow.empty()) allow += ", ";
      allow += m;
    }
    detail += "; allowed methods: ";
    detail += allow;
    Response res = problem(bhttp::status::method_not_allowed, "Method Not Allowed", detail, req);
    res.set(bhttp::field::allow, allow);
    decision.refusal_ = std::move(res);
    co_return decision;
  } else {
    decision.match_ = std::move(best_match);
    decision.match_.route_name = best->name;
    decision.match_.pattern = best->pattern;
    decision.route_name_ = best->name;
    handler = &best->handler;
    options = &best->options;
  }
  decision.match_.segments = std::move(path);
  add_query(decision.match_);
  decision.handler_ = handler;
  decision.body_limit_ = options->body_limit;
  decision.body_sink_ = options->body_sink;
  if (options->guard) {
    Admission admission = co_await call_guard(options->guard, decision.route_name_, req, decision.match_);
    decision.refusal_ = std::move(admission.refusal);
    decision.credentialed_ = !decision.refusal_ && admission.credentialed;
    if (!decision.refusal_) decision.match_.principal = std::move(admission.principal);
  }
  co_return decision;
}

}  // namespace benchfleet::http
