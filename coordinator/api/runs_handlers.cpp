// Handlers for runs, results and reports.
#include "coordinator/api/handlers.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <tuple>

#include "common/codecs.h"
#include "common/matrix.h"
#include "coordinator/report/render.h"
#include "coordinator/rules/eta.h"
#include "coordinator/rules/fleet_check.h"
#include "coordinator/rules/report.h"
#include "coordinator/rules/report_cells.h"
#include "coordinator/store/samples_reader.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;
using http::json_response;

// Most results in one page of GET /runs/{id}/results?samples=true.
constexpr int kMaxResultsWithSamples = 10;

}  // namespace

// A matrix whose torch build or GPU class no enrolled agent offers is refused (its jobs would
// wait forever), naming the field, the nearest name and what the fleet offers, unless
// ?allow_pending=true queues it for hosts still to come; the answer's `pending` says what waits.
// ?dry_run=true checks all of it and answers 200 with the job count, storing nothing. Both answers
// list the modes that will end `unsupported` where they go (rules::unsupported_modes).
Result<http::Response> submit_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const bool allow_pending, bool_query(m, "allow_pending"));
  BF_ASSIGN_OR_RETURN(const bool dry_run, bool_query(m, "dry_run"));
  BF_ASSIGN_OR_RETURN(const nlohmann::json body, json_body(ctx, req));
  BF_ASSIGN_OR_RETURN(MatrixSpec spec, decode<MatrixSpec>(body));
  BF_RETURN_IF_ERROR(resolve_models(spec, *ctx.models.catalog()));
  BF_ASSIGN_OR_RETURN(const auto jobs, expand_submitted_matrix(ctx, spec));
  BF_ASSIGN_OR_RETURN(const auto agents, ctx.store.agents().list_agents());
  std::vector<AgentDescriptor> fleet;
  fleet.reserve(agents.size());
  for (const auto& a : agents) fleet.push_back(a.descriptor);
  const auto gaps = rules::fleet_gaps(spec, fleet);
  if (!gaps.empty() && !allow_pending) {
    return Error::invalid(gaps.front().field, gaps.front().message +
                                                  "; submit with allow_pending=true (CLI --allow-pending) to queue "
                                                  "it for hosts still to come");
  }
  nlohmann::json pending = nlohmann::json::array();
  for (const auto& g : gaps) pending.push_back({{"field", g.field}, {"message", g.message}});
  // Jobs the fleet would run only to answer `unsupported`: said, not refused (a matrix over
  // every mode is a fair question; its answer is a table with those cells marked).
  nlohmann::json unsupported = nlohmann::json::array();
  for (const auto& u : rules::unsupported_modes(spec, fleet)) {
    unsupported.push_back({{"field", u.field}, {"message", u.message}});
  }
  if (dry_run) {
    return json_response(
        bhttp::status::ok,
        {{"valid", true}, {"job_count", jobs.size()}, {"pending", pending}, {"unsupported", unsupported}}, req);
  }
  BF_ASSIGN_OR_RETURN(const auto created, ctx.store.runs().create_run(spec, jobs));
  const std::string url = "/api/v1/runs/" + std::to_string(created.run_id);
  auto res = json_response(bhttp::status::created,
                           {{"id", created.run_id},
                            {"job_count", created.job_count},
                            {"url", url},
                            {"pending", pending},
                            {"unsupported", unsupported}},
                           req);
  res.set(bhttp::field::location, url);
  return res;
}

Result<http::Response> list_runs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 500));
  BF_ASSIGN_OR_RETURN(const auto before, int_query(m, "before", 1, INT64_MAX));
  const int n = static_cast<int>(limit.value_or(50));
  BF_ASSIGN_OR_RETURN(const auto runs, ctx.store.runs().list_runs(n, before));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : runs) out.push_back(run_json(r));
  nlohmann::json next = static_cast<int>(runs.size()) == n ? nlohmann::json(runs.back().id) : nlohmann::json();
  return json_response(bhttp::status::ok, {{"runs", out}, {"next_before", next}}, req);
}

Result<http::Response> get_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto run, ctx.store.runs().get_run(id));
  nlohmann::json body = run_json(run);
  if (run.state == "queued" || run.state == "running") {
    BF_ASSIGN_OR_RETURN(const auto times, ctx.store.runs().mode_times(id));
    if (const auto left = rules::seconds_left(times)) body["eta_s"] = *left;
  }
  return json_response(bhttp::status::ok, body, req);
}

Result<http::Response> cancel_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto outcome, ctx.store.runs().cancel_run(id));
  BF_ASSIGN_OR_RETURN(const auto run, ctx.store.runs().get_run(id));
  auto body = run_json(run);
  body["cancelled_jobs"] = outcome.cancelled_jobs;
  body["already_cancelled"] = outcome.already_cancelled;
  return json_response(bhttp::status::ok, body, req);
}

Result<http::Response> list_results(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 1000));
  BF_ASSIGN_OR_RETURN(const auto cursor, int_query(m, "cursor", 0, INT64_MAX));
  BF_ASSIGN_OR_RETURN(const CellQuery cell, cell_query(m));
  const store::ResultFilter f{.model = cell.model,
                              .mode = cell.mode,
                              .torch_build = cell.torch_build,
                              .gpu = cell.gpu,
                              .runtime = cell.runtime,
                              .status = str_query(m, "status"),
                              .dtype = cell.dtype,
                              .batch = cell.batch};
  if (f.status && !parse_result_status(*f.status)) return Error::invalid("query.status", "unknown result status");
  const auto samples = str_query(m, "samples");
  if (samples && *samples != "true" && *samples != "false") {
    return Error::invalid("query.samples", "must be true or false");
  }
  // Samples only when asked for, and then a short page: at most 10 results and
  // ResultStore::kSamplesPageBytes of samples (each result may hold 10^6 samples; next_cursor
  // continues; a result whose samples alone are more comes with samples_url instead, its own
  // read streaming them), so a listing stays small and quick and a read's memory is bounded.
  const bool with_samples = samples.value_or("false") == "true";
  int n = static_cast<int>(limit.value_or(100));
  if (with_samples) n = std::min(n, kMaxResultsWithSamples);
  BF_ASSIGN_OR_RETURN(const auto page, ctx.store.results().list_results(id, f, cursor, n, with_samples));
  nlohmann::json next = page.next_cursor ? nlohmann::json(std::to_string(*page.next_cursor)) : nlohmann::json();
  if (!with_samples) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : page.items) rows.push_back(result_json(r));
    return json_response(bhttp::status::ok, {{"results", rows}, {"next_cursor", next}}, req);
  }
  // With samples the page is written as text around the stored samples (result_json_text): a
  // page of a few MB is built once, not parsed and printed again.
  std::string body = "{\"next_cursor\":" + next.dump() + ",\"results\":[";
  for (const auto& r : page.items) {
    std::string text;
    if (r.samples_omitted) {  // more than a page holds: its own read streams them
      nlohmann::json j = result_json(r);
      j["samples_url"] = "/api/v1/results/" + std::to_string(r.id);
      text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      BF_ASSIGN_OR_RETURN(text, result_json_text(r));
    }
    if (body.back() != '[') body += ',';
    body += text;
  }
  body += "]}";
  return http::text_response(bhttp::status::ok, std::move(body), req, "application/json");
}

Result<http::Response> list_jobs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 10000));
  BF_ASSIGN_OR_RETURN(const auto cursor, int_query(m, "cursor", 0, INT64_MAX));
  // A page holds at most kJobsPageMax whatever is asked: 10,000 jobs a read, looped by anonymous
  // clients, once cost the agents their leases. Clients follow next_cursor.
  constexpr std::int64_t kJobsPageMax = 1000;
  BF_ASSIGN_OR_RETURN(const auto page, ctx.store.runs().list_jobs(
                                           id, cursor, static_cast<int>(std::min(limit.value_or(1000), kJobsPageMax))));
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& job : page.items) rows.push_back(job_json(job));
  nlohmann::json next = page.next_cursor ? nlohmann::json(std::to_string(*page.next_cursor)) : nlohmann::json();
  return json_response(bhttp::status::ok, {{"jobs", rows}, {"next_cursor", next}}, req);
}

Result<http::Response> get_result(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  // Large samples are streamed from their own read of the database, a chunk at a time as the
  // reader takes them: a slow reader of a 10^6-sample result then holds one chunk, not 18 MiB.
  constexpr std::size_t kStreamAbove = std::size_t{1} << 20;
  if (m.exchange) {
    auto reader = store::SamplesReader::open(ctx.store.options().path, id);
    if (reader.ok() && (*reader)->size() > kStreamAbove) {
      BF_ASSIGN_OR_RETURN(const auto row, ctx.store.results().get_result(id, /*with_samples=*/false));
      ResultJsonParts parts = result_json_parts(row);
      const std::size_t samples = (*reader)->size();
      http::Exchange::BodyStream body;
      body.size = samples + parts.after.size();
      body.executor = ctx.read_lane;
      body.next = [reader = std::shared_ptr<store::SamplesReader>(std::move(*reader)), samples,
                   after = std::move(parts.after), offset = std::size_t{0}](std::size_t max) mutable -> std::string {
        std::string piece;
        if (offset < samples) {
          auto read = reader->read(offset, std::min(max, samples - offset));
          if (!read.ok() || read->empty() || !is_number_array_piece(*read)) return {};  // cut short
          piece = std::move(*read);
        } else {
          piece = after.substr(offset - samples, max);
        }
        offset += piece.size();
        return piece;
      };
      m.exchange->stream_after(std::move(body));
      return http::text_response(bhttp::status::ok, std::move(parts.before), req, "application/json");
    }
  }
  BF_ASSIGN_OR_RETURN(const auto row, ctx.store.results().get_result(id));
  BF_ASSIGN_OR_RETURN(std::string body, result_json_text(row));
  return http::text_response(bhttp::status::ok, std::move(body), req, "application/json");
}

Result<http::Response> run_report(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const std::string format, format_query(m));
  BF_ASSIGN_OR_RETURN(const rules::Stat stat, stat_query(m));
  const auto exclude_flagged = str_query(m, "exclude_flagged");
  if (exclude_flagged && *exclude_flagged != "true" && *exclude_flagged != "false") {
    return Error::invalid("query.exclude_flagged", "must be true or false");
  }

  BF_ASSIGN_OR_RETURN(const auto run, ctx.store.runs().get_run(id));
  const bool exclude = exclude_flagged.value_or("false") == "true";
  const auto respond = [&](const RenderedReport& r) {
    auto res = http::text_response(bhttp::status::ok, r.body, req, r.content_type);
    if (!r.content_disposition.empty()) res.set(bhttp::field::content_disposition, r.content_disposition);
    return res;
  };
  // A finished run's report never changes: rendered once, then copied. A running run's is kept
  // for a second: readers in a loop cost one build a second.
  const std::string key = std::to_string(run.id) + "/" + format + "/" + std::string(to_string(stat)) + "/" +
                          (exclude ? "exclude" : "all") + (run.finished_at ? "/final" : "/live");
  if (auto hit = ctx.report_cache->find(key)) return respond(*hit);
  BF_ASSIGN_OR_RETURN(const rules::Report built, report_of_run(ctx, run, stat, exclude));
  RenderedReport rendered;
  if (format == "md") {
    rendered = {"text/markdown; charset=utf-8", "", report::render_markdown(built)};
  } else if (format == "csv") {
    rendered = {"text/csv; charset=utf-8", "attachment; filename=\"run-" + std::to_string(run.id) + ".csv\"",
                report::render_csv(built)};
  } else {
    rendered = {"application/json", "", report::render_json(built)};
  }
  auto res = respond(rendered);
  ctx.report_cache->put(
      key, std::move(rendered),
      run.finished_at ? std::nullopt : std::optional(ReportCache::Clock::now() + std::chrono::seconds(1)));
  return res;
}

namespace {

// One side of GET /compare: "RUN" or "RUN:BUILD" (query key `key`).
struct SideQuery {
  std::int64_t run = 0;
  std::string build;  // empty: the default
};

Result<SideQuery> side_query(const http::RouteMatch& m, const char* key) {
  const auto text = str_query(m, key);
  const std::string field = std::string("query.") + key;
  if (!text || text->empty()) return Error::invalid(field, "is required: a run id, or RUN:BUILD");
  SideQuery q;
  const auto colon = text->find(':');
  const std::string id = text->substr(0, colon);
  std::int64_t run = 0;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), run);
  if (ec != std::errc() || end != id.data() + id.size() || run < 1) {
    return Error::invalid(field, "must be a run id (a positive integer), or RUN:BUILD");
  }
  q.run = run;
  if (colon != std::string::npos) q.build = text->substr(colon + 1);
  return q;
}

}  // namespace

// Two sides, each a run's torch build, compared cell by cell (rules/compare.h). Without a build:
// the run's first, or, when both sides are one run, B gets its second.
Result<http::Response> compare_runs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::string format, format_query(m));
  BF_ASSIGN_OR_RETURN(const rules::Stat stat, stat_query(m));
  BF_ASSIGN_OR_RETURN(SideQuery qa, side_query(m, "a"));
  BF_ASSIGN_OR_RETURN(SideQuery qb, side_query(m, "b"));
  BF_ASSIGN_OR_RETURN(const auto run_a, ctx.store.runs().get_run(qa.run));
  BF_ASSIGN_OR_RETURN(const auto run_b, ctx.store.runs().get_run(qb.run));
  const auto& builds_a = run_a.spec.torch_builds;
  const auto& builds_b = run_b.spec.torch_builds;
  if (builds_a.empty() || builds_b.empty()) return Error::invalid("query.a", "a run without torch builds");
  if (qa.build.empty()) qa.build = builds_a.front();
  if (qb.build.empty()) {
    qb.build = builds_b.front();
    if (qa.run == qb.run && qb.build == qa.build && builds_b.size() > 1) qb.build = builds_b[1];
  }
  for (const auto& [q, builds, key] : {std::tuple{&qa, &builds_a, "query.a"}, std::tuple{&qb, &builds_b, "query.b"}}) {
    if (std::find(builds->begin(), builds->end(), q->build) == builds->end()) {
      return Error::invalid(key, "run " + std::to_string(q->run) + " has no torch build \"" + q->build +
                                     "\"; its builds: " + rules::joined(*builds));
    }
  }
  if (qa.run == qb.run && qa.build == qb.build) {
    return Error::invalid("query.b", "run " + std::to_string(qa.run) + " build " + qa.build +
                                         " against itself: name two of its builds (RUN:BUILD)");
  }
  BF_ASSIGN_OR_RETURN(const rules::Report rep_a, report_of_run(ctx, run_a, stat, false));
  BF_ASSIGN_OR_RETURN(const rules::Report rep_b, report_of_run(ctx, run_b, stat, false));
  const rules::Comparison c = rules::compare_reports({&rep_a, qa.build}, {&rep_b, qb.build});
  if (format == "md") {
    return http::text_response(bhttp::status::ok, report::render_comparison_markdown(c), req,
                               "text/markdown; charset=utf-8");
  }
  if (format == "csv") {
    return http::text_response(bhttp::status::ok, report::render_comparison_csv(c), req, "text/csv; charset=utf-8");
  }
  return json_response(bhttp::status::ok, report::comparison_json(c), req);
}

}  // namespace benchfleet::api
