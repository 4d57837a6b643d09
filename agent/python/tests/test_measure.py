"""Tests of the python runner's measurement rules (agent/python/benchfleet_measure.py,
benchfleet_timing.py, benchfleet_memory.py) that need no GPU: when the timed loop harvests its
timer (HarvestSchedule, as agent/worker/timing.h), the CUDA event timer's pre-made event pairs (with
stand-in events), and when a failure is an out-of-memory (is_oom_failure and classify, as
agent/worker/oom.h; oneDNN's failed primitive at the CPU cap).

Run with the system python that has Debian's torch:  /usr/bin/python3 -m unittest discover -s
agent/python/tests -v. benchfleet_measure imports torch; without it these tests skip.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
import unittest
from typing import Any, Dict, List
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.join(SOURCE_DIR, "agent", "python")

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
sys.path.insert(0, PYTHON_DIR)

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if HAVE_TORCH:
    import benchfleet_job as bj  # noqa: E402
    import benchfleet_measure as bm  # noqa: E402
    import benchfleet_memory as bmem  # noqa: E402
    import benchfleet_timing as btime  # noqa: E402

# What AOTInductor's runtime throws for any failure of the model, a CUDA out-of-memory included.
AOTI_GENERIC = ("run_func_( container_handle_, input_handles.data(), input_handles.size(), output_handles.data(), "
                "output_handles.size(), reinterpret_cast<AOTInductorStreamHandle>(stream_handle), "
                "proxy_executor_handle_) API call failed at /build/torch/csrc/inductor/aoti_runner/"
                "model_container_runner.cpp, line 107")
CUDA_OOM = ("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 13.12 GiB already "
            "allocated; 1.06 GiB free; 13.50 GiB reserved in total by PyTorch)")
CPU_OOM = ("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
           "allocate 205520896 bytes. Error code 12 (Cannot allocate memory)")


class FakeClock:
    """A clock the test moves by hand (seconds); counts how often it is read."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def harvests_over(schedule: Any, clock: FakeClock, n: int, each_s: float) -> List[int]:
    """Times `n` calls of `each_s` on `clock`; the 1-based calls after which a harvest was due."""
    due = []
    for i in range(1, n + 1):
        clock.now += each_s
        if schedule.iteration_timed():
            due.append(i)
    return due


@unittest.skipUnless(HAVE_TORCH, "benchfleet_measure needs torch")
class HarvestScheduleTest(unittest.TestCase):
    def schedule(self, batch: int = 16, interval_s: float = 0.25) -> Any:
        self.clock = FakeClock()
        return btime.HarvestSchedule(batch, interval_s, now=self.clock)

    def test_harvests_when_a_batch_is_pending(self) -> None:
        s = self.schedule()
        self.assertEqual(harvests_over(s, self.clock, 40, 0.001), [16, 32])
        self.assertEqual(s.pending, 8)

    def test_the_interval_runs_from_the_last_harvest(self) -> None:
        # 20 ms calls: 0.25 s pass before 16 are pending, after the 13th; the next harvest is due
        # 0.25 s after that one (the 26th), not at once (the old rule's clock was the progress
        # report's, reset once a second, so every call from the 14th on synchronized).
        s = self.schedule()
        self.assertEqual(harvests_over(s, self.clock, 40, 0.020), [13, 26, 39])

    def test_a_batch_harvest_restarts_the_interval(self) -> None:
        s = self.schedule(batch=4)
        self.assertEqual(harvests_over(s, self.clock, 4, 0.060), [4])
        self.assertEqual(harvests_over(s, self.clock, 3, 0.020), [])
        self.assertEqual(harvests_over(s, self.clock, 1, 0.200), [1])

    def test_a_slow_call_is_harvested_at_once(self) -> None:
        s = self.schedule()
        self.assertEqual(harvests_over(s, self.clock, 3, 0.001), [])
        self.assertEqual(harvests_over(s, self.clock, 1, 1.0), [1])
        self.assertEqual(s.pending, 0)
        self.assertEqual(harvests_over(s, self.clock, 20, 0.001), [16])

    def test_known_counts_and_the_bound_over_a_simulated_run(self) -> None:
        for each_s, expected in ((0.001, 62), (0.100, 333), (0.300, 1000)):
            s = self.schedule()
            self.assertEqual(len(harvests_over(s, self.clock, 1000, each_s)), expected, each_s)
        for each_ms in (1, 7, 15, 16, 17, 20, 63, 100, 249, 251, 1000):
            s = self.schedule()
            n = 2000
            harvests = len(harvests_over(s, self.clock, n, each_ms / 1000))
            self.assertLessEqual(harvests, n // 16 + (n * each_ms) // 250, each_ms)
            self.assertGreaterEqual(harvests, n // 16, each_ms)

    def test_batch_of_one_harvests_every_call_without_the_clock(self) -> None:
        s = self.schedule(batch=1)
        reads = self.clock.reads
        self.assertEqual(harvests_over(s, self.clock, 5, 0.001), [1, 2, 3, 4, 5])
        self.assertEqual(self.clock.reads, reads)
        self.assertEqual(btime.HarvestSchedule(0, 0.25).batch, 1)


class FakeEvent:
    """Stands in for torch.cuda.Event(enable_timing=True); elapsed_time is the stop's serial minus
    the start's, so the test knows which pair was read."""

    made: List["FakeEvent"] = []
    serial = 0

    def __init__(self) -> None:
        self.records = 0
        self.synchronized = 0
        self.stamp = 0
        FakeEvent.made.append(self)

    def record(self) -> None:
        FakeEvent.serial += 1
        self.records += 1
        self.stamp = FakeEvent.serial

    def synchronize(self) -> None:
        self.synchronized += 1

    def elapsed_time(self, stop: "FakeEvent") -> float:
        return float(stop.stamp - self.stamp)


@unittest.skipUnless(HAVE_TORCH, "benchfleet_measure needs torch")
class CudaEventTimerTest(unittest.TestCase):
    def setUp(self) -> None:
        FakeEvent.made = []
        FakeEvent.serial = 0

    def test_the_events_of_a_batch_are_made_and_recorded_before_any_call(self) -> None:
        timer = btime.CudaEventTimer(4, make_event=FakeEvent)
        self.assertEqual(len(FakeEvent.made), 8)
        self.assertTrue(all(e.records == 1 for e in FakeEvent.made))  # the CUDA event exists now
        calls: List[int] = []
        for i in range(4):
            timer.time(lambda i=i: calls.append(i))
        self.assertEqual(calls, [0, 1, 2, 3])
        self.assertEqual(len(FakeEvent.made), 8)  # none made inside the timed calls

        samples: List[float] = []
        timer.harvest(samples)
        self.assertEqual(samples, [1.0, 1.0, 1.0, 1.0])  # each call between its own pair
        self.assertEqual([e.synchronized for e in FakeEvent.made], [0] * 7 + [1])  # one wait: the last stop
        timer.harvest(samples)  # nothing pending: nothing added, no wait
        self.assertEqual(len(samples), 4)
        self.assertEqual(FakeEvent.made[-1].synchronized, 1)

        timer.time(lambda: None)  # the same pairs again after a harvest
        self.assertEqual(len(FakeEvent.made), 8)
        self.assertEqual(FakeEvent.made[0].records, 3)

    def test_a_longer_batch_makes_more_pairs_outside_the_calls(self) -> None:
        timer = btime.CudaEventTimer(2, make_event=FakeEvent)
        for _ in range(3):
            timer.time(lambda: None)
        self.assertEqual(len(FakeEvent.made), 8)  # the pool doubled before the third call
        samples: List[float] = []
        timer.harvest(samples)
        self.assertEqual(samples, [1.0, 1.0, 1.0])


def fixed_count_job(count: int) -> Any:
    return types.SimpleNamespace(model="torchvision/resnet18",
                                 measurement={"warmup": 0, "min_iterations": count, "max_iterations": count,
                                              "min_duration_s": 0, "max_duration_s": 60,
                                              "target_ci_rel_width": 0.05})


@unittest.skipUnless(HAVE_TORCH, "benchfleet_measure needs torch")
class TimedLoopTest(unittest.TestCase):
    def test_cuda_loop_harvests_in_batches_and_stops_at_a_fixed_count(self) -> None:
        FakeEvent.made = []
        with mock.patch.object(btime, "_timing_event", FakeEvent):
            result: Dict[str, Any] = {"telemetry": {}}
            samples = bm._timed_loop(lambda: None, fixed_count_job(40), True, bj.Hooks(), result)
        self.assertEqual(len(samples), 40)  # not 48, the next whole batch
        self.assertEqual(result["stop_reason"], "fixed_count")
        self.assertEqual(len(FakeEvent.made), 2 * btime.CUDA_HARVEST_BATCH)
        waits = sum(e.synchronized for e in FakeEvent.made)
        # After the 16th, the 32nd and the 40th; more only if a 0.25 s interval ran out first.
        late = int(result["telemetry"]["host_wall_ms"] / (btime.HARVEST_INTERVAL_S * 1000))
        self.assertGreaterEqual(waits, 3)
        self.assertLessEqual(waits, 3 + late)

    def test_cpu_loop_checks_the_rule_after_every_call(self) -> None:
        result: Dict[str, Any] = {"telemetry": {}}
        samples = bm._timed_loop(lambda: None, fixed_count_job(7), False, bj.Hooks(), result)
        self.assertEqual(len(samples), 7)
        self.assertEqual(result["stop_reason"], "fixed_count")


@unittest.skipUnless(HAVE_TORCH, "benchfleet_timing needs torch")
class TestSlowdownTest(unittest.TestCase):
    """The A/A benchmark's "build that is 10% slower" (BENCHFLEET_TEST_SLOWDOWN)."""

    def test_only_the_named_build_and_model_are_slowed(self) -> None:
        env = {"BENCHFLEET_TEST_SLOWDOWN": "slow:torchvision/resnet18=1.5", "BENCHFLEET_BUILD": "slow"}
        self.assertEqual(btime.test_slowdown("torchvision/resnet18", env), 1.5)
        self.assertEqual(btime.test_slowdown("torchvision/squeezenet1_1", env), 1.0)
        self.assertEqual(btime.test_slowdown("torchvision/resnet18", {**env, "BENCHFLEET_BUILD": "fast"}), 1.0)
        every = {**env, "BENCHFLEET_TEST_SLOWDOWN": "slow:*=1.1"}
        self.assertEqual(btime.test_slowdown("torchvision/squeezenet1_1", every), 1.1)
        for bad in ("", "slow:torchvision/resnet18", "slow:torchvision/resnet18=x", "slow:torchvision/resnet18=0.5"):
            self.assertEqual(btime.test_slowdown("torchvision/resnet18", {**env, "BENCHFLEET_TEST_SLOWDOWN": bad}), 1.0,
                             bad)

    def test_a_slowed_timer_takes_the_factor_longer(self) -> None:
        def work() -> None:
            end = btime.time.perf_counter() + 0.004
            while btime.time.perf_counter() < end:
                pass
        plain, slowed = btime.CpuTimer(), btime.CpuTimer(2.0)
        for _ in range(5):
            plain.time(work)
            slowed.time(work)
        a: List[float] = []
        b: List[float] = []
        plain.harvest(a)
        slowed.harvest(b)
        # Each slowed call spins until twice its own time, so it takes at least twice the 4 ms of
        # work (a busy machine only makes both longer); the plain calls take the work's time.
        self.assertGreaterEqual(min(b), 2 * 4.0)
        self.assertGreaterEqual(min(a), 4.0)


@unittest.skipUnless(HAVE_TORCH, "benchfleet_measure needs torch")
class OomFailureTest(unittest.TestCase):
    def test_a_generic_failure_is_oom_only_when_the_allocator_counted_one(self) -> None:
        self.assertTrue(bmem.is_oom_failure(AOTI_GENERIC, allocator_counted_oom=True))
        self.assertFalse(bmem.is_oom_failure(AOTI_GENERIC, allocator_counted_oom=False))

    def test_oom_messages_are_oom_without_the_counter(self) -> None:
        for message in (CUDA_OOM, CPU_OOM, "std::bad_alloc", "torch.OutOfMemoryError: CUDA error"):
            self.assertTrue(bmem.is_oom_failure(message, allocator_counted_oom=False), message)
        self.assertFalse(bmem.is_oom_failure("Expected all tensors to be on the same device", False))

    def test_classify_with_the_counter(self) -> None:
        with mock.patch("sys.stderr"):  # classify prints the traceback of what it calls an error
            counted = bmem.classify(RuntimeError(AOTI_GENERIC), "measure", "cpu", allocator_counted_oom=True)
            not_counted = bmem.classify(RuntimeError(AOTI_GENERIC), "measure", "cpu", allocator_counted_oom=False)
        self.assertEqual(counted["status"], "oom")
        self.assertEqual(counted["oom"], {"phase": "measure"})
        self.assertTrue(counted["error"].startswith("out of memory (counted by the CUDA caching allocator): "
                                                    "RuntimeError: run_func_("), counted["error"])
        self.assertEqual(not_counted["status"], "error")
        self.assertNotIn("oom", not_counted)

    def test_classify_keeps_phase_and_bytes_of_an_oom_message(self) -> None:
        result = bmem.classify(RuntimeError(CUDA_OOM), "warmup", "cpu", allocator_counted_oom=False)
        self.assertEqual(result["status"], "oom")
        self.assertEqual(result["oom"], {"phase": "warmup", "bytes_requested": 20 * 1024 * 1024})
        counted = bmem.classify(RuntimeError(CUDA_OOM), "warmup", "cpu", allocator_counted_oom=True)
        self.assertEqual(counted["error"], result["error"])  # the allocator's own words, no prefix

    def test_onednns_failed_primitive_is_oom_at_the_cpu_cap_only(self) -> None:
        import resource

        message = "RuntimeError: could not create a primitive"
        cap = 1 << 30

        def at(peak: int, soft: int = cap) -> bool:
            with mock.patch.object(bmem, "vm_peak_bytes", return_value=peak), \
                    mock.patch.object(bmem.resource, "getrlimit", return_value=(soft, resource.RLIM_INFINITY)):
                return bmem.onednn_failed_at_cap(message)

        self.assertTrue(at(cap - (1 << 20)))  # a scratchpad request beyond the cap failed
        self.assertFalse(at(cap - (256 << 20)))  # far from the cap: oneDNN's own failure
        self.assertFalse(at(cap, soft=resource.RLIM_INFINITY))  # no cap
        with mock.patch.object(bmem, "vm_peak_bytes", return_value=cap), \
                mock.patch.object(bmem.resource, "getrlimit", return_value=(cap, resource.RLIM_INFINITY)):
            self.assertFalse(bmem.onednn_failed_at_cap("RuntimeError: shape mismatch"))

    def test_lifting_the_cuda_cap_gives_back_the_whole_device(self) -> None:
        # The accuracy check after the timed calls runs a float64 copy of the model: not under the
        # job's cap, on CUDA as on the CPU.
        with mock.patch.object(bmem.torch.cuda, "set_per_process_memory_fraction") as fraction, \
                mock.patch.object(bmem.resource, "setrlimit") as setrlimit:
            bmem.lift_memory_limit("cuda")
        fraction.assert_called_once_with(1.0, 0)
        setrlimit.assert_not_called()

    def test_no_cuda_no_count(self) -> None:
        import torch

        if torch.cuda.is_available():
            self.skipTest("a CUDA device is visible")
        self.assertEqual(bmem.cuda_oom_count(), 0)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class GpuReadingTest(unittest.TestCase):
    """When the before_/after_ GPU readings are taken, driven as a CUDA job on the CPU: the model,
    the inputs, the synchronize and the timed loop stand in for the device's."""

    def measure_as_cuda(self, warmup: int, call_s: float, min_warmup_s: float) -> List[str]:
        """Runs _measure for a CUDA job whose model call takes `call_s` on a fake clock; returns
        when the GPU was read and the timed loop started."""
        import torch

        clock = FakeClock()
        phases: List[str] = []
        readings: List[str] = []

        class Recorder(bj.Hooks):
            def phase(self, name: str) -> None:
                phases.append(name)

            def progress(self, phase: str, iterations: int, seconds: float) -> None:
                phases.append(f"progress:{phase}")

        calls = []

        def model(x: Any) -> Any:
            calls.append(phases[-1])
            clock.now += call_s
            return x * 2

        def timed_loop(step: Any, job: Any, on_cuda: bool, hooks: Any,
                       result: Any) -> List[float]:
            readings.append(f"timed loop after {phases[-1]}")
            step()
            return [1.0, 1.0, 1.0]

        def reading() -> Dict[str, Any]:
            readings.append(f"read after {phases[-1]}, {len(calls)} calls made")
            return {"sm_clock_mhz": 1980}

        job = bj.parse_job('{"model": "torchvision/resnet18", "batch": 1, "mode": "eager", "device": "cuda", '
                           f'"measurement": {{"warmup": {warmup}}}}}')
        catalog = bm.load_catalog(os.path.join(SOURCE_DIR, "common", "catalog", "models.yaml"))
        spec = bm.find_model(catalog, "torchvision/resnet18")
        loaded = bm.LoadedModel(spec, model, "cuda", factory_inputs=lambda batch, seed: [torch.ones(1)])
        with mock.patch.object(bm, "load_model", return_value=loaded), \
                mock.patch.object(bm, "gpu_telemetry", side_effect=reading), \
                mock.patch.object(bm, "_timed_loop", side_effect=timed_loop), \
                mock.patch.object(bm, "peak_memory", return_value={}), \
                mock.patch.object(torch.cuda, "synchronize", return_value=None), \
                mock.patch.object(bm.time, "perf_counter", side_effect=clock), \
                mock.patch.object(bm, "CUDA_MIN_WARMUP_S", min_warmup_s):
            result = bm._measure(job, spec, Recorder(), None)
        self.assertEqual(result["telemetry"]["before_sm_clock_mhz"], 1980)
        self.assertEqual(result["telemetry"]["after_sm_clock_mhz"], 1980)
        return readings

    def test_the_before_reading_is_taken_warm_as_the_timed_loop_starts(self) -> None:
        # The first call and 3 warm-up calls (more than the least warm-up time) before the first
        # reading; the timed loop right after it.
        self.assertEqual(self.measure_as_cuda(warmup=3, call_s=0.2, min_warmup_s=0.5),
                         ["read after progress:warmup, 4 calls made", "timed loop after measure",
                          "read after measure, 5 calls made"])

    def test_warm_up_on_cuda_lasts_at_least_the_least_warm_up_time(self) -> None:
        # 3 calls of 0.1 s are 0.3 s: one more batch of 8 reaches 0.5 s.
        self.assertEqual(self.measure_as_cuda(warmup=3, call_s=0.1, min_warmup_s=0.5)[0],
                         "read after progress:warmup, 12 calls made")
        # No warm-up asked for: still 0.5 s of it, in batches of 8 calls.
        self.assertEqual(self.measure_as_cuda(warmup=0, call_s=0.05, min_warmup_s=0.5)[0],
                         "read after progress:warmup, 17 calls made")


if __name__ == "__main__":
    unittest.main()
