"""One job, start to verdict, in this process: the Python runner's counterpart of
agent/worker/measure.cpp (with runner.cpp; timing.cpp's is benchfleet_timing.py, memory.cpp's and
oom.cpp's benchfleet_memory.py).

    result = run_job(job, caps, hooks)   # a JobResult as a dict; never raises

Phases, as the worker's (and the OOM phase each failure is reported in):
  load     memory cap applied; the model built from the job's model_definition, else from the
           catalog's entry (benchfleet_models.load_model, as the exporter builds it), and its
           inputs made (seeded; a python model's by its factory), both in the job's dtype
           (benchfleet_precision); the job's inputs, when it lists them, checked against them;
           torch.compile wraps it (benchfleet_compile)
  compile  the first call, timed separately (first_call_ms). For compile modes this is where
           dynamo and inductor compile, so it is also telemetry.compile_ms.
  (walk)   Job.walk_batches: the model called at each of those batch sizes (benchfleet_shape_walk;
           its failures end the walk, not the job), then back to the job's own batch
  warmup   measurement.warmup untimed calls; at least 2 for modes replaying CUDA graphs (the
           cudagraph trees warm up on one call and record on the next, replaying after that); on
           CUDA then more, 8 at a time, until the warm-up has lasted CUDA_MIN_WARMUP_S (0.5 s),
           so that the GPU has left its idle clock
  measure  timed calls under the stopping rule (benchfleet_stats.StoppingRule): CPU steady clock
           (perf_counter_ns) per call; CUDA an event pair per call on the current stream (the
           pairs of a batch created before the timed loop), read with one synchronize per 16 calls
           or once 0.25 s have passed since the last read (HarvestSchedule), host wall time kept
           apart in telemetry
  (accuracy) compile modes, after the peaks are read and the memory cap lifted, so neither
           the timing nor the memory columns see it: the compiled model judged against a float64
           run of the same model and inputs (benchfleet_accuracy.check_compiled) -> result
           "accuracy"; a failure of the check is verdict unchecked, never a failed job
All calls run under torch.no_grad() and drop their outputs at once; before each call of a mode
that replays CUDA graphs torch.compiler.cudagraph_mark_step_begin() (where it exists) says the
previous outputs are dead, so nothing is held across replays. Python's cyclic garbage collector
is paused while measuring (reference counting still frees every output). dtype amp runs every
call under torch.autocast. A failure saying this build or device lacks the job's dtype (e.g.
"not implemented for 'Half'") is status unsupported, in any phase.

Telemetry besides the worker's host_wall_ms / host_ms_per_iteration (and before_/after_ GPU
readings on CUDA: before_ once warm, as the timed loop starts; after_ when it ends): compile
modes add compile_ms, graph_breaks (sum of
torch._dynamo.utils.counters["graph_break"]), graphs (counters["stats"]["unique_graphs"]),
recompiles (graphs compiled by the warm-up and timed calls at the job's batch: after the first
call and after the shape walk, whose own are walk_recompiles), dynamic (Job.dynamic), and whether
inductor's on-disk FX graph cache served the compile, so a re-run from a warm cache never passes
for a cold compile: fxgraph_cache_hit / _miss / _bypass (counters["inductor"]), inductor_cache
(inductor_cache_state: cold, warm, mixed, bypass or none) and inductor_cache_dir
($TORCHINDUCTOR_CACHE_DIR, else torch's default under the temporary directory). Counters are reset
before compiling. "cold" is about the whole graph: its C++ kernels may still come from the same
directory (cached by their source), so a cold compile of a second mode of the same model is
quicker than the first. The shape walk adds walk_batches, walk_b<B>_first_ms / _median_ms /
_graphs, walk_recompiles (and walk_error when it ended early); amp adds autocast_dtype.

Test only: BENCHFLEET_TEST_PERTURB_COMPILED=SCALE perturbs the compiled model's floating outputs
(benchfleet_accuracy.perturbed; timed calls included, cheap) so its accuracy verdict is wrong.
"""

from __future__ import annotations

import gc
import importlib
import sys
import time
from typing import Any, Callable, Dict, List, Optional

import torch

from benchfleet_accuracy import check_compiled, float64_copy, perturbation_scale, perturbed
from benchfleet_compile import (compile_model, compile_telemetry, dynamo_counters, graph_count,  # noqa: F401
                                inductor_cache_dir, inductor_cache_state, mark_batch_dynamic)
from benchfleet_environment import (Capabilities, builder_fingerprint, fingerprint, gpu_telemetry, unsupported_reason,
                                    uses_cuda_graph)
from benchfleet_job import COMPILE_MODES, Hooks, Job, JobError, TensorSpec, default_catalog, failed
from benchfleet_memory import (MAX_ERROR_CHARS, apply_memory_limit, classify, cuda_oom_count, describe_error,
                               lift_memory_limit, onednn_failed_at_cap, peak_memory)
from benchfleet_memory_cgroup import note_phase
from benchfleet_models import ExportFailure, LoadedModel, ModelSpec, find_model, load_catalog, load_model
from benchfleet_precision import autocast_dtype, cast_inputs, cast_model, in_precision, unsupported_dtype_reason
from benchfleet_shape_walk import shape_walk
from benchfleet_stats import StoppingRule, compute_statistics
from benchfleet_timing import (CUDA_HARVEST_BATCH, HARVEST_INTERVAL_S, CpuTimer, CudaEventTimer, HarvestSchedule,
                               test_slowdown)
from benchfleet_vec_isa import inductor_vec_isa


# ---- the job -----------------------------------------------------------------------------------

def resolve_model(job: Job) -> ModelSpec:
    """The job's model: its model_definition, else the catalog's entry for its model."""
    if job.model_definition is not None:
        return job.model_definition
    return find_model(load_catalog(job.catalog or default_catalog()), job.model)


def check_job_inputs(job: Job, loaded: LoadedModel, inputs: List[torch.Tensor]) -> None:
    """The job's inputs, when it lists them, must be the model's at the job's batch (`inputs`, as
    made before the job's dtype is applied): names, shapes, dtypes and id ranges."""
    if job.inputs is None:
        return
    ranges = [list(item.range) if item.range else None for item in loaded.spec.inputs]
    expected = [TensorSpec(name, list(t.shape), str(t.dtype).replace("torch.", ""),
                           ranges[i] if i < len(ranges) else None).to_json()
                for i, (name, t) in enumerate(zip(loaded.input_names(len(inputs)), inputs))]
    if [t.to_json() for t in job.inputs] != expected:
        raise ExportFailure("error", f"job: inputs: differ from the inputs of {job.model} at batch {job.batch}: "
                                     f"{expected}")


def _mark_step() -> Optional[Callable[[], None]]:
    compiler = getattr(torch, "compiler", None)
    return getattr(compiler, "cudagraph_mark_step_begin", None)


# The least warm-up on CUDA, in seconds, whatever measurement.warmup says. A GPU idles at its
# lowest clock while a job loads (an H200 at 345 of 1980 MHz) and its clock rises only under
# load: on an H200, ten warm-up calls of ResNet-18 (about 20 ms) left the first timed calls 1.5 to
# 2 times slower than the rest.
CUDA_MIN_WARMUP_S = 0.5


def _seconds_since(start: float) -> float:
    return time.perf_counter() - start


def _log(message: str) -> None:
    print(f"benchfleet-runner: {message}", file=sys.stderr)


def _measure(job: Job, spec: ModelSpec, hooks: Hooks, perturb_scale: Optional[float]) -> Dict[str, Any]:
    """The part of run_job that may raise; hooks.phase says where it failed."""
    on_cuda = job.device == "cuda"
    compiled = job.mode in COMPILE_MODES
    result: Dict[str, Any] = {"status": "ok", "samples_ms": [], "environment": {}, "telemetry": {}}
    telemetry = result["telemetry"]
    hooks.phase("load")
    if job.memory_limit_mb:
        apply_memory_limit(job.device, job.memory_limit_mb, hooks)
    load_start = time.perf_counter()
    loaded = load_model(spec, job.batch, device=job.device, seed=job.seed, weights=job.weights, log=_log)
    model = cast_model(loaded.module, job.dtype)
    check_job_inputs(job, loaded, loaded.inputs(job.batch, job.seed))

    def inputs_at(batch: int) -> List[torch.Tensor]:
        made = cast_inputs(loaded.inputs(batch, job.seed), job.dtype)
        return mark_batch_dynamic(made) if compiled and job.dynamic else made

    inputs = inputs_at(job.batch)
    call: Callable[..., Any] = model
    if compiled:
        call = compile_model(model, job)
        if perturb_scale is not None:
            call = perturbed(call, perturb_scale)
    call = in_precision(call, job.dtype, job.device)
    mark_step = _mark_step() if uses_cuda_graph(job) else None

    def call_once(args: List[torch.Tensor]) -> Any:
        if mark_step is not None:
            mark_step()
        return call(*args)

    def step() -> None:
        call_once(inputs)  # the output is dropped at once

    def synchronize() -> None:
        if on_cuda:
            torch.cuda.synchronize()

    synchronize()
    result["load_s"] = _seconds_since(load_start)
    hooks.progress("load", 0, result["load_s"])

    with torch.no_grad():
        hooks.phase("compile" if compiled else "warmup")  # eager compiles nothing: its first call warms up
        first = time.perf_counter()
        step()
        synchronize()
        result["first_call_ms"] = _seconds_since(first) * 1000
        graphs_before_measuring = graph_count() if compiled else 0

        if job.walk_batches:  # its failures end the walk, not the job (benchfleet_shape_walk)
            walk = time.perf_counter()
            telemetry.update(shape_walk(job.walk_batches, inputs_at, call_once, synchronize,
                                        graph_count if compiled else None))
            graphs_before_measuring = graph_count() if compiled else 0
            hooks.progress("walk", 0, _seconds_since(walk))

        hooks.phase("warmup")
        warm = time.perf_counter()
        warmup = job.measurement["warmup"]
        for _ in range(max(warmup, 2) if uses_cuda_graph(job) else warmup):
            step()
        synchronize()
        if on_cuda:  # and on until the GPU has been busy long enough to leave its idle clock
            while _seconds_since(warm) < CUDA_MIN_WARMUP_S:
                for _ in range(8):
                    step()
                synchronize()
        hooks.progress("warmup", 0, _seconds_since(warm))
        if on_cuda:
            # Read once warm, as the timed loop starts: a GPU idles at its lowest clock while
            # the model is built (an H200 at 345 of 1980 MHz), so a reading from then would make
            # every run look as if its clock rose and hide a drop while measuring (clock_drop).
            telemetry.update({f"before_{k}": v for k, v in gpu_telemetry().items()})

        hooks.phase("measure")
        samples = _timed_loop(step, job, on_cuda, hooks, result)
    if job.memory_limit_mb:
        lift_memory_limit(job.device)  # the statistics and the accuracy check need memory the job may not have left
    result["samples_ms"] = samples
    result["stats"] = compute_statistics(samples)
    result["memory"] = peak_memory(job.device)
    if compiled:
        telemetry.update(compile_telemetry(dynamo_counters(), result["first_call_ms"], graphs_before_measuring))
        telemetry["dynamic"] = job.dynamic
    if job.dtype == "amp":
        telemetry["autocast_dtype"] = str(autocast_dtype(job.device)).replace("torch.", "")
    if on_cuda:
        telemetry.update({f"after_{k}": v for k, v in gpu_telemetry().items()})
    if compiled:  # after the timing and the memory peaks, which must not see it
        check = time.perf_counter()
        result["accuracy"] = _accuracy(job, loaded.spec, model, call_once, inputs)
        hooks.progress("accuracy", 0, _seconds_since(check))
    return result


def _accuracy(job: Job, spec: ModelSpec, model: torch.nn.Module, call_compiled: Callable[[List[torch.Tensor]], Any],
              inputs: List[torch.Tensor]) -> Dict[str, Any]:
    """The compiled model judged against a float64 run of the same model (benchfleet_accuracy).
    A model that cannot run in float64 (an exported program whose graph fixes its dtypes) gets
    verdict unchecked, saying why."""
    def reference() -> torch.nn.Module:
        if job.dtype in ("float32", "amp"):
            return float64_copy(model)
        # float16 / bfloat16: the model's float32 weights are gone; built again (a python model by
        # its factory, seeded as before), they are the same.
        return load_model(spec, job.batch, device=job.device, seed=job.seed, weights=job.weights,
                          log=lambda _: None).module.double()

    return check_compiled(in_precision(model, job.dtype, job.device), lambda *args: call_compiled(list(args)),
                          reference, inputs, job.dtype, job.device == "cuda", spec.outputs)


def _timed_loop(step: Callable[[], None], job: Job, on_cuda: bool, hooks: Hooks,
                result: Dict[str, Any]) -> List[float]:
    """Timed calls until the stopping rule says stop; records stop_reason and host wall time."""
    timer = CudaEventTimer(CUDA_HARVEST_BATCH) if on_cuda else CpuTimer(test_slowdown(job.model))
    rule = StoppingRule(job.measurement)
    max_iterations = int(job.measurement["max_iterations"])
    samples: List[float] = []
    timed = 0
    gc.collect()
    gc.disable()
    try:
        last_report = start = time.perf_counter()
        schedule = HarvestSchedule(CUDA_HARVEST_BATCH if on_cuda else 1, HARVEST_INTERVAL_S)
        while True:
            timer.time(step)
            timed += 1
            # The stopping rule sees only harvested samples; at max_iterations a harvest is due
            # anyway, so a fixed count stops at that count (as the worker).
            if schedule.iteration_timed() or timed == max_iterations:
                timer.harvest(samples)
            if len(samples) == timed:
                reason = rule.check(samples, _seconds_since(start))
                if reason is not None:
                    result["stop_reason"] = reason
                    break
            if _seconds_since(last_report) >= 1.0:
                hooks.progress("measure", timed, _seconds_since(start))
                last_report = time.perf_counter()
        host_ms = _seconds_since(start) * 1000
    finally:
        gc.enable()
    result["telemetry"]["host_wall_ms"] = host_ms
    result["telemetry"]["host_ms_per_iteration"] = host_ms / len(samples)
    return samples


class _PhaseTracker(Hooks):
    """Passes everything on to `hooks` and remembers the current phase."""

    def __init__(self, hooks: Hooks) -> None:
        self.current = "load"
        self._hooks = hooks

    def progress(self, phase: str, iterations: int, seconds: float) -> None:
        self._hooks.progress(phase, iterations, seconds)

    def phase(self, name: str) -> None:
        self.current = name
        note_phase(name)  # where the agent reads it if the kernel kills the job at its memory cap
        self._hooks.phase(name)

    def environment(self, env: Dict[str, Any]) -> None:
        self._hooks.environment(env)

    def memory_cap(self, rlimit_as_bytes: int) -> None:
        self._hooks.memory_cap(rlimit_as_bytes)


def run_job(job: Job, caps: Capabilities, hooks: Hooks) -> Dict[str, Any]:
    """The job's verdict as a JobResult dict (common/codecs.cpp field names). Never raises."""
    # Taken before any memory cap, as the worker does; so are the imports of the builder's
    # library (builder_fingerprint) and of torch.compile's modules (below).
    environment = fingerprint(job, caps)
    try:
        spec = resolve_model(job)
    except ExportFailure as e:
        return _finish(failed(e.status, e.message), environment, job)
    environment.update(builder_fingerprint(spec.builder))
    hooks.environment(environment)
    reason = unsupported_reason(job, caps)
    if reason is not None:
        return _finish(failed("unsupported", reason), environment, job)
    try:
        perturb_scale = perturbation_scale() if job.mode in COMPILE_MODES else None
    except ValueError as e:
        return _finish(failed("error", str(e)), environment, job)
    if job.mode in COMPILE_MODES:
        importlib.import_module("torch._dynamo")
        importlib.import_module("torch._inductor")
        if job.device == "cpu":  # the compiler Inductor needs for vector kernels, and the ISA they use
            environment["inductor_vec_isa"] = inductor_vec_isa()
            hooks.environment(environment)

    tracker = _PhaseTracker(hooks)
    ooms_before = cuda_oom_count() if job.device == "cuda" else 0
    error: Optional[Exception] = None
    try:
        result = _measure(job, spec, tracker, perturb_scale)
    except Exception as e:  # every failure becomes a verdict; MemoryError too
        error = e
    capped = bool(job.memory_limit_mb) and job.device == "cpu"
    at_cap = capped and error is not None and onednn_failed_at_cap(describe_error(error))
    if capped:
        lift_memory_limit()  # before reporting: that needs memory too
    if isinstance(error, JobError):
        result = failed("error", f"memory limit: {error}")
    elif at_cap and error is not None:
        result = failed("oom", f"out of memory at the CPU memory cap: {describe_error(error)}"[:MAX_ERROR_CHARS])
        result["oom"] = {"phase": tracker.current}
        result["memory"] = peak_memory(job.device)
    elif error is not None:
        reason = _dtype_unsupported(job, error)
        allocator_counted_oom = job.device == "cuda" and cuda_oom_count() > ooms_before
        result = (failed("unsupported", reason) if reason is not None
                  else classify(error, tracker.current, job.device, allocator_counted_oom))
    return _finish(result, environment, job)


def _dtype_unsupported(job: Job, error: BaseException) -> Optional[str]:
    """Why the job is unsupported when `error` says this build or device lacks its dtype."""
    if isinstance(error, ExportFailure):
        return None
    return unsupported_dtype_reason(job.dtype, job.device, describe_error(error))


def _finish(result: Dict[str, Any], environment: Dict[str, Any], job: Job) -> Dict[str, Any]:
    result["environment"] = environment
    seconds = job.export_s()
    if seconds is not None:
        result["export_s"] = seconds
    return result
