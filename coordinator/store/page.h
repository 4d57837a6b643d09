// One page of a keyset-paged listing, and the one way the stores cut it.
//
// A listing reads `limit + 1` rows after (or before) a cursor in its index order; the extra row
// only says there is more. keyset_page drops it and names the last row kept as the cursor the
// next page starts from, so no listing counts or skips rows (OFFSET would re-read them).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace benchfleet::store {

template <class T>
struct Page {
  std::vector<T> items;                     // in the listing's order
  std::optional<std::int64_t> next_cursor;  // pass back (after_id / before_id) for the next page
};

// `rows` as read with LIMIT `limit` + 1: at most `limit` of them, and the cursor of the last one
// kept (`cursor_of(row)`) when a row was left over. REQUIRES: limit >= 0.
template <class T, class CursorOf>
Page<T> keyset_page(std::vector<T> rows, int limit, CursorOf cursor_of) {
  Page<T> page;
  if (static_cast<int>(rows.size()) > limit) {
    rows.erase(rows.begin() + limit, rows.end());
    if (!rows.empty()) page.next_cursor = cursor_of(rows.back());
  }
  page.items = std::move(rows);
  return page;
}

}  // namespace benchfleet::store
