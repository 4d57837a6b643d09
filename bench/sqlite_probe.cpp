#include "bench/sqlite_probe.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/stats.h"

namespace benchfleet::bench {
namespace {

void remove_database(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

// Closes the connection and removes the files on every exit path.
struct ProbeDb {
  sqlite3* db = nullptr;
  sqlite3_stmt* insert = nullptr;
  std::string path;
  ~ProbeDb() {
    sqlite3_finalize(insert);
    sqlite3_close(db);
    remove_database(path);
  }
  Error error(const std::string& what) const { return Error::internal(what + ": " + sqlite3_errmsg(db)); }
};

}  // namespace

Result<CommitProbe> probe_durable_commits(const std::string& path, double seconds) {
  remove_database(path);
  ProbeDb p;
  p.path = path;
  if (sqlite3_open_v2(path.c_str(), &p.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    return p.error("cannot open " + path);
  }
  const char* setup =
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
      "CREATE TABLE t (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, payload TEXT NOT NULL);";
  if (sqlite3_exec(p.db, setup, nullptr, nullptr, nullptr) != SQLITE_OK) return p.error("cannot set up " + path);
  if (sqlite3_prepare_v2(p.db, "INSERT INTO t (at, payload) VALUES (?, 'lease granted to agent 17 slot gpu0')", -1,
                         &p.insert, nullptr) != SQLITE_OK) {
    return p.error("cannot prepare the INSERT");
  }

  // Autocommit: every INSERT is its own transaction, fsynced to the WAL before step() returns.
  using clock = std::chrono::steady_clock;
  std::vector<double> latencies_ms;
  const auto start = clock::now();
  const auto end = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  auto now = start;
  while (now < end) {
    sqlite3_bind_int64(p.insert, 1, static_cast<sqlite3_int64>(latencies_ms.size()));
    const int rc = sqlite3_step(p.insert);
    sqlite3_reset(p.insert);
    if (rc != SQLITE_DONE) return p.error("INSERT failed");
    const auto after = clock::now();
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(after - now).count());
    now = after;
  }

  CommitProbe out;
  out.commits = static_cast<std::int64_t>(latencies_ms.size());
  out.seconds = std::chrono::duration<double>(now - start).count();
  out.per_second = out.seconds > 0 ? static_cast<double>(out.commits) / out.seconds : 0;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  out.p50_ms = percentile_sorted(latencies_ms, 0.50);
  out.p99_ms = percentile_sorted(latencies_ms, 0.99);
  return out;
}

}  // namespace benchfleet::bench
