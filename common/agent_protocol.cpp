#include "common/agent_protocol.h"

#include <algorithm>

#include "common/json_reader.h"
#include "common/time_format.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Bounds on what the coordinator may dictate: a zero heartbeat would spin, a huge one would
// let every lease expire.
constexpr int kMaxIntervalS = 3600;
constexpr int kMaxLongPollS = 300;
constexpr int kMaxJobTimeoutS = 7 * 24 * 3600;
constexpr std::size_t kMaxGrantedLeaseIdBytes = 256;
constexpr std::size_t kMaxTokenBytes = 1024;
constexpr std::size_t kMaxLeaseRefIdBytes = 64;
constexpr std::size_t kMaxHeartbeatLeases = 64;
constexpr std::size_t kMaxProgressMessageBytes = 4096;

const char* const kTimeExample = "an RFC 3339 UTC time with milliseconds such as 2026-11-21T20:05:00.123Z";

// The intervals members of an answer (each optional: the defaults stand when missing).
void read_intervals(JsonReader& r, Intervals& i) {
  r.optional("heartbeat_interval_s", i.heartbeat_interval_s);
  r.optional("lease_ttl_s", i.lease_ttl_s);
  r.optional("long_poll_timeout_s", i.long_poll_timeout_s);
  r.check(i.heartbeat_interval_s >= 1 && i.heartbeat_interval_s <= kMaxIntervalS, "heartbeat_interval_s",
          "must be between 1 and " + std::to_string(kMaxIntervalS));
  r.check(i.lease_ttl_s >= 1 && i.lease_ttl_s <= kMaxIntervalS, "lease_ttl_s",
          "must be between 1 and " + std::to_string(kMaxIntervalS));
  r.check(i.long_poll_timeout_s >= 0 && i.long_poll_timeout_s <= kMaxLongPollS, "long_poll_timeout_s",
          "must be between 0 and " + std::to_string(kMaxLongPollS));
}

// What a decoder returns: the reader's first error, or nullopt.
std::optional<Error> finished(JsonReader& r) {
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

// Records "<key>: must be 1 to <max> <unit>" (min 1) or "must be at most <max> <unit>" (min 0)
// unless `value`'s length lies within.
void check_length(JsonReader& r, std::string_view key, const std::string& value, std::size_t min, std::size_t max,
                  std::string_view unit) {
  const std::string bound = min == 0 ? "at most " + std::to_string(max) : "1 to " + std::to_string(max);
  r.check(value.size() >= min && value.size() <= max, key, "must be " + bound + " " + std::string(unit));
}

// The "lease_id" member of a request about a lease the agent holds (LeaseRef and the job reports).
void read_held_lease_id(JsonReader& r, std::string& out) {
  r.required("lease_id", out);
  check_length(r, "lease_id", out, 1, kMaxLeaseRefIdBytes, "characters");
}

// A time member written by format_time.
void read_time(JsonReader& r, std::string_view key, const std::optional<std::string>& text,
               std::optional<TimestampMs>& out) {
  if (!text) return;
  out = parse_time(*text);
  r.check(out.has_value(), key, std::string("must be ") + kTimeExample);
}

// The agent token goes into every request's Authorization header: visible ASCII only, so a
// hostile answer cannot end the header and add others ("\r\n"), and short enough for the
// coordinator's header limit.
bool is_header_token(const std::string& token) {
  if (token.empty() || token.size() > kMaxTokenBytes) return false;
  return std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

bool is_request_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == ':';
  });
}

}  // namespace

std::string_view to_string(LeaseState s) {
  switch (s) {
    case LeaseState::kActive:
      return "active";
    case LeaseState::kLost:
      return "lost";
    case LeaseState::kCancelled:
      return "cancelled";
  }
  return "lost";
}

// ---- answers -----------------------------------------------------------------------------------

std::optional<Error> decode_value(const json& j, const std::string& path, EnrollResponse& out) {
  const json known =
      known_members(j, {"agent_id", "agent_token", "heartbeat_interval_s", "lease_ttl_s", "long_poll_timeout_s"});
  JsonReader r(known, path);
  r.required("agent_id", out.agent_id);
  r.required("agent_token", out.agent_token);
  read_intervals(r, out.intervals);
  r.check(out.agent_id > 0, "agent_id", "must be > 0");
  r.check(is_header_token(out.agent_token), "agent_token",
          "must be 1 to " + std::to_string(kMaxTokenBytes) + " visible ASCII characters");
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, LeasedJob& out) {
  const json known = known_members(j, {"id", "run_id", "attempt", "lease_id", "lease_expires_at", "spec", "measurement",
                                       "memory_limit_mb", "timeout_s", "dynamic", "walk_batches", "model"});
  std::string expires_at;
  JsonReader r(known, path);
  r.required("id", out.job_id);
  r.required("run_id", out.run_id);
  r.required("attempt", out.attempt);
  r.required("lease_id", out.lease_id);
  r.required("lease_expires_at", expires_at);
  r.required("spec", out.spec);
  r.required("measurement", out.measurement);
  r.required("memory_limit_mb", out.memory_limit_mb);
  r.required("timeout_s", out.timeout_s);
  r.optional("dynamic", out.dynamic);
  r.optional("walk_batches", out.walk_batches);
  std::optional<json> model;
  r.optional("model", model);
  // A model without a definition object (a coordinator before registered models) is ignored:
  // the agent's catalog builds the model then.
  if (model && model->is_object() && model->contains("definition") && (*model)["definition"].is_object()) {
    out.model_definition = (*model)["definition"];
    if (auto digest = model->find("digest"); digest != model->end() && digest->is_string()) {
      out.model_digest = digest->get<std::string>();
    }
  }
  r.check(out.job_id > 0, "id", "must be > 0");
  r.check(out.walk_batches.size() <= kMaxWalkBatches, "walk_batches",
          "must list at most " + std::to_string(kMaxWalkBatches) + " batch sizes");
  r.check(out.run_id > 0, "run_id", "must be > 0");
  r.check(out.attempt >= 1, "attempt", "must be >= 1");
  check_length(r, "lease_id", out.lease_id, 1, kMaxGrantedLeaseIdBytes, "bytes");
  if (!r.failed()) {
    std::optional<TimestampMs> expires;
    read_time(r, "lease_expires_at", expires_at, expires);
    out.expires_at = expires.value_or(0);
  }
  r.check(!out.memory_limit_mb || *out.memory_limit_mb > 0, "memory_limit_mb", "must be > 0");
  r.check(out.timeout_s >= 1 && out.timeout_s <= kMaxJobTimeoutS, "timeout_s",
          "must be between 1 and " + std::to_string(kMaxJobTimeoutS));
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, LeaseResponse& out) {
  const json known =
      known_members(j, {"job", "draining", "heartbeat_interval_s", "lease_ttl_s", "long_poll_timeout_s"});
  // The answer's own members first, then the job: what is wrong with the answer as a whole is
  // reported before what is wrong inside its job.
  std::optional<json> job;  // an object, or null
  JsonReader r(known, path);
  r.required("job", job);
  r.required("draining", out.draining);
  read_intervals(r, out.intervals);
  if (auto s = r.finish(); !s) return s.error();
  out.job.reset();
  if (job) {
    LeasedJob leased;
    if (auto err = decode_value(*job, join_path(path, "job"), leased)) return err;
    out.job = std::move(leased);
  }
  return std::nullopt;
}

std::optional<Error> decode_value(const json& j, const std::string& path, LeaseState& out) {
  if (!j.is_string()) return Error::invalid(path, std::string("must be a string, got ") + j.type_name());
  const auto& s = j.get_ref<const std::string&>();
  for (LeaseState state : {LeaseState::kActive, LeaseState::kLost, LeaseState::kCancelled}) {
    if (s == to_string(state)) {
      out = state;
      return std::nullopt;
    }
  }
  return Error::invalid(path, "must be active, lost or cancelled");
}

std::optional<Error> decode_value(const json& j, const std::string& path, LeaseRenewal& out) {
  const json known = known_members(j, {"state", "job_id", "lease_id", "lease_expires_at"});
  std::optional<std::string> expires_at;
  JsonReader r(known, path);
  r.required("state", out.state);
  r.required("job_id", out.job_id);
  r.required("lease_id", out.lease_id);
  r.optional("lease_expires_at", expires_at);
  r.check(out.job_id > 0, "job_id", "must be > 0");
  check_length(r, "lease_id", out.lease_id, 1, kMaxGrantedLeaseIdBytes, "bytes");
  if (!r.failed()) read_time(r, "lease_expires_at", expires_at, out.expires_at);
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, HeartbeatResponse& out) {
  const json known = known_members(j, {"leases", "drain"});
  // As for a lease answer: the answer's own members first, then each lease.
  std::vector<json> leases;  // objects
  JsonReader r(known, path);
  r.required("leases", leases);
  r.required("drain", out.drain);
  if (auto s = r.finish(); !s) return s.error();
  out.leases.assign(leases.size(), LeaseRenewal{});
  for (std::size_t i = 0; i < leases.size(); ++i) {
    if (auto err = decode_value(leases[i], join_path(path, "leases") + "[" + std::to_string(i) + "]", out.leases[i])) {
      return err;
    }
  }
  return std::nullopt;
}

void to_json(json& j, const Intervals& v) {
  j = {{"heartbeat_interval_s", v.heartbeat_interval_s},
       {"lease_ttl_s", v.lease_ttl_s},
       {"long_poll_timeout_s", v.long_poll_timeout_s}};
}

void to_json(json& j, const EnrollResponse& v) {
  j = v.intervals;
  j["agent_id"] = v.agent_id;
  j["agent_token"] = v.agent_token;
}

void to_json(json& j, const LeasedJob& v) {
  j = {{"id", v.job_id},
       {"run_id", v.run_id},
       {"attempt", v.attempt},
       {"lease_id", v.lease_id},
       {"lease_expires_at", format_time(v.expires_at)},
       {"spec", v.spec},
       {"measurement", v.measurement},
       {"memory_limit_mb", v.memory_limit_mb ? json(*v.memory_limit_mb) : json()},
       {"timeout_s", v.timeout_s}};
  if (v.dynamic) j["dynamic"] = true;
  if (!v.walk_batches.empty()) j["walk_batches"] = v.walk_batches;
  if (v.model_definition) j["model"] = {{"definition", *v.model_definition}, {"digest", v.model_digest}};
}

void to_json(json& j, const LeaseResponse& v) {
  j = v.intervals;
  j["job"] = v.job ? json(*v.job) : json();
  j["draining"] = v.draining;
}

void to_json(json& j, LeaseState v) { j = std::string(to_string(v)); }

void to_json(json& j, const LeaseRenewal& v) {
  j = {{"job_id", v.job_id},
       {"lease_id", v.lease_id},
       {"state", v.state},
       {"lease_expires_at", v.expires_at ? json(format_time(*v.expires_at)) : json()}};
}

void to_json(json& j, const HeartbeatResponse& v) {
  j = {{"drain", v.drain}, {"leases", json::array()}};
  for (const auto& l : v.leases) j["leases"].push_back(json(l));
}

// ---- requests ----------------------------------------------------------------------------------

std::optional<Error> decode_value(const json& j, const std::string& path, LeaseRef& out) {
  JsonReader r(j, path);
  r.required("job_id", out.job_id);
  r.check(out.job_id > 0, "job_id", "must be > 0");
  read_held_lease_id(r, out.lease_id);
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, LeaseRequest& out) {
  JsonReader r(j, path);
  r.required("slot", out.slot);
  r.optional("wait_s", out.wait_s);
  r.optional("request_id", out.request_id);
  r.check(!out.wait_s || *out.wait_s >= 0, "wait_s", "must be >= 0");
  r.check(!out.request_id || is_request_id(*out.request_id), "request_id",
          "must be 1 to 64 characters of A-Z a-z 0-9 - _ . :");
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, HeartbeatRequest& out) {
  JsonReader r(j, path);
  r.optional("leases", out.leases);
  r.optional("draining", out.draining);
  r.check(out.leases.size() <= kMaxHeartbeatLeases, "leases",
          "must list at most " + std::to_string(kMaxHeartbeatLeases) + " leases");
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, ProgressRequest& out) {
  JsonReader r(j, path);
  read_held_lease_id(r, out.lease_id);
  r.optional("phase", out.phase);
  r.optional("message", out.message);
  r.optional("iterations", out.iterations);
  check_length(r, "message", out.message, 0, kMaxProgressMessageBytes, "characters");
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, ResultRequest& out) {
  JsonReader r(j, path);
  read_held_lease_id(r, out.lease_id);
  r.required("attempt", out.attempt);
  r.check(out.attempt >= 1, "attempt", "must be >= 1");
  r.required("result", out.result);
  return finished(r);
}

std::optional<Error> decode_value(const json& j, const std::string& path, ReleaseRequest& out) {
  JsonReader r(j, path);
  read_held_lease_id(r, out.lease_id);
  return finished(r);
}

void to_json(json& j, const LeaseRef& v) { j = {{"job_id", v.job_id}, {"lease_id", v.lease_id}}; }

void to_json(json& j, const LeaseRequest& v) {
  j = {{"slot", v.slot}};
  if (v.wait_s) j["wait_s"] = *v.wait_s;
  if (v.request_id) j["request_id"] = *v.request_id;
}

void to_json(json& j, const HeartbeatRequest& v) {
  j = {{"leases", json::array()}, {"draining", v.draining}};
  for (const auto& l : v.leases) j["leases"].push_back(json(l));
}

void to_json(json& j, const ProgressRequest& v) {
  j = {{"lease_id", v.lease_id}, {"phase", v.phase}};
  if (!v.message.empty()) j["message"] = v.message;
  if (v.iterations) j["iterations"] = *v.iterations;
}

void to_json(json& j, const ReleaseRequest& v) { j = {{"lease_id", v.lease_id}}; }

void to_json(json& j, const ResultRequest& v) {
  j = {{"lease_id", v.lease_id}, {"attempt", v.attempt}, {"result", v.result}};
}

std::optional<Error> check_descriptor_text(const AgentDescriptor& d) {
  constexpr std::size_t kMax = 200;  // the decoder's bound on each of these
  if (auto why = display_name_problem(d.name, kMax)) return Error::invalid("name", *why);
  const struct {
    const char* field;
    const std::string& text;
  } top[] = {{"hostname", d.hostname}, {"version", d.version}};
  for (const auto& t : top) {
    if (auto why = display_text_problem(t.text, kMax)) return Error::invalid(t.field, *why);
  }
  for (std::size_t i = 0; i < d.torch_builds.size(); ++i) {
    if (auto why = display_text_problem(d.torch_builds[i].version, kMax)) {
      return Error::invalid("torch_builds[" + std::to_string(i) + "].version", *why);
    }
  }
  for (std::size_t i = 0; i < d.slots.size(); ++i) {
    if (!d.slots[i].gpu) continue;
    const GpuInfo& g = *d.slots[i].gpu;
    const struct {
      const char* field;
      const std::string& text;
    } gpu[] = {{"name", g.name}, {"uuid", g.uuid}, {"compute_capability", g.compute_capability}, {"driver", g.driver}};
    for (const auto& t : gpu) {
      if (auto why = display_text_problem(t.text, kMax)) {
        return Error::invalid("slots[" + std::to_string(i) + "].gpu." + t.field, *why);
      }
    }
  }
  return std::nullopt;
}

}  // namespace benchfleet
