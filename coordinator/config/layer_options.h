// The coordinator's configuration turned into each layer's own options, and its tokens resolved:
// what main needs to construct the store, the services and the server.
#pragma once

#include <string>

#include "common/http/server.h"
#include "common/result.h"
#include "coordinator/config/config.h"
#include "coordinator/services/history_worker.h"
#include "coordinator/store/store.h"

namespace benchfleet::config {

store::StoreOptions store_options(const CoordinatorConfig& config);
services::HistoryWorkerOptions history_options(const CoordinatorConfig& config);
http::ServerLimits server_limits(const CoordinatorConfig& config);

// The configured token, else the one kept in `path`, else a new one written there (mode 0600).
// Error names the file when it cannot be written.
Result<std::string> resolve_token(const std::string& configured, const std::string& path);

// Raises the soft open-file limit to the hard one, since max_connections bounds the sockets, not
// that limit (often 1024); warns when max_connections still cannot be reached.
void raise_open_file_limit(const CoordinatorConfig& config);

}  // namespace benchfleet::config
