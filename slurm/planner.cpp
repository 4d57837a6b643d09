#include "slurm/planner.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace benchfleet::slurm {

Result<std::vector<QueueCell>> parse_queue_summary(std::string_view body) {
  const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error::invalid("", "the queue summary is not a JSON object");
  const auto cells = doc.find("cells");
  if (cells == doc.end() || !cells->is_array()) return Error::invalid("cells", "must be an array");
  std::vector<QueueCell> out;
  for (std::size_t i = 0; i < cells->size(); ++i) {
    const auto& c = (*cells)[i];
    const std::string at = "cells[" + std::to_string(i) + "]";
    if (!c.is_object()) return Error::invalid(at, "must be an object");
    QueueCell cell;
    for (const auto& [key, field] :
         {std::pair{"gpu_class", &cell.gpu_class}, std::pair{"torch_build", &cell.torch_build}}) {
      const auto it = c.find(key);
      if (it == c.end() || !it->is_string()) return Error::invalid(at + "." + key, "must be a string");
      *field = it->get<std::string>();
    }
    for (const auto& [key, field] : {std::pair{"queued", &cell.queued}, std::pair{"active", &cell.active}}) {
      const auto it = c.find(key);
      if (it == c.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) {
        return Error::invalid(at + "." + key, "must be an integer >= 0");
      }
      *field = it->get<std::int64_t>();
    }
    if (const auto by = c.find("queued_by_timeout"); by != c.end()) {
      if (!by->is_array()) return Error::invalid(at + ".queued_by_timeout", "must be an array");
      cell.queued_by_timeout.emplace();
      for (std::size_t j = 0; j < by->size(); ++j) {
        const auto& entry = (*by)[j];
        const std::string entry_at = at + ".queued_by_timeout[" + std::to_string(j) + "]";
        const auto timeout = entry.is_object() ? entry.find("timeout_s") : entry.end();
        if (timeout == entry.end() || !timeout->is_number_integer() || timeout->get<std::int64_t>() < 1 ||
            timeout->get<std::int64_t>() > 604'800) {
          return Error::invalid(entry_at + ".timeout_s", "must be an integer from 1 to 604800");
        }
        const auto queued = entry.find("queued");
        if (queued == entry.end() || !queued->is_number_integer() || queued->get<std::int64_t>() < 0) {
          return Error::invalid(entry_at + ".queued", "must be an integer >= 0");
        }
        cell.queued_by_timeout->emplace_back(timeout->get<int>(), queued->get<std::int64_t>());
      }
    }
    out.push_back(std::move(cell));
  }
  return out;
}

std::int64_t queued_for_class(const ClassConfig& cls, const std::vector<QueueCell>& cells, std::int64_t* too_long) {
  const std::int64_t limit_s = parse_slurm_time_limit(cls.time_limit).value_or(0);  // 0: UNLIMITED
  std::int64_t queued = 0;
  std::int64_t left_out = 0;
  for (const auto& c : cells) {
    if (c.gpu_class != cls.gpu_class || !cls.counts_build(c.torch_build)) continue;
    if (limit_s == 0 || !c.queued_by_timeout) {
      queued += c.queued;
      continue;
    }
    for (const auto& [timeout_s, n] : *c.queued_by_timeout) {
      (std::int64_t{timeout_s} + kAgentOverheadS <= limit_s ? queued : left_out) += n;
    }
  }
  if (too_long != nullptr) *too_long += left_out;
  return queued;
}

int allocations_to_submit(int max_allocations, std::int64_t queued, int active) {
  const std::int64_t desired = std::min<std::int64_t>(max_allocations, std::max<std::int64_t>(queued, 0));
  return static_cast<int>(std::max<std::int64_t>(desired - active, 0));
}

void RateLimiter::expire(TimestampMs now) {
  while (!taken_.empty() && taken_.front() <= now - kWindowMs) taken_.pop_front();
}

bool RateLimiter::try_acquire(TimestampMs now) {
  expire(now);
  if (static_cast<int>(taken_.size()) >= per_minute_) return false;
  taken_.push_back(now);
  return true;
}

int RateLimiter::taken(TimestampMs now) {
  expire(now);
  return static_cast<int>(taken_.size());
}

TimestampMs RateLimiter::next_free(TimestampMs now) {
  expire(now);
  if (static_cast<int>(taken_.size()) < per_minute_) return now;
  return taken_[taken_.size() - static_cast<std::size_t>(per_minute_)] + kWindowMs;
}

std::vector<ClassDecision> plan_pass(const LauncherConfig& config, const std::vector<QueueCell>& cells,
                                     const std::map<std::string, int>& active, RateLimiter& limiter, TimestampMs now) {
  std::vector<ClassDecision> decisions;
  for (const auto& cls : config.classes) {
    ClassDecision d;
    d.gpu_class = cls.gpu_class;
    d.queued = queued_for_class(cls, cells, &d.too_long);
    if (const auto it = active.find(cls.gpu_class); it != active.end()) d.active = it->second;
    d.wanted = allocations_to_submit(cls.max_allocations, d.queued, d.active);
    if (d.wanted > 0) {
      if (limiter.try_acquire(now)) {
        d.submit = d.wanted;
      } else {
        d.rate_limited = true;
      }
    }
    decisions.push_back(std::move(d));
  }
  return decisions;
}

}  // namespace benchfleet::slurm
