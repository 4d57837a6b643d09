// Schema migrations: numbered SQL files (migrations/NNN_name.sql) compiled into the binary,
// applied in order, each in its own transaction, version kept in PRAGMA user_version.
#pragma once

#include <cstdint>
#include <vector>

#include "common/embedded_file.h"
#include "common/result.h"
#include "coordinator/store/sqlite.h"

namespace benchfleet::store {

// PRAGMA application_id of a benchfleet database, set by 001_baseline.sql ("bflt").
inline constexpr std::int64_t kApplicationId = 0x62666c74;

// The migrations shipped with this binary (generated from migrations/*.sql).
std::vector<EmbeddedFile> embedded_migrations();

// Brings `db` to the newest version in `migrations`. Refuses without touching it a database
// whose user_version is newer than the newest migration (written by a newer coordinator), and
// one with a version but not kApplicationId (made before the schema baseline).
// Migrations run with foreign keys off (so one may rebuild a table) and each must pass
// PRAGMA foreign_key_check before it commits. Returns the resulting schema version.
Result<int> migrate(Database& db, const std::vector<EmbeddedFile>& migrations);

}  // namespace benchfleet::store
