// The environment fingerprint recorded with every result (DESIGN section 6).
#pragma once

#include <nlohmann/json.hpp>

#include "agent/worker/capabilities.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

// Flat map: torch version (+ git from the exporter), worker version, host, CPU model and
// threads, device (+ GPU name/UUID/SM, CUDA/cuDNN, driver on CUDA), artifact sha256 and format.
nlohmann::json fingerprint(const WorkerJob& job, const Capabilities& caps);

// Lower-case hex SHA-256 of a file; empty if unreadable.
std::string file_sha256(const std::string& path);

}  // namespace benchfleet::worker
