#include "cli/watch.h"

#include <optional>
#include <string>

#include "cli/progress.h"
#include "cli/views.h"

namespace benchfleet::cli {
namespace {

constexpr const char* kClearLine = "\r\x1b[2K";

// Prints results stored since the last call, in id order (the API pages by cursor).
class ResultFeed {
 public:
  ResultFeed(FleetClient& client, std::int64_t run_id) : client_(client), run_id_(run_id) {}

  Status print_new(Console& console) {
    while (true) {
      BF_ASSIGN_OR_RETURN(auto page, client_.results_page(run_id_, cursor_));
      const auto& results = page["results"];
      for (const auto& row : results) {
        if (console.err_is_terminal) console.err << kClearLine << std::flush;
        console.out << result_line(row) << "\n" << std::flush;
        last_id_ = row.value("id", last_id_);
      }
      // The last page's cursor is null; continue after the last result seen.
      if (page["next_cursor"].is_string()) {
        cursor_ = page["next_cursor"].get<std::string>();
      } else {
        if (last_id_ > 0) cursor_ = std::to_string(last_id_);
        return Status::Ok();
      }
    }
  }

 private:
  FleetClient& client_;
  std::int64_t run_id_;
  std::string cursor_;
  std::int64_t last_id_ = 0;
};

}  // namespace

int watch_run(FleetClient& client, std::int64_t run_id, const WatchOptions& options, Console& console) {
  const double started = console.now_s();
  ResultFeed feed(client, run_id);
  std::optional<RunProgress> shown;
  bool saw_active = false;  // the time watched says how long the run took only if it was active
  double shown_at = 0;
  double unreachable_since = -1;  // since when the coordinator has not answered; -1: it answers

  while (true) {
    auto run = client.run(run_id);
    std::optional<RunProgress> progress;
    if (run.ok()) {
      auto p = progress_from_json(*run);
      if (!p.ok()) {
        console.err << "benchfleet: unexpected answer for run " << run_id << ": " << p.error().describe() << "\n";
        return kExitError;
      }
      progress = std::move(p).value();
      if (options.show_results) {
        if (auto s = feed.print_new(console); !s.ok()) run = s.error();
      }
    }
    if (!run.ok()) {
      if (run.error().code != ErrorCode::kUnavailable) {
        if (console.err_is_terminal) console.err << "\n";
        console.err << "benchfleet: " << run.error().message << "\n";
        return kExitError;
      }
      // The coordinator may be restarting: keep trying for a while, saying so once.
      const double now = console.now_s();
      if (unreachable_since < 0) {
        unreachable_since = now;
        if (console.err_is_terminal) console.err << "\n";
        console.err << "benchfleet: " << run.error().message << "; retrying\n";
      } else if (now - unreachable_since > options.give_up_after_s) {
        console.err << "benchfleet: gave up after " << format_duration(now - unreachable_since)
                    << " without an answer\n";
        return kExitError;
      }
    } else {
      unreachable_since = -1;
      const double now = console.now_s();
      saw_active = saw_active || !progress->ended();
      const auto left = coordinator_eta_s(*run);
      if (console.err_is_terminal) {
        console.err << kClearLine << render_bar(*progress, left, console.width) << std::flush;
      } else if (!progress->ended() && (!shown || *shown != *progress || now - shown_at >= options.plain_every_s)) {
        // The end is the summary's alone: a plain line of the same counts before it said it twice.
        console.err << render_plain(*progress, left) << "\n" << std::flush;
        shown = progress;
        shown_at = now;
      }
      if (progress->ended()) {
        if (console.err_is_terminal) console.err << "\n";
        console.err << render_summary(*progress, saw_active ? console.now_s() - started : 0) << "\n" << std::flush;
        return exit_code_for(*progress);
      }
    }
    if (!console.sleep(options.interval_s)) {
      if (console.err_is_terminal) console.err << "\n";
      console.err << "benchfleet: stopped watching; run " << run_id << " goes on (benchfleet watch " << run_id
                  << ", benchfleet cancel " << run_id << ")\n";
      return kExitInterrupted;
    }
  }
}

}  // namespace benchfleet::cli
