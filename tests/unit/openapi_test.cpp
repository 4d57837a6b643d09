// The OpenAPI document (coordinator/api/openapi.json) itself: it is OpenAPI 3.1 with the
// security schemes the API uses, every $ref resolves, every operation is well formed (unique
// operationId, documented path parameters, problem+json errors), enums use the wire names and
// the submit example decodes. tests/openapi/validate.mjs checks the document against the OpenAPI
// 3.1 schema itself; openapi_schema_test.cpp and openapi_routes_test.cpp check it against the code.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/catalog.h"
#include "common/codecs.h"
#include "common/shared_rules.h"
#include "coordinator/api/api.h"
#include "tests/unit/openapi_support.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

std::set<std::string> strings_of(const json& array) {
  std::set<std::string> out;
  if (array.is_array()) {
    for (const auto& v : array) out.insert(v.get<std::string>());
  }
  return out;
}

TEST(OpenApiDocument, ParsesAsOpenApi31) {
  const json& doc = document();
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(doc.contains("openapi"));
  EXPECT_EQ(doc["openapi"].get<std::string>().rfind("3.1.", 0), 0u) << doc["openapi"];
  ASSERT_TRUE(doc.contains("info"));
  EXPECT_TRUE(doc["info"].contains("title"));
  EXPECT_TRUE(doc["info"].contains("version"));
  EXPECT_EQ(doc["info"]["version"], BENCHFLEET_VERSION) << "info.version should follow the project version";
  ASSERT_TRUE(doc.contains("paths"));
  EXPECT_FALSE(doc["paths"].empty());
  ASSERT_TRUE(doc.contains("components"));
  for (const char* c : {"schemas", "securitySchemes", "responses", "parameters"}) {
    EXPECT_TRUE(doc["components"].contains(c)) << c;
  }
  for (const char* scheme : {"operatorToken", "enrollmentToken", "agentToken"}) {
    const json& s = doc["components"]["securitySchemes"].at(scheme);
    EXPECT_EQ(s["type"], "http") << scheme;
    EXPECT_EQ(s["scheme"], "bearer") << scheme;
  }
  EXPECT_EQ(api::openapi_document().find(")bf_embed\""), std::string::npos);
}

// The document states the iteration and sample limits as numbers; they are the shared rule's
// (common/rules/measurement_limits.json), which the codecs, the result checks and the python
// runner read.
TEST(OpenApiDocument, IterationAndSampleLimitsAreTheSharedRules) {
  const auto limit = static_cast<std::int64_t>(max_iterations());
  const json& measurement = component_schema("MeasurementSpec")["properties"];
  EXPECT_EQ(measurement["min_iterations"]["maximum"].get<std::int64_t>(), limit);
  EXPECT_EQ(measurement["max_iterations"]["maximum"].get<std::int64_t>(), limit);
  EXPECT_EQ(component_schema("JobResultFields")["properties"]["samples_ms"]["maxItems"].get<std::int64_t>(), limit);
}

TEST(OpenApiDocument, EveryRefResolves) {
  std::vector<std::string> bad;
  int refs = 0;
  std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& where) {
    if (node.is_array()) {
      for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], where + "/" + std::to_string(i));
    } else if (node.is_object()) {
      for (const auto& [k, v] : node.items()) {
        if (k == "$ref" && v.is_string()) {
          ++refs;
          const std::string ref = v.get<std::string>();
          if (ref.rfind("#/components/", 0) != 0) bad.push_back(where + ": " + ref + " is not #/components/...");
          if (resolve_pointer(document(), ref) == nullptr) bad.push_back(where + ": " + ref + " does not resolve");
        } else {
          walk(v, where + "/" + k);
        }
      }
    }
  };
  walk(document(), "#");
  EXPECT_GT(refs, 50);
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(OpenApiDocument, OperationsAreWellFormed) {
  std::set<std::string> ids;
  for (const auto& [path, item] : document()["paths"].items()) {
    std::set<std::string> templated;
    static const std::regex kParam(R"(\{([^}]+)\})");
    for (auto it = std::sregex_iterator(path.begin(), path.end(), kParam); it != std::sregex_iterator(); ++it) {
      templated.insert((*it)[1]);
    }
    for (const auto& method : kMethods) {
      if (!item.contains(method)) continue;
      const json& op = item[method];
      const std::string where = method + " " + path;
      ASSERT_TRUE(op.contains("operationId")) << where;
      EXPECT_TRUE(ids.insert(op["operationId"].get<std::string>()).second) << "duplicate operationId at " << where;
      EXPECT_FALSE(op.value("summary", "").empty()) << where;
      EXPECT_FALSE(op.value("description", "").empty()) << where;
      ASSERT_TRUE(op.contains("responses")) << where;
      EXPECT_FALSE(op["responses"].empty()) << where;
      for (const auto& [status, r] : op["responses"].items()) {
        const json& resp = deref(r);
        EXPECT_TRUE(resp.contains("description")) << where << " " << status;
        const int code = std::atoi(status.c_str());
        if (code >= 400) {
          ASSERT_TRUE(resp.contains("content")) << where << " " << status;
          EXPECT_TRUE(resp["content"].contains("application/problem+json")) << where << " " << status;
        }
      }
      std::set<std::string> declared;
      for (const auto& p : op.value("parameters", json::array())) {
        const json& param = deref(p);
        if (param["in"] == "path") {
          EXPECT_TRUE(param.value("required", false)) << where << " " << param["name"];
          declared.insert(param["name"].get<std::string>());
        }
      }
      EXPECT_EQ(declared, templated) << where << ": path parameters and the path template disagree";
    }
  }
  EXPECT_EQ(ids.size(), 45u);
}

TEST(OpenApiDocument, EnumsUseTheWireNames) {
  auto names = [](const auto& values) {
    std::set<std::string> out;
    for (auto v : values) out.insert(std::string(to_string(v)));
    return out;
  };
  EXPECT_EQ(strings_of(component_schema("JobStatus")["enum"]), names(all_job_statuses()));
  EXPECT_EQ(strings_of(component_schema("ResultStatus")["enum"]), names(all_result_statuses()));
  EXPECT_EQ(strings_of(component_schema("Mode")["enum"]), names(all_modes()));
  EXPECT_EQ(strings_of(component_schema("Runtime")["enum"]), names(all_runtimes()));
  EXPECT_EQ(strings_of(component_schema("Dtype")["enum"]), names(all_dtypes()));
  EXPECT_EQ(strings_of(component_schema("AccuracyVerdict")["enum"]), names(all_accuracy_verdicts()));
  EXPECT_EQ(strings_of(component_schema("ResultRow")["properties"]["flags"]["items"]["enum"]),
            (std::set<std::string>{"high_cv", "second_mode", "clock_drop", "throttled", "ci_not_met"}));
  EXPECT_EQ(strings_of(component_schema("OomPhase")["enum"]),
            names(std::vector<OomPhase>{OomPhase::kLoad, OomPhase::kCompile, OomPhase::kWarmup, OomPhase::kMeasure}));
  EXPECT_EQ(strings_of(component_schema("StopReason")["enum"]),
            names(std::vector<StopReason>{StopReason::kFixedCount, StopReason::kCiTarget, StopReason::kMaxIterations,
                                          StopReason::kMaxTime}));
  // The run's job/result counters have one member per status.
  EXPECT_EQ(strings_of(component_schema("Run")["properties"]["jobs"]["required"]), names(all_job_statuses()));
  EXPECT_EQ(strings_of(component_schema("Run")["properties"]["results"]["required"]), names(all_result_statuses()));
}

TEST(OpenApiDocument, SubmitExampleIsTheSeedsStudyAndDecodes) {
  const json& media = document()["paths"]["/api/v1/runs"]["post"]["requestBody"]["content"]["application/json"];
  const json& seeds = media.at("examples").at("seeds").at("value");
  auto spec = decode<MatrixSpec>(seeds);
  ASSERT_TRUE(spec.ok()) << spec.error().describe();
  auto catalog = Catalog::load_file(default_catalog_path());
  ASSERT_TRUE(catalog.ok()) << catalog.error().describe();
  ASSERT_EQ(spec->models.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(spec->models[i], catalog->models()[i].id) << i;
  EXPECT_EQ(spec->batch_sizes, (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(spec->modes, (std::vector<Mode>{Mode::kEager, Mode::kDefault}));
  EXPECT_EQ(spec->torch_builds, (std::vector<std::string>{"stable", "nightly"}));
  EXPECT_EQ(spec->gpus, (std::vector<std::string>{"a100", "v100", "t4"}));
  EXPECT_TRUE(decode<MatrixSpec>(media["examples"]["minimal"]["value"]).ok());
}

}  // namespace
}  // namespace benchfleet::testing
