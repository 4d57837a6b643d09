#include "coordinator/store/backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "coordinator/store/migrations.h"

namespace benchfleet::store {
namespace {

namespace fs = std::filesystem;

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

Error sqlite_error(const std::string& what, sqlite3* db, int rc) {
  return Error::internal(what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

Result<Db> open_db(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return sqlite_error("cannot open " + path, raw, rc);
  sqlite3_busy_timeout(raw, 10000);
  return db;
}

Result<std::int64_t> pragma_int(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return sqlite_error(sql, db, 0);
  const int rc = sqlite3_step(stmt);
  const std::int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW) return sqlite_error(sql, db, rc);
  return v;
}

Result<std::string> pragma_text(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return sqlite_error(sql, db, 0);
  const int rc = sqlite3_step(stmt);
  std::string v = rc == SQLITE_ROW && sqlite3_column_text(stmt, 0)
                      ? reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))
                      : "";
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW) return sqlite_error(sql, db, rc);
  return v;
}

// Copies every page of `from` into `to` in one step: one read snapshot of the source.
Status copy_database(sqlite3* from, sqlite3* to, const std::string& what) {
  sqlite3_backup* b = sqlite3_backup_init(to, "main", from, "main");
  if (!b) return sqlite_error(what, to, 0);
  const int rc = sqlite3_backup_step(b, -1);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return sqlite_error(what, to, rc);
  return sqlite3_errcode(to) == SQLITE_OK ? Status{} : Status(sqlite_error(what, to, 0));
}

// A benchfleet database that SQLite finds whole: `check` is "quick_check" or "integrity_check".
Status check_copy(sqlite3* db, const std::string& path, const char* check) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, pragma_int(db, "PRAGMA application_id"));
  if (id != kApplicationId) {
    return Error::invalid("", path + " is not a benchfleet database (no benchfleet application id)");
  }
  const std::string sql = std::string("PRAGMA ") + check;
  BF_ASSIGN_OR_RETURN(const std::string verdict, pragma_text(db, sql.c_str()));
  if (verdict != "ok") return Error::invalid("", path + " fails SQLite's " + check + ": " + verdict);
  return {};
}

// Whether `a` and `b` name one file: the same path once symlinks and dots are resolved (for a
// file that does not exist yet, its directory's), or, when both exist, the same inode (a hard
// link).
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec1, ec2;
  const fs::path ca = fs::weakly_canonical(a, ec1), cb = fs::weakly_canonical(b, ec2);
  if (!ec1 && !ec2 && ca == cb) return true;
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A backup written to `target` (or to its ".partial" beside it) must not replace any file of the
// live database: the coordinator would go on writing to the replaced, deleted inode, and every
// result it acknowledged from then on would be lost.
Status refuse_live_files(const std::string& db_path, const std::string& target) {
  for (const std::string suffix : {"", "-wal", "-shm", "-journal", ".lock"}) {
    const fs::path live = db_path + suffix;
    for (const std::string& written : {target, target + ".partial"}) {
      if (same_file(written, live)) {
        return Error::invalid("to", written + " is the database's own " + (suffix.empty() ? "file" : suffix + " file") +
                                        " (" + live.string() +
                                        "): a backup there would destroy the store; choose "
                                        "another path");
      }
    }
  }
  return {};
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace

Result<ServeLock> ServeLock::acquire(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error::internal("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Error{ErrorCode::kUnavailable, "a coordinator is serving " + db_path + " (it holds " + path + ")", {}};
    }
    return Error::internal("cannot lock " + path + ": " + std::strerror(err));
  }
  return ServeLock(fd);
}

ServeLock::~ServeLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

Status backup_database(const std::string& db_path, const std::string& to_path) {
  if (!fs::exists(db_path)) return Error::not_found("no database at " + db_path);
  BF_RETURN_IF_ERROR(refuse_live_files(db_path, to_path));
  BF_ASSIGN_OR_RETURN(Db from, open_db(db_path, SQLITE_OPEN_READONLY));
  const std::string partial = to_path + ".partial";
  remove_quietly(partial);
  {
    BF_ASSIGN_OR_RETURN(Db to, open_db(partial, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    Status copied = copy_database(from.get(), to.get(), "backup of " + db_path);
    if (copied.ok()) copied = check_copy(to.get(), partial, "quick_check");
    if (!copied.ok()) {
      to.reset();
      remove_quietly(partial);
      return copied;
    }
  }
  std::error_code ec;
  fs::rename(partial, to_path, ec);
  if (ec) return Error::internal("cannot move the backup to " + to_path + ": " + ec.message());
  return {};
}

Status restore_database(const std::string& from_path, const std::string& db_path) {
  BF_ASSIGN_OR_RETURN(ServeLock lock, ServeLock::acquire(db_path));
  if (!fs::exists(from_path)) return Error::not_found("no backup at " + from_path);
  BF_ASSIGN_OR_RETURN(Db from, open_db(from_path, SQLITE_OPEN_READONLY));
  BF_RETURN_IF_ERROR(check_copy(from.get(), from_path, "integrity_check"));
  const std::string restoring = db_path + ".restoring";
  remove_quietly(restoring);
  {
    BF_ASSIGN_OR_RETURN(Db to, open_db(restoring, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    Status copied = copy_database(from.get(), to.get(), "restore from " + from_path);
    if (!copied.ok()) {
      to.reset();
      remove_quietly(restoring);
      return copied;
    }
  }
  // The old database's journal must not be replayed onto the restored one.
  remove_quietly(db_path + "-wal");
  remove_quietly(db_path + "-shm");
  std::error_code ec;
  fs::rename(restoring, db_path, ec);
  if (ec) return Error::internal("cannot move the restored database to " + db_path + ": " + ec.message());
  return {};
}

}  // namespace benchfleet::store
