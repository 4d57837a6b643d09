#include "coordinator/store/migrations.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace benchfleet::store {
namespace {

struct Numbered {
  int version;
  const EmbeddedFile* file;
};

// "007_add_index.sql" -> 7; -1 when the name has no numeric prefix.
int version_of(const std::string& name) {
  std::size_t i = 0;
  int v = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) v = v * 10 + (name[i++] - '0');
  return (i == 0 || i >= name.size() || name[i] != '_') ? -1 : v;
}

Status apply_migrations(Database& db, const std::vector<Numbered>& ordered, int current) {
  for (const auto& m : ordered) {
    if (m.version <= current) continue;
    Transaction tx(db);
    if (!tx.begin_status().ok()) return tx.begin_status().error();
    if (auto s = db.exec(m.file->content); !s) {
      return Error::internal("migration " + m.file->name + " failed: " + s.error().message);
    }
    {
      auto dangling = db.query_one("PRAGMA foreign_key_check");
      if (!dangling.ok()) return dangling.error();
      if (dangling->found()) {
        return Error::internal("migration " + m.file->name + " left a row of " + (*dangling)->text(0) +
                               " referencing a missing row of " + (*dangling)->text(2));
      }
    }
    if (auto s = db.exec("PRAGMA user_version = " + std::to_string(m.version)); !s) return s.error();
    if (auto s = tx.commit(); !s) return s.error();
  }
  return Status::Ok();
}

}  // namespace

Result<int> migrate(Database& db, const std::vector<EmbeddedFile>& migrations) {
  std::vector<Numbered> ordered;
  for (const auto& m : migrations) {
    const int v = version_of(m.name);
    if (v <= 0) return Error::internal("migration file name must start with a number > 0: " + m.name);
    ordered.push_back({v, &m});
  }
  std::sort(ordered.begin(), ordered.end(), [](auto& a, auto& b) { return a.version < b.version; });
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    if (ordered[i].version != static_cast<int>(i) + 1) {
      return Error::internal("migrations must be numbered 1..n without gaps; found " + ordered[i].file->name);
    }
  }
  const int newest = static_cast<int>(ordered.size());

  int current = 0;
  {
    auto version = db.query_one("PRAGMA user_version");
    if (!version.ok()) return version.error();
    current = static_cast<int>((*version)->int64(0));
  }

  if (current > 0) {
    // Made before the baseline (001_baseline.sql sets the mark): its schema's history was folded
    // into the baseline, so it cannot be brought to this one; nothing is changed.
    auto id = db.query_one("PRAGMA application_id");
    if (!id.ok()) return id.error();
    if ((*id)->int64(0) != kApplicationId) {
      return Error{ErrorCode::kInternal,
                   "database schema version " + std::to_string(current) +
                       " was made before benchfleet's schema baseline (it has no benchfleet application id): this "
                       "coordinator cannot migrate it; start a new database, or read this one with the coordinator "
                       "that wrote it",
                   {}};
    }
  }
  if (current > newest) {
    return Error{ErrorCode::kInternal,
                 "database schema version " + std::to_string(current) + " is newer than this coordinator supports (" +
                     std::to_string(newest) + "); it was written by a newer benchfleet — upgrade the coordinator",
                 {}};
  }
  if (current == newest) return newest;
  // Foreign keys are off while migrations run (the pragma is a no-op inside a transaction), so
  // that one may rebuild a table the way SQLite changes a constraint (create, copy, drop, rename)
  // without the drop cascading to the rows that reference it; each migration must leave no
  // dangling reference (PRAGMA foreign_key_check) before it commits.
  if (auto s = db.exec("PRAGMA foreign_keys = OFF"); !s) return s.error();
  auto applied = apply_migrations(db, ordered, current);
  if (auto s = db.exec("PRAGMA foreign_keys = ON"); !s && applied.ok()) return s.error();
  if (!applied.ok()) return applied.error();
  return newest;
}

}  // namespace benchfleet::store
