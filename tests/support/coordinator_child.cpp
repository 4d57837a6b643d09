#include "tests/support/coordinator_child.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kLogTailBytes = 8192;  // of the log, quoted in start-up errors

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::string coordinator_binary() {
  if (const char* env = std::getenv("BENCHFLEET_COORDINATOR_BIN"); env != nullptr && *env != '\0') return env;
  return BENCHFLEET_COORDINATOR_BIN;
}

LaunchOptions launch_in(const std::string& dir, std::map<std::string, std::string> flags) {
  LaunchOptions launch;
  launch.flags = {{"--db", dir + "/coordinator.db"}};
  for (auto& [flag, value] : flags) launch.flags[flag] = std::move(value);
  launch.port_file = dir + "/port";
  launch.log_file = dir + "/coordinator.log";
  launch.clean_environment = true;
  return launch;
}

Result<std::unique_ptr<CoordinatorChild>> start_bench_coordinator(const std::string& dir, const std::string& binary,
                                                                  const std::string& operator_token,
                                                                  const std::string& enrollment_token) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error::invalid("dir", "cannot create " + dir + ": " + ec.message());
  LaunchOptions launch = launch_in(
      dir, {{"--operator-token", operator_token}, {"--enrollment-token", enrollment_token}, {"--log-level", "warn"}});
  launch.binary = binary;
  return CoordinatorChild::start(launch);
}

Result<std::string> work_directory(const std::string& requested, const std::string& prefix, bool& made) {
  made = false;
  if (!requested.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(requested, ec);
    if (ec) return Error::invalid("dir", "cannot create " + requested + ": " + ec.message());
    return requested;
  }
  try {
    TempDir dir(prefix);
    dir.keep();  // the caller removes it
    made = true;
    return dir.str();
  } catch (const std::exception& e) {
    return Error::internal(e.what());
  }
}

int free_loopback_port() {
  int low = 32768;  // the start of the ephemeral range: Linux's default when unreadable
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  const int first = 10000;
  if (low <= first + 100) return 0;
  std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(first, low - 1);
  for (int tries = 0; tries < 200; ++tries) {
    const int port = pick(rng);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free) return port;
  }
  return 0;
}

Result<std::unique_ptr<CoordinatorChild>> CoordinatorChild::start(const LaunchOptions& options) {
  ::unlink(options.port_file.c_str());
  ChildOptions child_options;
  child_options.argv = options.wrapper;
  child_options.argv.insert(child_options.argv.end(),
                            {options.binary, "--listen", options.listen_address + ":" + std::to_string(options.port),
                             "--port-file", options.port_file});
  for (const auto& [flag, value] : options.flags) {
    child_options.argv.push_back(flag);
    child_options.argv.push_back(value);
  }
  child_options.log_file = options.log_file;
  child_options.append_log = options.append_log;
  child_options.clean_environment = options.clean_environment;
  auto process = ChildProcess::start(child_options);
  if (!process.ok()) {
    return Error{process.error().code, "coordinator: " + process.error().message, {}};
  }
  std::unique_ptr<CoordinatorChild> child(new CoordinatorChild(std::move(*process)));

  const auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
  while (true) {
    if (auto status = child->process_.poll()) {
      return Error::internal("benchfleet-coordinator (" + options.binary + ") exited during start-up with " +
                             describe_wait_status(*status) + "; its log ends with:\n" +
                             file_tail(options.log_file, kLogTailBytes));
    }
    // The coordinator writes "<port>\n": without the newline the file may be half written.
    const std::string text = read_file(options.port_file);
    if (!text.empty() && text.back() == '\n') {
      child->port_ = std::atoi(text.c_str());
      if (child->port_ > 0) return child;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      child->kill9();
      return Error::internal("benchfleet-coordinator wrote no port file " + options.port_file + " within " +
                             std::to_string(options.start_timeout.count()) + " ms; its log ends with:\n" +
                             file_tail(options.log_file, kLogTailBytes));
    }
    std::this_thread::sleep_for(10ms);
  }
}

CoordinatorChild::~CoordinatorChild() { kill9(); }

CoordinatorChild::Exit CoordinatorChild::stop(std::chrono::milliseconds grace) {
  const ChildProcess::Exit exit = process_.stop(grace);
  return Exit{exit.status, exit.killed_after_grace};
}

void CoordinatorChild::kill9() { process_.kill9(); }

}  // namespace benchfleet::testing
