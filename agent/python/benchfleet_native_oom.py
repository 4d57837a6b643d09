"""Out-of-memory in native code that does not report it, under the CPU memory cap (RLIMIT_AS):
the Python runner's counterpart of agent/worker/native_oom.cpp.

Under the cap, torch's allocations fail cleanly (a RuntimeError the runner reports as oom), but
two libraries below it end the process instead: oneDNN's JIT writes a kernel through the null
pointer a failed mmap returned (SIGSEGV), and libgomp exits (code 1) when it cannot map a new
thread's stack. Python cannot catch either (a Python signal handler only runs between bytecodes,
and a SIGSEGV would fault again before that), so a job with a CPU cap runs in a child process:

    result = run_capped(measure)   # measure(hooks) -> result dict, run in the child

The parent forks before torch is imported (it is single-threaded then) and never applies the
cap itself. The child reports over a pipe, as JSON lines: the fingerprint (before the cap), the
absolute cap once applied, each phase, and finally its result. The parent samples the child's
peak address space (VmPeak) every 20 ms. If the child ends without a result:
  - killed by SIGSEGV, SIGBUS or SIGABRT, or exited, with its address space within
    AT_CAP_MARGIN of the cap: oom in the last phase it reported, with a message saying so;
  - killed by any other signal, or far from the cap: crash with that signal, the phase and the
    address-space peak in the message (the worker would have died of it: the agent's crash);
  - exited otherwise: error, native code exited the runner mid-job.
A sampled peak can only be below the real one, so the margin is wider than the worker's 64 MiB.
"""

from __future__ import annotations

import json
import os
import select
import signal
import traceback
from typing import Any, Callable, Dict, List, Optional

from benchfleet_job import Hooks, failed

# How close the sampled peak address space must have come to the cap for a native death to
# count as out-of-memory: the unchecked requests seen (a 256 KiB JIT buffer, an 8 MiB thread
# stack) plus what the process may have mapped between two samples.
AT_CAP_MARGIN = 128 << 20
_SAMPLE_EVERY_S = 0.02
_NATIVE_FAULTS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT)


class _Channel(Hooks):
    """The child's end: the hooks run_job calls, sent to the parent as JSON lines (progress still
    goes to stderr)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send(self, message: Dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def phase(self, name: str) -> None:
        self.send({"phase": name})

    def environment(self, env: Dict[str, Any]) -> None:
        self.send({"environment": env})

    def memory_cap(self, rlimit_as_bytes: int) -> None:
        self.send({"cap_bytes": rlimit_as_bytes})


def _die_with_parent() -> None:
    """SIGKILL for the child when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))
    except (OSError, AttributeError):
        pass


def _run_child(fd: int, measure: Callable[[Hooks], Dict[str, Any]]) -> None:
    code = 1
    try:
        _die_with_parent()
        channel = _Channel(fd)
        try:
            result = measure(channel)
        except Exception as e:  # a verdict, never a bare traceback
            traceback.print_exc()
            result = failed("error", f"benchfleet-runner failed: {type(e).__name__}: {e}"[:4000])
        channel.send({"result": result})
        code = 0
    except BaseException:  # the parent reports a child without a result
        traceback.print_exc()
    finally:
        os._exit(code)  # no interpreter teardown: the parent has what it needs


def proc_status_bytes(key: str, pid: str = "self") -> int:
    """A size from /proc/<pid>/status ("VmPeak", "VmSize"...) in bytes; 0 if unknown."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class _Report:
    """What the child said so far."""

    def __init__(self) -> None:
        self.phase = "load"
        self.environment: Dict[str, Any] = {}
        self.cap_bytes: Optional[int] = None
        self.result: Optional[Dict[str, Any]] = None
        self.vm_peak = 0

    def take(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:  # cannot happen for whole lines; a verdict matters more than one line
            return
        self.phase = message.get("phase", self.phase)
        self.environment = message.get("environment", self.environment)
        self.cap_bytes = message.get("cap_bytes", self.cap_bytes)
        self.result = message.get("result", self.result)


def _follow(pid: int, fd: int) -> _Report:
    """Reads the child's messages until it closes the pipe, sampling its peak address space."""
    report = _Report()
    pending: List[bytes] = []
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], _SAMPLE_EVERY_S)
            report.vm_peak = max(report.vm_peak, proc_status_bytes("VmPeak", str(pid)))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            if b"\n" not in chunk:
                pending.append(chunk)
                continue
            lines = b"".join(pending + [chunk]).split(b"\n")
            pending = [lines.pop()]
            for line in lines:
                report.take(line)
    return report


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"


def _verdict(report: _Report, wait_status: int, export_s: Optional[float]) -> Dict[str, Any]:
    """The result for a child that ended without one."""
    at_cap = report.cap_bytes is not None and report.vm_peak + AT_CAP_MARGIN >= report.cap_bytes
    signalled = os.WIFSIGNALED(wait_status)
    if signalled:
        number = os.WTERMSIG(wait_status)
        how = f"killed by signal {number} ({signal.Signals(number).name})"
    else:
        number = 0
        how = f"exited with code {os.WEXITSTATUS(wait_status)}"
    memory = (f"address space peak {_mib(report.vm_peak)} of a {_mib(report.cap_bytes)} cap"
              if report.cap_bytes is not None else "before the memory cap was applied")
    if at_cap and (not signalled or number in _NATIVE_FAULTS):
        result = failed("oom", (
            "out of memory: native code could not allocate under the memory cap and ended the process instead "
            "of reporting it (a SIGSEGV in oneDNN's JIT, or libgomp unable to start a thread); the runner's "
            f"measuring process was {how} in phase {report.phase}, {memory}"))
        result["oom"] = {"phase": report.phase}
    elif signalled:
        result = failed("crash", f"the runner's measuring process was {how} in phase {report.phase} ({memory})")
        result["signal"] = number
    else:
        result = failed("error", (f"native code exited the runner's measuring process mid-job: {how} in phase "
                                  f"{report.phase} ({memory}); its message is on stderr"))
    result["environment"] = report.environment
    if export_s is not None:
        result["export_s"] = export_s
    return result


def run_capped(measure: Callable[[Hooks], Dict[str, Any]], export_s: Optional[float] = None) -> Dict[str, Any]:
    """Runs measure(hooks) in a forked child and returns its result, or the verdict on how it
    ended when it could not report one. REQUIRES: no threads in this process (fork)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _run_child(write_fd, measure)
    os.close(write_fd)
    try:
        report = _follow(pid, read_fd)
    finally:
        _, wait_status = os.waitpid(pid, 0)
    return report.result if report.result is not None else _verdict(report, wait_status, export_s)
