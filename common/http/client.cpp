#include "common/http/client.h"

#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/file_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>

#include "common/http/types.h"
#include "common/json_reader.h"

namespace benchfleet::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint32_t kResponseHeaderLimit = 64 * 1024;

// Errors meaning the server had already closed a kept-alive connection.
// How long a request whose send failed waits for an answer the server may have sent before
// closing (one refused on its headers).
constexpr std::chrono::milliseconds kEarlyAnswerWait{2000};

bool closed_by_peer(const error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<nlohmann::json> ClientResponse::json() const {
  auto parsed = parse_json(body);
  if (parsed.ok()) return parsed;
  std::string message = "response with status ";
  message += std::to_string(status);
  message += " is not JSON: ";
  message += parsed.error().message;
  return Error{ErrorCode::kUnavailable, std::move(message), {}};
}

std::string ClientResponse::problem_detail() const {
  auto parsed = parse_json(body);
  if (parsed.ok() && parsed->is_object()) {
    if (auto it = parsed->find("detail"); it != parsed->end() && it->is_string()) return it->get<std::string>();
  }
  return body.substr(0, 300);
}

Error error_for_response(const ClientResponse& response, std::string_view what) {
  std::string message(what);
  message += ": HTTP ";
  message += std::to_string(response.status);
  message += ": ";
  message += response.problem_detail();
  const unsigned s = response.status;
  const ErrorCode code = s == 401   ? ErrorCode::kUnauthenticated
                         : s == 403 ? ErrorCode::kPermissionDenied
                         : s == 404 ? ErrorCode::kNotFound
                         : s == 409 ? ErrorCode::kConflict
                         : s == 413 ? ErrorCode::kPayloadTooLarge
                         : s >= 500 ? ErrorCode::kUnavailable
                                    : ErrorCode::kInvalidArgument;
  return Error{code, std::move(message), {}};
}

struct Client::Impl {
  // The outcome of one write-then-read on the connection.
  struct Attempt {
    error_code ec;
    const char* stage = "";
    // Failed before any response byte on a connection the server closed: a reused one (it closed
    // it idle), or a new one it closed before reading (shed for a newcomer under a full pool).
    // Sent again once on a new connection: any request in the first case, an idempotent one
    // (RFC 9110 9.2.2) in the second, since the server may have acted on it.
    bool stale = false;
    ClientResponse response;
  };

  asio::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  std::optional<Error> config_error;
  std::string host;       // to resolve; IPv6 without brackets
  std::string port;       // "8080"
  std::string host_port;  // Host header and messages; IPv6 in brackets
  std::string prefix;     // base URL path without a trailing '/'
  std::optional<tcp::resolver::results_type> endpoints;
  std::size_t body_limit = std::size_t{64} << 20;
  std::size_t connections = 0;

  void close() {
    if (stream) {
      error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->socket().close(ignored);
    }
    stream.reset();
    buffer.clear();
  }

  // A new connection in `stream` (the host resolved once), the old one closed; false (and
  // out.ec, out.stage set) when it could not be made.
  asio::awaitable<bool> connect(std::chrono::milliseconds timeout, Attempt& out) {
    close();
    if (!endpoints) {
      tcp::resolver resolver(ioc);
      error_code ec;
      auto resolved = resolver.resolve(host, port, ec);
      if (ec) {
        out.ec = ec;
        out.stage = "resolve";
        co_return false;
      }
      endpoints = std::move(resolved);
    }
    stream.emplace(ioc);
    stream->expires_after(timeout);
    auto [ec, endpoint] = co_await stream->async_connect(*endpoints, kAsTuple);
    if (ec) {
      out.ec = ec;
      out.stage = "connect";
      close();
      co_return false;
    }
    ++connections;
    co_return true;
  }

  asio::awaitable<void> exchange(const Request& req, std::chrono::milliseconds timeout, Attempt& out) {
    const bool reused = stream && stream->socket().is_open();
    if (!reused) {
      if (!co_await connect(timeout, out)) co_return;
    } else {
      stream->expires_after(timeout);
    }

    auto [wec, written] = co_await bhttp::async_write(*stream, req, kAsTuple);
    if (buffer.capacity() < (std::size_t{64} << 10)) buffer.reserve(std::size_t{64} << 10);  // as exchange_once
    bhttp::response_parser<bhttp::string_body> parser;
    parser.header_limit(kResponseHeaderLimit);
    parser.body_limit(body_limit);
    parser.skip(req.method() == bhttp::verb::head);  // a HEAD answer has headers only
    if (wec) {
      // A server that refuses a request on its headers (413 for a body over its limit, 401, 503)
      // answers and closes without reading the whole body, so the send fails; its answer is
      // still in the receive buffer (a reset purges only the send side): read it if it is there.
      if (closed_by_peer(wec)) {
        stream->expires_after(std::min(timeout, kEarlyAnswerWait));
        auto [rec, read] = co_await bhttp::async_read(*stream, buffer, parser, kAsTuple);
        if (!rec) {
          take_response(parser.get(), out);
          close();
          co_return;
        }
      }
      out.ec = wec;
      out.stage = "send";
      out.stale = may_resend(req, reused) && closed_by_peer(wec);
      close();
      co_return;
    }

    auto [rec, read] = co_await bhttp::async_read(*stream, buffer, parser, kAsTuple);
    if (rec) {
      out.ec = rec;
      out.stage = "receive";
      out.stale = may_resend(req, reused) && !parser.got_some() && closed_by_peer(rec);
      close();
      co_return;
    }
    stream->expires_never();
    if (!take_response(parser.get(), out)) close();
  }

  static bool may_resend(const Request& req, bool reused) {
    switch (req.method()) {
      case bhttp::verb::get:
      case bhttp::verb::head:
      case bhttp::verb::options:
      case bhttp::verb::put:
      case bhttp::verb::delete_:
        return true;
      default:
        return reused;
    }
  }

  // Moves the parsed response into `out`; whether the connection may be kept.
  static bool take_response(bhttp::response<bhttp::string_body>& msg, Attempt& out) {
    out.response.status = msg.result_int();
    for (const auto& field : msg) {
      auto [it, inserted] = out.response.headers.emplace(lower(field.name_string()), std::string(field.value()));
      if (!inserted) {
        it->second += ", ";
        it->second += field.value();
      }
    }
    if (auto it = out.response.headers.find("content-type"); it != out.response.headers.end()) {
      out.response.content_type = it->second;
    }
    const bool keep_alive = msg.keep_alive();
    out.response.body = std::move(msg.body());
    return keep_alive;
  }

  // One request on a connection of its own (the kept-alive one is closed first): `req` written
  // (a string or a file body), the answer read into `parser` (a string or a file body).
  template <class RequestBody, class Parser>
  asio::awaitable<void> exchange_once(bhttp::request<RequestBody>& req, Parser& parser,
                                      std::chrono::milliseconds timeout, Attempt& out) {
    if (!co_await connect(timeout, out)) co_return;
    beast::tcp_stream& s = *stream;
    // Reads take the buffer's free capacity (64 KiB at most): reserved, a large body arrives in
    // 64 KiB reads, not 512-byte ones (a GB artifact at a quarter of the speed).
    beast::flat_buffer buf;
    buf.reserve(std::size_t{64} << 10);
    auto [wec, written] = co_await bhttp::async_write(s, req, kAsTuple);
    if (wec && !closed_by_peer(wec)) {
      out.ec = wec;
      out.stage = "send";
      close();
      co_return;
    }
    // A server refusing the body early (401, 413) has answered before closing: read it.
    auto [rec, read] = co_await bhttp::async_read(s, buf, parser, kAsTuple);
    if (rec) {
      out.ec = wec ? wec : rec;
      out.stage = wec ? "send" : "receive";
      close();
      co_return;
    }
    auto& msg = parser.get();
    out.response.status = msg.result_int();
    for (const auto& field : msg) out.response.headers.emplace(lower(field.name_string()), std::string(field.value()));
    if (auto it = out.response.headers.find("content-type"); it != out.response.headers.end()) {
      out.response.content_type = it->second;
    }
    close();  // a connection of its own: the next request opens a new one
  }

  template <class F>
  void run_once(F make) {
    bool done = false;
    std::exception_ptr failure;
    asio::co_spawn(ioc, make(), [&](std::exception_ptr e) {
      failure = std::move(e);
      done = true;
    });
    ioc.restart();
    while (!done && ioc.run_one() != 0) {
    }
    if (failure) std::rethrow_exception(failure);  // allocation failures only
  }

  Attempt attempt(const Request& req, std::chrono::milliseconds timeout) {
    Attempt out;
    bool done = false;
    std::exception_ptr failure;
    asio::co_spawn(ioc, exchange(req, timeout, out), [&](std::exception_ptr e) {
      failure = std::move(e);
      done = true;
    });
    ioc.restart();
    while (!done && ioc.run_one() != 0) {
    }
    if (failure) std::rethrow_exception(failure);  // allocation failures only
    return out;
  }

  Error describe(const Request& req, const Attempt& a, std::chrono::milliseconds timeout) const {
    std::string message(req.method_string());
    message += ' ';
    message += req.target();
    message += " to ";
    message += host_port;
    if (a.ec == beast::error::timeout) {
      message += ": timed out after ";
      message += std::to_string(timeout.count());
      message += " ms";
    } else {
      message += ": ";
      message += a.stage;
      message += " failed: ";
      message += a.ec.message();
    }
    const ErrorCode code = a.ec == bhttp::error::body_limit ? ErrorCode::kPayloadTooLarge : ErrorCode::kUnavailable;
    return Error{code, std::move(message), {}};
  }
};

Client::Client(std::string base_url) : impl_(std::make_unique<Impl>()) {
  const auto parsed = boost::urls::parse_absolute_uri(base_url);
  auto invalid = [&](std::string_view why) {
    std::string message = "base URL \"";
    message += base_url;
    message += "\" ";
    message += why;
    impl_->config_error = Error::invalid("", std::move(message));
  };
  if (!parsed) {
    invalid("is not an absolute URL such as http://127.0.0.1:8080");
    return;
  }
  if (parsed->scheme_id() != boost::urls::scheme::http) {
    invalid("must start with http://");
    return;
  }
  impl_->host = parsed->host_address();
  if (impl_->host.empty()) {
    invalid("has no host");
    return;
  }
  impl_->port = parsed->has_port() ? std::string(parsed->port()) : std::string("80");
  impl_->host_port = parsed->encoded_host();
  impl_->host_port += ':';
  impl_->host_port += impl_->port;
  impl_->prefix = parsed->encoded_path();
  while (!impl_->prefix.empty() && impl_->prefix.back() == '/') impl_->prefix.pop_back();
}

Client::~Client() = default;

Result<ClientResponse> Client::request(bhttp::verb method, std::string_view target, std::string body,
                                       const Headers& headers, std::chrono::milliseconds timeout) {
  if (impl_->config_error) return *impl_->config_error;
  std::string full_target = impl_->prefix;
  if (!target.starts_with('/')) full_target += '/';
  full_target += target;

  Request req{method, full_target, 11};
  req.set(bhttp::field::host, impl_->host_port);
  req.set(bhttp::field::user_agent, "benchfleet/" BENCHFLEET_VERSION);
  for (auto& [name, value] : headers) req.set(name, value);
  req.body() = std::move(body);
  req.prepare_payload();
  req.keep_alive(true);

  Impl::Attempt a = impl_->attempt(req, timeout);
  if (a.ec && a.stale) a = impl_->attempt(req, timeout);
  if (a.ec) return impl_->describe(req, a, timeout);
  return std::move(a.response);
}

Result<ClientResponse> Client::get(std::string_view target, std::string_view bearer_token,
                                   std::chrono::milliseconds timeout) {
  Headers headers;
  if (!bearer_token.empty()) {
    headers.emplace_back("Authorization", "Bearer ");
    headers.back().second += bearer_token;
  }
  return request(bhttp::verb::get, target, {}, headers, timeout);
}

Result<ClientResponse> Client::post_json(std::string_view target, const nlohmann::json& body,
                                         std::string_view bearer_token, std::chrono::milliseconds timeout) {
  Headers headers{{"Content-Type", "application/json"}};
  if (!bearer_token.empty()) {
    headers.emplace_back("Authorization", "Bearer ");
    headers.back().second += bearer_token;
  }
  return request(bhttp::verb::post, target, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                 headers, timeout);
}

Result<ClientResponse> Client::post_file(std::string_view target, const std::string& path, const Headers& headers,
                                         std::chrono::milliseconds timeout) {
  if (impl_->config_error) return *impl_->config_error;
  bhttp::request<bhttp::file_body> req{bhttp::verb::post, impl_->prefix + std::string(target), 11};
  beast::error_code ec;
  req.body().open(path.c_str(), beast::file_mode::scan, ec);
  if (ec) return Error::not_found("cannot read " + path + ": " + ec.message());
  req.set(bhttp::field::host, impl_->host_port);
  req.set(bhttp::field::user_agent, "benchfleet/" BENCHFLEET_VERSION);
  for (const auto& [name, value] : headers) req.set(name, value);
  req.prepare_payload();
  bhttp::response_parser<bhttp::string_body> parser;
  parser.header_limit(kResponseHeaderLimit);
  parser.body_limit(impl_->body_limit);
  Impl::Attempt a;
  impl_->run_once([&] { return impl_->exchange_once(req, parser, timeout, a); });
  if (a.ec) {
    Request described{bhttp::verb::post, req.target(), 11};
    return impl_->describe(described, a, timeout);
  }
  a.response.body = std::move(parser.get().body());
  return std::move(a.response);
}

Result<ClientResponse> Client::get_to_file(std::string_view target, const std::string& path, const Headers& headers,
                                           std::uint64_t max_bytes, std::chrono::milliseconds timeout) {
  if (impl_->config_error) return *impl_->config_error;
  Request req{bhttp::verb::get, impl_->prefix + std::string(target), 11};
  req.set(bhttp::field::host, impl_->host_port);
  req.set(bhttp::field::user_agent, "benchfleet/" BENCHFLEET_VERSION);
  for (const auto& [name, value] : headers) req.set(name, value);
  bhttp::response_parser<bhttp::file_body> parser;
  parser.header_limit(kResponseHeaderLimit);
  parser.body_limit(max_bytes);
  beast::error_code ec;
  parser.get().body().open(path.c_str(), beast::file_mode::write, ec);
  if (ec) return Error::internal("cannot write " + path + ": " + ec.message());
  Impl::Attempt a;
  impl_->run_once([&] { return impl_->exchange_once(req, parser, timeout, a); });
  parser.get().body().close();
  if (a.ec) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return impl_->describe(req, a, timeout);
  }
  if (a.response.status != 200) {
    std::ifstream in(path, std::ios::binary);
    a.response.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  return std::move(a.response);
}

std::size_t Client::response_body_limit() const { return impl_->body_limit; }
void Client::set_response_body_limit(std::size_t bytes) { impl_->body_limit = bytes; }
const std::string& Client::host_port() const { return impl_->host_port; }
std::size_t Client::connections_opened() const { return impl_->connections; }

}  // namespace benchfleet::http
