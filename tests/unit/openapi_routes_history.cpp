// ResponsesMatchTheDocument's history part: schedules, series and regressions, answered as the
// OpenAPI document says.
#include "coordinator/services/change_detection.h"
#include "tests/unit/openapi_routes_fixture.h"

namespace benchfleet::testing::openapi_routes {

void OpenApiRoutes::exercise_history(const json& one, const std::string& op, const std::string& agent,
                                     const std::string& token) {
  using bhttp::verb;
  // History: a schedule's life; a series and the regression found in 8 nightly runs.
  json nightly = one;
  nightly["batch_sizes"] = json::array({2});
  EXPECT_EQ(call(verb::post, "/api/v1/schedules", json{{"cron", "0 2 * * *"}, {"matrix", nightly}}).status, 401u);
  Call bad_cron = call(verb::post, "/api/v1/schedules", json{{"cron", "61 * * * *"}, {"matrix", nightly}}, op);
  EXPECT_EQ(bad_cron.status, 400u);
  EXPECT_EQ(bad_cron.parsed["field"], "cron");
  json unknown_model = nightly;
  unknown_model["models"] = json::array({"no/such-model"});
  Call bad_matrix = call(verb::post, "/api/v1/schedules", json{{"cron", "0 2 * * *"}, {"matrix", unknown_model}}, op);
  EXPECT_EQ(bad_matrix.status, 400u);
  EXPECT_EQ(bad_matrix.parsed["field"], "matrix.models[0]") << bad_matrix.body;
  Call schedule = call(verb::post, "/api/v1/schedules", json{{"cron", "@daily"}, {"matrix", nightly}}, op);
  ASSERT_EQ(schedule.status, 201u) << schedule.body;
  const std::string schedule_url = schedule.parsed["url"];
  EXPECT_EQ(call(verb::get, "/api/v1/schedules").status, 200u);
  EXPECT_EQ(call(verb::get, schedule_url).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/schedules/0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/schedules/999").status, 404u);
  Call summary = call(verb::get, schedule_url + "/summary?limit=5&stat=median");
  EXPECT_EQ(summary.status, 200u) << summary.body;
  EXPECT_EQ(summary.parsed["runs"], json::array()) << "not fired yet";
  EXPECT_EQ(call(verb::get, schedule_url + "/summary?limit=0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/schedules/999/summary").status, 404u);
  EXPECT_EQ(call(verb::post, schedule_url + "/pause", std::nullopt).status, 401u);
  Call paused = call(verb::post, schedule_url + "/pause", std::nullopt, op);
  EXPECT_EQ(paused.status, 200u);
  EXPECT_TRUE(paused.parsed["next_due_at"].is_null()) << paused.body;
  EXPECT_EQ(call(verb::post, schedule_url + "/resume", std::nullopt, op).status, 200u);
  EXPECT_EQ(call(verb::post, "/api/v1/schedules/999/resume", std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::delete_, schedule_url).status, 401u);
  EXPECT_EQ(call(verb::delete_, schedule_url, std::nullopt, op).status, 204u);
  EXPECT_EQ(call(verb::delete_, schedule_url, std::nullopt, op).status, 404u);

  for (int night = 1; night <= 8; ++night) {
    nightly["name"] = "night " + std::to_string(night);
    ASSERT_EQ(call(verb::post, "/api/v1/runs", nightly, op).status, 201u);
    Call leased_night = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
    ASSERT_TRUE(leased_night.parsed["job"].is_object()) << leased_night.body;
    JobResult r = posted_result(ResultStatus::kOk);
    r.samples_ms.clear();
    for (int i = 0; i < 30; ++i) r.samples_ms.push_back((night <= 6 ? 10.0 : 11.5) + 0.01 * ((i * 7 + night) % 30));
    r.stats = compute_statistics(r.samples_ms);
    r.accuracy.reset();
    r.environment["torch_version"] = "2.12.0.dev2025010" + std::to_string(night);
    const json& j = leased_night.parsed["job"];
    ASSERT_EQ(call(verb::post, "/api/v1/jobs/" + std::to_string(j["id"].get<std::int64_t>()) + "/result",
                   json{{"lease_id", j["lease_id"]}, {"attempt", j["attempt"]}, {"result", r}}, token)
                  .status,
              201u);
  }
  for (bool more = true; more;) {
    auto pass = services::detect_changes(store_->series(), rules::DetectorOptions{}, /*enqueue_alerts=*/false);
    ASSERT_TRUE(pass.ok()) << pass.error().describe();
    more = pass->more;
  }
  Call series_list = call(verb::get,
                          "/api/v1/series?model=microsoft/resnet-50&batch=2&mode=eager&dtype=float32"
                          "&runtime=libtorch&gpu=a100&build=stable&limit=10&after=0");
  ASSERT_EQ(series_list.status, 200u);
  ASSERT_EQ(series_list.parsed["series"].size(), 1u) << series_list.body;
  const std::string series_url = series_list.parsed["series"][0]["url"];
  EXPECT_EQ(call(verb::get, "/api/v1/series").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/series?mode=fast").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/series?limit=501").status, 400u);
  Call series_page = call(verb::get, series_url + "?limit=3");
  ASSERT_EQ(series_page.status, 200u);
  EXPECT_EQ(series_page.parsed["points"].size(), 3u);
  ASSERT_FALSE(series_page.parsed["next_after_point"].is_null()) << series_page.body;
  Call series_rest =
      call(verb::get, series_url + "?after_point=" + series_page.parsed["next_after_point"].dump() + "&limit=5000");
  EXPECT_EQ(series_rest.status, 200u);
  EXPECT_EQ(series_rest.parsed["points"].size(), 5u) << series_rest.body;
  EXPECT_EQ(series_rest.parsed["regressions"].size(), 1u) << series_rest.body;
  EXPECT_EQ(call(verb::get, series_url + "?limit=0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/series/999").status, 404u);

  Call regressions = call(verb::get, "/api/v1/regressions");
  ASSERT_EQ(regressions.status, 200u);
  ASSERT_EQ(regressions.parsed["regressions"].size(), 1u) << regressions.body;
  const std::string regression_url = regressions.parsed["regressions"][0]["url"];
  EXPECT_EQ(regressions.parsed["regressions"][0]["first_bad"]["torch_version"], "2.12.0.dev20250107");
  EXPECT_EQ(call(verb::get, "/api/v1/regressions?state=all&direction=all&series=1&limit=5&before=999").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/regressions?state=closed").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/regressions?direction=up").status, 400u);
  EXPECT_EQ(call(verb::get, regression_url).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/regressions/999").status, 404u);
  EXPECT_EQ(call(verb::post, regression_url + "/acknowledge", std::nullopt).status, 401u);
  Call bad_note = call(verb::post, regression_url + "/acknowledge", json{{"note", 3}}, op);
  EXPECT_EQ(bad_note.status, 400u);
  EXPECT_EQ(bad_note.parsed["field"], "note");
  Call acked = call(verb::post, regression_url + "/acknowledge", json{{"note", "bisecting"}}, op);
  EXPECT_EQ(acked.status, 200u);
  EXPECT_EQ(acked.parsed["state"], "acknowledged");
  EXPECT_EQ(acked.parsed["note"], "bisecting");
  EXPECT_EQ(call(verb::post, regression_url + "/resolve", std::nullopt, op).parsed["state"], "resolved");
  EXPECT_EQ(call(verb::post, regression_url + "/reopen", std::nullopt, op).parsed["state"], "open");
  EXPECT_EQ(call(verb::post, "/api/v1/regressions/999/resolve", std::nullopt, op).status, 404u);
}

}  // namespace benchfleet::testing::openapi_routes
