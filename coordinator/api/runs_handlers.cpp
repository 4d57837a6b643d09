// Handlers for runs, results, reports and the model catalog.
#include "coordinator/api/handlers.h"

#include "common/codecs.h"
#include "coordinator/matrix.h"
#include "coordinator/report/render.h"
#include "coordinator/report/report.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;
using http::json_response;

}  // namespace

http::Response submit_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  if (auto s = require_operator(ctx, req); !s) return error_response(s.error(), req);
  auto body = json_body(ctx, req);
  if (!body.ok()) return error_response(body.error(), req);
  auto spec = decode<MatrixSpec>(*body);
  if (!spec.ok()) return error_response(spec.error(), req);
  auto jobs = expand_matrix(*spec, ctx.catalog, ExpansionLimits{ctx.config.max_cells});
  if (!jobs.ok()) return error_response(jobs.error(), req);
  auto created = ctx.store.create_run(*spec, *jobs);
  if (!created.ok()) return error_response(created.error(), req);
  const std::string url = "/api/v1/runs/" + std::to_string(created->run_id);
  auto res = json_response(bhttp::status::created,
                           {{"id", created->run_id}, {"job_count", created->job_count}, {"url", url}}, req);
  res.set(bhttp::field::location, url);
  return res;
}

http::Response list_runs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  auto limit = int_query(m, "limit", 1, 500);
  if (!limit.ok()) return error_response(limit.error(), req);
  auto before = int_query(m, "before", 1, INT64_MAX);
  if (!before.ok()) return error_response(before.error(), req);
  const int n = static_cast<int>(limit->value_or(50));
  auto runs = ctx.store.list_runs(n, *before);
  if (!runs.ok()) return error_response(runs.error(), req);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : *runs) out.push_back(run_json(r));
  nlohmann::json next = static_cast<int>(runs->size()) == n ? nlohmann::json(runs->back().id) : nlohmann::json();
  return json_response(bhttp::status::ok, {{"runs", out}, {"next_before", next}}, req);
}

http::Response get_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  auto id = id_param(m, "id");
  if (!id.ok()) return error_response(id.error(), req);
  auto run = ctx.store.get_run(*id);
  if (!run.ok()) return error_response(run.error(), req);
  return json_response(bhttp::status::ok, run_json(*run), req);
}

http::Response cancel_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  if (auto s = require_operator(ctx, req); !s) return error_response(s.error(), req);
  auto id = id_param(m, "id");
  if (!id.ok()) return error_response(id.error(), req);
  auto outcome = ctx.store.cancel_run(*id);
  if (!outcome.ok()) return error_response(outcome.error(), req);
  auto run = ctx.store.get_run(*id);
  if (!run.ok()) return error_response(run.error(), req);
  auto body = run_json(*run);
  body["cancelled_jobs"] = outcome->cancelled_jobs;
  body["already_cancelled"] = outcome->already_cancelled;
  return json_response(bhttp::status::ok, body, req);
}

http::Response list_results(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  auto id = id_param(m, "id");
  if (!id.ok()) return error_response(id.error(), req);
  auto limit = int_query(m, "limit", 1, 1000);
  if (!limit.ok()) return error_response(limit.error(), req);
  auto cursor = int_query(m, "cursor", 0, INT64_MAX);
  if (!cursor.ok()) return error_response(cursor.error(), req);
  auto batch = int_query(m, "batch", 1, 65536);
  if (!batch.ok()) return error_response(batch.error(), req);
  store::ResultFilter f;
  f.model = str_query(m, "model");
  f.mode = str_query(m, "mode");
  f.torch_build = str_query(m, "build");
  f.gpu = str_query(m, "gpu");
  f.runtime = str_query(m, "runtime");
  f.status = str_query(m, "status");
  if (*batch) f.batch = static_cast<int>(**batch);
  if (f.mode && !parse_mode(*f.mode)) return error_response(Error::invalid("query.mode", "unknown mode"), req);
  if (f.runtime && !parse_runtime(*f.runtime)) {
    return error_response(Error::invalid("query.runtime", "unknown runtime"), req);
  }
  if (f.status && !parse_result_status(*f.status)) {
    return error_response(Error::invalid("query.status", "unknown result status"), req);
  }
  const auto samples = str_query(m, "samples");
  if (samples && *samples != "true" && *samples != "false") {
    return error_response(Error::invalid("query.samples", "must be true or false"), req);
  }
  auto page = ctx.store.list_results(*id, f, *cursor, static_cast<int>(limit->value_or(100)));
  if (!page.ok()) return error_response(page.error(), req);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : page->rows) rows.push_back(result_json(r, samples.value_or("true") == "true"));
  nlohmann::json next = page->next_cursor ? nlohmann::json(std::to_string(*page->next_cursor)) : nlohmann::json();
  return json_response(bhttp::status::ok, {{"results", rows}, {"next_cursor", next}}, req);
}

http::Response get_result(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  auto id = id_param(m, "id");
  if (!id.ok()) return error_response(id.error(), req);
  auto row = ctx.store.get_result(*id);
  if (!row.ok()) return error_response(row.error(), req);
  return json_response(bhttp::status::ok, result_json(*row, true), req);
}

http::Response run_report(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  auto id = id_param(m, "id");
  if (!id.ok()) return error_response(id.error(), req);
  const std::string format = str_query(m, "format").value_or("json");
  if (format != "json" && format != "md" && format != "csv") {
    return error_response(Error::invalid("query.format", "must be json, md or csv"), req);
  }
  const auto stat = report::parse_stat(str_query(m, "stat").value_or("mean"));
  if (!stat) return error_response(Error::invalid("query.stat", "must be mean or median"), req);

  auto run = ctx.store.get_run(*id);
  if (!run.ok()) return error_response(run.error(), req);
  auto cells = ctx.store.report_cells(*id);
  if (!cells.ok()) return error_response(cells.error(), req);
  report::ReportInput input;
  input.run_id = run->id;
  input.run_name = run->name;
  input.matrix = run->spec;
  for (const auto& model : ctx.catalog.models()) input.labels.push_back({model.id, model.display_name()});
  input.cells = std::move(*cells);
  input.stat = *stat;
  const report::Report built = report::build_report(input);

  if (format == "md") {
    return http::text_response(bhttp::status::ok, report::render_markdown(built), req, "text/markdown; charset=utf-8");
  }
  if (format == "csv") {
    auto res = http::text_response(bhttp::status::ok, report::render_csv(built), req, "text/csv; charset=utf-8");
    res.set(bhttp::field::content_disposition, "attachment; filename=\"run-" + std::to_string(run->id) + ".csv\"");
    return res;
  }
  return json_response(bhttp::status::ok, report::to_json(built), req);
}

http::Response list_models(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  nlohmann::json models = nlohmann::json::array();
  for (const auto& model : ctx.catalog.models()) models.push_back(model_json(model));
  return json_response(bhttp::status::ok, {{"models", models}}, req);
}

}  // namespace benchfleet::api
