// The agent's decoders of other programs' answers (agent/daemon/agent_codecs.h): a valid
// document decodes to the right values, and every malformed one (not JSON, truncated, empty,
// too deep, not an object, a wrong type, a missing member, a number out of range, an over-long
// string) is an Error naming the field, never an exception.
#include "agent/daemon/agent_codecs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/codecs.h"
#include "common/time_format.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

using nlohmann::json;

// `r` failed with an invalid-argument Error whose "field: message" holds `expected`.
template <class R>
void expect_error(const R& r, const std::string& expected, const std::string& input) {
  ASSERT_FALSE(r.ok()) << "accepted: " << input.substr(0, 300);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << r.error().describe();
  EXPECT_NE(r.error().describe().find(expected), std::string::npos)
      << "error \"" << r.error().describe() << "\" does not say \"" << expected << "\" for " << input.substr(0, 300);
}

// `base` with `path` (members, outermost first) set to `value`, or removed when `value` is
// discarded.
json with(json base, const std::vector<std::string>& path, const json& value) {
  json* at = &base;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
  if (value.is_discarded()) {
    at->erase(path.back());
  } else {
    (*at)[path.back()] = value;
  }
  return base;
}
const json kRemove = json::value_t::discarded;

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// What every decoder must refuse as a whole document: {text, what the error says after the
// decoder's own name}.
const std::vector<std::pair<std::string, std::string>> kNotAnObject = {
    {"", "malformed JSON"},
    {"{\"agent_id\": 1, \"job\": {\"id\"", "malformed JSON"},
    {"<html><body><h1>502 Bad Gateway</h1></body></html>", "malformed JSON"},
    {"{\"id\": NaN}", "malformed JSON"},
    {"{\"id\": Infinity}", "malformed JSON"},
    {"{\"id\": 1e400}", "malformed JSON"},
    {nested(100), "JSON nesting is deeper than 32 levels"},
    {"{\"x\": " + nested(40) + "}", "JSON nesting is deeper than 32 levels"},
    {"[1, 2]", "must be a JSON object, got array"},
    {"null", "must be a JSON object, got null"},
    {"\"ok\"", "must be a JSON object, got string"},
    {"7", "must be a JSON object, got number"},
};

// ---- enrolment ---------------------------------------------------------------------------------

const json kEnrolment = {{"agent_id", 7},    {"agent_token", "bfa_7_c2VjcmV0"}, {"heartbeat_interval_s", 2},
                         {"lease_ttl_s", 9}, {"long_poll_timeout_s", 0},        {"added_by_a_newer_coordinator", 1}};

TEST(AgentCodecs, EnrolmentAnswerDecodes) {
  auto e = decode_enrollment_answer(kEnrolment.dump());
  ASSERT_TRUE(e.ok()) << e.error().describe();
  EXPECT_EQ(e->agent_id, 7);
  EXPECT_EQ(e->agent_token, "bfa_7_c2VjcmV0");
  EXPECT_EQ(e->intervals.heartbeat_interval_s, 2);
  EXPECT_EQ(e->intervals.lease_ttl_s, 9);
  EXPECT_EQ(e->intervals.long_poll_timeout_s, 0);

  // The intervals are optional: the defaults stand.
  auto bare = decode_enrollment_answer(R"({"agent_id": 1, "agent_token": "t"})");
  ASSERT_TRUE(bare.ok()) << bare.error().describe();
  EXPECT_EQ(bare->intervals.heartbeat_interval_s, Intervals{}.heartbeat_interval_s);
  EXPECT_EQ(bare->intervals.lease_ttl_s, Intervals{}.lease_ttl_s);
}

TEST(AgentCodecs, MalformedEnrolmentAnswersNameTheField) {
  const std::vector<std::tuple<std::vector<std::string>, json, std::string>> cases = {
      {{"agent_id"}, kRemove, "enrolment answer.agent_id: is required"},
      {{"agent_id"}, "7", "enrolment answer.agent_id: must be an integer, got string"},
      {{"agent_id"}, 7.5, "enrolment answer.agent_id: must be an integer, got number"},
      {{"agent_id"}, 7.0, "enrolment answer.agent_id: must be an integer, got number"},
      {{"agent_id"}, -7, "enrolment answer.agent_id: must be > 0"},
      {{"agent_id"}, 0, "enrolment answer.agent_id: must be > 0"},
      {{"agent_id"}, 18446744073709551615ULL, "enrolment answer.agent_id: is out of range"},
      {{"agent_id"}, nullptr, "enrolment answer.agent_id: must be an integer, got null"},
      {{"agent_token"}, kRemove, "enrolment answer.agent_token: is required"},
      {{"agent_token"}, 5, "enrolment answer.agent_token: must be a string, got number"},
      {{"agent_token"}, "", "enrolment answer.agent_token: must be 1 to 1024 visible ASCII characters"},
      // The token goes into a header: no line break may end it and start another.
      {{"agent_token"}, "bfa_7_x\r\nX-Injected: 1", "enrolment answer.agent_token: must be 1 to 1024 visible"},
      {{"agent_token"}, "bfa 7", "enrolment answer.agent_token: must be 1 to 1024 visible"},
      {{"agent_token"}, std::string(2000, 'x'), "enrolment answer.agent_token: must be 1 to 1024 visible"},
      {{"agent_token"}, std::string(70000, 'x'), "enrolment answer.agent_token: is longer than 65536 bytes"},
      {{"heartbeat_interval_s"}, 0, "enrolment answer.heartbeat_interval_s: must be between 1 and 3600"},
      {{"heartbeat_interval_s"}, 3601, "enrolment answer.heartbeat_interval_s: must be between 1 and 3600"},
      {{"heartbeat_interval_s"}, 2147483648LL, "enrolment answer.heartbeat_interval_s: is out of range"},
      {{"heartbeat_interval_s"}, true, "enrolment answer.heartbeat_interval_s: must be an integer, got boolean"},
      {{"lease_ttl_s"}, "60", "enrolment answer.lease_ttl_s: must be an integer, got string"},
      {{"lease_ttl_s"}, -1, "enrolment answer.lease_ttl_s: must be between 1 and 3600"},
      {{"long_poll_timeout_s"}, 301, "enrolment answer.long_poll_timeout_s: must be between 0 and 300"},
      {{"long_poll_timeout_s"}, 1.5, "enrolment answer.long_poll_timeout_s: must be an integer"},
  };
  for (const auto& [path, value, expected] : cases) {
    const std::string body = with(kEnrolment, path, value).dump();
    Result<EnrollResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_enrollment_answer(body));
    expect_error(r, expected, body);
  }
  // Integers beyond 64 bits are floats to the parser: still "must be an integer".
  expect_error(decode_enrollment_answer(R"({"agent_id": 99999999999999999999999, "agent_token": "t"})"),
               "enrolment answer.agent_id: must be an integer", "huge agent_id");
  for (const auto& [text, expected] : kNotAnObject) {
    Result<EnrollResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_enrollment_answer(text));
    expect_error(r, "enrolment answer: " + expected, text);
  }
}

// ---- lease -------------------------------------------------------------------------------------

const json kSpec = {{"model", "torchvision/mobilenet_v3_small"},
                    {"batch", 4},
                    {"mode", "torchscript"},
                    {"torch_build", "stable"},
                    {"gpu", "cpu"},
                    {"runtime", "libtorch"},
                    {"repetition", 1}};
const json kMeasurement = {{"warmup", 1},         {"min_iterations", 3},   {"max_iterations", 5},
                           {"min_duration_s", 0}, {"max_duration_s", 5.5}, {"target_ci_rel_width", 0.05}};
const json kLease = {{"heartbeat_interval_s", 1},
                     {"lease_ttl_s", 3},
                     {"long_poll_timeout_s", 2},
                     {"draining", false},
                     {"job",
                      {{"id", 12},
                       {"run_id", 3},
                       {"attempt", 2},
                       {"lease_id", "lease-abc"},
                       {"lease_expires_at", "2026-11-24T22:00:00.000Z"},
                       {"spec", kSpec},
                       {"measurement", kMeasurement},
                       {"memory_limit_mb", 2048},
                       {"timeout_s", 600},
                       {"model", {{"id", "torchvision/mobilenet_v3_small"}}}}}};

TEST(AgentCodecs, LeaseAnswerDecodes) {
  auto a = decode_lease_answer(kLease.dump());
  ASSERT_TRUE(a.ok()) << a.error().describe();
  ASSERT_TRUE(a->job);
  const LeasedJob& job = *a->job;
  EXPECT_EQ(job.job_id, 12);
  EXPECT_EQ(job.run_id, 3);
  EXPECT_EQ(job.attempt, 2);
  EXPECT_EQ(job.lease_id, "lease-abc");
  EXPECT_EQ(job.expires_at, parse_time("2026-11-24T22:00:00.000Z"));
  EXPECT_EQ(job.spec, decode<JobSpec>(kSpec).value());
  EXPECT_EQ(job.spec.mode, Mode::kTorchscript);
  EXPECT_EQ(job.spec.batch, 4);
  EXPECT_EQ(job.measurement.max_duration_s, 5.5);
  EXPECT_EQ(job.memory_limit_mb, 2048);
  EXPECT_EQ(job.timeout_s, 600);
  EXPECT_FALSE(a->draining);
  EXPECT_EQ(a->intervals.lease_ttl_s, 3);

  // No work: job null. A null memory limit is no cap; unknown members are ignored.
  auto idle = decode_lease_answer(with(with(kLease, {"job"}, nullptr), {"draining"}, true).dump());
  ASSERT_TRUE(idle.ok()) << idle.error().describe();
  EXPECT_FALSE(idle->job);
  EXPECT_TRUE(idle->draining);
  auto uncapped = decode_lease_answer(with(with(kLease, {"job", "memory_limit_mb"}, nullptr), {"new"}, 1).dump());
  ASSERT_TRUE(uncapped.ok()) << uncapped.error().describe();
  EXPECT_FALSE(uncapped->job->memory_limit_mb);
  EXPECT_TRUE(decode_lease_answer(with(kLease, {"job", "new"}, json::object()).dump()).ok());
}

TEST(AgentCodecs, MalformedLeaseAnswersNameTheField) {
  const std::vector<std::tuple<std::vector<std::string>, json, std::string>> cases = {
      // An object that is not a lease answer is not "no work".
      {{"job"}, kRemove, "lease answer.job: is required"},
      {{"draining"}, kRemove, "lease answer.draining: is required"},
      {{"draining"}, "no", "lease answer.draining: must be a boolean, got string"},
      {{"job"}, 5, "lease answer.job: must be an object, got number"},
      {{"job"}, json::array(), "lease answer.job: must be an object, got array"},
      {{"job"}, "12", "lease answer.job: must be an object, got string"},
      {{"job", "id"}, kRemove, "lease answer.job.id: is required"},
      {{"job", "id"}, "12", "lease answer.job.id: must be an integer, got string"},
      {{"job", "id"}, -12, "lease answer.job.id: must be > 0"},
      {{"job", "id"}, 0, "lease answer.job.id: must be > 0"},
      {{"job", "id"}, 12.0, "lease answer.job.id: must be an integer, got number"},
      {{"job", "id"}, 9223372036854775808ULL, "lease answer.job.id: is out of range"},
      {{"job", "run_id"}, -3, "lease answer.job.run_id: must be > 0"},
      {{"job", "run_id"}, kRemove, "lease answer.job.run_id: is required"},
      {{"job", "attempt"}, 0, "lease answer.job.attempt: must be >= 1"},
      {{"job", "attempt"}, -1, "lease answer.job.attempt: must be >= 1"},
      {{"job", "attempt"}, 2147483648LL, "lease answer.job.attempt: is out of range"},
      {{"job", "attempt"}, 1.5, "lease answer.job.attempt: must be an integer, got number"},
      {{"job", "lease_id"}, kRemove, "lease answer.job.lease_id: is required"},
      {{"job", "lease_id"}, 5, "lease answer.job.lease_id: must be a string, got number"},
      {{"job", "lease_id"}, "", "lease answer.job.lease_id: must be 1 to 256 bytes"},
      {{"job", "lease_id"}, std::string(257, 'l'), "lease answer.job.lease_id: must be 1 to 256 bytes"},
      {{"job", "lease_id"}, std::string(1 << 20, 'l'), "lease answer.job.lease_id: is longer than 65536 bytes"},
      {{"job", "lease_expires_at"}, kRemove, "lease answer.job.lease_expires_at: is required"},
      {{"job", "lease_expires_at"}, 1795291500123, "lease answer.job.lease_expires_at: must be a string, got number"},
      {{"job", "lease_expires_at"}, "tomorrow", "lease answer.job.lease_expires_at: must be an RFC 3339 UTC time"},
      {{"job", "lease_expires_at"}, "2026-02-30T22:00:00.000Z", "lease answer.job.lease_expires_at: must be an RFC"},
      {{"job", "spec"}, kRemove, "lease answer.job.spec: is required"},
      {{"job", "spec"}, "resnet", "lease answer.job.spec: must be an object, got string"},
      {{"job", "spec", "batch"}, "4", "lease answer.job.spec.batch: must be an integer, got string"},
      {{"job", "spec", "batch"}, -4, "lease answer.job.spec.batch: must be > 0"},
      {{"job", "spec", "mode"}, "warp-speed", "lease answer.job.spec.mode"},
      {{"job", "spec", "model"}, std::string(70000, 'm'), "lease answer.job.spec.model: is longer than 65536 bytes"},
      // The job's spec and measurement are the coordinator's shared types: strict.
      {{"job", "spec", "extra"}, 1, "lease answer.job.spec.extra: is not a known field"},
      {{"job", "measurement"}, kRemove, "lease answer.job.measurement: is required"},
      {{"job", "measurement", "warmup"}, -1, "lease answer.job.measurement.warmup: must be between 0 and 100000"},
      {{"job", "measurement", "max_duration_s"}, "5", "lease answer.job.measurement.max_duration_s: must be a number"},
      {{"job", "memory_limit_mb"}, kRemove, "lease answer.job.memory_limit_mb: is required"},
      {{"job", "memory_limit_mb"}, 0, "lease answer.job.memory_limit_mb: must be > 0"},
      {{"job", "memory_limit_mb"}, -2048, "lease answer.job.memory_limit_mb: must be > 0"},
      {{"job", "memory_limit_mb"}, "2048", "lease answer.job.memory_limit_mb: must be an integer, got string"},
      {{"job", "timeout_s"}, kRemove, "lease answer.job.timeout_s: is required"},
      {{"job", "timeout_s"}, 0, "lease answer.job.timeout_s: must be between 1 and 604800"},
      {{"job", "timeout_s"}, 604801, "lease answer.job.timeout_s: must be between 1 and 604800"},
      {{"job", "timeout_s"}, 1e9, "lease answer.job.timeout_s: must be an integer, got number"},
      {{"lease_ttl_s"}, 0, "lease answer.lease_ttl_s: must be between 1 and 3600"},
      {{"heartbeat_interval_s"}, "1", "lease answer.heartbeat_interval_s: must be an integer, got string"},
  };
  for (const auto& [path, value, expected] : cases) {
    const std::string body = with(kLease, path, value).dump();
    Result<LeaseResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_lease_answer(body));
    expect_error(r, expected, body);
  }
  // A problem document sent with 200 (a confused proxy) is not "no work".
  expect_error(decode_lease_answer(R"({"type": "about:blank", "title": "Bad Gateway", "status": 502})"),
               "lease answer.job: is required", "problem+json");
  // The answer's own members are read before its job (a proxy that mangles every scalar).
  expect_error(decode_lease_answer(with(with(kLease, {"draining"}, "no"), {"job", "id"}, "12").dump()),
               "lease answer.draining: must be a boolean, got string", "draining and job.id wrong");
  expect_error(decode_lease_answer(with(kLease, {"job", "spec"}, json::parse("{\"a\":" + nested(40) + "}")).dump()),
               "lease answer: JSON nesting is deeper than 32 levels", "deep spec");
  for (const auto& [text, expected] : kNotAnObject) {
    Result<LeaseResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_lease_answer(text));
    expect_error(r, "lease answer: " + expected, text);
  }
}

TEST(AgentCodecs, EveryTruncationOfALeaseAnswerIsAnError) {
  const std::string whole = kLease.dump();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    Result<LeaseResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_lease_answer(std::string_view(whole).substr(0, n)));
    expect_error(r, "lease answer: malformed JSON", whole.substr(0, n));
  }
}

// ---- heartbeat and 409 -------------------------------------------------------------------------

json heartbeat_with(const std::vector<json>& states, json drain = false) {
  json leases = json::array();
  for (const auto& s : states) {
    leases.push_back({{"job_id", 4}, {"lease_id", "x"}, {"state", s}, {"lease_expires_at", nullptr}});
  }
  return {{"heartbeat_interval_s", 1}, {"drain", drain}, {"leases", leases}};
}

TEST(AgentCodecs, HeartbeatAnswerDecodes) {
  auto a = decode_heartbeat_answer(heartbeat_with({"active", "cancelled", "lost"}, true).dump(), 3);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  ASSERT_EQ(a->leases.size(), 3u);
  EXPECT_EQ(a->leases[0].state, LeaseState::kActive);
  EXPECT_EQ(a->leases[1].state, LeaseState::kCancelled);
  EXPECT_EQ(a->leases[2].state, LeaseState::kLost);
  EXPECT_EQ(a->leases[0].job_id, 4);
  EXPECT_EQ(a->leases[0].lease_id, "x");
  EXPECT_FALSE(a->leases[0].expires_at);
  EXPECT_TRUE(a->drain);
  auto none = decode_heartbeat_answer(heartbeat_with({}).dump(), 0);
  ASSERT_TRUE(none.ok()) << none.error().describe();
  EXPECT_TRUE(none->leases.empty());
  EXPECT_FALSE(none->drain);
}

TEST(AgentCodecs, MalformedHeartbeatAnswersNameTheField) {
  const json one = heartbeat_with({"active"});
  const std::vector<std::tuple<json, std::size_t, std::string>> cases = {
      {with(one, {"leases"}, kRemove), 1, "heartbeat answer.leases: is required"},
      {with(heartbeat_with({}), {"leases"}, kRemove), 0, "heartbeat answer.leases: is required"},
      {with(one, {"drain"}, kRemove), 1, "heartbeat answer.drain: is required"},
      {with(one, {"drain"}, "true"), 1, "heartbeat answer.drain: must be a boolean, got string"},
      {with(one, {"leases"}, json::object()), 1, "heartbeat answer.leases: must be an array"},
      {with(one, {"leases"}, json::array({5})), 1, "heartbeat answer.leases[0]: must be an object, got number"},
      {one, 2, "heartbeat answer.leases: must list the 2 lease(s) sent"},
      {one, 0, "heartbeat answer.leases: must list the 0 lease(s) sent"},
      {heartbeat_with({"active", 1}), 2, "heartbeat answer.leases[1].state: must be a string, got number"},
      // An unknown state must not stop a job as if its lease were lost.
      {heartbeat_with({"paused"}), 1, "heartbeat answer.leases[0].state: must be active, lost or cancelled"},
      {with(one, {"leases"}, json::array({json::object()})), 1, "heartbeat answer.leases[0].state: is required"},
      {with(one, {"leases"}, json::array({{{"state", "active"}, {"job_id", 0}, {"lease_id", "x"}}})), 1,
       "heartbeat answer.leases[0].job_id: must be > 0"},
      {with(one, {"leases"}, json::array({{{"state", "active"}, {"job_id", 4}}})), 1,
       "heartbeat answer.leases[0].lease_id: is required"},
      {with(one, {"leases"},
            json::array({{{"state", "active"}, {"job_id", 4}, {"lease_id", "x"}, {"lease_expires_at", "soon"}}})),
       1, "heartbeat answer.leases[0].lease_expires_at: must be an RFC 3339 UTC time"},
  };
  for (const auto& [body, sent, expected] : cases) {
    Result<HeartbeatResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_heartbeat_answer(body.dump(), sent));
    expect_error(r, expected, body.dump());
  }
  // The intervals a heartbeat answer repeats are not read (enrolment and leases carry them).
  EXPECT_TRUE(decode_heartbeat_answer(with(one, {"heartbeat_interval_s"}, "soon").dump(), 1).ok());
  expect_error(decode_heartbeat_answer(R"({"type": "about:blank", "status": 500})", 0),
               "heartbeat answer.leases: is required", "problem+json");
  expect_error(decode_heartbeat_answer(with(heartbeat_with({1}), {"drain"}, "true").dump(), 1),
               "heartbeat answer.drain: must be a boolean, got string", "drain and leases[0].state wrong");
  for (const auto& [text, expected] : kNotAnObject) {
    Result<HeartbeatResponse> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_heartbeat_answer(text, 0));
    expect_error(r, "heartbeat answer: " + expected, text);
  }
}

TEST(AgentCodecs, AConflictIsCancelledOnlyWhenItsProblemSaysSo) {
  EXPECT_EQ(decode_conflict(R"({"type": "about:blank", "status": 409, "reason": "cancelled"})"),
            LeaseState::kCancelled);
  EXPECT_EQ(decode_conflict(R"({"status": 409, "reason": "lost"})"), LeaseState::kLost);
  EXPECT_EQ(decode_conflict(R"({"status": 409, "reason": ["cancelled"]})"), LeaseState::kLost);
  EXPECT_EQ(decode_conflict(R"({"status": 409})"), LeaseState::kLost);
  for (const auto& [text, expected] : kNotAnObject) {
    LeaseState r = LeaseState::kActive;
    EXPECT_NO_THROW(r = decode_conflict(text));
    EXPECT_EQ(r, LeaseState::kLost) << text.substr(0, 100);
  }
}

// ---- exporter, capabilities, worker result -----------------------------------------------------

const json kExport = {{"status", "ok"},
                      {"artifact", "model-frozen.pt"},
                      {"inputs", {{{"name", "pixel_values"}, {"shape", {4, 3, 224, 224}}}}},
                      {"export_s", 2.5},
                      {"inductor_cache", "/cache/inductor"},
                      {"torch_git", "abc"}};

TEST(AgentCodecs, ExporterAnswerDecodes) {
  auto a = decode_exporter_answer(kExport.dump());
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->status, "ok");
  EXPECT_EQ(a->artifact, "model-frozen.pt");
  ASSERT_TRUE(a->inputs);
  ASSERT_EQ(a->inputs->size(), 1u);
  EXPECT_EQ((*a->inputs)[0].shape, (std::vector<std::int64_t>{4, 3, 224, 224}));
  EXPECT_EQ((*a->inputs)[0].dtype, "float32");
  EXPECT_EQ(a->export_s, 2.5);
  EXPECT_EQ(a->inductor_cache, "/cache/inductor");
  EXPECT_EQ(a->metadata, kExport) << "the whole answer is kept for the fingerprint";
  EXPECT_EQ(decode_exporter_answer(R"({"status": "ok"})").value().artifact, "model.pt");

  // A failure's message is cut to a readable length; the members of a success are not read.
  auto failed = decode_exporter_answer(
      json{{"status", "error"}, {"message", std::string(5000, 'e')}, {"artifact", 5}, {"export_s", 1.5}}.dump());
  ASSERT_TRUE(failed.ok()) << failed.error().describe();
  EXPECT_EQ(failed->message.size(), 4096u);
  EXPECT_EQ(decode_exporter_answer(R"({"status": "unsupported", "message": 7})").value().message, "");
}

TEST(AgentCodecs, MalformedExporterAnswersNameTheField) {
  const std::vector<std::tuple<std::vector<std::string>, json, std::string>> cases = {
      {{"status"}, kRemove, "exporter answer.status: is required"},
      {{"status"}, 5, "exporter answer.status: must be a string, got number"},
      {{"status"}, "maybe", "exporter answer.status: must be ok, error or unsupported"},
      {{"artifact"}, "../../escape", "exporter answer.artifact: must be a file name inside the export folder"},
      {{"artifact"}, "sub/model.pt", "exporter answer.artifact: must be a file name inside the export folder"},
      {{"artifact"}, "..", "exporter answer.artifact: must be a file name inside the export folder"},
      {{"artifact"}, "", "exporter answer.artifact: must be a file name inside the export folder"},
      {{"artifact"}, 5, "exporter answer.artifact: must be a string, got number"},
      {{"export_s"}, "slow", "exporter answer.export_s: must be a number, got string"},
      {{"export_s"}, -1, "exporter answer.export_s: must be >= 0"},
      {{"inputs"}, "pixels", "exporter answer.inputs: must be an array"},
      {{"inputs"}, json::array({{{"name", "x"}, {"shape", {0}}}}), "exporter answer.inputs[0].shape[0]: must be > 0"},
      {{"inputs"},
       json::array({{{"name", "x"}, {"shape", {1}}, {"dtype", "complex"}}}),
       "exporter answer.inputs[0].dtype"},
      {{"inductor_cache"}, 1, "exporter answer.inductor_cache: must be a string, got number"},
  };
  for (const auto& [path, value, expected] : cases) {
    const std::string body = with(kExport, path, value).dump();
    Result<ExporterAnswer> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_exporter_answer(body));
    expect_error(r, expected, body);
  }
  expect_error(decode_exporter_metadata(json::array()), "exporter answer: must be a JSON object, got array", "[]");
  for (const auto& [text, expected] : kNotAnObject) {
    Result<ExporterAnswer> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_exporter_answer(text));
    expect_error(r, "exporter answer: " + expected, text);
  }
}

TEST(AgentCodecs, CapabilitiesDecodeAndMalformedOnesNameTheField) {
  const json caps = {{"torch_version", "2.6.0"},
                     {"torch_git", "1eba9b3"},
                     {"library_dirs", {"/opt/nvidia/lib"}},
                     {"modes", {{"cpu", {"eager", "torchscript"}}, {"cuda", {"eager", "reduce-overhead"}}}},
                     {"python", "3.13"}};
  auto c = decode_capabilities(caps.dump());
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->torch_version, "2.6.0");
  EXPECT_EQ(c->torch_git, "1eba9b3");
  EXPECT_EQ(c->library_dirs, (std::vector<std::string>{"/opt/nvidia/lib"}));
  EXPECT_EQ(c->modes.at("cpu"), (std::vector<Mode>{Mode::kEager, Mode::kTorchscript}));
  EXPECT_EQ(c->modes.at("cuda"), (std::vector<Mode>{Mode::kEager, Mode::kReduceOverhead}));
  auto empty = decode_capabilities("{}");  // every member is optional
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->modes.empty());

  const std::vector<std::tuple<std::vector<std::string>, json, std::string>> cases = {
      {{"torch_version"}, 5, "--capabilities answer.torch_version: must be a string, got number"},
      {{"torch_git"}, json::array(), "--capabilities answer.torch_git: must be a string, got array"},
      {{"library_dirs"}, "/lib", "--capabilities answer.library_dirs: must be an array"},
      {{"library_dirs"}, json::array({1}), "--capabilities answer.library_dirs[0]: must be a string, got number"},
      {{"library_dirs"}, json::array({"lib"}), "--capabilities answer.library_dirs: must list absolute paths"},
      {{"modes"}, json::array(), "--capabilities answer.modes: must be an object, got array"},
      {{"modes", "cpu"}, "eager", "--capabilities answer.modes.cpu: must be an array"},
      {{"modes", "cpu"}, json::array({"warp"}), "--capabilities answer.modes.cpu[0]"},
  };
  for (const auto& [path, value, expected] : cases) {
    const std::string body = with(caps, path, value).dump();
    Result<Capabilities> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_capabilities(body));
    expect_error(r, expected, body);
  }
  for (const auto& [text, expected] : kNotAnObject) {
    Result<Capabilities> r = Error::internal("not run");
    EXPECT_NO_THROW(r = decode_capabilities(text));
    expect_error(r, "--capabilities answer: " + expected, text);
  }
}

TEST(AgentCodecs, WorkerResultDecodesAndMalformedOnesNameTheField) {
  JobResult ok;
  ok.status = ResultStatus::kOk;
  ok.samples_ms = {2, 3, 4};
  ok.stats = Statistics{3, 3, 4, 4, 2, 4, 1, 0.33, 2.5, 3.5, 3};
  ok.environment = {{"torch_version", "2.6.0"}};
  const json good = ok;
  auto r = decode_worker_result(good.dump());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(*r, ok);

  const std::vector<std::tuple<std::vector<std::string>, json, std::string>> cases = {
      {{"status"}, kRemove, "status: is required"},
      {{"status"}, "fast", "status"},
      {{"stats"}, kRemove, "stats: is required when status is ok"},
      {{"stats", "iterations"}, 4, "stats.iterations: must equal the number of samples_ms"},
      {{"stats", "mean_ms"}, "3", "stats.mean_ms: must be a number, got string"},
      {{"samples_ms"}, json::array({2, -3, 4}), "samples_ms[1]: must be >= 0"},
      {{"signal"}, 1.5, "signal: must be an integer"},
      {{"error"}, std::string(20000, 'e'), "error: is longer than 16384 characters"},
      {{"environment", "nested"}, json::object(), "environment.nested: must be a string, number, boolean or null"},
      // The result is a shared type: an unknown member is refused, not ignored.
      {{"bogus"}, 1, "bogus: is not a known field"},
  };
  for (const auto& [path, value, expected] : cases) {
    const std::string body = with(good, path, value).dump();
    Result<JobResult> bad = Error::internal("not run");
    EXPECT_NO_THROW(bad = decode_worker_result(body));
    expect_error(bad, expected, body);
  }
  for (const auto& [text, expected] : kNotAnObject) {
    Result<JobResult> bad = Error::internal("not run");
    EXPECT_NO_THROW(bad = decode_worker_result(text));
    expect_error(bad, "result: " + expected, text);
  }
}

TEST(AgentCodecs, KnownMembersKeepsOnlyTheNamedOnes) {
  EXPECT_EQ(known_members(json{{"a", 1}, {"b", 2}, {"c", 3}}, {"a", "c", "d"}), (json{{"a", 1}, {"c", 3}}));
  EXPECT_EQ(known_members(json::array({1}), {"a"}), json::array({1})) << "a non-object is left for the reader";
}

TEST(AgentCodecs, ReadFileBoundedRefusesWhatItCannotReadWhole) {
  const testing::TempDir tmp("bf-agent-codecs");
  const std::filesystem::path& dir = tmp.path();
  const std::string file = (dir / "result.json").string();
  std::ofstream(file) << "0123456789";
  EXPECT_EQ(read_file_bounded(file, 10).value(), "0123456789");
  expect_error(read_file_bounded(file, 9), "is larger than 9 bytes", file);
  expect_error(read_file_bounded(dir.string(), 100), "is not a regular file", dir.string());
  auto missing = read_file_bounded((dir / "missing").string(), 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace benchfleet::agent
