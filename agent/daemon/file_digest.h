// SHA-256 of a file, for the artifact identity the agent adds to every libtorch result
// (environment.artifact_sha256). The agent hashes, not the worker, so the worker needs no
// OpenSSL and builds on hosts that have only a torch build and header-only dependencies.
#pragma once

#include <string>

#include "common/result.h"

namespace benchfleet::agent {

// Lower-case hex SHA-256 of the file's bytes; an error naming the path when it cannot be read.
// Reads the file in 1 MiB blocks: memory stays bounded for multi-GB artifacts.
Result<std::string> file_sha256(const std::string& path);

}  // namespace benchfleet::agent
