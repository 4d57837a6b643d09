// Thin RAII layer over SQLite: a connection, cached prepared statements and transactions.
// Not thread-safe: one thread uses a Database at a time (Store serialises access).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace benchfleet::store {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3_stmt* handle() const { return stmt_; }
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  Statement& bind_blob(int index, std::string_view bytes);
  Statement& bind_null(int index);
  template <class T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances to the next row: true if there is a row, false when done, Error on failure.
  Result<bool> step();
  // Runs a statement that returns no rows.
  Status run();
  // Clears bindings and rewinds, ready for reuse.
  void reset();

  // REQUIRES: the last step() returned true. Columns are 0-based.
  bool is_null(int col) const;
  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  std::string blob(int col) const;
  std::optional<std::int64_t> opt_int64(int col) const;
  std::optional<double> opt_real(int col) const;
  std::optional<std::string> opt_text(int col) const;

 private:
  Error last_error() const;

  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

// A cached statement checked out for one use (Database::prepare, query, query_one): on every
// path out of the scope that holds it, it is reset and its bindings cleared, so no statement
// keeps a read open or a stale binding. Move-only; use it like a Statement*.
class ScopedStatement {
 public:
  explicit ScopedStatement(Statement* stmt) : stmt_(stmt) {}
  ~ScopedStatement() {
    if (stmt_) stmt_->reset();
  }
  ScopedStatement(ScopedStatement&& other) noexcept : stmt_(other.stmt_), found_(other.found_) {
    other.stmt_ = nullptr;
  }
  ScopedStatement& operator=(ScopedStatement&&) = delete;
  ScopedStatement(const ScopedStatement&) = delete;
  ScopedStatement& operator=(const ScopedStatement&) = delete;

  Statement* operator->() const { return stmt_; }
  Statement& operator*() const { return *stmt_; }
  // From query_one: whether the statement stands on its first row (read it with ->).
  bool found() const { return found_; }

 private:
  friend class Database;
  Statement* stmt_;
  bool found_ = false;
};

// What a cached statement did since it was prepared: a count of rows visited and compared that,
// unlike time, does not depend on the machine (sqlite3_stmt_status).
struct StatementWork {
  std::int64_t runs = 0;      // times it was run (SQLITE_STMTSTATUS_RUN)
  std::int64_t vm_steps = 0;  // virtual machine steps, all runs (SQLITE_STMTSTATUS_VM_STEP)
};

class Database {
 public:
  // Opens (creating if needed) with WAL, foreign keys, synchronous=FULL and a busy timeout.
  static Result<std::unique_ptr<Database>> open(const std::string& path, int busy_timeout_ms = 5000);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Executes one or more statements without results.
  Status exec(std::string_view sql);
  // Executes one statement without results, prepared once and kept (for the statements that
  // frame every transaction: BEGIN, SAVEPOINT, COMMIT...). Not observed.
  Status exec_cached(const std::string& sql);
  // A prepared statement cached by its SQL text, ready to bind; reset when the handle goes.
  Result<ScopedStatement> prepare(const std::string& sql);
  // prepare() with `args` bound to parameters 1, 2, ... in order.
  template <class... Args>
  Result<ScopedStatement> query(const std::string& sql, const Args&... args);
  // query() stepped once: found() tells whether there is a row, the handle reads it.
  template <class... Args>
  Result<ScopedStatement> query_one(const std::string& sql, const Args&... args);
  // query() run to completion, for statements that return no rows.
  template <class... Args>
  Status run(const std::string& sql, const Args&... args);
  // For tests and diagnostics: `observer` is called with the SQL text of every prepare() from
  // now on, cached or not (so a test can list what a code path runs and check its query plans).
  // An empty function stops it. exec() is not observed.
  void set_prepare_observer(std::function<void(const std::string& sql)> observer) {
    prepare_observer_ = std::move(observer);
  }
  // For tests: the work of every cached statement, by SQL text.
  std::map<std::string, StatementWork> statement_work() const;

  std::int64_t last_insert_rowid() const;
  int changes() const;
  sqlite3* handle() const { return db_; }

  // Whether the files this connection writes are still the ones at its path: the database file
  // as opened, and its -wal as first seen. A file replaced (a rename onto it, a copy over a
  // deleted one) or removed under an open connection takes every later write into a file that
  // nothing will read again; kUnavailable naming the file and what to do. Cheap (two stat
  // calls): called before each commit. Always ok for ":memory:".
  Status check_files_unchanged();

 private:
  struct FileId {
    std::uint64_t dev = 0, ino = 0;
    bool operator==(const FileId&) const = default;
  };
  explicit Database(sqlite3* db) : db_(db) {}
  // The statement cached for `sql` (prepared on first use), reset.
  Result<Statement*> cached(const std::string& sql);

  sqlite3* db_;
  std::string path_;               // empty for ":memory:"
  std::optional<FileId> file_id_;  // the database file's, at open
  std::optional<FileId> wal_id_;   // the -wal's, from the first check that found it
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> cache_;
  std::function<void(const std::string&)> prepare_observer_;
};

template <class... Args>
Result<ScopedStatement> Database::query(const std::string& sql, const Args&... args) {
  auto stmt = prepare(sql);
  if (!stmt.ok()) return stmt.error();
  int index = 0;
  ((*stmt)->bind(++index, args), ...);
  return stmt;
}

template <class... Args>
Result<ScopedStatement> Database::query_one(const std::string& sql, const Args&... args) {
  auto stmt = query(sql, args...);
  if (!stmt.ok()) return stmt.error();
  auto row = (*stmt)->step();
  if (!row.ok()) return row.error();
  stmt->found_ = *row;
  return stmt;
}

template <class... Args>
Status Database::run(const std::string& sql, const Args&... args) {
  auto stmt = query(sql, args...);
  if (!stmt.ok()) return stmt.error();
  return (*stmt)->run();
}

// BEGIN IMMEDIATE on construction (takes the write lock up front, so no upgrade deadlocks);
// rolls back on destruction unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // The status of BEGIN; check before doing work.
  const Status& begin_status() const { return begin_; }
  Status commit();

 private:
  Database& db_;
  Status begin_;
  bool open_ = false;
};

}  // namespace benchfleet::store
