#include "tests/support/faulty_proxy.h"

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace benchfleet::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::ip::tcp;
using nlohmann::json;

ProxyRoute route_of(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  const auto ends_with = [&](std::string_view s) { return path.ends_with(s); };
  if (path == "/api/v1/agents/enroll") return ProxyRoute::kEnroll;
  if (path.starts_with("/api/v1/agents/") && ends_with("/lease")) return ProxyRoute::kLease;
  if (path.starts_with("/api/v1/agents/") && ends_with("/heartbeat")) return ProxyRoute::kHeartbeat;
  if (path.starts_with("/api/v1/jobs/") && ends_with("/result")) return ProxyRoute::kResult;
  return ProxyRoute::kOther;
}

// Numbers and booleans of `j`'s own members become strings.
void stringify_scalars(json& j) {
  if (!j.is_object()) return;
  for (auto& [key, value] : j.items()) {
    if (value.is_number() || value.is_boolean()) value = value.dump();
  }
}

void negate_ids(json& j) {
  if (!j.is_object()) return;
  for (const char* key : {"id", "agent_id", "job_id", "run_id"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_number_integer()) *it = -it->get<std::int64_t>();
  }
}

// `body` changed by `fault` (kDropMidBody is the session's to do). Sets the content type.
std::string corrupt_body(const std::string& body, ProxyFault fault, std::string& content_type) {
  json j = json::parse(body, nullptr, false);
  const bool object = j.is_object();
  switch (fault) {
    case ProxyFault::kTruncated:
      return body.empty() ? "{" : body.substr(0, body.size() / 2);
    case ProxyFault::kWrongTypes:
      if (!object) return "{\"id\": \"1\"}";
      stringify_scalars(j);
      if (auto job = j.find("job"); job != j.end()) stringify_scalars(*job);
      if (auto leases = j.find("leases"); leases != j.end() && leases->is_array()) {
        for (auto& l : *leases) l["state"] = 1;
      }
      return j.dump();
    case ProxyFault::kNegativeIds:
      if (!object) return "{\"id\": -1}";
      negate_ids(j);
      if (auto job = j.find("job"); job != j.end()) negate_ids(*job);
      if (auto leases = j.find("leases"); leases != j.end() && leases->is_array()) {
        for (auto& l : *leases) negate_ids(l);
      }
      return j.dump();
    case ProxyFault::kHugeString: {
      const std::string huge(1 << 20, 'x');
      if (!object) return json(huge).dump();
      if (auto job = j.find("job"); job != j.end() && job->is_object()) {
        (*job)["lease_id"] = huge;
      } else if (j.contains("agent_token")) {
        j["agent_token"] = huge;
      } else if (auto leases = j.find("leases"); leases != j.end() && leases->is_array() && !leases->empty()) {
        (*leases)[0]["state"] = huge;
      } else {
        j[j.contains("drain") ? "drain" : "draining"] = huge;
      }
      return j.dump();
    }
    case ProxyFault::kDeepNesting:
      return std::string(10000, '[') + std::string(10000, ']');
    case ProxyFault::kHtml:
      content_type = "text/html";
      return "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
             "<body><h1>502 Bad Gateway</h1><p>The upstream went away.</p></body></html>";
    case ProxyFault::kEmpty:
      return "";
    case ProxyFault::kProblem:
      content_type = "application/problem+json";
      return json{
          {"type", "about:blank"}, {"title", "Internal Server Error"}, {"status", 500}, {"detail", "the proxy says no"}}
          .dump();
    case ProxyFault::kDropMidBody:
      break;
  }
  return body;
}

}  // namespace

std::string_view to_string(ProxyRoute route) {
  switch (route) {
    case ProxyRoute::kEnroll:
      return "enroll";
    case ProxyRoute::kLease:
      return "lease";
    case ProxyRoute::kHeartbeat:
      return "heartbeat";
    case ProxyRoute::kResult:
      return "result";
    case ProxyRoute::kOther:
      return "other";
  }
  return "?";
}

std::string_view to_string(ProxyFault fault) {
  switch (fault) {
    case ProxyFault::kTruncated:
      return "truncated";
    case ProxyFault::kWrongTypes:
      return "wrong types";
    case ProxyFault::kNegativeIds:
      return "negative ids";
    case ProxyFault::kHugeString:
      return "huge string";
    case ProxyFault::kDeepNesting:
      return "deep nesting";
    case ProxyFault::kHtml:
      return "html";
    case ProxyFault::kEmpty:
      return "empty";
    case ProxyFault::kProblem:
      return "problem";
    case ProxyFault::kDropMidBody:
      return "drop mid-body";
  }
  return "?";
}

struct FaultyProxy::State {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  tcp::endpoint upstream;
  std::thread thread;
  std::once_flag stopped;
  std::set<beast::tcp_stream*> open;  // the sessions' streams; used on the io thread only

  mutable std::mutex mu;
  struct Plan {
    std::deque<std::optional<ProxyFault>> faults;
    bool only_grants = false;
    std::size_t forwarded = 0;
    std::vector<std::string> corrupted;
    bool holding = false;
    std::size_t waiting = 0;
  };
  bool stopping = false;  // guarded by mu: held requests stop waiting

  // Whether a request on `route` must (still) wait; counts it in or out of the waiting ones.
  bool must_wait(ProxyRoute route, bool already_waiting) {
    std::lock_guard lock(mu);
    Plan& plan = plans[route];
    const bool wait = plan.holding && !stopping;
    if (wait && !already_waiting) ++plan.waiting;
    if (!wait && already_waiting) --plan.waiting;
    return wait;
  }
  std::map<ProxyRoute, Plan> plans;

  // The fault for this answer (nullopt: forward it as it is); records it.
  std::optional<ProxyFault> take(ProxyRoute route, const bhttp::response<bhttp::string_body>& res) {
    std::lock_guard lock(mu);
    Plan& plan = plans[route];
    ++plan.forwarded;
    const unsigned status = res.result_int();
    if ((status != 200 && status != 201) || plan.faults.empty()) return std::nullopt;
    if (plan.only_grants) {
      const json j = json::parse(res.body(), nullptr, false);
      if (!j.is_object() || !j.contains("job") || j["job"].is_null()) return std::nullopt;
    }
    const std::optional<ProxyFault> fault = plan.faults.front();
    plan.faults.pop_front();
    if (fault) plan.corrupted.push_back(res.body());
    return fault;
  }

  asio::awaitable<void> session(tcp::socket client) {
    beast::tcp_stream down(std::move(client));
    beast::tcp_stream up(co_await asio::this_coro::executor);
    beast::flat_buffer down_buffer, up_buffer;
    open.insert(&down);
    open.insert(&up);
    try {
      co_await up.async_connect(upstream, asio::use_awaitable);
      while (true) {
        bhttp::request<bhttp::string_body> req;
        down.expires_never();
        co_await bhttp::async_read(down, down_buffer, req, asio::use_awaitable);
        const ProxyRoute route = route_of(req.target());
        if (must_wait(route, false)) {
          asio::steady_timer pause(co_await asio::this_coro::executor);
          do {
            pause.expires_after(std::chrono::milliseconds(10));
            co_await pause.async_wait(asio::use_awaitable);
          } while (must_wait(route, true));
        }
        up.expires_after(std::chrono::seconds(120));  // longer than any long poll
        co_await bhttp::async_write(up, req, asio::use_awaitable);
        bhttp::response_parser<bhttp::string_body> parser;
        parser.body_limit(std::size_t{64} << 20);
        co_await bhttp::async_read(up, up_buffer, parser, asio::use_awaitable);
        bhttp::response<bhttp::string_body> res = parser.release();
        const std::optional<ProxyFault> fault = take(route, res);
        down.expires_after(std::chrono::seconds(30));
        if (fault == ProxyFault::kDropMidBody) {
          // The real length announced, half of it sent: the client reads a cut body.
          std::string raw = "HTTP/1.1 " + std::to_string(res.result_int()) +
                            " OK\r\nContent-Type: " + std::string(res[bhttp::field::content_type]) +
                            "\r\nContent-Length: " + std::to_string(res.body().size()) + "\r\n\r\n" +
                            res.body().substr(0, res.body().size() / 2);
          co_await asio::async_write(down.socket(), asio::buffer(raw), asio::use_awaitable);
          break;
        }
        if (fault) {
          std::string content_type(res[bhttp::field::content_type]);
          res.body() = corrupt_body(res.body(), *fault, content_type);
          res.set(bhttp::field::content_type, content_type);
        }
        res.prepare_payload();
        const bool keep_alive = res.keep_alive() && req.keep_alive();
        co_await bhttp::async_write(down, res, asio::use_awaitable);
        if (!keep_alive) break;
      }
    } catch (const std::exception&) {
      // A client or the coordinator closed its side: this connection is over.
    }
    open.erase(&down);
    open.erase(&up);
    beast::error_code ignored;
    down.socket().shutdown(tcp::socket::shutdown_both, ignored);
    down.close();
    up.close();
  }

  // On the io thread: no new connections, every open one cancelled (its session then ends).
  void close_all() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    beast::error_code ignored;
    acceptor.close(ignored);
    for (beast::tcp_stream* s : open) s->close();
  }

  asio::awaitable<void> accept_loop() {
    try {
      while (true) {
        tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
        asio::co_spawn(io, session(std::move(socket)), asio::detached);
      }
    } catch (const std::exception&) {
      // Closed by stop().
    }
  }
};

FaultyProxy::FaultyProxy(const std::string& upstream_base_url) : state_(std::make_shared<State>()) {
  const std::string prefix = "http://127.0.0.1:";
  if (!upstream_base_url.starts_with(prefix)) throw std::invalid_argument("FaultyProxy: not " + prefix + "<port>");
  const int port = std::stoi(upstream_base_url.substr(prefix.size()));
  state_->upstream = tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
  const tcp::endpoint listen(asio::ip::make_address("127.0.0.1"), 0);
  state_->acceptor.open(listen.protocol());
  state_->acceptor.set_option(asio::socket_base::reuse_address(true));
  state_->acceptor.bind(listen);
  state_->acceptor.listen();
  asio::co_spawn(state_->io, state_->accept_loop(), asio::detached);
  state_->thread = std::thread([state = state_] { state->io.run(); });
}

FaultyProxy::~FaultyProxy() { stop(); }

std::string FaultyProxy::base_url() const {
  return "http://127.0.0.1:" + std::to_string(state_->acceptor.local_endpoint().port());
}

void FaultyProxy::corrupt(ProxyRoute route, std::vector<std::optional<ProxyFault>> faults, bool only_grants) {
  std::lock_guard lock(state_->mu);
  State::Plan& plan = state_->plans[route];
  plan.faults.insert(plan.faults.end(), faults.begin(), faults.end());
  plan.only_grants = only_grants;
}

std::size_t FaultyProxy::pending(ProxyRoute route) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->plans.find(route);
  return it == state_->plans.end() ? 0 : it->second.faults.size();
}

std::size_t FaultyProxy::forwarded(ProxyRoute route) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->plans.find(route);
  return it == state_->plans.end() ? 0 : it->second.forwarded;
}

std::vector<std::string> FaultyProxy::corrupted(ProxyRoute route) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->plans.find(route);
  return it == state_->plans.end() ? std::vector<std::string>{} : it->second.corrupted;
}

void FaultyProxy::hold(ProxyRoute route) {
  std::lock_guard lock(state_->mu);
  state_->plans[route].holding = true;
}

void FaultyProxy::release(ProxyRoute route) {
  std::lock_guard lock(state_->mu);
  state_->plans[route].holding = false;
}

std::size_t FaultyProxy::held(ProxyRoute route) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->plans.find(route);
  return it == state_->plans.end() ? 0 : it->second.waiting;
}

void FaultyProxy::stop() {
  std::call_once(state_->stopped, [this] {
    // Every session ends once its streams are closed, and run() returns when none is left; a
    // session stuck anyway is abandoned after 5 s (its frame goes with the io_context).
    asio::post(state_->io, [state = state_] { state->close_all(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!state_->io.stopped() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    state_->io.stop();
    if (state_->thread.joinable()) state_->thread.join();
  });
}

}  // namespace benchfleet::testing
