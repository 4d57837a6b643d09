// Out-of-memory in native code that does not report it, under the CPU memory cap (RLIMIT_AS).
//
// LibTorch's own allocations fail cleanly under the cap (an exception run_job turns into oom),
// but two libraries below it end the process instead:
//  - oneDNN's JIT (its Xbyak is built with XBYAK_NO_EXCEPTION) maps a buffer for each kernel
//    it generates and, when that mmap fails, writes the kernel through the null pointer it got
//    back: SIGSEGV;
//  - libgomp exits (code 1, "Thread creation failed") when it cannot map a new thread's stack;
//    it starts threads again whenever a team grows back after oneDNN ran a smaller one.
// Nothing of ours fails first, so the end of the process is the only sign of the out-of-memory.
#pragma once

#include <signal.h>

#include <array>
#include <atomic>
#include <string>

#include "agent/worker/result_output.h"
#include "common/types.h"

namespace benchfleet::worker {

// What a NativeOomGuard reports, rendered in advance: its handlers may not allocate (and under
// a cap of a few MB could not).
struct NativeFailureVerdicts {
  std::array<std::string, 4> oom;  // indexed by OomPhase
  std::string exited;              // status error: native code exited the process mid-job
};

// While alive, the job's end by native code is still reported as a verdict, written to `output`
// as main would have written the result, with the exit code to match:
//  - a SIGSEGV at an address near 0 while the address space is at the cap: `oom[phase]`; any
//    other SIGSEGV goes on to the previous action (a crash, as before);
//  - exit() called by native code: `oom[phase]` if the address space is at the cap, else
//    `exited`.
// REQUIRES: at most one guard at a time; `phase`, `verdicts` and `output` outlive it.
class NativeOomGuard {
 public:
  NativeOomGuard(const std::atomic<OomPhase>& phase, const NativeFailureVerdicts& verdicts, const ResultOutput& output);
  ~NativeOomGuard();  // restores the previous SIGSEGV action; exit() is normal again
  NativeOomGuard(const NativeOomGuard&) = delete;
  NativeOomGuard& operator=(const NativeOomGuard&) = delete;

 private:
  static void on_fault(int signal, siginfo_t* info, void* context);
  static void on_exit();
  // Writes the verdict and ends the process. Once only: a second caller waits for the end.
  [[noreturn]] void report(bool out_of_memory, const char* why) const;

  const std::atomic<OomPhase>& phase_;
  const NativeFailureVerdicts& verdicts_;
  const ResultOutput& output_;
  long page_size_;
  int oom_exit_code_;
  int error_exit_code_;
  struct sigaction previous_ {};
};

}  // namespace benchfleet::worker
