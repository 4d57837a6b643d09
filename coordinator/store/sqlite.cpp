#include "coordinator/store/sqlite.h"

#include <sys/stat.h>

#include <sqlite3.h>

namespace benchfleet::store {
namespace {

Error sqlite_error(sqlite3* db, int rc, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  const ErrorCode code = (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) ? ErrorCode::kUnavailable
                         : primary == SQLITE_CONSTRAINT                       ? ErrorCode::kConflict
                                                                              : ErrorCode::kInternal;
  return Error{code, std::move(message), {}};
}

}  // namespace

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_blob(int index, std::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return last_error();
}

Status Statement::run() {
  auto r = step();
  reset();
  if (!r.ok()) return r.error();
  return Status::Ok();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::int64_t Statement::int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
}
std::string Statement::blob(int col) const {
  const auto* p = sqlite3_column_blob(stmt_, col);
  return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
}
std::optional<std::int64_t> Statement::opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return int64(col);
}
std::optional<double> Statement::opt_real(int col) const {
  if (is_null(col)) return std::nullopt;
  return real(col);
}
std::optional<std::string> Statement::opt_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return text(col);
}

Error Statement::last_error() const {
  const char* sql = sqlite3_sql(stmt_);
  std::string what = "SQL failed (";
  what += sql ? std::string(sql).substr(0, 60) : "?";
  what += "...)";
  return sqlite_error(db_, sqlite3_extended_errcode(db_), what);
}

Result<std::unique_ptr<Database>> Database::open(const std::string& path, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error err = sqlite_error(raw, rc, "cannot open database " + path);
    sqlite3_close(raw);
    return err;
  }
  std::unique_ptr<Database> db(new Database(raw));
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);
  // synchronous=FULL: a commit is on disk (WAL fsynced) before we acknowledge anything.
  if (auto s = db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"); !s) {
    return Error{s.error().code, "cannot configure database " + path + ": " + s.error().message, {}};
  }
  if (path != ":memory:" && !path.empty()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      db->path_ = path;
      db->file_id_ = FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    }
  }
  return db;
}

Status Database::check_files_unchanged() {
  if (path_.empty() || !file_id_) return Status::Ok();
  const auto id_of = [](const std::string& p) -> std::optional<FileId> {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return std::nullopt;
    return FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  };
  const auto replaced = [&](const std::string& file) {
    return Error{ErrorCode::kUnavailable,
                 file + " was replaced or removed while this coordinator serves " + path_ +
                     ": it stopped writing, so that nothing it acknowledges goes into a file that nothing will read "
                     "again. Restore the store (benchfleet-coordinator restore --db " +
                     path_ + " --from BACKUP) or put the file back, then start the coordinator",
                 {}};
  };
  if (id_of(path_) != file_id_) return replaced(path_);
  const std::string wal = path_ + "-wal";
  const auto wal_now = id_of(wal);
  if (!wal_id_) {
    wal_id_ = wal_now;  // SQLite makes it at the first transaction and keeps it while connected
  } else if (wal_now != wal_id_) {
    return replaced(wal);
  }
  return Status::Ok();
}

Database::~Database() {
  cache_.clear();  // finalize statements before closing
  sqlite3_close(db_);
}

Status Database::exec(std::string_view sql) {
  char* message = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string what = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return sqlite_error(nullptr, rc, what);
  }
  return Status::Ok();
}

Result<Statement*> Database::cached(const std::string& sql) {
  if (auto it = cache_.find(sql); it != cache_.end()) {
    it->second->reset();
    return it->second.get();
  }
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(db_, rc, "cannot prepare SQL");
  return cache_.emplace(sql, std::make_unique<Statement>(db_, stmt)).first->second.get();
}

Status Database::exec_cached(const std::string& sql) {
  BF_ASSIGN_OR_RETURN(Statement * stmt, cached(sql));
  return stmt->run();
}

Result<ScopedStatement> Database::prepare(const std::string& sql) {
  if (prepare_observer_) prepare_observer_(sql);
  BF_ASSIGN_OR_RETURN(Statement * stmt, cached(sql));
  return ScopedStatement(stmt);
}

std::map<std::string, StatementWork> Database::statement_work() const {
  std::map<std::string, StatementWork> out;
  for (const auto& [sql, stmt] : cache_) {
    out[sql] = StatementWork{sqlite3_stmt_status(stmt->handle(), SQLITE_STMTSTATUS_RUN, 0),
                             sqlite3_stmt_status(stmt->handle(), SQLITE_STMTSTATUS_VM_STEP, 0)};
  }
  return out;
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int Database::changes() const { return sqlite3_changes(db_); }

Transaction::Transaction(Database& db) : db_(db) {
  begin_ = db_.exec("BEGIN IMMEDIATE");
  open_ = begin_.ok();
}

Transaction::~Transaction() {
  if (open_) (void)db_.exec("ROLLBACK");
}

Status Transaction::commit() {
  if (!open_) return Error::internal("commit without an open transaction");
  auto s = db_.exec("COMMIT");
  if (s.ok()) open_ = false;
  return s;
}

}  // namespace benchfleet::store
