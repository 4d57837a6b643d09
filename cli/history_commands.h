// The CLI's history commands:
//   benchfleet schedule add MATRIX.yaml --cron EXPR [--paused] | list | show ID | pause ID |
//                       resume ID | delete ID
//   benchfleet series [--model M --batch N --mode X --dtype D --runtime R --gpu G --build B]
//                     [--limit N] [--after ID] | series show ID [--limit N] [--after-point ID]
//   benchfleet regressions [--state S] [--direction D] [--series ID] [--limit N] |
//              regressions ack|resolve ID [--note T] | regressions reopen ID
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cli/fleet_client.h"
#include "cli/watch.h"

namespace benchfleet::cli {

class HistoryCommands {
 public:
  // Registers the commands on `app`. REQUIRES: this object outlives app.parse() and run().
  explicit HistoryCommands(CLI::App& app);
  HistoryCommands(const HistoryCommands&) = delete;
  HistoryCommands& operator=(const HistoryCommands&) = delete;

  // The exit code of the history command app.parse() found (progress.h's kExit*), or nullopt
  // when the command line named another one.
  std::optional<int> run(FleetClient& client, Console& console) const;

 private:
  int run_schedule(FleetClient& client, Console& console) const;
  int run_series(FleetClient& client, Console& console) const;
  int run_regressions(FleetClient& client, Console& console) const;

  CLI::App* schedule_ = nullptr;
  CLI::App *schedule_add_ = nullptr, *schedule_list_ = nullptr, *schedule_show_ = nullptr;
  CLI::App *schedule_pause_ = nullptr, *schedule_resume_ = nullptr, *schedule_delete_ = nullptr;
  std::string matrix_file_, cron_;
  bool paused_ = false;
  std::int64_t schedule_id_ = 0;

  CLI::App *series_ = nullptr, *series_show_ = nullptr;
  std::optional<std::string> model_, mode_, dtype_, runtime_, gpu_, build_;
  std::optional<int> batch_;
  std::optional<int> series_limit_;
  std::optional<std::int64_t> series_after_, after_point_;
  std::int64_t series_id_ = 0;

  CLI::App *regressions_ = nullptr, *ack_ = nullptr, *resolve_ = nullptr, *reopen_ = nullptr;
  std::string state_ = "open", direction_ = "regression";
  std::optional<std::int64_t> regressions_series_;
  int regressions_limit_ = 100;
  std::int64_t regression_id_ = 0;
  std::optional<std::string> note_;

  bool json_ = false;
};

// "a b/c" -> "a%20b/c": a query value (RFC 3986 unreserved characters and '/' kept).
std::string encode_query_value(const std::string& value);
// `value` with every byte but letters, digits and those in `keep` percent-encoded ("%2F").
std::string percent_encode(std::string_view value, std::string_view keep);

}  // namespace benchfleet::cli
