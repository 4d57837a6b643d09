// Handlers for registered models and their artifacts (docs/models.md).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/display_text.h"
#include "common/model_definition.h"
#include "coordinator/api/handlers.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;
using http::json_response;

nlohmann::json artifact_json(const store::ArtifactRow& a) {
  return {{"digest", a.digest},
          {"size", a.size},
          {"kind", a.kind},
          {"name", a.name},
          {"created_at", format_time(a.created_at)}};
}

// The versions of one id, oldest first.
nlohmann::json versions_of(const Catalog& catalog, const std::string& id) {
  nlohmann::json out = nlohmann::json::array();
  for (const CatalogModel& m : catalog.models()) {
    if (m.id == id) out.push_back(model_json(m));
  }
  return out;
}

}  // namespace

Result<http::Response> list_models(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const bool all, bool_query(m, "all"));
  nlohmann::json models = nlohmann::json::array();
  for (const auto& model : ctx.models.catalog()->models()) {
    if (all || (model.current && !model.retired)) models.push_back(model_json(model));
  }
  return json_response(bhttp::status::ok, {{"models", models}}, req);
}

Result<http::Response> get_model(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  const std::string& id = m.params.at("id");
  const auto catalog = ctx.models.catalog();
  // An id, a versioned key ("acme/x@2") or a short name ("resnet18").
  const std::vector<std::string> keys = catalog->ids_matching(id);
  const CatalogModel* model = keys.size() == 1 ? catalog->find(keys.front()) : nullptr;
  if (model == nullptr) {
    for (const CatalogModel& c : catalog->models()) {
      if (c.id == id && c.current) model = &c;  // a retired model is still shown
    }
  }
  if (model == nullptr) {
    if (keys.size() > 1) {
      if (auto resolved = catalog->resolve_id(id, "id"); !resolved.ok()) return resolved.error();
    }
    return Error::not_found("no model " + escape_display_text(id) + " (GET /api/v1/models lists them)");
  }
  nlohmann::json out = model_json(*model);
  out["versions"] = versions_of(*catalog, model->id);
  BF_ASSIGN_OR_RETURN(out["results"], ctx.store.models().results_of(model->id));
  return json_response(bhttp::status::ok, out, req);
}

Result<http::Response> register_model(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const bool new_version, bool_query(m, "new_version"));
  BF_ASSIGN_OR_RETURN(const nlohmann::json body, json_body(ctx, req));
  BF_ASSIGN_OR_RETURN(const store::Registration registered, ctx.models.add(body, new_version));
  const auto catalog = ctx.models.catalog();
  const CatalogModel* stored = catalog->find(registered.model.key());
  nlohmann::json out = model_json(stored != nullptr ? *stored : registered.model);
  out["outcome"] = to_string(registered.outcome);
  const bool created =
      registered.outcome == store::Registered::kCreated || registered.outcome == store::Registered::kNewVersion;
  return json_response(created ? bhttp::status::created : bhttp::status::ok, out, req);
}

Result<http::Response> delete_model(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const bool retire, bool_query(m, "retire"));
  const std::string& id = m.params.at("id");
  BF_ASSIGN_OR_RETURN(const bool retired, ctx.models.remove(id, retire));
  return json_response(bhttp::status::ok, {{"id", id}, {"outcome", retired ? "retired" : "removed"}}, req);
}

Result<http::Response> upload_artifact(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  std::shared_ptr<http::BodySink> sink = m.exchange ? m.exchange->body_sink() : nullptr;
  auto* upload = dynamic_cast<services::ArtifactUpload*>(sink.get());
  if (upload == nullptr) return Error::invalid("body", "the artifact's bytes are required");
  const std::string kind = str_query(m, "kind").value_or("file");
  const std::string name = str_query(m, "name").value_or("");
  BF_ASSIGN_OR_RETURN(const services::FinishedUpload done, upload->finish());
  store::ArtifactRow row{done.digest, static_cast<std::int64_t>(done.size), kind, name, ctx.clock.now_ms()};
  BF_ASSIGN_OR_RETURN(const bool added, ctx.store.models().add_artifact(row));
  if (!added) {
    BF_ASSIGN_OR_RETURN(auto existing, ctx.store.models().find_artifact(done.digest));
    if (existing) row = *existing;
  }
  return json_response(added ? bhttp::status::created : bhttp::status::ok, artifact_json(row), req);
}

// The checks an upload's query must pass before its body is read (the sink is made after them).
Status check_upload_query(const http::RouteMatch& m) {
  const std::string kind = str_query(m, "kind").value_or("file");
  if (kind != "file" && kind != "tar") return Error::invalid("query.kind", "must be file or tar");
  if (auto why = display_text_problem(str_query(m, "name").value_or(""), 256)) {
    return Error::invalid("query.name", *why);
  }
  return Status::Ok();
}

Result<http::Response> list_artifacts(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_ASSIGN_OR_RETURN(const auto rows, ctx.store.models().list_artifacts());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : rows) out.push_back(artifact_json(row));
  return json_response(bhttp::status::ok, {{"artifacts", out}}, req);
}

Result<http::Response> get_artifact(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  const std::string& digest = m.params.at("digest");
  if (!is_digest(digest)) return Error::invalid("digest", "must be sha256: and 64 lower-case hex digits");
  BF_ASSIGN_OR_RETURN(const auto row, ctx.store.models().find_artifact(digest));
  if (!row) return Error::not_found("no artifact " + digest);
  const std::string path = ctx.artifacts.path_of(digest);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::internal("artifact " + digest + " is stored but its file " + path +
                           " cannot be read: " + std::strerror(errno));
  auto file = std::shared_ptr<int>(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  http::Response res = http::text_response(bhttp::status::ok, std::string(), req, "application/octet-stream");
  res.set("X-Artifact-Digest", digest);
  res.set("X-Artifact-Kind", row->kind);  // a tar is unpacked by the agent
  if (!row->name.empty()) res.set("X-Artifact-Name", row->name);
  if (row->size > 0 && m.exchange) {
    http::Exchange::BodyStream body;
    body.size = static_cast<std::size_t>(row->size);
    body.executor = ctx.read_lane;
    body.next = [file](std::size_t max) -> std::string {
      std::string chunk(std::min<std::size_t>(max, std::size_t{1} << 20), '\0');
      const ssize_t n = ::read(*file, chunk.data(), chunk.size());
      if (n <= 0) return {};  // cut short: the connection closes
      chunk.resize(static_cast<std::size_t>(n));
      return chunk;
    };
    m.exchange->stream_after(std::move(body));
  }
  return res;
}

}  // namespace benchfleet::api
