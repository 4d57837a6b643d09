// The dashboard's static files, served from the coordinator's web_root: which request paths
// name which files (a pure rule), their content types and validators, and the blocking read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/types.h"

namespace benchfleet::api {

// Largest file served; bigger ones answer 404 (the dashboard's files are a few hundred KiB).
inline constexpr std::uintmax_t kMaxAssetBytes = std::uintmax_t{64} << 20;

// The file a request path names, relative to the web root, from the path's percent-decoded
// segments (RouteMatch::segments): {} ("/") -> "index.html", {"vendor", "chart.umd.js"} ->
// "vendor/chart.umd.js". Pure. nullopt (refused) when a segment is empty (a trailing or
// doubled '/': directories are not listed), starts with '.' (".", "..", hidden files) or holds
// '/', '\' or NUL (an encoded separator such as "%2F", or "%00").
std::optional<std::string> asset_path(const std::vector<std::string>& segments);

// The Content-Type for a file name, by its extension (case-insensitive): .html, .js/.mjs, .css,
// .svg, .png, .ico, .json, .map, .txt, .woff2; "application/octet-stream" for anything else.
std::string_view content_type_for(std::string_view file_name);

// A strong entity tag from a file's size and modification time: "\"<size>-<mtime ns>\"" (hex).
std::string entity_tag(std::uintmax_t size, std::int64_t mtime_ns);

// Whether an If-None-Match field value matches `etag`: "*", or a comma-separated list holding
// it, compared weakly (a W/ prefix is ignored), as RFC 9110 section 13.1.2 asks.
bool none_match(std::string_view if_none_match, std::string_view etag);

// The answer to GET or HEAD of `segments` under `web_root`: 200 with the file's bytes, its
// Content-Type, a strong ETag and "Cache-Control: no-cache"; 304 (no body) when If-None-Match
// matches the ETag; a 404 problem when web_root is empty (dashboard disabled) or not a
// directory, or the path is refused (asset_path), missing, not a regular file, larger than
// kMaxAssetBytes, or leads by a symlink outside the root or into a hidden file. A 404 never
// names server paths. Blocking (file system): call it off the I/O threads.
http::Response serve_asset(const std::string& web_root, const http::Request& req,
                           const std::vector<std::string>& segments);

}  // namespace benchfleet::api
