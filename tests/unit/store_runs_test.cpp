// The store's runs, jobs and results against a real SQLite file: idempotent results, listings
// and their pages, OOM pruning, report cells.
#include "coordinator/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "common/codecs.h"
#include "common/matrix.h"
#include "common/stats.h"
#include "coordinator/store/migrations.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

// A read's result with the samples it carried as text (samples_json) parsed back in.
JobResult with_samples(const ResultRow& row) {
  JobResult r = row.result;
  if (row.samples_json) r.samples_ms = nlohmann::json::parse(*row.samples_json).get<std::vector<double>>();
  return r;
}

TEST_F(StoreTest, ResultsAreIdempotentPerAttempt) {
  const auto a = enroll("a");
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  auto first = store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(3));
  ASSERT_EQ(first.value().kind, RecordKind::kStored);
  auto again = store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(3));
  EXPECT_EQ(again.value().kind, RecordKind::kDuplicate);
  EXPECT_EQ(again->result_id, first->result_id);
  EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, ok_result(4)).value().kind,
            RecordKind::kMismatch);
  auto page = store_->results().list_results(run, {}, std::nullopt, 10, /*with_samples=*/true);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(with_samples(page->items[0]), ok_result(3));
}

// Samples live apart from the result row; a listing reads them only when
// asked, the single result always has them, and the result is otherwise the same.
TEST_F(StoreTest, ListingsLeaveSamplesOutUnlessAsked) {
  const auto a = enroll("a");
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  const auto g = lease(a);
  const JobResult posted = ok_result(3);
  ASSERT_FALSE(posted.samples_ms.empty());
  const auto stored = store_->results().record_result(a, {g.job_id, g.lease_id}, 1, posted).value();
  ASSERT_EQ(stored.kind, RecordKind::kStored);

  auto page = store_->results().list_results(run, {}, std::nullopt, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 1u);
  JobResult without = posted;
  without.samples_ms.clear();
  EXPECT_EQ(page->items[0].result, without);
  EXPECT_FALSE(page->items[0].samples_json.has_value());
  EXPECT_EQ(with_samples(store_->results().get_result(stored.result_id).value()), posted);
  // A retry is still recognised as the same result (the digest covers the samples).
  EXPECT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, posted).value().kind, RecordKind::kDuplicate);
}

// A page with samples stops before the result that would take it past
// ResultStore::kSamplesPageBytes (holding at least one), and next_cursor goes on from there: a
// read of results of 10^6 samples each costs one result's text at a time, not ten.
TEST_F(StoreTest, PagesWithSamplesAreBoundedByBytes) {
  const auto a = enroll("a");
  MatrixSpec spec = testing::stable_a100_matrix("test", {"torchvision/resnet18"}, {1, 2, 4, 8, 16}, {Mode::kEager});
  spec.measurement.max_iterations = 1'000'000;  // a result may carry as many samples as its job allows
  const auto run = submit_spec(spec);
  std::vector<double> many(100'000);  // about 1.9 MB of text each: two fit in a page, three do not
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = 10.0 + 1.0 / (3.0 + static_cast<double>(i));
  const Statistics many_stats = compute_statistics(many);  // the store checks a result's figures
  for (int i = 0; i < 5; ++i) {
    const auto g = lease(a);
    JobResult r = ok_result(10);
    r.samples_ms = many;
    r.stats = many_stats;
    ASSERT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, r).value().kind, RecordKind::kStored);
  }
  std::vector<std::size_t> sizes;
  std::vector<std::int64_t> ids;
  std::optional<std::int64_t> cursor;
  do {
    const auto page = store_->results().list_results(run, {}, cursor, 10, /*with_samples=*/true).value();
    sizes.push_back(page.items.size());
    std::size_t bytes = 0;
    for (const auto& row : page.items) {
      ids.push_back(row.id);
      ASSERT_TRUE(row.samples_json.has_value());
      bytes += row.samples_json->size();
      EXPECT_EQ(nlohmann::json::parse(*row.samples_json).get<std::vector<double>>(), many);
    }
    EXPECT_LE(bytes, ResultStore::kSamplesPageBytes);
    cursor = page.next_cursor;
  } while (cursor && sizes.size() < 10);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 2, 1}));
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  // Without samples the same listing is one page.
  EXPECT_EQ(store_->results().list_results(run, {}, std::nullopt, 10).value().items.size(), 5u);
}

// A result whose samples alone are more than a page holds once made its page that large (an 18
// MB page): it is listed without them now, marked so, and the rest of the page is as before.
TEST_F(StoreTest, AResultLargerThanAPageIsListedWithoutItsSamples) {
  const auto a = enroll("a");
  MatrixSpec spec = testing::stable_a100_matrix("test", {"torchvision/resnet18"}, {1, 2, 4}, {Mode::kEager});
  spec.measurement.max_iterations = 1'000'000;
  const auto run = submit_spec(spec);
  std::vector<double> huge(300'000);  // about 5.7 MB of text, more than the 4 MiB a page holds
  for (std::size_t i = 0; i < huge.size(); ++i) huge[i] = 10.0 + 1.0 / (3.0 + static_cast<double>(i));
  const Statistics huge_stats = compute_statistics(huge);  // the store checks a result's figures
  for (int i = 0; i < 3; ++i) {
    const auto g = lease(a);
    JobResult r = ok_result(10);
    if (i == 1) {
      r.samples_ms = huge;
      r.stats = huge_stats;
    }
    ASSERT_EQ(store_->results().record_result(a, {g.job_id, g.lease_id}, 1, r).value().kind, RecordKind::kStored);
  }
  const auto page = store_->results().list_results(run, {}, std::nullopt, 10, /*with_samples=*/true).value();
  ASSERT_EQ(page.items.size(), 3u);
  EXPECT_TRUE(page.items[0].samples_json.has_value());
  EXPECT_FALSE(page.items[0].samples_omitted);
  EXPECT_FALSE(page.items[1].samples_json.has_value());
  EXPECT_TRUE(page.items[1].samples_omitted);
  EXPECT_TRUE(page.items[2].samples_json.has_value());
  EXPECT_FALSE(page.next_cursor.has_value());
  // Its own read has them whole.
  const auto whole = store_->results().get_result(page.items[1].id).value();
  ASSERT_TRUE(whole.samples_json.has_value());
  EXPECT_EQ(nlohmann::json::parse(*whole.samples_json).get<std::vector<double>>(), huge);
}

// A run of more than RunStore::kSubmitChunk jobs goes in as several operations: all its jobs
// are there when create_run returns, it is not finished while its last chunk is still to come,
// and a cancel that lands between chunks leaves no job queued.
// A big run whose cells no enrolled slot can run was marked unsupported in one operation that
// held the store for seconds (40,000 such cells: heartbeats waited 2 s). It is marked in
// operations of kSubmitChunk cells now, every one of them, and the run ends done.
TEST_F(StoreTest, ABigRunNoSlotCanRunIsMarkedInChunksAndEndsDone) {
  (void)enroll("a", "a100", {Mode::kEager});
  std::vector<int> batches;
  for (int b = 1; b <= 250; ++b) batches.push_back(b);
  MatrixSpec spec = testing::stable_a100_matrix("unrunnable", {"torchvision/resnet18"}, batches, {Mode::kDefault});
  spec.repetitions = 8;  // 2,000 cells the slot's build does not offer: four chunks
  const auto run = submit_spec(spec);
  const auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.job_count, 2000);
  EXPECT_EQ(info.state, "done");
  EXPECT_TRUE(info.finished_at.has_value());
  const auto cells = store_->results().report_cells(run).value();
  ASSERT_EQ(cells.size(), 2000u);
  for (const auto& c : cells) ASSERT_EQ(c.result_status, ResultStatus::kUnsupported);
}

TEST_F(StoreTest, BigRunsAreStoredInChunksAndACancelMeanwhileStopsTheRest) {
  std::vector<int> batches;
  for (int b = 1; b <= 250; ++b) batches.push_back(b);
  MatrixSpec spec = testing::stable_a100_matrix("big", {"torchvision/resnet18"}, batches, {Mode::kEager});
  spec.repetitions = 10;  // 2,500 jobs: three chunks
  const auto run = submit_spec(spec);
  auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.job_count, 2500);
  EXPECT_FALSE(info.finished_at.has_value());
  std::int64_t listed = 0;
  std::optional<std::int64_t> cursor;
  do {
    const auto page = store_->runs().list_jobs(run, cursor, 1000).value();
    listed += static_cast<std::int64_t>(page.items.size());
    cursor = page.next_cursor;
  } while (cursor);
  EXPECT_EQ(listed, 2500);

  // Cancelled from another thread as soon as the run shows: the jobs stored after that are
  // stored cancelled.
  spec.name = "cancelled-while-submitted";
  spec.repetitions = 40;  // 10,000 jobs: ten chunks
  std::atomic<bool> done{false};
  std::optional<std::int64_t> cancelled;
  std::thread canceller([&] {
    while (!done && !cancelled) {
      const auto runs = store_->runs().list_runs(1, std::nullopt).value();
      if (!runs.empty() && runs[0].name == spec.name && store_->runs().cancel_run(runs[0].id).ok())
        cancelled = runs[0].id;
    }
  });
  const auto second = submit_spec(spec);
  done = true;
  canceller.join();
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(*cancelled, second);
  info = store_->runs().get_run(second).value();
  EXPECT_EQ(info.job_count, 10000);
  EXPECT_TRUE(info.cancelled_at.has_value());
  EXPECT_EQ(info.jobs_by_status[JobStatus::kCancelled], 10000) << "every job cancelled, none left queued";
}

// A restart that cut a big submit short (fewer jobs stored than the run was given) leaves a
// cancelled run of the jobs it got, not a run that can never finish.
TEST_F(StoreTest, ARunCutShortInItsSubmitIsClosedWhenTheStoreOpens) {
  std::vector<int> batches;
  for (int b = 1; b <= 100; ++b) batches.push_back(b);
  const auto run = submit({"torchvision/resnet18"}, batches, {Mode::kEager});
  // What a kill -9 between two chunks leaves: the run row and its first jobs.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(options_.path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DELETE FROM jobs WHERE batch > 40", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  reopen();
  const auto info = store_->runs().get_run(run).value();
  EXPECT_EQ(info.job_count, 40);
  EXPECT_TRUE(info.cancelled_at.has_value());
  EXPECT_TRUE(info.finished_at.has_value());
  EXPECT_EQ(info.jobs_by_status.at(JobStatus::kCancelled), 40);
}

TEST_F(StoreTest, OomPrunesLargerBatchesOfTheSameCellIncludingRequeuedOnes) {
  const auto a = enroll("a");
  const auto run = submit({"torchvision/resnet18"}, {1, 4, 16}, {Mode::kEager});
  const auto b1 = lease(a);
  ASSERT_EQ(b1.spec.batch, 1);
  // Batch 4 is leased (running) when batch 1 OOMs; only batch 16 (queued) becomes implied.
  const auto other = enroll("other");
  const auto b4 = lease(other);
  ASSERT_EQ(b4.spec.batch, 4);
  auto out = store_->results().record_result(a, {b1.job_id, b1.lease_id}, 1, oom_result());
  ASSERT_EQ(out.value().implied_oom, 1);
  auto cells = store_->results().report_cells(run).value();
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].result_status, ResultStatus::kOom);
  EXPECT_EQ(cells[0].detail.rfind("phase=warmup bytes=1073741824", 0), 0u) << cells[0].detail;
  EXPECT_FALSE(cells[1].result_status.has_value()) << "a running job is left to finish";
  EXPECT_EQ(cells[2].result_status, ResultStatus::kOomImplied);
  EXPECT_EQ(cells[2].job_status, JobStatus::kDone);
  // When the running batch-4 lease expires, its requeued job is implied too, not rerun.
  clock_.advance_ms(options_.lease_ttl_ms);
  EXPECT_EQ(store_->leases().expire_leases().value(), 1);
  cells = store_->results().report_cells(run).value();
  EXPECT_EQ(cells[1].result_status, ResultStatus::kOomImplied);
  EXPECT_EQ(store_->runs().get_run(run).value().state, "done");
}

TEST_F(StoreTest, ReportCellsCarryTheTorchVersionEachResultRecorded) {
  const auto a = enroll("a", "a100", {Mode::kEager});
  const auto run = submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager, Mode::kDefault});
  JobResult with_version = ok_result(2);
  with_version.environment = {{"torch_version", "2.6.0+debian"}, {"host", "h1"}};
  const auto g1 = lease(a);
  ASSERT_TRUE(store_->results().record_result(a, {g1.job_id, g1.lease_id}, 1, with_version).ok());
  JobResult numeric = ok_result(3);  // a fingerprint is a flat map; only a text version counts
  numeric.environment = {{"torch_version", 2.6}};
  const auto g2 = lease(a);
  ASSERT_TRUE(store_->results().record_result(a, {g2.job_id, g2.lease_id}, 1, numeric).ok());

  const auto cells = store_->results().report_cells(run).value();
  ASSERT_EQ(cells.size(), 4u);
  for (const auto& c : cells) {
    SCOPED_TRACE(std::string(to_string(c.job.mode)) + " batch " + std::to_string(c.job.batch));
    ASSERT_TRUE(c.result_status.has_value());
    if (c.job.mode == Mode::kDefault) {
      // The agent offers no default: the scheduler's verdict, given before any torch ran.
      EXPECT_EQ(c.result_status, ResultStatus::kUnsupported);
      EXPECT_EQ(c.torch_version, "");
    } else {
      EXPECT_EQ(c.torch_version, c.job.batch == g1.spec.batch ? "2.6.0+debian" : "");
    }
  }
}

TEST_F(StoreTest, ListJobsFollowsLeasesAndVerdicts) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto run = submit({"torchvision/resnet18"}, {1, 4, 16}, {Mode::kEager});
  const TimestampMs created = clock_.now_ms();
  auto jobs = [&] {
    auto page = store_->runs().list_jobs(run, std::nullopt, 100);
    EXPECT_TRUE(page.ok()) << page.error().message;
    EXPECT_FALSE(page->next_cursor.has_value());
    return page.ok() ? page->items : std::vector<JobRow>{};
  };

  auto rows = jobs();
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].status, JobStatus::kQueued);
    EXPECT_EQ(rows[i].attempt, 0);
    EXPECT_FALSE(rows[i].result_id || rows[i].result_status || rows[i].agent_name || rows[i].slot);
    EXPECT_EQ(rows[i].updated_at, created);
    EXPECT_EQ(rows[i].spec.batch, std::vector<int>({1, 4, 16})[i]);
    EXPECT_EQ(rows[i].spec.model, "torchvision/resnet18");
  }

  const auto g1 = lease(a);
  ASSERT_EQ(g1.job_id, rows[0].id);
  rows = jobs();
  EXPECT_EQ(rows[0].status, JobStatus::kLeased);
  EXPECT_EQ(rows[0].attempt, 1);
  EXPECT_EQ(rows[0].agent_name, "a");
  EXPECT_EQ(rows[0].slot, "gpu0");

  clock_.advance_ms(1000);
  ASSERT_EQ(store_->leases().renew(a, {g1.job_id, g1.lease_id}).value().state, LeaseState::kActive);
  const auto g2 = lease(b);
  ASSERT_EQ(g2.job_id, rows[1].id);
  rows = jobs();
  EXPECT_EQ(rows[0].status, JobStatus::kRunning);
  EXPECT_EQ(rows[0].updated_at, created + 1000);
  EXPECT_EQ(rows[1].status, JobStatus::kLeased);
  EXPECT_EQ(rows[1].agent_name, "b");

  const auto stored = store_->results().record_result(a, {g1.job_id, g1.lease_id}, 1, ok_result(2.5)).value();
  ASSERT_EQ(stored.kind, RecordKind::kStored);
  rows = jobs();
  EXPECT_EQ(rows[0].status, JobStatus::kDone);
  EXPECT_EQ(rows[0].result_id, stored.result_id);
  EXPECT_EQ(rows[0].result_status, ResultStatus::kOk);
  EXPECT_EQ(rows[0].agent_name, "a") << "who produced the verdict";

  // b's lease expires: the job waits again, held by nobody, its attempt counted.
  clock_.advance_ms(options_.lease_ttl_ms);
  ASSERT_EQ(store_->leases().expire_leases().value(), 1);
  rows = jobs();
  EXPECT_EQ(rows[1].status, JobStatus::kQueued);
  EXPECT_EQ(rows[1].attempt, 1);
  EXPECT_FALSE(rows[1].agent_name.has_value());
  EXPECT_FALSE(rows[1].slot.has_value());
  EXPECT_EQ(rows[1].updated_at, clock_.now_ms());

  // b (its group's slot) runs it again, out of memory: batch 16 gets an inferred verdict.
  const auto g3 = lease(b);
  ASSERT_EQ(g3.job_id, rows[1].id);
  ASSERT_EQ(g3.attempt, 2);
  const auto oom = store_->results().record_result(b, {g3.job_id, g3.lease_id}, 2, oom_result()).value();
  ASSERT_EQ(oom.implied_oom, 1);
  rows = jobs();
  EXPECT_EQ(rows[1].status, JobStatus::kDone);
  EXPECT_EQ(rows[1].attempt, 2);
  EXPECT_EQ(rows[1].result_id, oom.result_id);
  EXPECT_EQ(rows[1].result_status, ResultStatus::kOom);
  EXPECT_EQ(rows[1].agent_name, "b");
  EXPECT_EQ(rows[2].status, JobStatus::kDone);
  EXPECT_EQ(rows[2].result_status, ResultStatus::kOomImplied);
  EXPECT_TRUE(rows[2].result_id.has_value());
  EXPECT_FALSE(rows[2].agent_name.has_value()) << "the coordinator inferred it";
}

TEST_F(StoreTest, ListJobsNamesTheLastHolderOfFailedAndCancelledJobs) {
  const auto a = enroll("a");
  const auto b = enroll("b");
  const auto failing = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  lease(a);
  clock_.advance_ms(options_.lease_ttl_ms);
  ASSERT_EQ(store_->leases().expire_leases().value(), 1);
  lease(b);  // the second and last attempt (max_attempts 2)
  clock_.advance_ms(options_.lease_ttl_ms);
  ASSERT_EQ(store_->leases().expire_leases().value(), 1);
  auto rows = store_->runs().list_jobs(failing, std::nullopt, 10).value().items;
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, JobStatus::kFailed);
  EXPECT_EQ(rows[0].attempt, 2);
  EXPECT_EQ(rows[0].agent_name, "b");
  EXPECT_FALSE(rows[0].result_id.has_value());

  const auto cancelled = submit({"torchvision/resnet18"}, {1, 4}, {Mode::kEager});
  const auto g = lease(a);
  ASSERT_TRUE(store_->runs().cancel_run(cancelled).ok());
  rows = store_->runs().list_jobs(cancelled, std::nullopt, 10).value().items;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, g.job_id);
  EXPECT_EQ(rows[0].status, JobStatus::kCancelled);
  EXPECT_EQ(rows[0].agent_name, "a") << "held the lease when the run was cancelled";
  EXPECT_EQ(rows[1].status, JobStatus::kCancelled);
  EXPECT_FALSE(rows[1].agent_name.has_value()) << "was still queued";
}

TEST_F(StoreTest, ListJobsPagesInIdOrderWithinItsRun) {
  const auto first = submit({"torchvision/resnet18"}, {1, 2, 4, 8, 16}, {Mode::kEager});
  const auto other = submit({"torchvision/resnet18"}, {1, 2}, {Mode::kEager});
  std::vector<std::int64_t> seen;
  std::optional<std::int64_t> cursor;
  int pages = 0;
  do {
    auto page = store_->runs().list_jobs(first, cursor, 2);
    ASSERT_TRUE(page.ok()) << page.error().message;
    EXPECT_LE(page->items.size(), 2u);
    for (const auto& row : page->items) seen.push_back(row.id);
    cursor = page->next_cursor;
    if (cursor) {
      EXPECT_EQ(*cursor, page->items.back().id);
    }
    ++pages;
  } while (cursor && pages < 10);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::int64_t>(seen.begin(), seen.end()).size(), 5u);

  const auto exact = store_->runs().list_jobs(first, std::nullopt, 5).value();
  EXPECT_EQ(exact.items.size(), 5u);
  EXPECT_FALSE(exact.next_cursor.has_value()) << "no empty last page";
  const auto past_end = store_->runs().list_jobs(first, seen.back(), 5).value();
  EXPECT_TRUE(past_end.items.empty());
  EXPECT_FALSE(past_end.next_cursor.has_value());
  EXPECT_EQ(store_->runs().list_jobs(other, std::nullopt, 10).value().items.size(), 2u);

  const auto missing = store_->runs().list_jobs(other + 1, std::nullopt, 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace benchfleet::store
