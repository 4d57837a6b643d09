// EXPLAIN QUERY PLAN for the store tests that check how SQLite runs the store's statements
// (store_query_plan_test, store_queue_test, report_store_test).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

namespace benchfleet::store::testing {

// The plan's detail lines of `sql` on a second, read-only connection to the database at `path`;
// none for statements without a plan (INSERT ... VALUES). A statement SQLite cannot prepare is
// a test failure naming it.
inline std::vector<std::string> explain(const std::string& path, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  const std::string eqp = "EXPLAIN QUERY PLAN " + sql;
  const int rc = sqlite3_prepare_v2(db, eqp.c_str(), -1, &stmt, nullptr);
  EXPECT_EQ(rc, SQLITE_OK) << sqlite3_errmsg(db) << "\n" << sql;
  while (rc == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3)));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

}  // namespace benchfleet::store::testing
