// A stored result's samples text read a piece at a time, for an answer streamed to its reader
// (GET /api/v1/results/{id}): its own read-only connection to the database and an incremental
// blob handle on result_samples.samples_ms, so neither the store's connection nor its lock is
// held while a slow reader takes its time, and the text is never in memory whole. The handle
// keeps one read snapshot (WAL) until the reader is destroyed.
//   auto reader = SamplesReader::open(db_path, result_id);
//   std::string piece = reader->read(offset, 256 << 10).value();
// Not thread-safe (one stream, one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

struct sqlite3;
struct sqlite3_blob;

namespace benchfleet::store {

class SamplesReader {
 public:
  // kNotFound when the result has no samples row; kUnavailable for ":memory:" (no second connection).
  static Result<std::unique_ptr<SamplesReader>> open(const std::string& db_path, std::int64_t result_id);
  ~SamplesReader();
  SamplesReader(const SamplesReader&) = delete;
  SamplesReader& operator=(const SamplesReader&) = delete;

  std::size_t size() const { return size_; }
  // Up to `n` bytes from `offset` (fewer at the end).
  Result<std::string> read(std::size_t offset, std::size_t n);

 private:
  SamplesReader(sqlite3* db, sqlite3_blob* blob, std::size_t size) : db_(db), blob_(blob), size_(size) {}
  sqlite3* db_;
  sqlite3_blob* blob_;
  std::size_t size_;
};

}  // namespace benchfleet::store
