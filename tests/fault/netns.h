// A network partition for the fault suite (R3): two network namespaces joined by a
// veth pair with private addresses (10.231.N.1/30 and .2), made with ip(8), and a cut of the
// link between them that drops every packet while both ends stay up, so connections in flight
// hang as across a real partition instead of failing fast. Nothing is added to the host's own
// network: the veth ends are created inside the namespaces.
//
//   auto pair = NetnsPair::create("bf");        // bf-coord-<pid>, bf-agent-<pid>
//   child argv: pair->exec_in(pair->coord_ns()) + {"benchfleet-coordinator", ...}
//   auto method = pair->cut();                  // ... partitioned ...
//   pair->heal();
//   auto body = in_network_namespace(pair->coord_ns(), [&] { return client.get(...); });
//
// Needs CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns add mounts, setns); has_network_admin() says.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/result.h"

namespace benchfleet::testing {

// Whether this process holds the capabilities to make namespaces, links and qdiscs, and ip(8)
// and tc(8) are installed. When not, `why_not` says what is missing.
bool has_network_admin(std::string& why_not);

// Runs `argv` (argv[0] an absolute path) and waits for it; its stdout and stderr together, or an
// error quoting them when it exits non-zero.
Result<std::string> run_command(const std::vector<std::string>& argv);

// How cut() drops the packets.
enum class CutMethod {
  kNetemLoss,  // tc qdisc netem loss 100% on both ends
  kDropQueue,  // tc qdisc pfifo limit 0 on both ends: every packet dropped (no sch_netem)
  kLinkDown,   // ip link set down on both ends (neither qdisc available): connections see no carrier
};
std::string describe(CutMethod method);

// Two namespaces "<prefix>-coord-<pid>" and "<prefix>-agent-<pid>" joined by a veth pair. Not
// thread-safe. The destructor heals and deletes both (their veth ends go with them).
class NetnsPair {
 public:
  // First deletes namespaces of this prefix left by an earlier run that died (its pid is no live
  // process, or is ours), then creates the pair with loopback and the veth ends up.
  static Result<std::unique_ptr<NetnsPair>> create(const std::string& prefix);

  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;
  // REQUIRES: the processes started in the namespaces were stopped (a namespace with a process
  // left in it outlives its name).
  ~NetnsPair();

  const std::string& coord_ns() const { return coord_ns_; }
  const std::string& agent_ns() const { return agent_ns_; }
  const std::string& coord_address() const { return coord_address_; }  // 10.231.N.1
  const std::string& agent_address() const { return agent_address_; }  // 10.231.N.2
  // The argv prefix that runs a program in `ns` in its own place (ip netns exec execs it).
  std::vector<std::string> exec_in(const std::string& ns) const;

  // Drops every packet both ways (see CutMethod: the first that works). REQUIRES: not cut.
  Result<CutMethod> cut();
  // Undoes cut(); packets flow again.
  Status heal();
  bool is_cut() const { return method_.has_value(); }

 private:
  NetnsPair() = default;
  Status run_in_both(const std::vector<std::string>& coord_args, const std::vector<std::string>& agent_args);

  std::string coord_ns_, agent_ns_, coord_if_, agent_if_, coord_address_, agent_address_;
  std::optional<CutMethod> method_;
  bool created_ = false;
};

// Moves the calling thread (only it) into network namespace `ns`.
Status enter_network_namespace(const std::string& ns);

// Runs `f` on a thread of its own that entered `ns` first, so the sockets `f` opens live there
// (a client of a coordinator bound to a namespace's address). Blocks until `f` returns; an
// exception it throws is thrown again here.
template <class F>
auto in_network_namespace(const std::string& ns, F&& f) -> Result<std::invoke_result_t<F&>> {
  std::optional<std::invoke_result_t<F&>> out;
  Status entered;
  std::exception_ptr thrown;
  std::thread thread([&] {
    try {
      entered = enter_network_namespace(ns);
      if (entered.ok()) out.emplace(f());
    } catch (...) {
      thrown = std::current_exception();
    }
  });
  thread.join();
  if (thrown) std::rethrow_exception(thrown);
  if (!entered.ok()) return entered.error();
  return std::move(*out);
}

}  // namespace benchfleet::testing
