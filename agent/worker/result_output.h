// Where the worker's one result line goes: stdout, or a file given by --out.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace benchfleet::worker {

class ResultOutput {
 public:
  // `path` empty: stdout. Otherwise the file, written atomically beside itself (path + ".tmp").
  explicit ResultOutput(std::string path);

  // Writes the pieces, then a newline; to a file durably (temp file, fsync, rename). False if any
  // step failed. Async-signal-safe (open, write, fsync, close, rename; nothing allocated), so a
  // signal handler may report through it too.
  bool write(std::initializer_list<std::string_view> pieces) const;

  // "stdout" or the path, for messages.
  const std::string& describe() const { return name_; }

 private:
  std::string path_;
  std::string tmp_path_;
  std::string name_;
};

}  // namespace benchfleet::worker
