#include "agent/daemon/agent_codecs.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "common/codecs.h"
#include "common/json_reader.h"

namespace benchfleet::agent {
namespace {

constexpr std::size_t kMaxMessageBytes = 4096;

Result<nlohmann::json> parse_object(std::string_view text, const std::string& what) {
  auto j = parse_json(text);
  if (!j.ok()) return Error::invalid(what, j.error().message);
  if (!j->is_object()) return Error::invalid(what, std::string("must be a JSON object, got ") + j->type_name());
  return j;
}

// A file name inside one folder: no separator, not "." or "..".
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

Result<EnrollResponse> decode_enrollment_answer(std::string_view body) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(body, "enrolment answer"));
  return decode<EnrollResponse>(j, "enrolment answer");
}

Result<LeaseResponse> decode_lease_answer(std::string_view body) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(body, "lease answer"));
  return decode<LeaseResponse>(j, "lease answer");
}

Result<HeartbeatResponse> decode_heartbeat_answer(std::string_view body, std::size_t sent) {
  BF_ASSIGN_OR_RETURN(const nlohmann::json j, parse_object(body, "heartbeat answer"));
  BF_ASSIGN_OR_RETURN(HeartbeatResponse out, decode<HeartbeatResponse>(j, "heartbeat answer"));
  if (out.leases.size() != sent) {
    return Error::invalid("heartbeat answer.leases", "must list the " + std::to_string(sent) + " lease(s) sent");
  }
  return out;
}

LeaseState decode_conflict(std::string_view body) {
  auto j = parse_json(body);
  if (!j.ok() || !j->is_object()) return LeaseState::kLost;
  const auto reason = j->find("reason");
  return reason != j->end() && reason->is_string() && reason->get_ref<const std::string&>() == "cancelled"
             ? LeaseState::kCancelled
             : LeaseState::kLost;
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
