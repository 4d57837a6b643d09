#include "coordinator/services/artifact_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <openssl/evp.h>

#include "common/model_definition.h"

namespace benchfleet::services {

namespace fs = std::filesystem;

struct ArtifactUpload::State {
  std::string dir;
  std::string temp;  // the temporary file, "" once renamed
  std::string kind;
  std::uint64_t max_bytes = 0;
  std::uint64_t size = 0;
  int fd = -1;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sha{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  std::string head;  // the first 512 bytes, to check a tar's header
  std::optional<Error> failure;
};

ArtifactUpload::ArtifactUpload(std::unique_ptr<State> state) : state_(std::move(state)) {}

ArtifactUpload::~ArtifactUpload() {
  if (state_->fd >= 0) ::close(state_->fd);
  if (!state_->temp.empty()) ::unlink(state_->temp.c_str());
}

bool ArtifactUpload::write(std::string_view chunk) {
  State& s = *state_;
  if (s.failure) return false;
  if (s.size + chunk.size() > s.max_bytes) {
    s.failure = Error{ErrorCode::kPayloadTooLarge,
                      "the artifact is larger than max_artifact_bytes (" + std::to_string(s.max_bytes) + " bytes)",
                      {}};
    return false;
  }
  if (s.head.size() < 512) s.head.append(chunk.substr(0, 512 - s.head.size()));
  if (EVP_DigestUpdate(s.sha.get(), chunk.data(), chunk.size()) != 1) {
    s.failure = Error::internal("SHA-256 failed");
    return false;
  }
  while (!chunk.empty()) {
    const ssize_t n = ::write(s.fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      s.failure = Error::internal("cannot write the artifact to " + s.dir + ": " + std::strerror(errno));
      return false;
    }
    chunk.remove_prefix(static_cast<std::size_t>(n));
    s.size += static_cast<std::uint64_t>(n);
  }
  return true;
}

Result<FinishedUpload> ArtifactUpload::finish() {
  State& s = *state_;
  if (s.failure) return *s.failure;
  // A tar's first header block carries "ustar" at offset 257 (POSIX and GNU formats).
  if (s.kind == "tar" && (s.head.size() < 512 || s.head.compare(257, 5, "ustar") != 0)) {
    return Error::invalid("kind", "kind=tar but the body is not a tar archive (no ustar header)");
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(s.sha.get(), md, &length) != 1) return Error::internal("SHA-256 failed");
  std::string hex;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 0xf];
  }
  if (::fsync(s.fd) != 0) return Error::internal("cannot sync the artifact: " + std::string(std::strerror(errno)));
  ::close(s.fd);
  s.fd = -1;
  const std::string final_path = (fs::path(s.dir) / hex).string();
  if (std::error_code ec; fs::exists(final_path, ec)) {
    ::unlink(s.temp.c_str());  // the same bytes are there already
  } else if (::rename(s.temp.c_str(), final_path.c_str()) != 0) {
    return Error::internal("cannot store the artifact as " + final_path + ": " + std::strerror(errno));
  }
  s.temp.clear();
  if (const int dir = ::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY); dir >= 0) {
    ::fsync(dir);  // the rename is durable before the row that names it
    ::close(dir);
  }
  return FinishedUpload{std::string(kDigestPrefix) + hex, s.size};
}

ArtifactFiles::ArtifactFiles(std::string dir, std::uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

Status ArtifactFiles::open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error::internal("cannot create the artifact directory " + dir_ + ": " + ec.message());
  // Uploads a crash cut short.
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (entry.path().filename().string().starts_with(".upload-")) fs::remove(entry.path(), ec);
  }
  return Status::Ok();
}

std::shared_ptr<ArtifactUpload> ArtifactFiles::begin_upload(std::string_view kind) const {
  auto state = std::make_unique<ArtifactUpload::State>();
  state->dir = dir_;
  state->kind = std::string(kind);
  state->max_bytes = max_bytes_;
  static std::atomic<std::uint64_t> counter{0};
  state->temp = (fs::path(dir_) / (".upload-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
  state->fd = ::open(state->temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (state->fd < 0 || !state->sha || EVP_DigestInit_ex(state->sha.get(), EVP_sha256(), nullptr) != 1) {
    if (state->fd >= 0) {
      ::close(state->fd);
      ::unlink(state->temp.c_str());
    }
    return nullptr;
  }
  return std::shared_ptr<ArtifactUpload>(new ArtifactUpload(std::move(state)));
}

std::string ArtifactFiles::path_of(std::string_view digest) const {
  return (fs::path(dir_) / std::string(digest.substr(kDigestPrefix.size()))).string();
}

}  // namespace benchfleet::services
