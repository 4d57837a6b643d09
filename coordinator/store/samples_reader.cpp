#include "coordinator/store/samples_reader.h"

#include <sqlite3.h>

#include <algorithm>

namespace benchfleet::store {

Result<std::unique_ptr<SamplesReader>> SamplesReader::open(const std::string& db_path, std::int64_t result_id) {
  if (db_path.empty() || db_path == ":memory:") {
    return Error{ErrorCode::kUnavailable, "an in-memory store has no second connection", {}};
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error::internal("cannot open " + db_path + " to read samples: " + why);
  }
  sqlite3_busy_timeout(db, 5000);
  (void)sqlite3_exec(db, "PRAGMA cache_size = -128", nullptr, nullptr, nullptr);  // 128 KiB: it reads forward once
  sqlite3_blob* blob = nullptr;
  if (sqlite3_blob_open(db, "main", "result_samples", "samples_ms", result_id, /*write=*/0, &blob) != SQLITE_OK) {
    const std::string why = sqlite3_errmsg(db);
    sqlite3_close(db);
    return Error::not_found("result " + std::to_string(result_id) + " has no samples: " + why);
  }
  const auto size = static_cast<std::size_t>(std::max(0, sqlite3_blob_bytes(blob)));
  return std::unique_ptr<SamplesReader>(new SamplesReader(db, blob, size));
}

SamplesReader::~SamplesReader() {
  sqlite3_blob_close(blob_);
  sqlite3_close(db_);
}

Result<std::string> SamplesReader::read(std::size_t offset, std::size_t n) {
  if (offset >= size_) return std::string();
  n = std::min(n, size_ - offset);
  std::string out(n, '\0');
  if (sqlite3_blob_read(blob_, out.data(), static_cast<int>(n), static_cast<int>(offset)) != SQLITE_OK) {
    return Error::internal(std::string("reading samples: ") + sqlite3_errmsg(db_));
  }
  return out;
}

}  // namespace benchfleet::store
