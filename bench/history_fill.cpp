#include "bench/history_fill.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <random>
#include <set>

#include "bench/fill_support.h"
#include "common/clock.h"
#include "common/matrix.h"
#include "common/stats.h"
#include "coordinator/services/change_detection.h"
#include "coordinator/store/store.h"

namespace benchfleet::bench {
namespace {

struct GpuClass {
  const char* name;
  double memory_gb;
  double slowdown;  // latency relative to an A100
};
constexpr std::array<GpuClass, 3> kGpus{{{"a100", 40, 1.0}, {"v100", 16, 1.9}, {"t4", 16, 4.2}}};

constexpr const auto& kShapes = kSeedShapes;

const std::vector<Mode> kModes = {Mode::kEager, Mode::kDefault, Mode::kMaxAutotune};

double mode_speed(Mode m) { return m == Mode::kDefault ? 0.70 : m == Mode::kMaxAutotune ? 0.55 : 1.0; }
double mode_memory(Mode m) { return m == Mode::kDefault ? 1.1 : m == Mode::kMaxAutotune ? 1.3 : 1.0; }

// 2025-01-01T00:00:00Z.
constexpr TimestampMs kFirstMidnight = 1'735'689'600'000;
constexpr TimestampMs kDayMs = 86'400'000;

// "20250101" for night `n`.
std::string night_date(int n) {
  const std::time_t t = static_cast<std::time_t>((kFirstMidnight + n * kDayMs) / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char out[16];
  std::strftime(out, sizeof out, "%Y%m%d", &tm);
  return out;
}

// Where a series changes level, if it does: (night, factor).
struct Step {
  int night = -1;
  double factor = 1;
};

Step step_of(const JobSpec& spec, int nights, std::uint64_t seed) {
  std::uint64_t h = seed * 0x9E3779B97F4A7C15ULL;
  for (const auto& part :
       {spec.model, std::to_string(spec.batch), std::string(to_string(spec.mode)), spec.gpu, spec.torch_build}) {
    for (char c : part) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  }
  if (nights < 20) return {};
  const int night = 10 + static_cast<int>((h >> 20) % static_cast<std::uint64_t>(nights - 15));
  if (h % 40 == 0) return {night, 1.08 + 0.12 * static_cast<double>((h >> 8) % 100) / 100};
  if (h % 97 == 1) return {night, 0.90};
  return {};
}

JobResult synthesize(const JobSpec& spec, const GpuClass& gpu, std::size_t model_index, int night, double level,
                     int samples, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const ModelShape shape = kShapes[model_index % kShapes.size()];
  const bool nightly = spec.torch_build == "nightly";
  JobResult r;
  std::mt19937_64 night_rng(static_cast<std::uint64_t>(night) * 7919 + 17);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string git;
  for (int i = 0; i < 12; ++i) git += kHex[night_rng() % 16];
  r.environment = {{"torch_version", nightly ? "2.7.0.dev" + night_date(night) + "+cu126" : "2.6.0+cu124"},
                   {"torch_git", nightly ? git : "2236df1770800ffea5697b11b0bb0d910b2e59e1"},
                   {"device", "cuda"},
                   {"gpu_name", gpu.name}};
  const double need_gb = 1.0 + shape.gb_per_image * spec.batch * mode_memory(spec.mode);
  if (need_gb > gpu.memory_gb * 0.9) {
    r.status = ResultStatus::kOom;
    r.oom = OomInfo{OomPhase::kWarmup, static_cast<std::int64_t>(1.5e9)};
    r.error = "CUDA out of memory. Tried to allocate 1.50 GiB.";
    return r;
  }
  std::normal_distribution<double> jitter(0.0, 0.01);
  std::normal_distribution<double> noise(0.0, 0.03);
  const double night_level = level * std::exp(jitter(rng));
  r.samples_ms.reserve(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    r.samples_ms.push_back(std::round(night_level * std::exp(noise(rng)) * 1e4) / 1e4);
  }
  r.status = ResultStatus::kOk;
  r.stats = compute_statistics(r.samples_ms, rng(), /*resamples=*/100);
  r.stop_reason = StopReason::kFixedCount;
  r.first_call_ms = night_level * 3;
  r.memory.emplace();
  r.memory->peak_allocated_bytes = static_cast<std::int64_t>(need_gb * 8e8);
  r.memory->peak_reserved_bytes = static_cast<std::int64_t>(need_gb * 1e9);
  r.memory->peak_rss_bytes = static_cast<std::int64_t>((3 + unit(rng)) * 1e9);
  return r;
}

}  // namespace

Result<HistoryFillSummary> fill_history(const HistoryFillOptions& o, const Catalog& catalog,
                                        const std::function<void(int)>& progress) {
  if (o.models < 1 || o.models > static_cast<int>(kShapes.size())) return Error::invalid("models", "must be 1 to 12");
  if (catalog.models().size() < kShapes.size()) return Error::invalid("catalog", "needs the 12 seed models");
  ManualClock clock(kFirstMidnight);
  store::StoreOptions so;
  so.path = o.db;
  so.lease_ttl_ms = 3'600'000;  // nothing expires while a night is measured
  BF_ASSIGN_OR_RETURN(auto store, store::Store::open(so, clock));

  std::vector<std::pair<std::int64_t, std::size_t>> agents;  // (agent id, GPU class index)
  std::vector<std::int64_t> agent_ids;
  for (std::size_t g = 0; g < kGpus.size(); ++g) {
    AgentDescriptor d;
    d.name = std::string("history-") + kGpus[g].name;
    d.hostname = std::string("gpu-") + kGpus[g].name + "-01";
    d.version = BENCHFLEET_VERSION;
    d.slots = {{"gpu0", kGpus[g].name, std::nullopt, std::nullopt}};
    d.torch_builds = {{"stable", "2.6.0+cu124", {{Runtime::kLibtorch, kModes}}},
                      {"nightly", "2.7.0.dev+cu126", {{Runtime::kLibtorch, kModes}}}};
    BF_ASSIGN_OR_RETURN(const std::int64_t id,
                        store->agents().enroll_agent(d, {"salt", "hash"}, store::EnrolmentClaim::anyone()));
    agents.emplace_back(id, g);
    agent_ids.push_back(id);
  }

  std::vector<std::string> seeds;
  for (int i = 0; i < o.models; ++i) seeds.push_back(catalog.models()[static_cast<std::size_t>(i)].id);
  MatrixSpec spec;
  spec.name = "nightly seed study";
  spec.models = seeds;
  spec.batch_sizes = {1, 4, 16};
  spec.modes = kModes;
  spec.torch_builds = {"stable", "nightly"};
  for (const auto& gpu : kGpus) spec.gpus.push_back(gpu.name);
  spec.measurement.min_iterations = o.samples;
  spec.measurement.max_iterations = o.samples;
  BF_ASSIGN_OR_RETURN(const auto schedule, store->schedules().create_schedule(spec, "0 2 * * *", true));
  (void)schedule;
  const auto expand = [&catalog](const MatrixSpec& m) { return expand_matrix(m, catalog, ExpansionLimits{100'000}); };

  HistoryFillSummary summary;
  std::mt19937_64 rng(o.seed);
  std::int64_t stepped = 0;
  // Per series key (model, batch, mode, GPU class, build): the step injected, and the night of
  // each run id.
  std::map<std::string, Step> steps;
  std::map<std::int64_t, int> night_of_run;
  const auto key_of = [](const std::string& model, int batch, Mode mode, const std::string& gpu,
                         const std::string& build) {
    return model + "|" + std::to_string(batch) + "|" + std::string(to_string(mode)) + "|" + gpu + "|" + build;
  };
  for (int night = 0; night < o.nights; ++night) {
    clock.set_ms(kFirstMidnight + night * kDayMs + 2 * 3'600'000 + 60'000);  // 02:01, the schedule is due
    auto started = std::chrono::steady_clock::now();
    BF_ASSIGN_OR_RETURN(const auto fired, store->schedules().fire_due_schedules(clock.now_ms(), expand));
    if (fired.fired.size() != 1) return Error::internal("night " + std::to_string(night) + ": no run was created");
    ++summary.runs;
    night_of_run[fired.fired.front().run_id] = night;
    const auto night_verdict = [&](std::size_t agent, const store::LeaseGrant& grant) {
      const std::size_t gpu_index = agents[agent].second;
      const std::size_t model_index =
          static_cast<std::size_t>(std::find(seeds.begin(), seeds.end(), grant.spec.model) - seeds.begin());
      const ModelShape shape = kShapes[model_index];
      double level = shape.base_ms * std::pow(grant.spec.batch, 0.8) * kGpus[gpu_index].slowdown *
                     mode_speed(grant.spec.mode) * (grant.spec.torch_build == "nightly" ? 0.95 : 1.0);
      const Step step = step_of(grant.spec, o.nights, o.seed);
      if (step.night >= 0 && night >= step.night) level *= step.factor;
      JobResult result = synthesize(grant.spec, kGpus[gpu_index], model_index, night, level, o.samples, rng);
      if (step.night == night && result.status == ResultStatus::kOk) {  // an OOM cell shows no step
        ++stepped;
        steps[key_of(grant.spec.model, grant.spec.batch, grant.spec.mode, grant.spec.gpu, grant.spec.torch_build)] =
            step;
      }
      return result;
    };
    BF_ASSIGN_OR_RETURN(const std::int64_t stored, drain_queue(*store, agent_ids, night_verdict));
    summary.results += stored;
    summary.fill_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    started = std::chrono::steady_clock::now();
    for (bool more = true; more;) {
      BF_ASSIGN_OR_RETURN(const auto pass,
                          services::detect_changes(store->series(), rules::DetectorOptions{}, /*enqueue_alerts=*/true));
      summary.detect_series_examined += pass.series_examined;
      for (const auto& change : pass.changes) {
        ++(change.direction == rules::ChangeDirection::kRegression ? summary.regressions : summary.improvements);
      }
      more = pass.more;
    }
    summary.detect_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (progress) progress(night + 1);
  }
  summary.injected_steps = stepped;
  std::set<std::string> found;
  BF_ASSIGN_OR_RETURN(const auto changes, store->regressions().list_regressions({}, std::nullopt, 100'000));
  for (const auto& change : changes.items) {
    const std::string key =
        key_of(change.key.model, change.key.batch, change.key.mode, change.key.gpu, change.key.torch_build);
    const auto step = steps.find(key);
    const auto night = night_of_run.find(change.first_bad.run_id);
    const bool slower = change.direction == rules::ChangeDirection::kRegression;
    if (step != steps.end() && night != night_of_run.end() && night->second == step->second.night &&
        slower == (step->second.factor > 1)) {
      ++summary.changes_at_step;
      found.insert(key);
    } else {
      ++summary.changes_elsewhere;
    }
  }
  summary.steps_missed = static_cast<std::int64_t>(steps.size() - found.size());
  BF_ASSIGN_OR_RETURN(const auto page, store->series().list_series({}, std::nullopt, 100'000));
  summary.series = static_cast<std::int64_t>(page.items.size());
  return summary;
}

}  // namespace benchfleet::bench
