#include "agent/daemon/agent_codecs.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/codecs.h"
#include "common/json_reader.h"

namespace benchfleet::agent {
namespace {

// Bounds on what the coordinator may dictate: a zero heartbeat would spin, a huge one would
// let every lease expire.
constexpr int kMaxIntervalS = 3600;
constexpr int kMaxLongPollS = 300;
constexpr int kMaxJobTimeoutS = 7 * 24 * 3600;
constexpr std::size_t kMaxLeaseIdBytes = 256;
constexpr std::size_t kMaxTokenBytes = 1024;
constexpr std::size_t kMaxMessageBytes = 4096;

Result<nlohmann::json> parse_object(std::string_view text, const std::string& what) {
  auto j = parse_json(text);
  if (!j.ok()) return Error::invalid(what, j.error().message);
  if (!j->is_object()) return Error::invalid(what, std::string("must be a JSON object, got ") + j->type_name());
  return j;
}

// The agent token goes into every request's Authorization header: visible ASCII only, so a
// hostile answer cannot end the header and add others ("\r\n"), and short enough for the
// coordinator's header limit.
bool is_header_token(const std::string& token) {
  if (token.empty() || token.size() > kMaxTokenBytes) return false;
  return std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

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

Result<LeasedJob> decode_leased_job(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json known = known_members(
      j, {"id", "run_id", "attempt", "lease_id", "spec", "measurement", "memory_limit_mb", "timeout_s"});
  LeasedJob l;
  JsonReader r(known, path);
  r.required("id", l.job_id);
  r.required("run_id", l.run_id);
  r.required("attempt", l.attempt);
  r.required("lease_id", l.lease_id);
  r.required("spec", l.spec);
  r.required("measurement", l.measurement);
  r.optional("memory_limit_mb", l.memory_limit_mb);
  r.optional("timeout_s", l.timeout_s);
  r.check(l.job_id > 0, "id", "must be > 0");
  r.check(l.run_id > 0, "run_id", "must be > 0");
  r.check(l.attempt >= 1, "attempt", "must be >= 1");
  r.check(!l.lease_id.empty() && l.lease_id.size() <= kMaxLeaseIdBytes, "lease_id",
          "must be 1 to " + std::to_string(kMaxLeaseIdBytes) + " bytes");
  r.check(!l.memory_limit_mb || *l.memory_limit_mb > 0, "memory_limit_mb", "must be > 0");
  r.check(l.timeout_s >= 1 && l.timeout_s <= kMaxJobTimeoutS, "timeout_s",
          "must be between 1 and " + std::to_string(kMaxJobTimeoutS));
  BF_RETURN_IF_ERROR(r.finish());
  return l;
}

// A file name inside one folder: no separator, not "." or "..".
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

nlohmann::json known_members(const nlohmann::json& j, std::initializer_list<std::string_view> known) {
  if (!j.is_object()) return j;
  nlohmann::json out = nlohmann::json::object();
  for (std::string_view key : known) {
    auto it = j.find(std::string(key));
    if (it != j.end()) out[std::string(key)] = *it;
  }
  return out;
}

Result<Enrollment> decode_enrollment_answer(std::string_view body) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(body, "enrolment answer"));
  const nlohmann::json known = known_members(
      j, {"agent_id", "agent_token", "heartbeat_interval_s", "lease_ttl_s", "long_poll_timeout_s"});
  Enrollment e;
  JsonReader r(known, "enrolment answer");
  r.required("agent_id", e.agent_id);
  r.required("agent_token", e.token);
  read_intervals(r, e.intervals);
  r.check(e.agent_id > 0, "agent_id", "must be > 0");
  r.check(is_header_token(e.token), "agent_token",
          "must be 1 to " + std::to_string(kMaxTokenBytes) + " visible ASCII characters");
  BF_RETURN_IF_ERROR(r.finish());
  return e;
}

Result<LeaseAnswer> decode_lease_answer(std::string_view body) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(body, "lease answer"));
  const nlohmann::json known =
      known_members(j, {"job", "draining", "heartbeat_interval_s", "lease_ttl_s", "long_poll_timeout_s"});
  LeaseAnswer answer;
  JsonReader r(known, "lease answer");
  // `job` (null when there is no work) and `draining` are always sent: an object without them
  // (a problem document sent with 200, a proxy's page) is not "no work".
  std::optional<nlohmann::json> job;  // an object, or null
  r.required("job", job);
  r.required("draining", answer.draining);
  read_intervals(r, answer.intervals);
  BF_RETURN_IF_ERROR(r.finish());
  if (job) {
    BF_ASSIGN_OR_RETURN(answer.job, decode_leased_job(*job, "lease answer.job"));
  }
  return answer;
}

Result<HeartbeatAnswer> decode_heartbeat_answer(std::string_view body, std::size_t sent) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(body, "heartbeat answer"));
  const nlohmann::json known = known_members(j, {"leases", "drain"});
  HeartbeatAnswer out;
  JsonReader r(known, "heartbeat answer");
  std::vector<nlohmann::json> leases;  // objects: decode_value(json&) accepts objects only
  r.required("leases", leases);
  r.required("drain", out.drain);
  r.check(leases.size() == sent, "leases", "must list the " + std::to_string(sent) + " lease(s) sent");
  BF_RETURN_IF_ERROR(r.finish());
  for (std::size_t i = 0; i < leases.size(); ++i) {
    std::string state;
    const nlohmann::json lease = known_members(leases[i], {"state"});
    JsonReader lr(lease, "heartbeat answer.leases[" + std::to_string(i) + "]");
    lr.required("state", state);
    // An unknown state is an unreadable answer, not a lost lease: it must not stop a job.
    lr.check(state == "active" || state == "lost" || state == "cancelled", "state",
             "must be active, lost or cancelled");
    BF_RETURN_IF_ERROR(lr.finish());
    out.leases.push_back(state == "active" ? Renewal::kActive
                         : state == "cancelled" ? Renewal::kCancelled
                                                : Renewal::kLost);
  }
  return out;
}

Renewal decode_conflict(std::string_view body) {
  auto j = parse_json(body);
  if (!j.ok() || !j->is_object()) return Renewal::kLost;
  const auto reason = j->find("reason");
  return reason != j->end() && reason->is_string() && reason->get_ref<const std::string&>() == "cancelled"
             ? Renewal::kCancelled
             : Renewal::kLost;
}

Result<ExporterAnswer> decode_exporter_metadata(const nlohmann::json& j) {
  const std::string what = "exporter answer";
  if (!j.is_object()) return Error::invalid(what, std::string("must be a JSON object, got ") + j.type_name());
  // A failure's other members are not read: only its message explains it (an export_s of a
  // failed export is no reason to lose that message as "not a known field").
  const auto status = j.find("status");
  const bool ok = status != j.end() && *status == "ok";
  const nlohmann::json known = ok ? known_members(j, {"status", "artifact", "inputs", "export_s", "inductor_cache"})
                                  : known_members(j, {"status"});
  ExporterAnswer out;
  JsonReader r(known, what);
  r.required("status", out.status);
  r.check(out.status == "ok" || out.status == "error" || out.status == "unsupported", "status",
          "must be ok, error or unsupported");
  if (out.status == "ok") {
    r.optional("artifact", out.artifact);
    r.optional("inputs", out.inputs);
    r.optional("export_s", out.export_s);
    r.optional("inductor_cache", out.inductor_cache);
    r.check(is_plain_file_name(out.artifact), "artifact", "must be a file name inside the export folder");
    r.check(!out.export_s || *out.export_s >= 0, "export_s", "must be >= 0");
  }
  BF_RETURN_IF_ERROR(r.finish());
  // The message only explains a failure: any string will do, cut to a readable length.
  if (auto m = j.find("message"); m != j.end() && m->is_string()) {
    out.message = m->get_ref<const std::string&>().substr(0, kMaxMessageBytes);
  }
  out.metadata = j;
  return out;
}

Result<ExporterAnswer> decode_exporter_answer(std::string_view text) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(text, "exporter answer"));
  return decode_exporter_metadata(j);
}

Result<Capabilities> decode_capabilities(std::string_view text) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(text, "--capabilities answer"));
  const nlohmann::json known = known_members(j, {"torch_version", "torch_git", "library_dirs", "modes"});
  Capabilities out;
  nlohmann::json modes = nlohmann::json::object();
  JsonReader r(known, "--capabilities answer");
  r.optional("torch_version", out.torch_version);
  r.optional("torch_git", out.torch_git);
  r.optional("library_dirs", out.library_dirs);
  r.optional("modes", modes);
  for (const auto& dir : out.library_dirs) {
    r.check(!dir.empty() && dir.front() == '/', "library_dirs", "must list absolute paths");
  }
  BF_RETURN_IF_ERROR(r.finish());
  for (const auto& [device, list] : modes.items()) {
    BF_ASSIGN_OR_RETURN(out.modes[device], decode<std::vector<Mode>>(list, "--capabilities answer.modes." + device));
  }
  return out;
}

Result<JobResult> decode_worker_result(std::string_view text) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(text, "result"));
  return decode<JobResult>(j);
}

Result<std::string> read_file_bounded(const std::string& path, std::size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::not_found(path + " does not exist");
  if (!S_ISREG(st.st_mode)) return Error::invalid(path, "is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Error::invalid(path, "is larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::internal("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string out = std::move(text).str();
  if (out.size() > max_bytes) return Error::invalid(path, "is larger than " + std::to_string(max_bytes) + " bytes");
  return out;
}

}  // namespace benchfleet::agent
