// The coordinator's REST API as the CLI uses it: one method per endpoint, each returning the
// decoded JSON (or text) of a success, else an Error whose message is the server's
// problem+json `detail` ("cancel run 9: HTTP 404: run 9 does not exist"), or says that the
// coordinator could not be reached and which URL was tried.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "common/result.h"

namespace benchfleet::cli {

// Thread safety: none (one HTTP connection).
class FleetClient {
 public:
  FleetClient(std::string base_url, std::string operator_token, std::chrono::milliseconds timeout);

  // RunCreated; with allow_pending, builds and GPU classes no enrolled agent offers are queued
  // for hosts still to come (its `pending` says what waits) instead of refused.
  Result<nlohmann::json> submit(const nlohmann::json& matrix, bool allow_pending = false);
  // RunDryRun: every check a submit makes (the catalog, the limits, the fleet), nothing stored.
  Result<nlohmann::json> check_submit(const nlohmann::json& matrix, bool allow_pending = false);
  Result<nlohmann::json> run(std::int64_t id);  // Run
  Result<nlohmann::json> runs(int limit);       // RunList (newest first)
  // One page of a run's results (samples omitted), from `cursor` ("" for the first page).
  Result<nlohmann::json> results_page(std::int64_t run_id, const std::string& cursor);
  // The report as text: format json, md or csv; stat mean or median; with exclude_flagged, the
  // geomeans leave noise-flagged results out too.
  Result<std::string> report(std::int64_t run_id, const std::string& format, const std::string& stat,
                             bool exclude_flagged = false);
  Result<nlohmann::json> report_json(std::int64_t run_id, const std::string& stat);  // Report
  // GET /api/v1/compare of sides "RUN" or "RUN:BUILD": the Comparison (format json), or its
  // Markdown or CSV as text.
  Result<nlohmann::json> compare_json(const std::string& a, const std::string& b, const std::string& stat);
  Result<std::string> compare(const std::string& a, const std::string& b, const std::string& stat,
                              const std::string& format);
  Result<nlohmann::json> cancel(std::int64_t run_id);                  // CancelledRun
  Result<nlohmann::json> agents();                                     // AgentList
  Result<nlohmann::json> drain(std::int64_t agent_id, bool draining);  // Agent
  Result<nlohmann::json> approve(std::int64_t agent_id);               // Agent
  Result<nlohmann::json> models();                                     // ModelList
  // Registered models (docs/models.md). register_model answers the Model with its `outcome`.
  Result<nlohmann::json> register_model(const nlohmann::json& definition, bool new_version);
  Result<nlohmann::json> model(const std::string& id);  // Model, with its versions
  Result<nlohmann::json> delete_model(const std::string& id, bool retire);
  // Streams the file up (never whole in memory); kind "file" or "tar". The Artifact.
  Result<nlohmann::json> upload_artifact(const std::string& path, const std::string& kind, const std::string& name);
  Result<nlohmann::json> artifacts();  // ArtifactList

  // History. `query` is already encoded ("model=...&limit=20"), "" for none.
  Result<nlohmann::json> create_schedule(const nlohmann::json& request);       // Schedule
  Result<nlohmann::json> schedules();                                          // ScheduleList
  Result<nlohmann::json> schedule(std::int64_t id);                            // Schedule
  Result<nlohmann::json> set_schedule_enabled(std::int64_t id, bool enabled);  // Schedule
  Status delete_schedule(std::int64_t id);
  Result<nlohmann::json> series_list(const std::string& query);              // SeriesList
  Result<nlohmann::json> series(std::int64_t id, const std::string& query);  // SeriesDetail
  Result<nlohmann::json> regressions(const std::string& query);              // RegressionList
  // action: "acknowledge", "resolve" or "reopen"; the note replaces the regression's.
  Result<nlohmann::json> change_regression(std::int64_t id, const std::string& action,
                                           const std::optional<std::string>& note);  // Regression

  const std::string& base_url() const { return base_url_; }

 private:
  // expected_status 0: any 2xx.
  Result<http::ClientResponse> send(boost::beast::http::verb verb, const std::string& target, const std::string& what,
                                    unsigned expected_status, const nlohmann::json* body = nullptr);
  // The Error for an answer that is not `expected_status` (0: any 2xx).
  Error refusal(const Result<http::ClientResponse>& r, const std::string& what) const;
  Result<nlohmann::json> send_json(boost::beast::http::verb verb, const std::string& target, const std::string& what,
                                   unsigned expected_status, const nlohmann::json* body = nullptr);

  std::string base_url_;
  std::string token_;
  std::chrono::milliseconds timeout_;
  http::Client http_;
};

}  // namespace benchfleet::cli
