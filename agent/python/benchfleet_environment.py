"""What this torch build can run with the python runtime, and the environment fingerprint a
result records: the Python runner's counterparts of agent/worker/capabilities.cpp,
build_info.cpp, fingerprint.cpp, cuda.cpp (fingerprint) and nvml.cpp.

    caps = this_build()                       # Capabilities
    reason = unsupported_reason(job, caps)    # None when the runner can run the job
    modes = runnable_modes(caps, "cuda")      # what the agent advertises for runtime python
    env = fingerprint(job, caps)              # flat map of scalars, as the worker's

Modes of the python runtime:
  eager                        the nn.Module, called under torch.no_grad()
  default, max-autotune-no-cudagraphs
                               torch.compile(model, mode=...), on CPU and CUDA; needs
                               torch.compile (torch >= 2.0), a Python dynamo supports and, on
                               the CPU, a C++ compiler for inductor's kernels (g++, or $CXX)
  reduce-overhead, max-autotune
                               torch.compile with CUDA graphs (max-autotune is
                               max-autotune-no-cudagraphs plus CUDA graphs): CUDA only. On CPU
                               inductor skips the graphs, so the cell would be a relabelled
                               `default` or `max-autotune-no-cudagraphs`; it is `unsupported`.
  torchscript                  not in this runtime: benchfleet-worker (libtorch) runs it.

The fingerprint also records the build's root filesystem when the agent runs the runner inside
one (scripts/in-root.sh): BENCHFLEET_BUILD_ROOT and BENCHFLEET_BUILD_ROOT_ID in the environment
become build_root and build_root_id.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

import torch

from benchfleet_job import COMPILE_MODES, MODES, RUNNER_VERSION, Job


@dataclass(frozen=True)
class Capabilities:
    torch_version: str
    torch_git: str
    cuda_compiled: bool
    cuda_available: bool
    torch_compile: bool  # torch.compile exists and dynamo supports this Python
    compile_missing: str  # why torch.compile cannot run here, when it cannot
    cpu_compiler_missing: str = ""  # why inductor cannot build CPU kernels here, when it cannot


def _compile_missing_reason() -> str:
    if not hasattr(torch, "compile"):
        return f"torch.compile needs torch >= 2.0; this is torch {torch.__version__}"
    try:  # slow to import: only asked when needed
        dynamo = importlib.import_module("torch._dynamo")
    except ImportError as e:
        return f"torch.compile is not usable in torch {torch.__version__}: {e}"
    supported = getattr(dynamo, "is_dynamo_supported", None)
    if supported is not None and not supported():
        return (f"torch.compile (dynamo) in torch {torch.__version__} does not support Python "
                f"{sys.version.split()[0]}")
    return ""


def _cpu_compiler_missing_reason() -> str:
    """Inductor writes C++ kernels for the CPU and builds them with the compiler it searches for
    (torch._inductor.config.cpp.cxx: $CXX, g++). Without one every CPU compile fails late, with
    a long traceback; say so up front."""
    try:
        find_compiler = importlib.import_module("torch._inductor.cpp_builder").get_cpp_compiler
    except (ImportError, AttributeError):
        return ""  # an older inductor: it reports a missing compiler itself when compiling
    try:
        find_compiler()
    except Exception as e:  # InvalidCxxCompiler, or the search itself failing
        return (f"inductor builds C++ kernels on the CPU and finds no C++ compiler ({type(e).__name__}); "
                "install g++ or set CXX")
    return ""


def this_build(probe_compile: bool = True) -> Capabilities:
    """This interpreter's torch. With probe_compile=False torch._dynamo is not imported (it takes
    seconds), torch.compile counts as present when the attribute exists and inductor's C++
    compiler is not looked for."""
    cpu_compiler_missing = ""
    if probe_compile:
        missing = _compile_missing_reason()
        cpu_compiler_missing = "" if missing else _cpu_compiler_missing_reason()
    else:
        missing = "" if hasattr(torch, "compile") else _compile_missing_reason()
    cuda_compiled = torch.version.cuda is not None
    return Capabilities(
        torch_version=torch.__version__,
        torch_git=str(getattr(torch.version, "git_version", "unknown")),
        cuda_compiled=cuda_compiled,
        cuda_available=cuda_compiled and torch.cuda.is_available() and torch.cuda.device_count() > 0,
        torch_compile=not missing,
        compile_missing=missing,
        cpu_compiler_missing=cpu_compiler_missing,
    )


# torch.compile modes that capture and replay CUDA graphs where the device has them.
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def uses_cuda_graph(job: Job) -> bool:
    """Modes whose torch.compile replays CUDA graphs: reduce-overhead, and max-autotune on CUDA."""
    return job.device == "cuda" and job.mode in CUDA_GRAPH_MODES


def unsupported_reason(job: Job, caps: Capabilities) -> Optional[str]:
    """Why this build cannot run the job on its device, or None when it can."""
    if job.device == "cuda" and not caps.cuda_compiled:
        return f"this torch build has no CUDA (torch {caps.torch_version})"
    if job.device == "cuda" and not caps.cuda_available:
        return "no CUDA device is visible to the runner"
    if job.mode == "torchscript":
        return ("the python runtime runs eager and the torch.compile modes; torchscript runs in the libtorch "
                "runtime (benchfleet-worker)")
    if job.mode in COMPILE_MODES and not caps.torch_compile:
        return f"{job.mode} runs torch.compile: {caps.compile_missing}"
    if job.mode in CUDA_GRAPH_MODES and job.device != "cuda":
        instead = "default" if job.mode == "reduce-overhead" else "max-autotune-no-cudagraphs"
        return (f"{job.mode} replays CUDA graphs and needs a CUDA device; this job runs on {job.device}, where "
                f"inductor would skip the graphs and run {instead} under another name")
    if job.mode in COMPILE_MODES and job.device == "cpu" and caps.cpu_compiler_missing:
        return f"{job.mode} runs torch.compile: {caps.cpu_compiler_missing}"
    return None


def runnable_modes(caps: Capabilities, device: str) -> List[str]:
    return [m for m in MODES if unsupported_reason(Job(model="probe", batch=1, mode=m, device=device), caps) is None]


def native_library_dirs() -> List[str]:
    """The folders of the native libraries this build loads only when it needs them: pip's CUDA
    wheels (nvidia/*/lib: NVRTC and its builtins, cuDNN, cuBLAS, ...). Python finds them through
    torch's import; a C++ process linked against the same LibTorch (the worker) only on its
    library path, which the agent sets from this list. Empty for builds without them (Debian's)."""
    try:
        import nvidia  # the namespace package of pip's nvidia-* wheels
    except ImportError:
        return []
    dirs: List[str] = []
    for base in getattr(nvidia, "__path__", []):
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            continue
        for entry in entries:
            lib = os.path.join(os.path.abspath(base), entry, "lib")
            if os.path.isdir(lib) and lib not in dirs:
                dirs.append(lib)
    return dirs


def capabilities_json(caps: Capabilities) -> Dict[str, Any]:
    """--capabilities: the worker's keys (torch_version, cuda_*, modes) plus the runtime's own,
    and library_dirs (native_library_dirs)."""
    return {
        "runtime": "python",
        "torch_version": caps.torch_version,
        "torch_git": caps.torch_git,
        "python": sys.version.split()[0],
        "torch_compile": caps.torch_compile,
        "cuda_compiled": caps.cuda_compiled,
        "cuda_available": caps.cuda_available,
        "modes": {"cpu": runnable_modes(caps, "cpu"), "cuda": runnable_modes(caps, "cuda")},
        "library_dirs": native_library_dirs(),
    }


# ---- fingerprint -------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def file_sha256(path: str) -> str:
    """Lower-case hex SHA-256 of a file; "" if unreadable."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return ""
    return digest.hexdigest()


def builder_fingerprint(builder: str) -> Dict[str, Any]:
    """The library that builds the model (transformers, torchvision, timm; torch for a python
    factory or an exported program) and its version. Imports it, which the runner wants done
    before any memory cap."""
    try:
        version = str(getattr(importlib.import_module(builder), "__version__", ""))
    except ImportError:
        version = ""  # building the model reports the missing package
    return {"builder": builder, f"{builder}_version": version}


def model_weights(job: Job) -> str:
    """Where the job's model comes from beyond its architecture: the job's weights, else its
    definition's file or directory (the agent's copy of its artifact, or its path: a checkpoint,
    a weights file, a factory's .py file, an exported program) or hub id, else "random"."""
    if job.weights:
        return os.path.abspath(job.weights)
    spec = job.model_definition
    if spec is not None:
        return spec.local_path or spec.path or spec.hub_id or "random"
    return "random"


# Set by the agent for a build that runs inside a root filesystem (agent/daemon/build_launcher.cpp).
BUILD_ROOT_VARIABLES = {"build_root": "BENCHFLEET_BUILD_ROOT", "build_root_id": "BENCHFLEET_BUILD_ROOT_ID"}


def fingerprint(job: Job, caps: Capabilities, environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The worker's keys where they apply (torch_version, worker_version, host, cpu_model,
    cpu_threads, device, exporter_* from the job's artifact_metadata, GPU keys on CUDA), plus
    runtime, python, torch_git (torch.version.git_version as the build says it: Debian's is
    "Unknown"), model (the job's key) and weights (+ weights_sha256 for a file: model_weights
    says which), and build_root / build_root_id where
    `environ` (default os.environ) sets BENCHFLEET_BUILD_ROOT / BENCHFLEET_BUILD_ROOT_ID. No
    artifact_sha256 or format: the runner loads no artifact."""
    environ = os.environ if environ is None else environ
    env: Dict[str, Any] = {
        "runtime": "python",
        "torch_version": caps.torch_version,
        "torch_git": caps.torch_git,
        "python": sys.version.split()[0],
        "worker_version": RUNNER_VERSION,
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_threads": torch.get_num_threads(),
        "device": job.device,
        "model": job.model,
        "weights": model_weights(job),
    }
    if os.path.isabs(env["weights"]) and os.path.isfile(env["weights"]):
        env["weights_sha256"] = file_sha256(env["weights"])
    for key, variable in BUILD_ROOT_VARIABLES.items():
        if environ.get(variable):
            env[key] = environ[variable]
    for key in ("torch_git", "torch_version", "python", "sha256"):
        value = job.artifact_metadata.get(key, [])  # [] stands for "absent": not a scalar
        if value is None or isinstance(value, (str, int, float, bool)):
            env[f"exporter_{key}"] = value
    if job.device == "cuda" and caps.cuda_available:
        env.update(gpu_fingerprint())
    return env


def _gpu_uuid(props: Any) -> str:
    uuid = getattr(props, "uuid", None)
    text = str(uuid) if uuid is not None else ""
    if not text:  # older torch: the agent pins the GPU by UUID
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        text = visible if visible.startswith("GPU-") and "," not in visible else ""
    return text if not text or text.startswith(("GPU-", "MIG-")) else "GPU-" + text


def _cuda_runtime_version() -> Optional[int]:
    """torch.version.cuda ("12.4") as cudaRuntimeGetVersion reports it (12040)."""
    try:
        major, minor = (int(x) for x in str(torch.version.cuda).split(".")[:2])
    except ValueError:
        return None
    return major * 1000 + minor * 10


def _cuda_driver_api_version() -> Optional[int]:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            return version.value
    except (OSError, AttributeError):
        pass
    return None


def gpu_fingerprint() -> Dict[str, Any]:
    """Device 0: name, UUID, compute capability, memory, CUDA/cuDNN versions, driver."""
    props = torch.cuda.get_device_properties(0)
    out: Dict[str, Any] = {
        "gpu_name": props.name,
        "gpu_uuid": _gpu_uuid(props),
        "gpu_sm": f"{props.major}.{props.minor}",
        "gpu_memory_mb": int(props.total_memory // (1024 * 1024)),
        "cuda_runtime": _cuda_runtime_version(),
        "cuda_driver_api": _cuda_driver_api_version(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
    }
    driver = _Nvml.get().driver_version()
    if driver:
        out["driver"] = driver
    if out["gpu_uuid"]:
        out.update(_Nvml.get().configured(out["gpu_uuid"]))
    return {k: v for k, v in out.items() if v is not None}


def gpu_telemetry() -> Dict[str, Any]:
    """Clocks, temperature, power and throttle reasons of device 0 (NVML), or {}."""
    uuid = _gpu_uuid(torch.cuda.get_device_properties(0))
    return _Nvml.get().telemetry(uuid) if uuid else {}


class _Nvml:
    """Read-only NVML through ctypes (loaded at run time, as agent/worker/nvml.cpp does). Never
    changes clocks, power limits or modes."""

    _instance: Optional["_Nvml"] = None
    _SUCCESS, _CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 0, 1, 2, 0

    @classmethod
    def get(cls) -> "_Nvml":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def __init__(self) -> None:
        self._lib: Any = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() == self._SUCCESS:
                self._lib = lib
        except (OSError, AttributeError):
            pass

    def _call(self, name: str, *args: Any) -> bool:
        fn = getattr(self._lib, name, None) if self._lib is not None else None
        return fn is not None and fn(*args) == self._SUCCESS

    def driver_version(self) -> str:
        text = ctypes.create_string_buffer(96)
        return text.value.decode() if self._call("nvmlSystemGetDriverVersion", text, ctypes.c_uint(96)) else ""

    def configured(self, uuid: str) -> Dict[str, Any]:
        """What an administrator sets and a comparison must hold equal, as the worker reads it:
        the SM application clock (MHz) and the enforced power limit (W)."""
        device = ctypes.c_void_p()
        if not self._call("nvmlDeviceGetHandleByUUID", uuid.encode(), ctypes.byref(device)):
            return {}
        out: Dict[str, Any] = {}
        value = ctypes.c_uint(0)
        if self._call("nvmlDeviceGetApplicationsClock", device, ctypes.c_uint(self._CLOCK_SM), ctypes.byref(value)):
            out["sm_app_clock_mhz"] = value.value
        if self._call("nvmlDeviceGetEnforcedPowerLimit", device, ctypes.byref(value)):
            out["power_limit_w"] = value.value // 1000
        return out

    def telemetry(self, uuid: str) -> Dict[str, Any]:
        device = ctypes.c_void_p()
        if not self._call("nvmlDeviceGetHandleByUUID", uuid.encode(), ctypes.byref(device)):
            return {}
        out: Dict[str, Any] = {}
        value = ctypes.c_uint(0)
        if self._call("nvmlDeviceGetClockInfo", device, ctypes.c_uint(self._CLOCK_SM), ctypes.byref(value)):
            out["sm_clock_mhz"] = value.value
        if self._call("nvmlDeviceGetClockInfo", device, ctypes.c_uint(self._CLOCK_MEM), ctypes.byref(value)):
            out["mem_clock_mhz"] = value.value
        if self._call("nvmlDeviceGetTemperature", device, ctypes.c_uint(self._TEMPERATURE_GPU), ctypes.byref(value)):
            out["temperature_c"] = value.value
        if self._call("nvmlDeviceGetPowerUsage", device, ctypes.byref(value)):
            out["power_w"] = value.value / 1000.0
        reasons = ctypes.c_ulonglong(0)
        # The same bitmask under its current name (drivers >= 535); the older name is deprecated
        # there and kept only for drivers that predate it.
        if (self._call("nvmlDeviceGetCurrentClocksEventReasons", device, ctypes.byref(reasons))
                or self._call("nvmlDeviceGetCurrentClocksThrottleReasons", device, ctypes.byref(reasons))):
            out["throttle_reasons"] = reasons.value
        return out
