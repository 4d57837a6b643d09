// The bytes of artifacts (docs/models.md): content-addressed files under the artifact directory,
// <dir>/<64 hex>. An upload is written to a temporary file beside them while its SHA-256 is
// computed, a chunk at a time (never whole in memory), and renamed to its digest once complete
// and on disk; a second upload of the same bytes finds the file there.
//   auto upload = files.begin_upload("file");   // an http::BodySink for the route
//   ... the server writes the body into it ...
//   Result<FinishedUpload> done = upload->finish();
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/exchange.h"
#include "common/result.h"

namespace benchfleet::services {

struct FinishedUpload {
  std::string digest;  // "sha256:<hex>"
  std::uint64_t size = 0;
};

class ArtifactUpload : public http::BodySink {
 public:
  ~ArtifactUpload() override;  // removes the temporary file unless finish() succeeded
  bool write(std::string_view chunk) override;
  // Closes, syncs and renames the file to its digest. Errors: what stopped write(), a body over
  // the limit, a tar that does not start like one; kInternal for the disk.
  Result<FinishedUpload> finish();

 private:
  friend class ArtifactFiles;
  struct State;
  explicit ArtifactUpload(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class ArtifactFiles {
 public:
  // `dir` is created when missing; uploads past `max_bytes` fail.
  ArtifactFiles(std::string dir, std::uint64_t max_bytes);

  // Creates the directory; an error names it.
  Status open();
  // A new upload of `kind` ("file" or "tar"); null when its temporary file cannot be made.
  std::shared_ptr<ArtifactUpload> begin_upload(std::string_view kind) const;
  // The file of a stored digest ("sha256:<hex>").
  std::string path_of(std::string_view digest) const;
  std::uint64_t max_bytes() const { return max_bytes_; }

 private:
  std::string dir_;
  std::uint64_t max_bytes_;
};

}  // namespace benchfleet::services
