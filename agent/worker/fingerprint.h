// The environment fingerprint recorded with every result (DESIGN section 6).
#pragma once

#include <nlohmann/json.hpp>

#include "agent/worker/capabilities.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

// Flat map: runtime ("libtorch"), torch_version (the LibTorch this worker was compiled against:
// TORCH_VERSION), the exporter's torch version, git, python and sha256 (exporter_*), worker
// version, host, CPU model and threads, device (+ GPU name/UUID/SM, CUDA/cuDNN, driver on CUDA),
// artifact sha256 and format. How long the artifact took to load is the result's load_s.
nlohmann::json fingerprint(const WorkerJob& job, const Capabilities& caps);

// Lower-case hex SHA-256 of a file; empty if unreadable.
std::string file_sha256(const std::string& path);

}  // namespace benchfleet::worker
