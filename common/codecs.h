// JSON codecs for the domain types. Decoding validates: unknown or missing field, wrong type
// and out-of-range value all give an Error naming the field path. Encoding never fails.
//   Result<MatrixSpec> spec = decode<MatrixSpec>(json);
//   nlohmann::json j = spec.value();
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/display_text.h"
#include "common/json_reader.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet {

// Identifier rule for build names, GPU classes and slot ids: [a-z0-9][a-z0-9._-]{0,63}.
bool is_valid_identifier(std::string_view s);

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, Mode& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, Runtime& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, ResultStatus& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, JobStatus& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, OomPhase& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, StopReason& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, Dtype& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, AccuracyVerdict& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, MeasurementSpec& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, NoiseSpec& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, MatrixSpec& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, JobSpec& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, GpuInfo& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, SlotDescriptor& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, RuntimeSupport& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, TorchBuildDescriptor& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, AgentDescriptor& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, Statistics& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, OomInfo& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, MemoryInfo& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, AccuracyInfo& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, JobResult& out);

template <class T>
Result<T> decode(const nlohmann::json& j, const std::string& path = "") {
  T out{};
  if (auto err = decode_value(j, path, out)) return *err;
  return out;
}

// A JobResult whose samples_ms was left out (result listings): as decode<JobResult>, except
// that an ok result needs no samples and stats.iterations is not compared with them.
Result<JobResult> decode_result_without_samples(const nlohmann::json& j);

void to_json(nlohmann::json& j, JobStatus v);
void to_json(nlohmann::json& j, ResultStatus v);
void to_json(nlohmann::json& j, Mode v);
void to_json(nlohmann::json& j, Runtime v);
void to_json(nlohmann::json& j, OomPhase v);
void to_json(nlohmann::json& j, StopReason v);
void to_json(nlohmann::json& j, Dtype v);
void to_json(nlohmann::json& j, AccuracyVerdict v);
void to_json(nlohmann::json& j, const MeasurementSpec& v);
void to_json(nlohmann::json& j, const NoiseSpec& v);
void to_json(nlohmann::json& j, const MatrixSpec& v);
void to_json(nlohmann::json& j, const JobSpec& v);
void to_json(nlohmann::json& j, const GpuInfo& v);
void to_json(nlohmann::json& j, const SlotDescriptor& v);
void to_json(nlohmann::json& j, const RuntimeSupport& v);
void to_json(nlohmann::json& j, const TorchBuildDescriptor& v);
void to_json(nlohmann::json& j, const AgentDescriptor& v);
void to_json(nlohmann::json& j, const Statistics& v);
void to_json(nlohmann::json& j, const OomInfo& v);
void to_json(nlohmann::json& j, const MemoryInfo& v);
void to_json(nlohmann::json& j, const AccuracyInfo& v);
void to_json(nlohmann::json& j, const JobResult& v);

}  // namespace benchfleet
