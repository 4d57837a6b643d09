// The codec schemas of the OpenAPI document against the codecs: each lists exactly the fields
// to_json writes and decode requires, with the same defaults, and the JSON views the API answers
// with (runs, agents, results, models) match their schemas.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/catalog.h"
#include "common/codecs.h"
#include "coordinator/api/common.h"
#include "coordinator/store/store.h"
#include "tests/unit/openapi_support.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

std::set<std::string> keys_of(const json& object) {
  std::set<std::string> out;
  for (const auto& [k, v] : object.items()) out.insert(k);
  return out;
}

// The schema's `required` plus what its allOf if/then rules add for this instance (JobResult
// requires stats and samples_ms when status is ok, oom when status is oom...).
std::set<std::string> effective_required(const json& schema, const json& instance) {
  std::set<std::string> out = object_view(schema).required;
  for (const auto& branch : schema.value("allOf", json::array())) {
    if (branch.contains("if") && SchemaChecker().matches(instance, branch["if"])) {
      for (const auto& r : branch["then"].value("required", json::array())) out.insert(r.get<std::string>());
    }
  }
  return out;
}

template <class T>
void expect_schema_matches_codec(const std::string& name, const T& full) {
  SCOPED_TRACE(name);
  const json& schema = component_schema(name);
  const ObjectView view = object_view(schema);
  const json encoded = full;
  ASSERT_TRUE(encoded.is_object());
  EXPECT_EQ(keys_of(view.properties), keys_of(encoded))
      << "the schema's properties differ from what to_json writes for a fully populated value";
  auto roundtrip = decode<T>(encoded);
  ASSERT_TRUE(roundtrip.ok()) << roundtrip.error().describe();
  EXPECT_TRUE(*roundtrip == full);

  std::set<std::string> needed;
  for (const auto& [key, value] : encoded.items()) {
    json without = encoded;
    without.erase(key);
    if (!decode<T>(without).ok()) needed.insert(key);
  }
  EXPECT_EQ(effective_required(schema, encoded), needed)
      << "the schema's required list differs from the fields decode<" << name << "> cannot do without";
  EXPECT_TRUE(view.closed) << "decode refuses unknown fields, so the schema should too";
  json unknown = encoded;
  unknown["no_such_field"] = 1;
  EXPECT_FALSE(decode<T>(unknown).ok());

  // Documented defaults are what an absent field decodes to.
  const json defaults = T{};
  for (const auto& [key, prop] : view.properties.items()) {
    if (prop.contains("default") && defaults.contains(key)) {
      EXPECT_EQ(prop["default"], defaults[key]) << "default of " << name << "." << key;
    }
  }
  // And the encoding conforms to the schema.
  EXPECT_TRUE(SchemaChecker().check(encoded, schema).empty()) << join(SchemaChecker().check(encoded, schema));
}

TEST(OpenApiSchemas, MatrixSpecMatchesCodec) {
  expect_schema_matches_codec("MatrixSpec", full_matrix());
  expect_schema_matches_codec("MeasurementSpec", MeasurementSpec{5, 50, 500, 1.0, 60.0, 0.05});
  expect_schema_matches_codec("JobSpec", JobSpec{"microsoft/resnet-50", 4, Mode::kDefault, "stable", "a100",
                                                 Runtime::kPython, 1, Dtype::kFloat16});
  expect_schema_matches_codec("NoiseSpec", NoiseSpec{0.05, 0.2});
}

TEST(OpenApiSchemas, JobResultMatchesCodec) {
  // ok requires stats and samples_ms, oom requires oom, the others only status.
  expect_schema_matches_codec("JobResult", full_result(ResultStatus::kOk));
  expect_schema_matches_codec("JobResult", full_result(ResultStatus::kOom));
  expect_schema_matches_codec("JobResult", full_result(ResultStatus::kError));
  expect_schema_matches_codec("Statistics", *full_result(ResultStatus::kOk).stats);
  expect_schema_matches_codec("OomInfo", OomInfo{OomPhase::kLoad, 123});
  expect_schema_matches_codec("MemoryInfo", MemoryInfo{1, 2, 3, "cgroup-v1", 4, 5});
  expect_schema_matches_codec("AccuracyInfo", *full_result(ResultStatus::kOk).accuracy);
}

TEST(OpenApiSchemas, AgentDescriptorMatchesCodec) {
  expect_schema_matches_codec("AgentDescriptor", full_agent());
  expect_schema_matches_codec("SlotDescriptor", full_slot());
  expect_schema_matches_codec("GpuInfo", full_gpu());
  expect_schema_matches_codec("TorchBuildDescriptor", full_build());
  expect_schema_matches_codec("RuntimeSupport", RuntimeSupport{Runtime::kPython, {Mode::kEager}});
}

// The agent protocol's requests are decoded strictly (common/agent_protocol.h), like the codecs.
TEST(OpenApiSchemas, AgentRequestsMatchCodec) {
  expect_schema_matches_codec("LeaseRequest", LeaseRequest{"gpu0", 25, "3f2a9c1d:poll-1"});
  expect_schema_matches_codec("HeartbeatRequest", HeartbeatRequest{{{4, "lease-4"}, {5, "lease-5"}}, true});
  expect_schema_matches_codec("LeaseRef", LeaseRef{4, "lease-4"});
}

TEST(OpenApiSchemas, JsonViewsMatchTheirSchemas) {
  SchemaChecker checker;
  store::RunInfo run;
  run.id = 7;
  run.name = "full";
  run.spec = full_matrix();
  run.job_count = 64;
  run.created_at = 1'700'000'000'123;
  run.cancelled_at = 1'700'000'100'000;
  run.finished_at = 1'700'000'100'000;
  run.jobs_by_status = {{JobStatus::kDone, 10}, {JobStatus::kCancelled, 54}};
  run.results_by_status = {{ResultStatus::kOk, 9}, {ResultStatus::kOom, 1}};
  run.state = "cancelled";
  EXPECT_TRUE(checker.check(api::run_json(run), component_schema("Run")).empty())
      << join(checker.check(api::run_json(run), component_schema("Run")));

  store::AgentInfo agent;
  agent.id = 3;
  agent.descriptor = full_agent();
  agent.enrolled_at = 1'700'000'000'000;
  agent.last_seen_at = 1'700'000'001'000;
  agent.draining = true;
  agent.leases.push_back({"gpu0", 5, 7,
                          JobSpec{"microsoft/resnet-50", 1, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0},
                          "running"});
  const json a = api::agent_json(agent, 1'700'000'002'000, 15);
  EXPECT_TRUE(checker.check(a, component_schema("Agent")).empty()) << join(checker.check(a, component_schema("Agent")));

  store::ResultRow row;
  row.id = 11;
  row.job_id = 5;
  row.run_id = 7;
  row.attempt = 2;
  row.spec = JobSpec{"microsoft/resnet-50", 1, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0};
  row.result = full_result(ResultStatus::kOk);
  row.agent_name = "host-1";
  row.slot = "gpu0";
  row.created_at = 1'700'000'000'000;
  row.flags = {"high_cv", "ci_not_met"};
  // Without samples, and with them as a read that asks for them gets them (spliced in as text).
  store::ResultRow with_samples = row;
  with_samples.samples_json = json(row.result.samples_ms).dump();
  with_samples.result.samples_ms.clear();
  const auto text = api::result_json_text(with_samples);
  ASSERT_TRUE(text.ok()) << text.error().message;
  const json spliced = json::parse(*text);
  EXPECT_EQ(spliced["result"]["samples_ms"], json(row.result.samples_ms));
  for (const json& r : {api::result_json(row), spliced}) {
    EXPECT_TRUE(checker.check(r, component_schema("ResultRow")).empty())
        << join(checker.check(r, component_schema("ResultRow")));
  }
  // The stored text is checked before it is spliced in: anything but numbers is refused.
  with_samples.samples_json = "[1.0]}, {\"x\": [1";
  EXPECT_FALSE(api::result_json_text(with_samples).ok());

  store::JobRow job;
  job.id = 5;
  job.spec = row.spec;
  job.status = JobStatus::kQueued;
  job.updated_at = 1'700'000'000'000;
  const json queued = api::job_json(job);
  EXPECT_TRUE(queued["result"].is_null());
  EXPECT_TRUE(checker.check(queued, component_schema("JobRow")).empty())
      << join(checker.check(queued, component_schema("JobRow")));
  job.status = JobStatus::kDone;
  job.attempt = 2;
  job.result_id = 11;
  job.result_status = ResultStatus::kOom;
  job.agent_name = "host-1";
  job.slot = "gpu0";
  const json done = api::job_json(job);
  EXPECT_EQ(done["result"], json({{"id", 11}, {"status", "oom"}}));
  EXPECT_TRUE(checker.check(done, component_schema("JobRow")).empty())
      << join(checker.check(done, component_schema("JobRow")));
  const json list = {{"jobs", {queued, done}}, {"next_cursor", "5"}};
  EXPECT_TRUE(checker.check(list, component_schema("JobList")).empty());

  auto catalog = Catalog::load_file(default_catalog_path());
  ASSERT_TRUE(catalog.ok());
  for (const auto& m : catalog->models()) {
    EXPECT_TRUE(checker.check(api::model_json(m), component_schema("CatalogModel")).empty()) << m.id;
  }

  // The answer to a lease poll: a job of a catalog model, one of a model no longer in it (model
  // null) and no memory limit, no job.
  store::LeaseGrant grant;
  grant.job_id = 5;
  grant.run_id = 7;
  grant.attempt = 1;
  grant.lease_id = "lease-5";
  grant.expires_at = 1'700'000'060'000;
  grant.spec = JobSpec{catalog->models().front().id, 1, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0};
  grant.memory_limit_mb = 4096;
  grant.timeout_s = 1800;
  store::LeaseGrant walking = grant;  // a python compiled job of a dynamic, shape-walking matrix
  walking.spec.runtime = Runtime::kPython;
  walking.spec.mode = Mode::kDefault;
  walking.dynamic = true;
  walking.walk_batches = {1, 4, 16};
  store::LeaseGrant retired = grant;
  retired.spec.model = "acme/retired-model";
  retired.memory_limit_mb.reset();
  for (const auto& answer : {store::LeaseAnswer{grant, false}, store::LeaseAnswer{walking, false},
                             store::LeaseAnswer{retired, false}, store::LeaseAnswer{std::nullopt, true}}) {
    const json lease = api::lease_response_json(answer, Intervals{}, *catalog);
    EXPECT_TRUE(checker.check(lease, component_schema("LeaseResponse")).empty())
        << join(checker.check(lease, component_schema("LeaseResponse")));
  }
}

TEST(OpenApiSchemas, CheckerCatchesDrift) {
  SchemaChecker checker;
  json matrix = full_matrix();
  EXPECT_TRUE(checker.check(matrix, component_schema("MatrixSpec")).empty());
  matrix["undocumented"] = true;
  EXPECT_FALSE(checker.check(matrix, component_schema("MatrixSpec")).empty());
  json result = full_result(ResultStatus::kOk);
  result.erase("stats");
  EXPECT_FALSE(checker.check(result, component_schema("JobResult")).empty());
  EXPECT_FALSE(checker.check(json{{"id", 1}}, component_schema("Run")).empty());
}

}  // namespace
}  // namespace benchfleet::testing
