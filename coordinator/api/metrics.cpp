#include "coordinator/api/metrics.h"

#include <sstream>

namespace benchfleet::api {

void Metrics::observe_request(std::string_view route, unsigned status, double seconds) {
  std::string klass = std::to_string(status / 100) + "xx";
  std::lock_guard lock(mu_);
  auto& s = series_[{std::string(route), std::move(klass)}];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++s.buckets[i];
  }
  ++s.count;
  s.sum += seconds;
}

std::string Metrics::render(const store::Gauges& g) const {
  std::ostringstream out;
  out << "# HELP benchfleet_jobs Jobs by status.\n# TYPE benchfleet_jobs gauge\n";
  for (JobStatus s : all_job_statuses()) {
    auto it = g.jobs_by_status.find(s);
    out << "benchfleet_jobs{status=\"" << to_string(s) << "\"} " << (it == g.jobs_by_status.end() ? 0 : it->second)
        << "\n";
  }
  out << "# HELP benchfleet_active_leases Leases currently held by agents.\n# TYPE benchfleet_active_leases gauge\n"
      << "benchfleet_active_leases " << g.active_leases << "\n";
  out << "# HELP benchfleet_agents Enrolled agents; state=\"seen\" counts those heard from within 3 heartbeats.\n"
      << "# TYPE benchfleet_agents gauge\n"
      << "benchfleet_agents{state=\"enrolled\"} " << g.agents << "\n"
      << "benchfleet_agents{state=\"seen\"} " << g.agents_seen_recently << "\n";
  out << "# HELP benchfleet_runs Runs stored.\n# TYPE benchfleet_runs gauge\nbenchfleet_runs " << g.runs << "\n";
  out << "# HELP benchfleet_regressions Confirmed regressions (slower) by state; resolved ones are not counted.\n"
      << "# TYPE benchfleet_regressions gauge\n"
      << "benchfleet_regressions{state=\"open\"} " << g.open_regressions << "\n"
      << "benchfleet_regressions{state=\"acknowledged\"} " << g.acknowledged_regressions << "\n";
  out << "# HELP benchfleet_alert_deliveries Webhook alerts not delivered: pending (to be tried or retried) and"
      << " failed (given up).\n# TYPE benchfleet_alert_deliveries gauge\n"
      << "benchfleet_alert_deliveries{state=\"pending\"} " << g.alerts_pending << "\n"
      << "benchfleet_alert_deliveries{state=\"failed\"} " << g.alerts_failed << "\n";
  out << "# HELP benchfleet_store_operations_total Store operations run (requests' reads and writes).\n"
      << "# TYPE benchfleet_store_operations_total counter\n"
      << "benchfleet_store_operations_total " << g.store.operations << "\n";
  out << "# HELP benchfleet_store_commits_total Store transactions committed; each holds one or more operations"
      << " (group commit) and costs one fsync when it wrote.\n"
      << "# TYPE benchfleet_store_commits_total counter\n"
      << "benchfleet_store_commits_total " << g.store.commits << "\n";
  out << "# HELP benchfleet_store_failed_commits_total Store transactions whose commit failed (their requests got"
      << " errors).\n# TYPE benchfleet_store_failed_commits_total counter\n"
      << "benchfleet_store_failed_commits_total " << g.store.failed_commits << "\n";
  out << "# HELP benchfleet_http_request_duration_seconds HTTP request latency by route and status class.\n"
      << "# TYPE benchfleet_http_request_duration_seconds histogram\n";
  std::lock_guard lock(mu_);
  for (const auto& [key, s] : series_) {
    const std::string labels = "route=\"" + key.first + "\",code=\"" + key.second + "\"";
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      out << "benchfleet_http_request_duration_seconds_bucket{" << labels << ",le=\"" << kBuckets[i] << "\"} "
          << s.buckets[i] << "\n";
    }
    out << "benchfleet_http_request_duration_seconds_bucket{" << labels << ",le=\"+Inf\"} " << s.count << "\n"
        << "benchfleet_http_request_duration_seconds_sum{" << labels << "} " << s.sum << "\n"
        << "benchfleet_http_request_duration_seconds_count{" << labels << "} " << s.count << "\n";
  }
  return out.str();
}

}  // namespace benchfleet::api
