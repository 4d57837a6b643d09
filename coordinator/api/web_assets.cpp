#include "coordinator/api/web_assets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/http/problem.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;
namespace fs = std::filesystem;

// Closes a file descriptor on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

http::Response not_found(const http::Request& req, std::string_view detail) {
  return http::problem(bhttp::status::not_found, "Not Found", detail, req);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view opaque_tag(std::string_view tag) {
  if (tag.starts_with("W/")) tag.remove_prefix(2);
  return tag;
}

// Reads the whole file; false on a read error.
bool read_all(int fd, std::uintmax_t size, std::string& out) {
  out.resize(static_cast<std::size_t>(size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;  // the file shrank meanwhile: serve what is there
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return true;
}

}  // namespace

std::optional<std::string> asset_path(const std::vector<std::string>& segments) {
  if (segments.empty()) return std::string("index.html");
  std::string out;
  for (const std::string& segment : segments) {
    if (segment.empty() || segment.front() == '.') return std::nullopt;
    if (segment.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos) return std::nullopt;
    if (!out.empty()) out += '/';
    out += segment;
  }
  return out;
}

std::string_view content_type_for(std::string_view file_name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kTypes{{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
  }};
  const auto slash = file_name.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? file_name : file_name.substr(slash + 1);
  const auto dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return "application/octet-stream";
  const std::string extension = lower(base.substr(dot));
  for (const auto& [ext, type] : kTypes) {
    if (extension == ext) return type;
  }
  return "application/octet-stream";
}

std::string entity_tag(std::uintmax_t size, std::int64_t mtime_ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "\"%jx-%llx\"", size, static_cast<unsigned long long>(mtime_ns));
  return buf;
}

bool none_match(std::string_view if_none_match, std::string_view etag) {
  if (trim(if_none_match) == "*") return true;
  const std::string_view wanted = opaque_tag(etag);
  while (!if_none_match.empty()) {
    const auto comma = if_none_match.find(',');
    const std::string_view item = trim(if_none_match.substr(0, comma));
    if (!item.empty() && opaque_tag(item) == wanted) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

http::Response serve_asset(const std::string& web_root, const http::Request& req,
                           const std::vector<std::string>& segments) {
  if (web_root.empty()) {
    return not_found(req, "the dashboard is disabled on this coordinator (its web_root option is empty)");
  }
  const std::optional<std::string> relative = asset_path(segments);
  if (!relative) {
    return not_found(req, "no such file: paths with empty, hidden ('.'-prefixed) or '..' segments are not served");
  }
  std::error_code ec;
  const fs::path root = fs::canonical(web_root, ec);
  if (ec || !fs::is_directory(root, ec)) {
    return not_found(req, "the dashboard's files are not installed on this coordinator (see its web_root option)");
  }
  std::string missing = "no such file: /";
  missing += *relative;

  // Resolve symlinks, then insist the file is inside the root and not hidden there either.
  const fs::path file = fs::canonical(root / *relative, ec);
  if (ec) return not_found(req, missing);
  const fs::path inside = file.lexically_relative(root);
  if (inside.empty() || *inside.begin() == "..") return not_found(req, missing);
  for (const fs::path& part : inside) {
    const std::string name = part.string();
    if (name.empty() || name.front() == '.') return not_found(req, missing);
  }

  const FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return not_found(req, missing);
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  if (size > kMaxAssetBytes) return not_found(req, missing + " (too large to serve)");

  const std::int64_t mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  const std::string etag = entity_tag(size, mtime_ns);
  const auto add_validators = [&](http::Response& res) {
    res.set(bhttp::field::etag, etag);
    res.set(bhttp::field::cache_control, "no-cache");
  };

  if (const auto it = req.find(bhttp::field::if_none_match);
      it != req.end() && none_match(std::string_view(it->value().data(), it->value().size()), etag)) {
    http::Response res{bhttp::status::not_modified, req.version()};
    res.keep_alive(req.keep_alive());
    add_validators(res);
    return res;
  }

  std::string body;
  if (!read_all(fd.get(), size, body)) {
    spdlog::warn("dashboard: cannot read {}: {}", file.string(), std::strerror(errno));
    return http::problem(bhttp::status::internal_server_error, "Internal Server Error",
                         "the file could not be read; see the server log", req);
  }
  http::Response res = http::make_response(bhttp::status::ok, std::move(body), content_type_for(*relative), req);
  add_validators(res);
  res.set("X-Content-Type-Options", "nosniff");
  return res;
}

}  // namespace benchfleet::api
