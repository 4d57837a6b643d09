#include "coordinator/store/model_store.h"

#include <nlohmann/json.hpp>

#include "common/model_definition.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

// A stored row as the model it is; the definition was checked when it was registered.
Result<CatalogModel> model_of(const std::string& definition, std::int64_t version, std::string digest, bool retired) {
  const auto json = nlohmann::json::parse(definition, nullptr, false);
  BF_ASSIGN_OR_RETURN(CatalogModel m, check_model_definition(json, "models.definition"));
  m.version = static_cast<int>(version);
  m.digest = std::move(digest);
  m.retired = retired;
  return m;
}

}  // namespace

std::string_view to_string(Registered r) {
  switch (r) {
    case Registered::kCreated:
      return "created";
    case Registered::kUnchanged:
      return "unchanged";
    case Registered::kReplaced:
      return "replaced";
    case Registered::kNewVersion:
      return "new_version";
  }
  return "created";
}

Result<std::vector<CatalogModel>> ModelStore::all_models() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<CatalogModel>> {
    BF_ASSIGN_OR_RETURN(auto rows,
                        core_.db().query("SELECT m.definition, m.version, m.digest, m.retired_at IS NOT NULL,"
                                         " m.version = (SELECT max(version) FROM models n WHERE n.id = m.id)"
                                         " FROM models m ORDER BY m.seq"));
    std::vector<CatalogModel> out;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, rows->step());
      if (!row) break;
      BF_ASSIGN_OR_RETURN(CatalogModel m, model_of(rows->text(0), rows->int64(1), rows->text(2), rows->int64(3) != 0));
      m.current = rows->int64(4) != 0;
      out.push_back(std::move(m));
    }
    return out;
  });
}

Result<std::int64_t> ModelStore::results_of(const std::string& id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::int64_t> {
    std::int64_t total = 0;
    BF_ASSIGN_OR_RETURN(auto versions, core_.db().query("SELECT version FROM models WHERE id = ?", id));
    std::vector<std::int64_t> list;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, versions->step());
      if (!row) break;
      list.push_back(versions->int64(0));
    }
    for (std::int64_t v : list) {
      const std::string key = v <= 1 ? id : id + "@" + std::to_string(v);
      BF_ASSIGN_OR_RETURN(auto count, core_.db().query_one("SELECT count(*) FROM jobs WHERE model = ?"
                                                           " AND status IN ('done', 'failed')",
                                                           key));
      total += count->int64(0);
    }
    return total;
  });
}

Result<Registration> ModelStore::register_model(const CatalogModel& model, const std::string& digest,
                                                bool new_version) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<Registration> {
    const TimestampMs now = core_.clock().now_ms();
    Registration out;
    out.model = model;
    out.model.digest = digest;
    BF_ASSIGN_OR_RETURN(auto current,
                        core_.db().query_one("SELECT version, digest, retired_at IS NOT NULL FROM models WHERE id = ?"
                                             " ORDER BY version DESC LIMIT 1",
                                             model.id));
    const std::string text = model.definition.dump();
    if (!current.found()) {
      BF_RETURN_IF_ERROR(
          core_.db().run("INSERT INTO models (id, version, digest, definition, created_at)"
                         " VALUES (?, 1, ?, ?, ?)",
                         model.id, digest, text, now));
      out.model.version = 1;
      return out;
    }
    const std::int64_t version = current->int64(0);
    out.model.version = static_cast<int>(version);
    if (current->text(1) == digest) {
      out.outcome = Registered::kUnchanged;
      if (current->int64(2) != 0) {  // registered again: back in service
        BF_RETURN_IF_ERROR(core_.db().run("UPDATE models SET retired_at = NULL WHERE id = ?", model.id));
      }
      return out;
    }
    const std::string key = version <= 1 ? model.id : model.id + "@" + std::to_string(version);
    BF_ASSIGN_OR_RETURN(auto results, core_.db().query_one("SELECT count(*) FROM jobs WHERE model = ?"
                                                           " AND status IN ('done', 'failed')",
                                                           key));
    const std::int64_t count = results->int64(0);
    // Jobs still to run would run the new definition under the old key: refused like results.
    BF_ASSIGN_OR_RETURN(auto pending, core_.db().query_one("SELECT count(*) FROM jobs WHERE model = ?"
                                                           " AND status IN ('queued', 'leased', 'running')",
                                                           key));
    if (count == 0 && pending->int64(0) == 0) {
      BF_RETURN_IF_ERROR(
          core_.db().run("UPDATE models SET digest = ?, definition = ?, created_at = ?,"
                         " retired_at = NULL WHERE id = ? AND version = ?",
                         digest, text, now, model.id, version));
      out.outcome = Registered::kReplaced;
      return out;
    }
    if (!new_version) {
      Error e =
          Error::conflict("model " + model.id + " (version " + std::to_string(version) + ") has " +
                          std::to_string(count) + " results and " + std::to_string(pending->int64(0)) +
                          " jobs to run under its definition: register the new one with ?new_version=true "
                          "(version " +
                          std::to_string(version + 1) + ", the old one kept with its results), or give it another id");
      e.field = "id";
      return e;
    }
    BF_RETURN_IF_ERROR(
        core_.db().run("INSERT INTO models (id, version, digest, definition, created_at)"
                       " VALUES (?, ?, ?, ?, ?)",
                       model.id, version + 1, digest, text, now));
    BF_RETURN_IF_ERROR(core_.db().run("UPDATE models SET retired_at = NULL WHERE id = ?", model.id));
    out.outcome = Registered::kNewVersion;
    out.model.version = static_cast<int>(version + 1);
    return out;
  });
}

Result<bool> ModelStore::remove_model(const std::string& id, bool retire) {
  BF_ASSIGN_OR_RETURN(std::int64_t results, results_of(id));
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<bool> {
    BF_ASSIGN_OR_RETURN(auto known, core_.db().query_one("SELECT 1 FROM models WHERE id = ?", id));
    if (!known.found()) return Error::not_found("no model " + id + " (GET /api/v1/models lists them)");
    if (results > 0 && !retire) {
      Error e = Error::conflict("model " + id + " has " + std::to_string(results) +
                                " results: retire it (?retire=true) to keep them and refuse new runs of it");
      e.field = "id";
      return e;
    }
    if (results > 0) {
      BF_RETURN_IF_ERROR(core_.db().run("UPDATE models SET retired_at = ? WHERE id = ? AND retired_at IS NULL",
                                        core_.clock().now_ms(), id));
      return true;
    }
    BF_RETURN_IF_ERROR(core_.db().run("DELETE FROM models WHERE id = ?", id));
    return false;
  });
}

Result<int> ModelStore::register_catalog(const Catalog& catalog, const std::vector<std::string>& digests) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<int> {
    int added = 0;
    const TimestampMs now = core_.clock().now_ms();
    for (std::size_t i = 0; i < catalog.models().size(); ++i) {
      const CatalogModel& m = catalog.models()[i];
      BF_ASSIGN_OR_RETURN(auto known, core_.db().query_one("SELECT 1 FROM models WHERE id = ?", m.id));
      if (known.found()) continue;
      BF_RETURN_IF_ERROR(
          core_.db().run("INSERT INTO models (id, version, digest, definition, created_at)"
                         " VALUES (?, 1, ?, ?, ?)",
                         m.id, digests.at(i), m.definition.dump(), now));
      ++added;
    }
    return added;
  });
}

Result<bool> ModelStore::add_artifact(const ArtifactRow& row) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<bool> {
    BF_RETURN_IF_ERROR(
        core_.db().run("INSERT OR IGNORE INTO artifacts (digest, size, kind, name, created_at)"
                       " VALUES (?, ?, ?, ?, ?)",
                       row.digest, row.size, row.kind, row.name, row.created_at));
    return core_.db().changes() > 0;
  });
}

namespace {
ArtifactRow artifact_of(const Statement& s) {
  return ArtifactRow{s.text(0), s.int64(1), s.text(2), s.text(3), s.int64(4)};
}
}  // namespace

Result<std::optional<ArtifactRow>> ModelStore::find_artifact(const std::string& digest) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::optional<ArtifactRow>> {
    BF_ASSIGN_OR_RETURN(auto row, core_.db().query_one("SELECT digest, size, kind, name, created_at FROM artifacts"
                                                       " WHERE digest = ?",
                                                       digest));
    if (!row.found()) return std::optional<ArtifactRow>();
    return std::optional<ArtifactRow>(artifact_of(*row));
  });
}

Result<std::vector<ArtifactRow>> ModelStore::list_artifacts() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<ArtifactRow>> {
    BF_ASSIGN_OR_RETURN(auto rows, core_.db().query("SELECT digest, size, kind, name, created_at FROM artifacts"
                                                    " ORDER BY created_at, digest"));
    std::vector<ArtifactRow> out;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, rows->step());
      if (!row) break;
      out.push_back(artifact_of(*rows));
    }
    return out;
  });
}

}  // namespace benchfleet::store
