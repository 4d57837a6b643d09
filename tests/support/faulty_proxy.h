// Test support: an HTTP/1.1 proxy on 127.0.0.1 that forwards every request to a coordinator and,
// on the routes and for the answers a test names, replaces the coordinator's successful answer
// (200/201) with a malformed one, or closes the connection in the middle of its body. The
// request itself always reaches the coordinator: what it did (a lease granted, a result stored)
// stands; only its answer is lost or unreadable.
//
//   FaultyProxy proxy(coord.base_url());
//   proxy.corrupt(ProxyRoute::kLease, {ProxyFault::kTruncated, std::nullopt, ProxyFault::kHtml},
//                 /*only_grants=*/true);
//   AgentOptions o = agent_options(coord, "a1");
//   o.coordinator_url = proxy.base_url();
//
// Serves on its own thread (Boost.Beast coroutines); one upstream connection per client
// connection, so long polls wait side by side. Thread-safe. The destructor stops it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace benchfleet::testing {

// The agent routes a test may corrupt.
enum class ProxyRoute {
  kEnroll,     // POST /api/v1/agents/enroll
  kLease,      // POST /api/v1/agents/{id}/lease
  kHeartbeat,  // POST /api/v1/agents/{id}/heartbeat
  kResult,     // POST /api/v1/jobs/{id}/result
  kOther,
};
std::string_view to_string(ProxyRoute route);

enum class ProxyFault {
  kTruncated,    // the first half of the body
  kWrongTypes,   // numbers and booleans (top level, "job", "leases") turned into strings
  kNegativeIds,  // agent_id, job_id, run_id and the job's id negated
  kHugeString,   // a 1 MiB string in place of the answer's lease id, token, state or drain flag
  kDeepNesting,  // 10000 nested arrays
  kHtml,         // a proxy's HTML error page (text/html)
  kEmpty,        // no body at all
  kProblem,      // an application/problem+json document, status kept
  kDropMidBody,  // the head (with the real Content-Length) and half the body, then close
};
std::string_view to_string(ProxyFault fault);

class FaultyProxy {
 public:
  // Forwards to `upstream_base_url` ("http://127.0.0.1:<port>"); listens on an ephemeral port.
  // Throws when it cannot listen or the URL is not of that form.
  explicit FaultyProxy(const std::string& upstream_base_url);
  ~FaultyProxy();
  FaultyProxy(const FaultyProxy&) = delete;
  FaultyProxy& operator=(const FaultyProxy&) = delete;

  // "http://127.0.0.1:<port>" of the proxy.
  std::string base_url() const;

  // The next successful answers on `route` are changed by `faults`, one each, in order (appended
  // to what is still queued). nullopt passes one answer through unchanged. `only_grants`
  // (kLease): answers without a job (null) pass through and use up nothing.
  void corrupt(ProxyRoute route, std::vector<std::optional<ProxyFault>> faults, bool only_grants = false);
  // Queue entries not yet used on `route`.
  std::size_t pending(ProxyRoute route) const;
  // Answers forwarded on `route` (changed or not).
  std::size_t forwarded(ProxyRoute route) const;
  // The coordinator's original bodies of the answers changed on `route`, in order.
  std::vector<std::string> corrupted(ProxyRoute route) const;

  // From hold() until release(), requests on `route` wait in the proxy before they reach the
  // coordinator (a slow network on that route); release() sends the waiting ones on.
  void hold(ProxyRoute route);
  void release(ProxyRoute route);
  // Requests waiting on `route` now.
  std::size_t held(ProxyRoute route) const;
  // Stops accepting, drops every connection and joins the thread. Idempotent.
  void stop();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace benchfleet::testing
