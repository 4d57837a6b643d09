// The records of the agent protocol (common/agent_protocol.h) and the timestamps they carry
// (common/time_format.h): every record survives encode + decode, the wire format is the one
// agents and the OpenAPI document know, answers ignore members they do not know while requests
// refuse them, and the coordinator's answer to a lease poll for a grant of a real store decodes
// with the agent's decoder to that very grant.
#include "common/agent_protocol.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/daemon/agent_codecs.h"
#include "common/catalog.h"
#include "common/clock.h"
#include "common/matrix.h"
#include "common/time_format.h"
#include "coordinator/api/common.h"
#include "coordinator/store/store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr TimestampMs kExpiry = 1'795'291'500'123;  // 2026-11-21T20:05:00.123Z

// `value` encoded and decoded again.
template <class T>
T round_trip(const T& value) {
  const json encoded = value;
  auto decoded = decode<T>(json::parse(encoded.dump()));
  EXPECT_TRUE(decoded.ok()) << decoded.error().describe() << " for " << encoded.dump();
  return decoded.ok() ? *decoded : T{};
}

LeasedJob full_leased_job() {
  LeasedJob job;
  job.job_id = 12;
  job.run_id = 3;
  job.attempt = 2;
  job.lease_id = "lease-abc";
  job.expires_at = kExpiry;
  job.spec = JobSpec{"torchvision/resnet18", 4, Mode::kReduceOverhead, "stable", "a100", Runtime::kPython, 1};
  job.measurement = MeasurementSpec{1, 3, 5, 0.5, 5.5, 0.05};
  job.memory_limit_mb = 2048;
  job.timeout_s = 600;
  return job;
}

// ---- time_format -------------------------------------------------------------------------------

TEST(TimeFormat, WritesRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(format_time(kExpiry), "2026-11-21T20:05:00.123Z");
  EXPECT_EQ(format_time(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time(1'709'164'800'007), "2024-02-29T00:00:00.007Z");
}

TEST(TimeFormat, ParsesWhatItWrites) {
  for (TimestampMs t : {TimestampMs{0}, TimestampMs{999}, kExpiry, TimestampMs{1'709'164'800'007},
                        TimestampMs{4'102'444'799'999}, TimestampMs{253'402'300'799'999}}) {
    EXPECT_EQ(parse_time(format_time(t)), t) << format_time(t);
  }
}

TEST(TimeFormat, RefusesAnythingElse) {
  for (const char* text : {"", "2026-11-21T20:05:00Z", "2026-11-21T20:05:00.123", "2026-11-21 20:05:00.123Z",
                           "2026-11-21T20:05:00.123+00:00", "2026-11-21T20:05:00.1234Z", "2026-13-21T20:05:00.123Z",
                           "2026-00-21T20:05:00.123Z", "2026-02-29T20:05:00.123Z", "2026-11-31T20:05:00.123Z",
                           "2026-11-21T24:00:00.000Z", "2026-11-21T20:60:00.000Z", "2026-11-21T20:05:60.000Z",
                           "2026-11-2xT20:05:00.123Z", "+026-11-21T20:05:00.123Z", "2026-11-21T20:05:00.-23Z"}) {
    EXPECT_FALSE(parse_time(text).has_value()) << text;
  }
}

// ---- round trips -------------------------------------------------------------------------------

TEST(AgentProtocol, EveryRecordSurvivesEncodeAndDecode) {
  const EnrollResponse enrolled{7, "bfa_7_c2VjcmV0", Intervals{2, 9, 0}};
  EXPECT_EQ(round_trip(enrolled), enrolled);

  LeasedJob job = full_leased_job();
  EXPECT_EQ(round_trip(job), job);
  job.memory_limit_mb.reset();
  EXPECT_EQ(round_trip(job), job);

  const LeaseResponse granted{full_leased_job(), false, Intervals{1, 3, 2}};
  EXPECT_EQ(round_trip(granted), granted);
  const LeaseResponse idle{std::nullopt, true, Intervals{}};
  EXPECT_EQ(round_trip(idle), idle);

  const HeartbeatResponse heartbeat{true,
                                    {{4, "x", LeaseState::kActive, kExpiry},
                                     {5, "y", LeaseState::kLost, std::nullopt},
                                     {6, "z", LeaseState::kCancelled, std::nullopt}}};
  EXPECT_EQ(round_trip(heartbeat), heartbeat);
  EXPECT_EQ(round_trip(HeartbeatResponse{}), HeartbeatResponse{});

  const LeaseRequest poll{"gpu0", 25, "0a1b2c3d:retry-1"};
  EXPECT_EQ(round_trip(poll), poll);
  const LeaseRequest bare{"gpu0", std::nullopt, std::nullopt};
  EXPECT_EQ(round_trip(bare), bare);
  EXPECT_EQ(json(bare), json({{"slot", "gpu0"}})) << "absent optionals are left out";

  const HeartbeatRequest beat{{{4, "x"}, {5, "y"}}, true};
  EXPECT_EQ(round_trip(beat), beat);
  EXPECT_EQ(round_trip(HeartbeatRequest{}), HeartbeatRequest{});
}

// What agents and the OpenAPI document (LeaseGrant, LeaseRenewal) know: the member names, null
// for no memory limit, the expiry as format_time writes it.
TEST(AgentProtocol, WireFormatOfALeaseIsTheDocumentedOne) {
  LeasedJob job = full_leased_job();
  job.memory_limit_mb.reset();
  EXPECT_EQ(json(job).dump(), json({{"id", 12},
                                    {"run_id", 3},
                                    {"attempt", 2},
                                    {"lease_id", "lease-abc"},
                                    {"lease_expires_at", "2026-11-21T20:05:00.123Z"},
                                    {"spec", job.spec},
                                    {"measurement", job.measurement},
                                    {"memory_limit_mb", nullptr},
                                    {"timeout_s", 600}})
                                  .dump());
  EXPECT_EQ(json(LeaseResponse{std::nullopt, true, Intervals{15, 60, 25}}), json({{"job", nullptr},
                                                                                  {"draining", true},
                                                                                  {"heartbeat_interval_s", 15},
                                                                                  {"lease_ttl_s", 60},
                                                                                  {"long_poll_timeout_s", 25}}));
  EXPECT_EQ(json(LeaseRenewal{4, "x", LeaseState::kLost, std::nullopt}),
            json({{"job_id", 4}, {"lease_id", "x"}, {"state", "lost"}, {"lease_expires_at", nullptr}}));
  EXPECT_EQ(json(EnrollResponse{7, "bfa_7_s", Intervals{15, 60, 25}}), json({{"agent_id", 7},
                                                                             {"agent_token", "bfa_7_s"},
                                                                             {"heartbeat_interval_s", 15},
                                                                             {"lease_ttl_s", 60},
                                                                             {"long_poll_timeout_s", 25}}));
}

TEST(AgentProtocol, AnswersIgnoreUnknownMembersAndRequestsRefuseThem) {
  json answer = LeaseResponse{full_leased_job(), false, Intervals{}};
  answer["added_later"] = 1;
  answer["job"]["model"] = {{"id", "torchvision/resnet18"}};
  auto decoded = decode<LeaseResponse>(answer, "lease answer");
  ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
  EXPECT_EQ(decoded->job, full_leased_job());

  json heartbeat = HeartbeatRequest{{{4, "x"}}, false};
  heartbeat["added_later"] = 1;
  auto refused = decode<HeartbeatRequest>(heartbeat);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().describe(), "added_later: is not a known field");
  heartbeat = HeartbeatRequest{{{4, "x"}}, false};
  heartbeat["leases"][0]["extra"] = true;
  EXPECT_EQ(decode<HeartbeatRequest>(heartbeat).error().describe(), "leases[0].extra: is not a known field");
  EXPECT_FALSE(decode<LeaseRequest>(json({{"slot", "gpu0"}, {"priority", 1}})).ok());
}

TEST(AgentProtocol, RequestsAreCheckedAsTheCoordinatorAlwaysDid) {
  const auto error_of = [](const auto& result) {
    return result.ok() ? std::string("<ok>") : result.error().describe();
  };
  EXPECT_EQ(error_of(decode<LeaseRequest>(json::object())), "slot: is required");
  EXPECT_EQ(error_of(decode<LeaseRequest>(json({{"slot", "gpu0"}, {"wait_s", -1}}))), "wait_s: must be >= 0");
  EXPECT_EQ(error_of(decode<LeaseRequest>(json({{"slot", "gpu0"}, {"wait_s", nullptr}}))), "<ok>");
  EXPECT_EQ(error_of(decode<LeaseRequest>(json({{"slot", "gpu0"}, {"request_id", "a b"}}))),
            "request_id: must be 1 to 64 characters of A-Z a-z 0-9 - _ . :");
  EXPECT_EQ(error_of(decode<LeaseRequest>(json({{"slot", "gpu0"}, {"request_id", std::string(65, 'a')}}))),
            "request_id: must be 1 to 64 characters of A-Z a-z 0-9 - _ . :");

  EXPECT_EQ(error_of(decode<HeartbeatRequest>(json::object())), "<ok>");
  EXPECT_EQ(error_of(decode<HeartbeatRequest>(json({{"leases", {{{"job_id", 0}, {"lease_id", "x"}}}}}))),
            "leases[0].job_id: must be > 0");
  EXPECT_EQ(error_of(decode<HeartbeatRequest>(json({{"leases", {{{"job_id", 1}, {"lease_id", ""}}}}}))),
            "leases[0].lease_id: must be 1 to 64 characters");
  EXPECT_EQ(error_of(decode<HeartbeatRequest>(json({{"leases", {{{"job_id", 1}}}}}))),
            "leases[0].lease_id: is required");
  json many = {{"leases", json::array()}};
  for (int i = 1; i <= 65; ++i) many["leases"].push_back({{"job_id", i}, {"lease_id", "x"}});
  EXPECT_EQ(error_of(decode<HeartbeatRequest>(many)), "leases: must list at most 64 leases");
  EXPECT_EQ(error_of(decode<HeartbeatRequest>(json({{"draining", "yes"}}))), "draining: must be a boolean, got string");
}

// ---- the job reports: progress, release, result --------------------------------------------------

// What an enrolling agent says of itself is read by operators (CLI, dashboard): its text
// follows the one display rule, and the first offending field is named.
TEST(AgentProtocol, AnEnrollingAgentsTextIsDisplayable) {
  AgentDescriptor d;
  d.name = "gpu-node-07";
  d.hostname = "gpu-node-07.example";
  d.version = "0.1.0";
  SlotDescriptor slot;
  slot.id = "gpu0";
  slot.gpu_class = "h100";
  slot.gpu = GpuInfo{0, "GPU-1234", "NVIDIA H100 80GB HBM3", 81559, "9.0", "580.65"};
  d.slots = {slot};
  d.torch_builds = {TorchBuildDescriptor{"stable", "2.6.0+debian", {}}};
  EXPECT_FALSE(check_descriptor_text(d));

  const auto field_of = [](const AgentDescriptor& x) {
    auto err = check_descriptor_text(x);
    return err ? err->field : "(accepted)";
  };
  AgentDescriptor bad = d;
  bad.name = "node\x1b]0;pwned\a";
  EXPECT_EQ(field_of(bad), "name");
  bad = d;
  bad.hostname = "host\x1b[2J";
  EXPECT_EQ(field_of(bad), "hostname");
  bad = d;
  bad.version = "0.1\xe2\x80\xae";
  EXPECT_EQ(field_of(bad), "version");
  bad = d;
  bad.torch_builds[0].version = "2.6\a";
  EXPECT_EQ(field_of(bad), "torch_builds[0].version");
  bad = d;
  bad.slots[0].gpu->driver = "580\x1b[41m";
  EXPECT_EQ(field_of(bad), "slots[0].gpu.driver");
}

TEST(AgentProtocol, JobReportsSurviveEncodeAndDecode) {
  const ProgressRequest progress{"lease-abc", "measure", "120 of 200", 120};
  EXPECT_EQ(round_trip(progress), progress);
  const ProgressRequest bare{"lease-abc", "", "", std::nullopt};
  EXPECT_EQ(round_trip(bare), bare);
  EXPECT_EQ(json(bare), json({{"lease_id", "lease-abc"}, {"phase", ""}})) << "absent optionals are left out";

  const ReleaseRequest release{"lease-abc"};
  EXPECT_EQ(round_trip(release), release);
  EXPECT_EQ(json(release), json({{"lease_id", "lease-abc"}}));

  const ResultRequest ok{"lease-abc", 2, store::testing::ok_result(9.5)};
  EXPECT_EQ(round_trip(ok), ok);
  const ResultRequest oom{"lease-abc", 1, store::testing::oom_result()};
  EXPECT_EQ(round_trip(oom), oom);
  EXPECT_EQ(json(ok), json({{"lease_id", "lease-abc"}, {"attempt", 2}, {"result", ok.result}}));
}

// The members and bounds of ProgressRequest, ReleaseRequest and ResultRequest: those of
// openapi.json and coordinator/api/agents_handlers.cpp's job_progress, job_release and job_result,
// and a lease id of 1 to 64 characters in each, as in every request that names a lease.
TEST(AgentProtocol, JobReportsAreCheckedAsDocumented) {
  const auto error_of = [](const auto& result) {
    return result.ok() ? std::string("<ok>") : result.error().describe();
  };
  EXPECT_EQ(error_of(decode<ProgressRequest>(json::object())), "lease_id: is required");
  EXPECT_EQ(error_of(decode<ProgressRequest>(json({{"lease_id", ""}}))), "lease_id: must be 1 to 64 characters");
  EXPECT_EQ(error_of(decode<ProgressRequest>(json({{"lease_id", "x"}, {"iterations", nullptr}}))), "<ok>");
  EXPECT_EQ(error_of(decode<ProgressRequest>(json({{"lease_id", "x"}, {"message", std::string(4097, 'm')}}))),
            "message: must be at most 4096 characters");
  EXPECT_EQ(error_of(decode<ProgressRequest>(json({{"lease_id", "x"}, {"phase", 3}}))),
            "phase: must be a string, got number");
  EXPECT_EQ(error_of(decode<ProgressRequest>(json({{"lease_id", "x"}, {"percent", 3}}))),
            "percent: is not a known field");

  EXPECT_EQ(error_of(decode<ReleaseRequest>(json::object())), "lease_id: is required");
  EXPECT_EQ(error_of(decode<ReleaseRequest>(json({{"lease_id", ""}}))), "lease_id: must be 1 to 64 characters");
  EXPECT_EQ(error_of(decode<ReleaseRequest>(json({{"lease_id", std::string(65, 'l')}}))),
            "lease_id: must be 1 to 64 characters");
  EXPECT_EQ(error_of(decode<ReleaseRequest>(json({{"lease_id", "x"}, {"why", "drain"}}))), "why: is not a known field");

  const json result = store::testing::ok_result(9.5);
  EXPECT_EQ(error_of(decode<ResultRequest>(json({{"lease_id", "x"}, {"result", result}}))), "attempt: is required");
  EXPECT_EQ(error_of(decode<ResultRequest>(json({{"lease_id", "x"}, {"attempt", 0}, {"result", result}}))),
            "attempt: must be >= 1");
  EXPECT_EQ(error_of(decode<ResultRequest>(json({{"lease_id", "x"}, {"attempt", 1}, {"result", {{"status", "fine"}}}})))
                .rfind("result.status", 0),
            0u);
  EXPECT_EQ(error_of(decode<ResultRequest>(json({{"lease_id", "x"}, {"attempt", 1}}))), "result: is required");
  EXPECT_EQ(
      error_of(decode<ResultRequest>(json({{"lease_id", std::string(65, 'l')}, {"attempt", 1}, {"result", result}}))),
      "lease_id: must be 1 to 64 characters");
}

// ---- the coordinator's answer, read by the agent -------------------------------------------------

class LeaseAnswerOfARealGrant : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = (dir_ / "bf.db").string();
    auto s = store::Store::open(options, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok()) << catalog.error().message;
    catalog_ = std::make_unique<Catalog>(std::move(*catalog));
  }
  void TearDown() override { store_.reset(); }

  testing::TempDir tmp_{"bf-agent-protocol"};
  const std::filesystem::path dir_ = tmp_.path();
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(LeaseAnswerOfARealGrant, DecodesWithTheAgentsDecoderToTheGrant) {
  auto agent_id = store_->agents().enroll_agent(store::testing::one_slot_agent("host-1", "a100", {Mode::kEager}),
                                                {"salt", "hash"}, store::EnrolmentClaim::anyone());
  ASSERT_TRUE(agent_id.ok()) << agent_id.error().message;

  MatrixSpec spec = store::testing::stable_a100_matrix("protocol", {"torchvision/resnet18"}, {4}, {Mode::kEager});
  spec.memory_limit_mb = 4096;
  spec.timeout_s = 900;
  spec.measurement.max_duration_s = 7.5;
  auto jobs = expand_matrix(spec, *catalog_, {});
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_TRUE(store_->runs().create_run(spec, *jobs).ok());

  auto answer = store_->leases().lease(*agent_id, "gpu0");
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  ASSERT_TRUE(answer->grant);
  const store::LeaseGrant& grant = *answer->grant;
  ASSERT_EQ(grant.memory_limit_mb, 4096);

  const Intervals intervals{2, 9, 5};
  const json sent = api::lease_response_json(*answer, intervals, *catalog_);
  auto read = agent::decode_lease_answer(sent.dump());
  ASSERT_TRUE(read.ok()) << read.error().describe() << "\n" << sent.dump(2);
  ASSERT_TRUE(read->job);
  // The grant, plus the job's model definition the agent builds the model from.
  LeasedJob expected = grant;
  expected.model_definition = catalog_->find("torchvision/resnet18")->definition;
  expected.model_digest = catalog_->find("torchvision/resnet18")->digest;
  EXPECT_EQ(*read->job, expected);
  EXPECT_EQ(read->job->model_definition->value("architecture", ""), "resnet18");
  EXPECT_EQ(read->job->timeout_s, 900);
  EXPECT_EQ(read->job->measurement.max_duration_s, 7.5);
  EXPECT_EQ(read->job->expires_at, grant.expires_at);
  EXPECT_FALSE(read->draining);
  EXPECT_EQ(read->intervals, intervals);

  // The catalog entry rides along for other readers; agents do not read it.
  const CatalogModel* model = catalog_->find("torchvision/resnet18");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(sent["job"]["model"], api::model_json(*model));

  // No work: job null, and the answer still reads as one.
  const json none = api::lease_response_json(store::LeaseAnswer{std::nullopt, true}, intervals, *catalog_);
  auto idle = agent::decode_lease_answer(none.dump());
  ASSERT_TRUE(idle.ok()) << idle.error().describe();
  EXPECT_FALSE(idle->job);
  EXPECT_TRUE(idle->draining);
}

}  // namespace
}  // namespace benchfleet
