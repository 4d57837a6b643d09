// The environment fingerprint recorded with every result (docs/design.md §11).
#pragma once

#include <nlohmann/json.hpp>

#include "agent/worker/capabilities.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

// Flat map: runtime ("libtorch"), torch_version (the LibTorch this worker was compiled against:
// TORCH_VERSION), the exporter's torch version, git, python and sha256 (exporter_*), worker
// version, host, CPU model and threads, device (+ GPU name/UUID/SM, CUDA/cuDNN, driver on CUDA),
// the artifact's format and, for a CPU AOTInductor package, its kernels' vector ISA
// (inductor_vec_isa; "none" is scalar code). The artifact itself is not hashed here: the agent adds
// artifact_sha256 (its own hash of the file it gave the worker, agent/daemon/artifact_cache.h), so
// the worker needs no crypto library. How long the artifact took to load is the result's load_s.
nlohmann::json fingerprint(const WorkerJob& job, const Capabilities& caps);

}  // namespace benchfleet::worker
