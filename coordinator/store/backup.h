// The database's backup and restore, and the lock that says a coordinator serves it.
//   benchfleet-coordinator backup --db state/benchfleet.db --to /var/backups/benchfleet-1.db
//   benchfleet-coordinator restore --db state/benchfleet.db --from /var/backups/benchfleet-1.db
// A backup is SQLite's online backup of one read snapshot: taken while a coordinator serves
// (WAL: writers go on meanwhile), it holds every result acknowledged before it started. A restore
// replaces the database and is refused while a coordinator holds it.
#pragma once

#include <string>

#include "common/result.h"

namespace benchfleet::store {

// An exclusive advisory lock (flock) on "<db>.lock", held from a coordinator's start until it
// exits (the kernel drops it when the process dies, kill -9 included). A second coordinator on
// the same database, and a restore, are refused while it is held.
class ServeLock {
 public:
  // kUnavailable naming the database when another process holds it.
  static Result<ServeLock> acquire(const std::string& db_path);
  ServeLock(ServeLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ServeLock& operator=(ServeLock&&) = delete;
  ServeLock(const ServeLock&) = delete;
  ServeLock& operator=(const ServeLock&) = delete;
  ~ServeLock();

 private:
  explicit ServeLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Copies the database at `db_path` to `to_path` through SQLite's online backup API in one step
// (one read snapshot, consistent while a coordinator writes). The copy is written beside
// `to_path` and renamed into place only once it passed PRAGMA quick_check and carries
// benchfleet's application id, so `to_path` never holds half a backup. Needs no lock: the
// database is only read. An existing `to_path` is replaced, but never a file of the database
// itself: `to_path` (or its ".partial") naming the database, its -wal, -shm, -journal or .lock,
// by any path (symlinks, "..", a hard link), is refused, field "to".
Status backup_database(const std::string& db_path, const std::string& to_path);

// Replaces the database at `db_path` with the backup at `from_path`: refused while a coordinator
// holds its ServeLock, or when the backup is not a benchfleet database (application id) or fails
// PRAGMA integrity_check. The database's -wal and -shm files go with the old database.
Status restore_database(const std::string& from_path, const std::string& db_path);

}  // namespace benchfleet::store
