// The coordinator's REST API: registers every route of /api/v1 (and /healthz, /metrics, the
// OpenAPI document and the dashboard) on a Router. Handlers get their dependencies from
// ApiContext; the rules they apply live below them (coordinator/rules/, common/matrix.h), the
// state in the store (coordinator/store/).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/http/router.h"
#include "coordinator/api/metrics.h"
#include "coordinator/api/report_cache.h"
#include "coordinator/config/config.h"
#include "coordinator/services/artifact_files.h"
#include "coordinator/services/model_registry.h"
#include "coordinator/services/work_signal.h"
#include "coordinator/store/store.h"

namespace benchfleet::api {

struct ApiContext {
  store::Store& store;
  services::ModelRegistry& models;     // the models as registered (catalog() for the current set)
  services::ArtifactFiles& artifacts;  // the bytes of uploaded artifacts
  const config::CoordinatorConfig& config;
  const Clock& clock;
  services::WorkSignal& work;
  Metrics& metrics;
  std::string operator_token;    // never empty once the coordinator runs
  std::string enrollment_token;  // never empty once the coordinator runs
  std::string reader_token;      // never empty once the coordinator runs; reads only
  std::atomic<bool>& stopping;   // long polls return at once when set
  // Where handlers that touch the store run, so the I/O threads never block on SQLite: the
  // operators' writes and the service routes.
  boost::asio::any_io_executor blocking;
  // The agent protocol's own lane (lease, heartbeat, progress, result, release, and the agent
  // token checks): its store operations go first (GroupCommit::FirstInLine).
  boost::asio::any_io_executor agent_lane;
  // The reads' lane (every GET that touches the store), at a lower CPU priority.
  boost::asio::any_io_executor read_lane;
  // Called (cheap, never blocking) after a result was stored: wakes the change detector.
  std::function<void()> on_result_stored = {};
  // Finished runs' rendered reports (a finished run's report never changes).
  std::shared_ptr<ReportCache> report_cache = std::make_shared<ReportCache>();
};

// REQUIRES: `ctx` outlives the router.
void register_routes(http::Router& router, ApiContext& ctx);

// The OpenAPI document served at /api/v1/openapi.json (compiled in from openapi.json).
const std::string& openapi_document();

}  // namespace benchfleet::api
