#include "agent/worker/result_output.h"

#include <fcntl.h>
#include <stdio.h>  // ::rename
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace benchfleet::worker {
namespace {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool write_line(int fd, std::initializer_list<std::string_view> pieces) {
  for (std::string_view piece : pieces) {
    if (!write_all(fd, piece)) return false;
  }
  return write_all(fd, "\n");
}

}  // namespace

ResultOutput::ResultOutput(std::string path)
    : path_(std::move(path)), tmp_path_(path_.empty() ? "" : path_ + ".tmp"), name_(path_.empty() ? "stdout" : path_) {}

bool ResultOutput::write(std::initializer_list<std::string_view> pieces) const {
  if (path_.empty()) return write_line(STDOUT_FILENO, pieces);
  const int fd = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = write_line(fd, pieces) && ::fsync(fd) == 0;
  ::close(fd);
  return ok && ::rename(tmp_path_.c_str(), path_.c_str()) == 0;
}

}  // namespace benchfleet::worker
