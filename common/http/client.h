// A small synchronous HTTP/1.1 client (http:// only) for the CLI, the agent, tests and
// benchmarks. Keeps one keep-alive connection to the base URL's host.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"

namespace benchfleet::http {

struct ClientResponse {
  unsigned status = 0;
  std::string body;
  std::string content_type;  // "" when absent
  // Header names in lower case; repeated headers joined with ", ".
  std::map<std::string, std::string, std::less<>> headers;

  // The body parsed as JSON (depth-bounded); an Error naming the status when it is not JSON.
  Result<nlohmann::json> json() const;

  // The problem+json `detail` of an error response, else the start of the body (300 bytes).
  std::string problem_detail() const;
};

// The Error for an unexpected response: "<what>: HTTP <status>: <problem detail>", with the
// code the status stands for (401 unauthenticated, 403 permission denied, 404 not found, 409
// conflict, 413 payload too large, 5xx unavailable, any other status invalid argument).
Error error_for_response(const ClientResponse& response, std::string_view what);

// Thread safety: one Client per thread; it is not safe for concurrent use.
class Client {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  static constexpr std::chrono::milliseconds kDefaultTimeout{30000};

  // `base_url` is "http://HOST[:PORT][/PREFIX]"; PREFIX is put before every target. A malformed
  // or non-http URL is reported as Error{kInvalidArgument} by every request.
  explicit Client(std::string base_url);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `target` ("/api/v1/runs?state=running", already percent-encoded) and waits for the
  // whole response, all within `timeout`. Any status is a successful Result; failures are
  // Error{kUnavailable} naming host:port (refused, reset, timed out, malformed response) or
  // Error{kPayloadTooLarge} for a response body over response_body_limit().
  // If a reused keep-alive connection turns out closed by the server before any response byte
  // arrived, reconnects and sends once more.
  Result<ClientResponse> request(boost::beast::http::verb method, std::string_view target, std::string body = {},
                                 const Headers& headers = {}, std::chrono::milliseconds timeout = kDefaultTimeout);

  // GET with "Authorization: Bearer <token>" when `bearer_token` is not empty.
  Result<ClientResponse> get(std::string_view target, std::string_view bearer_token = {},
                             std::chrono::milliseconds timeout = kDefaultTimeout);

  // POST of `body` as application/json, with the bearer token as for get().
  Result<ClientResponse> post_json(std::string_view target, const nlohmann::json& body,
                                   std::string_view bearer_token = {},
                                   std::chrono::milliseconds timeout = kDefaultTimeout);

  // Streams the file at `path` as the body of a POST to `target` (Content-Length: its size; the
  // file is never held in memory) and reads the answer, all within `timeout`, on a connection of
  // its own. Errors as request(), and kNotFound when the file cannot be read.
  Result<ClientResponse> post_file(std::string_view target, const std::string& path, const Headers& headers,
                                   std::chrono::milliseconds timeout);
  // GETs `target` with its body streamed into the file at `path` (created or truncated), at most
  // `max_bytes`, all within `timeout`, on a connection of its own. A 200's body is in the file
  // and the answer's `body` is empty; any other status's body is read back into `body` (and the
  // file is then removed). Errors as request(); kPayloadTooLarge past `max_bytes`.
  Result<ClientResponse> get_to_file(std::string_view target, const std::string& path, const Headers& headers,
                                     std::uint64_t max_bytes, std::chrono::milliseconds timeout);

  std::size_t response_body_limit() const;
  void set_response_body_limit(std::size_t bytes);  // default 64 MiB

  // "host:port" of the base URL, as used in error messages and the Host header.
  const std::string& host_port() const;

  // TCP connections opened so far (keep-alive reuse shows as fewer connections than requests).
  std::size_t connections_opened() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace benchfleet::http
