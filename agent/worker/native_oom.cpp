#include "agent/worker/native_oom.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/measurement.h"

namespace benchfleet::worker {
namespace {

// A failed allocation is written through at a small offset from 0; nothing is mapped this low.
constexpr std::uintptr_t kNearNull = 1 << 20;
// How close to the cap the address space must be for a failure to count as out-of-memory: more
// than the unchecked requests seen (a 256 KiB JIT buffer, an 8 MiB thread stack).
constexpr std::uint64_t kAtCapMargin = 64ull << 20;

// The guard the handlers report for; a signal or exit handler can reach nothing else.
std::atomic<const NativeOomGuard*> active_guard{nullptr};
static_assert(std::atomic<const NativeOomGuard*>::is_always_lock_free && std::atomic<OomPhase>::is_always_lock_free,
              "read in a signal handler");

// VmSize in pages, from /proc/self/statm, with async-signal-safe calls only; 0 if unknown.
std::uint64_t virtual_size_pages() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[64];
  const ssize_t n = ::read(fd, text, sizeof text);
  ::close(fd);
  std::uint64_t pages = 0;
  for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) pages = pages * 10 + (text[i] - '0');
  return pages;
}

bool address_space_at_cap(long page_size) {
  rlimit cap{};
  // A bare system call (no lock, no allocation): safe in a handler although POSIX does not list it.
  if (::getrlimit(RLIMIT_AS, &cap) != 0 || cap.rlim_cur == RLIM_INFINITY) return false;
  const std::uint64_t used = virtual_size_pages() * static_cast<std::uint64_t>(page_size);
  return used > 0 && used + kAtCapMargin >= cap.rlim_cur;
}

void write_stderr(const char* text) { (void)::write(STDERR_FILENO, text, std::strlen(text)); }

}  // namespace

NativeOomGuard::NativeOomGuard(const std::atomic<OomPhase>& phase, const NativeFailureVerdicts& verdicts,
                               const ResultOutput& output)
    : phase_(phase),
      verdicts_(verdicts),
      output_(output),
      page_size_(::sysconf(_SC_PAGESIZE)),
      oom_exit_code_(exit_code_for(ResultStatus::kOom)),
      error_exit_code_(exit_code_for(ResultStatus::kError)) {
  active_guard.store(this);
  struct sigaction action {};
  action.sa_sigaction = &NativeOomGuard::on_fault;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_);
  // Registered just before the job (one per process): exit handlers run last-registered first,
  // so this one reports before the destructors of what LibTorch set up earlier have run.
  static const bool registered = std::atexit(&NativeOomGuard::on_exit) == 0;
  (void)registered;
}

NativeOomGuard::~NativeOomGuard() {
  sigaction(SIGSEGV, &previous_, nullptr);
  active_guard.store(nullptr);
}

void NativeOomGuard::report(bool out_of_memory, const char* why) const {
  static std::atomic_flag reporting = ATOMIC_FLAG_INIT;
  if (reporting.test_and_set()) {
    while (true) ::pause();  // another thread is reporting; it ends the process
  }
  write_stderr("benchfleet-worker: ");
  write_stderr(why);
  write_stderr(out_of_memory ? " with the address space at the memory cap: reporting oom\n"
                             : " during the job: reporting an error\n");
  const std::string& verdict =
      out_of_memory ? verdicts_.oom[static_cast<std::size_t>(phase_.load())] : verdicts_.exited;
  const bool written = output_.write({verdict});
  ::_exit(!written ? error_exit_code_ : out_of_memory ? oom_exit_code_ : error_exit_code_);  // as main does
}

void NativeOomGuard::on_fault(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  const NativeOomGuard* guard = active_guard.load();
  if (guard == nullptr) return;  // being removed: the fault runs again under the previous action
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (info->si_code == SEGV_MAPERR && address < kNearNull && address_space_at_cap(guard->page_size_)) {
    guard->report(true, "SIGSEGV near address 0 (native code wrote through a failed allocation)");
  }
  // Not an out-of-memory: the previous action (by default a crash with a core dump) takes the
  // fault when the faulting instruction runs again on return.
  sigaction(SIGSEGV, &guard->previous_, nullptr);
}

void NativeOomGuard::on_exit() {
  const NativeOomGuard* guard = active_guard.load();
  if (guard == nullptr) return;  // a normal exit, after the job
  guard->report(address_space_at_cap(guard->page_size_), "native code called exit()");
}

}  // namespace benchfleet::worker
