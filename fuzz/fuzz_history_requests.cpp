// libFuzzer target: what the schedule, series and regression routes read from a request
// (coordinator/api/history_requests.h). The input's first byte picks the reader; the rest is a
// JSON body (a schedule, a regression note) or a query string ("state=open&limit=10", split on
// '&' and '=' as the router hands it over, without percent-decoding, so any byte reaches the
// readers). Properties: no crash, no exception, no sanitizer report; a refusal says why, and a
// query's names its parameter; an accepted schedule's cron is canonical (parsing its text gives the same
// text) and its matrix survives encode + decode; an accepted note is display text; accepted
// limits are in their ranges.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/display_text.h"
#include "common/json_reader.h"
#include "coordinator/api/history_requests.h"
#include "coordinator/rules/cron.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace benchfleet;

benchfleet::http::RouteMatch query_of(std::string_view text) {
  benchfleet::http::RouteMatch m;
  while (!text.empty()) {
    const std::size_t amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    const std::size_t eq = pair.find('=');
    m.query.emplace(std::string(pair.substr(0, eq)),
                    eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    text.remove_prefix(amp + 1);
  }
  return m;
}

// A refusal says why; a query's also names its parameter (a body's may be about the body as a
// whole: "" is its root).
template <class T>
void check_refusal(const Result<T>& r, const char* what, bool query) {
  if (r.ok()) return;
  if (r.error().message.empty()) fuzz::fail(what, "an error without a message");
  if (query && r.error().field.rfind("query.", 0) != 0) {
    fuzz::fail(what, "a refusal naming no query parameter: " + r.error().describe());
  }
}

void check_limit(int limit, int most, const char* what) {
  if (limit < 1 || limit > most) fuzz::fail(what, "limit " + std::to_string(limit) + " accepted");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto body = parse_json(rest);
      if (!body.ok()) return 0;
      auto r = api::decode_schedule_request(*body);
      check_refusal(r, "schedule", false);
      if (!r.ok()) return 0;
      auto again = rules::CronSchedule::parse(r->cron);
      if (!again.ok() || again->text() != r->cron) fuzz::fail("schedule", "cron text not canonical: " + r->cron);
      fuzz::check_round_trip<MatrixSpec>(nlohmann::json(r->matrix), "schedule matrix");
      break;
    }
    case 1: {
      auto body = parse_json(rest);
      if (!body.ok()) return 0;
      auto r = api::decode_state_note(*body);
      check_refusal(r, "note", false);
      if (r.ok() && *r && display_text_problem(**r, api::kMaxNoteBytes, TextLines::kMany)) {
        fuzz::fail("note", "accepted a note that is not display text");
      }
      break;
    }
    case 2: {
      auto r = api::series_list_query(query_of(rest));
      check_refusal(r, "series query", true);
      if (r.ok()) check_limit(r->limit, 500, "series query");
      break;
    }
    case 3: {
      auto r = api::series_points_query(query_of(rest));
      check_refusal(r, "series points query", true);
      if (r.ok()) check_limit(r->limit, 5000, "series points query");
      break;
    }
    default: {
      auto r = api::regression_list_query(query_of(rest));
      check_refusal(r, "regressions query", true);
      if (r.ok()) check_limit(r->limit, 500, "regressions query");
      break;
    }
  }
  return 0;
}
