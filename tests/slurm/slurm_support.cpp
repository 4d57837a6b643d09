#include "tests/slurm/slurm_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere else

namespace benchfleet::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kClusterScript = std::string(BENCHFLEET_SOURCE_DIR) + "/tests/slurm/slurm-cluster.sh";

// "k1=v1 k2=v2 ..." (Slurm's one-line records) as a map; a value runs to the next space.
std::map<std::string, std::string> key_values(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string token;
  while (in >> token) {
    const auto eq = token.find('=');
    if (eq != std::string::npos) out[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return out;
}

// Removes every SLURM_* variable from this process's environment (a test started inside a Slurm
// job must not hand that job's identity to the cluster's jobs or to its stop script).
void unset_slurm_environment() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("SLURM_", 0) == 0) names.push_back(entry.substr(0, entry.find('=')));
  }
  for (const auto& name : names) ::unsetenv(name.c_str());
}

}  // namespace

std::string sh_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Captured capture(const std::string& command, std::chrono::seconds limit) {
  const std::string line =
      "timeout -k 5 " + std::to_string(limit.count()) + " /bin/sh -c " + sh_quote(command) + " 2>&1";
  Captured result;
  FILE* pipe = ::popen(line.c_str(), "re");
  if (pipe == nullptr) {
    result.output = "popen failed";
    return result;
  }
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) result.output.append(buf, n);
  const int status = ::pclose(pipe);
  result.code = status == -1 ? -1 : exit_code(status);
  return result;
}

// ---- SlurmCluster -----------------------------------------------------------------------------

SlurmCluster::SlurmCluster(std::string dir) : dir_(std::move(dir)) {
  unset_slurm_environment();
  // The reaper first, so even a start that fails half-way is cleaned up: `cat` sees EOF when the
  // last write end of its stdin closes, which the kernel does when this process ends.
  const std::string reaper =
      "cat >/dev/null; " + sh_quote(kClusterScript) + " stop " + sh_quote(dir_) + " >/dev/null 2>&1";
  reaper_ = ::popen(reaper.c_str(), "we");
  if (reaper_ == nullptr) throw std::runtime_error("cannot start the cluster's reaper");
  const Captured started = capture(sh_quote(kClusterScript) + " start " + sh_quote(dir_), 90s);
  if (started.code != 0 || started.output.find("export SLURM_CONF=" + conf()) == std::string::npos) {
    throw std::runtime_error("slurm-cluster.sh start " + dir_ + " failed (exit " + std::to_string(started.code) +
                             "):\n" + started.output);
  }
  ::setenv("SLURM_CONF", conf().c_str(), 1);
}

SlurmCluster::~SlurmCluster() {
  if (reaper_ != nullptr) ::pclose(reaper_);  // EOF for `cat`: the stop runs; pclose waits for it
}

std::optional<std::vector<SlurmJobRow>> SlurmCluster::squeue(const std::string& job_name, std::string* error) const {
  const Captured out = capture("squeue -h -r -n " + sh_quote(job_name) + " -o '%i %T'", 20s);
  if (out.code != 0) {
    if (error != nullptr) *error = out.output;
    return std::nullopt;
  }
  std::vector<SlurmJobRow> rows;
  std::istringstream in(out.output);
  SlurmJobRow row;
  while (in >> row.id >> row.state) rows.push_back(row);
  return rows;
}

bool SlurmCluster::scancel(const std::string& job_id) const { return capture("scancel " + sh_quote(job_id)).code == 0; }

bool SlurmCluster::cancel_all(std::chrono::seconds limit) const {
  capture("scancel --user=\"$(id -un)\"");
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const Captured out = capture("squeue -h -o %i", 10s);
    if (out.code == 0 && out.output.find_first_not_of(" \n") == std::string::npos) return true;
    std::this_thread::sleep_for(500ms);
  }
  return false;
}

std::map<std::string, CompletedJob> SlurmCluster::completed_jobs() const {
  std::map<std::string, CompletedJob> jobs;
  std::ifstream in(dir_ + "/jobcomp.txt");
  std::string line;
  while (std::getline(in, line)) {
    auto kv = key_values(line);
    if (!kv.contains("JobId")) continue;
    jobs[kv["JobId"]] = {kv["JobId"], kv["Name"], kv["JobState"], kv["StartTime"], kv["EndTime"], kv["TimeLimit"]};
  }
  return jobs;
}

std::map<std::string, std::string> SlurmCluster::show_job(const std::string& job_id) const {
  const Captured out = capture("scontrol show job -o " + sh_quote(job_id), 20s);
  if (out.code != 0) return {};
  return key_values(out.output);
}

std::string SlurmCluster::log_tails() const {
  return "---- slurmctld.log\n" + file_tail(dir_ + "/slurmctld.log", 3000) + "\n---- slurmd.log\n" +
         file_tail(dir_ + "/slurmd.log", 3000) + "\n";
}

// ---- LauncherProcess --------------------------------------------------------------------------

LauncherProcess::LauncherProcess(std::string config, std::string log_file, std::vector<std::string> extra_args)
    : log_file_(std::move(log_file)) {
  ChildOptions o;
  o.argv = {BENCHFLEET_SLURM_LAUNCHER_BIN, "--config", std::move(config), "--log-level", "debug"};
  o.argv.insert(o.argv.end(), extra_args.begin(), extra_args.end());
  o.log_file = log_file_;
  o.clean_environment = true;  // SLURM_CONF (the test cluster's) stays
  auto child = ChildProcess::start(o);
  if (!child.ok()) throw std::runtime_error("cannot start benchfleet-slurm-launcher: " + child.error().message);
  child_ = std::move(*child);
}

LauncherProcess::~LauncherProcess() { stop(std::chrono::seconds(5)); }

int LauncherProcess::stop(std::chrono::milliseconds grace) {
  if (!child_.running()) return -1;
  return child_.stop(grace).status;
}

std::optional<int> LauncherProcess::wait_exit(std::chrono::milliseconds limit) { return child_.wait_exit(limit); }

std::string LauncherProcess::log_tail(std::size_t max_bytes) const { return file_tail(log_file_, max_bytes); }

// ---- timeline -----------------------------------------------------------------------------------

std::vector<json> read_timeline(const std::string& path) {
  std::vector<json> events;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
    events.push_back(event.is_object() ? std::move(event) : json{{"unparsed", line}});
  }
  return events;
}

std::vector<std::string> timeline_ids(const std::vector<json>& events, const std::string& event) {
  std::vector<std::string> ids;
  for (const auto& e : events) {
    if (e.value("event", "") == event) ids.push_back(e.value("slurm_job_id", ""));
  }
  return ids;
}

int max_outstanding(const std::vector<json>& events) {
  int outstanding = 0;
  int most = 0;
  for (const auto& e : events) {
    const std::string kind = e.value("event", "");
    if (kind == "submitted") outstanding += e.value("count", 1);
    if (kind == "ended") --outstanding;
    most = std::max(most, outstanding);
  }
  return most;
}

std::optional<std::string> allocation_of_agent(const std::string& agent_name) {
  static const std::regex name(R"(slurm-bftest-(\d+(_\d+)?))");
  std::smatch m;
  if (!std::regex_match(agent_name, m, name)) return std::nullopt;
  return m[1].str();
}

}  // namespace benchfleet::testing
