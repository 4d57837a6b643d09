// A file compiled into a binary (see cmake/EmbedFiles.cmake).
#pragma once

#include <string>
#include <vector>

namespace benchfleet {

struct EmbeddedFile {
  std::string name;  // file name without directories, e.g. "001_initial.sql"
  std::string content;
};

}  // namespace benchfleet
