"""Timing the calls of the python runner's measurement loop, as the worker's
agent/worker/timing.cpp and cuda.cpp: the CPU's steady clock around each call (CpuTimer), CUDA
event pairs read in batches (CudaEventTimer), and when a loop reads its timer (HarvestSchedule).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, List, Optional

import torch


# ---- timers (agent/worker/timing.cpp, cuda.cpp) ------------------------------------------------

# Test only: BENCHFLEET_TEST_SLOWDOWN="BUILD:MODEL=FACTOR" makes every timed CPU call of MODEL
# (* for any) in the torch build named BUILD (the agent's BENCHFLEET_BUILD) FACTOR times as long, by spinning
# after the call: "a build that is 10% slower" for the A/A benchmark (bench/aa_noise.sh), which
# checks that the comparison finds such a step. Anything else (unset, another build or model, a
# malformed value) is no slowdown.
SLOWDOWN_VARIABLE = "BENCHFLEET_TEST_SLOWDOWN"


def test_slowdown(model: str, environ: Optional[dict] = None) -> float:
    env = os.environ if environ is None else environ
    spec = env.get(SLOWDOWN_VARIABLE, "")
    target, _, factor = spec.rpartition("=")
    build, _, slowed_model = target.partition(":")
    if not spec or build != env.get("BENCHFLEET_BUILD") or slowed_model not in (model, "*"):
        return 1.0
    try:
        value = float(factor)
    except ValueError:
        return 1.0
    return value if 1.0 <= value <= 10.0 else 1.0


class CpuTimer:
    """CPU work is synchronous: the steady clock around the call is the iteration's time.
    slowdown: test_slowdown's factor (1.0: none)."""

    def __init__(self, slowdown: float = 1.0) -> None:
        self._pending: List[float] = []
        self._slowdown = slowdown

    def time(self, fn: Callable[[], None]) -> None:
        start = time.perf_counter_ns()
        fn()
        if self._slowdown > 1.0:
            until = start + (time.perf_counter_ns() - start) * self._slowdown
            while time.perf_counter_ns() < until:
                pass
        self._pending.append((time.perf_counter_ns() - start) / 1e6)

    def harvest(self, samples_ms: List[float]) -> None:
        samples_ms.extend(self._pending)
        self._pending.clear()


def _timing_event() -> Any:
    return torch.cuda.Event(enable_timing=True)


class CudaEventTimer:
    """An event pair per call on the current stream; one synchronize per harvest. The pairs of
    `batch` calls are made up front and reused after each harvest (more are made, before the
    timed window, if a batch runs longer). torch.cuda.Event creates its CUDA event at its first
    record, so each new event is recorded once when made, not first inside a timed call.
    make_event: for tests (default: a timing torch.cuda.Event)."""

    def __init__(self, batch: int, make_event: Optional[Callable[[], Any]] = None) -> None:
        self._make_event = make_event or _timing_event
        self._pool: List[Any] = []
        self._used = 0  # pairs recorded since the last harvest
        self._grow(max(1, batch))

    def _grow(self, more: int) -> None:
        for _ in range(more):
            start, stop = self._make_event(), self._make_event()
            start.record()
            stop.record()
            self._pool.append((start, stop))

    def time(self, fn: Callable[[], None]) -> None:
        if self._used == len(self._pool):
            self._grow(len(self._pool))
        start, stop = self._pool[self._used]
        self._used += 1
        start.record()
        fn()
        stop.record()

    def harvest(self, samples_ms: List[float]) -> None:
        if not self._used:
            return
        self._pool[self._used - 1][1].synchronize()  # one wait for the whole batch
        samples_ms.extend(float(start.elapsed_time(stop)) for start, stop in self._pool[:self._used])
        self._used = 0


# On CUDA a harvest synchronizes with the device: once per this many timed calls, or once per
# interval when calls are slower (agent/worker/measure.cpp's constants).
CUDA_HARVEST_BATCH = 16
HARVEST_INTERVAL_S = 0.25


class HarvestSchedule:
    """agent/worker/timing.h HarvestSchedule: when a measurement loop harvests its timer. Due once
    `batch` calls are pending, or once `interval_s` has passed since the last harvest, on the
    schedule's own clock (nothing else, a progress report say, restarts it). With batch 1 every
    call is harvested without reading the clock. now: for tests."""

    def __init__(self, batch: int, interval_s: float, now: Callable[[], float] = time.perf_counter) -> None:
        self.batch = max(1, batch)
        self.pending = 0
        self._interval_s = interval_s
        self._now = now
        self._last_harvest = now()

    def iteration_timed(self) -> bool:
        """Counts one more timed call; True when the caller must harvest now, which counts as that
        harvest (nothing pending, the interval starts again)."""
        if self.batch == 1:
            return True
        self.pending += 1
        now = self._now()
        if self.pending < self.batch and now - self._last_harvest < self._interval_s:
            return False
        self.pending = 0
        self._last_harvest = now
        return True
