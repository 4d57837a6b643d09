"""The job JSON the Python runner reads: common/worker_job.h's schema, validated with the same
rules and error messages as the C++ codec (common/worker_job.cpp, common/codecs.cpp,
common/json_reader.cpp), plus three optional fields for the python runtime.

    job = parse_job(text)   # a Job, or raises JobError("field: message")

Fields (as for benchfleet-worker unless marked):
  model              the model's key. Required here: the id of a catalog model, or with
                     model_definition that definition's id, or "id@N" for its version N.
  model_definition   the model's definition (docs/models.md), as the coordinator puts it into the
                     job and the agent completes it (local_path: its copy of the artifact); the
                     runner builds the model from it and reads no catalog. null/absent: the
                     catalog's entry for `model`.
  runtime            python runtime: "python" (the default here); "libtorch" is refused.
  catalog            python runtime: catalog YAML path; default $BENCHFLEET_CATALOG, else
                     catalog/models.yaml beside the runner (installed), else the source tree's.
  weights            python runtime: local weights (a state_dict file, or a Hugging Face
                     checkpoint directory for transformers models) replacing the model's own;
                     null/absent: the model's (random init for the catalog's).
  artifact, format   optional here, and not read: the runner loads no artifact. Empty strings
                     are accepted (a C++ WorkerJob without them); a format must be a known one.
  batch, mode, device, measurement, memory_limit_mb, seed   as for the worker.
  dtype              the precision: float32 (default), float16, bfloat16 (model and floating inputs
                     cast), or amp (float32 weights, every call under torch.autocast).
  dynamic            compiled modes: torch.compile(dynamic=True) and the inputs' batch dimension
                     marked dynamic (default false).
  walk_batches       batch sizes, ascending, at most 64, each 1 to 65536: call the model once at
                     each (and 5 more times) before warming up the job's own batch (default []).
  inputs             optional here: the model's inputs at `batch`; when listed (not absent,
                     null or []) they must be exactly those (the exporter's metadata lists them so),
                     which the runner checks once it has built the model.
  artifact_metadata  optional; its torch_git/torch_version/python/sha256 go into the fingerprint
                     as exporter_*, and export_s into the result, as the worker does.
Unknown fields are refused, as by the worker.

Hooks is what a running job reports through: progress lines on stderr (the worker's format), the
OOM phase, the fingerprint and the memory cap (the last three for benchfleet_native_oom).
Pure Python: no torch needed.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from benchfleet_definition import DefinitionError, ModelSpec, parse_definition
from benchfleet_rules import rule, shipped_file
from benchfleet_stats import MEASUREMENT_DEFAULTS

# The benchfleet version this runner belongs to: the project version in the top CMakeLists.txt
# (a test keeps the two equal). Reported as --version and as the fingerprint's worker_version.
RUNNER_VERSION = "0.1.0"

MODES: Tuple[str, ...] = ("eager", "torchscript", "default", "reduce-overhead", "max-autotune",
                          "max-autotune-no-cudagraphs")
COMPILE_MODES: Tuple[str, ...] = MODES[2:]
FORMATS: Tuple[str, ...] = ("torchscript", "torchscript-frozen", "aotinductor")
DTYPES: Tuple[str, ...] = ("float32", "float16", "bfloat16", "int64", "int32", "bool")
# The precisions a job runs in (common/types.h Dtype); DTYPES above are a tensor's.
JOB_DTYPES: Tuple[str, ...] = ("float32", "float16", "bfloat16", "amp")
MAX_WALK_BATCHES = 64  # common/types.h kMaxWalkBatches
MAX_WALK_BATCH = 65536


def default_catalog() -> str:
    """The model catalog the python side reads when no --catalog names one (the exporter, the
    runner, the seed smoke test alike): $BENCHFLEET_CATALOG, else catalog/models.yaml beside these
    files (an installed agent's share/benchfleet/), else the source tree's common/catalog/."""
    return os.environ.get("BENCHFLEET_CATALOG") or shipped_file("catalog", "models.yaml")


_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_MAX_ELEMENTS = 1 << 34
_MAX_MEMORY_LIMIT_MB = 1 << 24
_MAX_STRING_BYTES = 64 * 1024
_MAX_DEPTH = 32


class Hooks:
    """What run_job tells its caller while it runs. The defaults print progress to stderr."""

    def progress(self, phase: str, iterations: int, seconds: float) -> None:
        print(f"progress phase={phase} iterations={iterations} seconds={seconds:.2f}", file=sys.stderr, flush=True)

    def phase(self, name: str) -> None:
        """The OOM phase from now on (load, compile, warmup, measure)."""

    def environment(self, env: Dict[str, Any]) -> None:
        """The fingerprint, taken before any memory cap."""

    def memory_cap(self, rlimit_as_bytes: int) -> None:
        """The address-space limit just applied on CPU (absolute, RLIMIT_AS)."""


def failed(status: str, message: str) -> Dict[str, Any]:
    """A result without measurements: status error, oom, unsupported or crash, with its message."""
    return {"status": status, "samples_ms": [], "environment": {}, "telemetry": {}, "error": message}


class JobError(Exception):
    """An invalid job; str() is "field: message" (or the message when no field applies)."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}" if field_path else message)
        self.field = field_path
        self.message = message


@dataclass
class TensorSpec:
    name: str
    shape: List[int]
    dtype: str = "float32"
    range: Optional[List[int]] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name, "shape": self.shape, "dtype": self.dtype}
        if self.range is not None:
            out["range"] = self.range
        return out


@dataclass
class Job:
    model: str
    batch: int
    mode: str
    device: str = "cpu"
    runtime: str = "python"
    model_definition: Optional[ModelSpec] = None
    catalog: Optional[str] = None
    weights: Optional[str] = None
    artifact: Optional[str] = None
    format: Optional[str] = None
    inputs: Optional[List[TensorSpec]] = None
    measurement: Dict[str, Any] = field(default_factory=lambda: dict(MEASUREMENT_DEFAULTS))
    memory_limit_mb: Optional[int] = None
    seed: int = 0
    dtype: str = "float32"
    dynamic: bool = False
    walk_batches: List[int] = field(default_factory=list)
    artifact_metadata: Dict[str, Any] = field(default_factory=dict)
    # The slot's intra-op thread count (torch.set_num_threads), the same the worker sets for
    # every build on the slot; 0: torch's default.
    threads: int = 0

    def export_s(self) -> Optional[float]:
        """The artifact's export time from artifact_metadata, which results report as the
        worker's do."""
        value = self.artifact_metadata.get("export_s")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# ---- JSON values, as common/json_reader.cpp decodes them ---------------------------------------

def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _integer(value: Any, path: str, bounds: Tuple[int, int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise JobError(path, f"must be an integer, got {_type_name(value)}")
    if not bounds[0] <= value <= bounds[1]:
        raise JobError(path, "is out of range")
    return value


def _int32(value: Any, path: str) -> int:
    return _integer(value, path, _INT32)


def _int64(value: Any, path: str) -> int:
    return _integer(value, path, _INT64)


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JobError(path, f"must be a number, got {_type_name(value)}")
    if not math.isfinite(value):
        raise JobError(path, "must be finite")
    return float(value)


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise JobError(path, f"must be a string, got {_type_name(value)}")
    if len(value.encode("utf-8")) > _MAX_STRING_BYTES:
        raise JobError(path, "is longer than 65536 bytes")
    return value


def _boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise JobError(path, f"must be a boolean, got {_type_name(value)}")
    return value


def _object(value: Any, path: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise JobError(path, f"must be an object, got {_type_name(value)}")
    return value


def _array(value: Any, path: str, item: Any) -> List[Any]:
    if not isinstance(value, list):
        raise JobError(path, "must be an array")
    return [item(v, f"{path}[{i}]") for i, v in enumerate(value)]


def _optional(decode: Any) -> Any:
    """A decoder that also takes null (std::optional)."""
    return lambda value, path: None if value is None else decode(value, path)


def _enum(allowed: Tuple[str, ...]) -> Any:
    def decode(value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise JobError(path, f"must be a string, got {_type_name(value)}")
        if value not in allowed:
            raise JobError(path, f'unknown value "{value}" (allowed: {", ".join(allowed)})')
        return value
    return decode


class _Reader:
    """common/json_reader.h JsonReader: members by name, errors naming their JSON path, and an
    error for the first member never asked for."""

    def __init__(self, value: Any, path: str) -> None:
        self._object = _object(value, path)
        self._path = path
        self._seen: set = set()

    def _join(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def required(self, key: str, decode: Any) -> Any:
        self._seen.add(key)
        if key not in self._object:
            raise JobError(self._join(key), "is required")
        return decode(self._object[key], self._join(key))

    def optional(self, key: str, decode: Any, default: Any = None) -> Any:
        self._seen.add(key)
        if key not in self._object:
            return default
        return decode(self._object[key], self._join(key))

    def check(self, condition: bool, key: str, message: str) -> None:
        if not condition:
            raise JobError(self._join(key), message)

    def finish(self) -> None:
        for key in self._object:
            if key not in self._seen:
                raise JobError(self._join(key), "is not a known field")


# ---- the job's parts ---------------------------------------------------------------------------

def _tensor_spec(value: Any, path: str) -> TensorSpec:
    r = _Reader(value, path)
    name = r.required("name", _string)
    shape = r.required("shape", lambda v, p: _array(v, p, _int64))
    dtype = r.optional("dtype", _string, "float32")
    value_range = r.optional("range", _optional(lambda v, p: _array(v, p, _int64)))
    r.check(bool(name), "name", "must not be empty")
    r.check(0 < len(shape) <= 8, "shape", "must have 1 to 8 dimensions")
    elements = 1
    for i, extent in enumerate(shape):
        r.check(extent > 0, f"shape[{i}]", "must be > 0")
        elements = elements * extent if elements <= _MAX_ELEMENTS // extent else _MAX_ELEMENTS + 1
    r.check(elements <= _MAX_ELEMENTS, "shape", "has more than 2^34 elements")
    r.check(dtype in DTYPES, "dtype", "must be one of float32, float16, bfloat16, int64, int32, bool")
    r.check(value_range is None or (len(value_range) == 2 and value_range[0] < value_range[1]), "range",
            "must be [low, high) with low < high")
    r.finish()
    return TensorSpec(name, shape, dtype, value_range)


def _measurement(value: Any, path: str) -> Dict[str, Any]:
    r = _Reader(value, path)
    d = MEASUREMENT_DEFAULTS
    m = {
        "warmup": r.optional("warmup", _int32, d["warmup"]),
        "min_iterations": r.optional("min_iterations", _int32, d["min_iterations"]),
        "max_iterations": r.optional("max_iterations", _int32, d["max_iterations"]),
        "min_duration_s": r.optional("min_duration_s", _number, d["min_duration_s"]),
        "max_duration_s": r.optional("max_duration_s", _number, d["max_duration_s"]),
        "target_ci_rel_width": r.optional("target_ci_rel_width", _number, d["target_ci_rel_width"]),
    }
    r.check(0 <= m["warmup"] <= 100000, "warmup", "must be between 0 and 100000")
    most = rule("measurement_limits.json")["max_iterations"]
    r.check(1 <= m["min_iterations"] <= most, "min_iterations", f"must be between 1 and {most}")
    r.check(m["min_iterations"] <= m["max_iterations"] <= most, "max_iterations",
            f"must be between min_iterations and {most}")
    r.check(0 <= m["min_duration_s"] <= 86400, "min_duration_s", "must be between 0 and 86400")
    r.check(0 < m["max_duration_s"] <= 86400 and m["max_duration_s"] >= m["min_duration_s"], "max_duration_s",
            "must be > 0, >= min_duration_s and <= 86400")
    r.check(0 < m["target_ci_rel_width"] < 1, "target_ci_rel_width", "must be > 0 and < 1")
    r.finish()
    return m


def _check_depth(text: str) -> None:
    """Refuses nesting deeper than 32 levels, as common/json_reader.cpp parse_json does."""
    depth, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            if depth > _MAX_DEPTH:
                raise JobError("", f"JSON nesting is deeper than {_MAX_DEPTH} levels")
        elif c in "}]":
            depth -= 1


def _definition(value: Any, path: str) -> ModelSpec:
    try:
        return parse_definition(value, path)
    except DefinitionError as e:
        raise JobError(e.field, e.detail) from None


def model_id_of(key: str) -> str:
    """The model id a job's model key names: "acme/x@2" (version 2) -> "acme/x"; an id (version
    1) names itself. Ids hold no '@', so anything else after one is no version."""
    model_id, _, version = key.partition("@")
    return model_id if version.isdigit() and version.isascii() and not version.startswith("0") else key


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def parse_job(text: str) -> Job:
    """The job in `text`; raises JobError naming the first offending field."""
    _check_depth(text)
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as e:
        raise JobError("", f"malformed JSON: {e}") from None
    r = _Reader(document, "")
    job = Job(
        model=r.required("model", _string),
        artifact=r.optional("artifact", _string),
        format=r.optional("format", _string),
        batch=r.required("batch", _int32),
        mode=r.required("mode", _enum(MODES)),
    )
    job.device = r.optional("device", _string, "cpu")
    job.inputs = r.optional("inputs", _optional(lambda v, p: _array(v, p, _tensor_spec))) or None
    job.measurement = r.optional("measurement", _measurement, dict(MEASUREMENT_DEFAULTS))
    job.memory_limit_mb = r.optional("memory_limit_mb", _optional(_int64))
    job.seed = r.optional("seed", _int64, 0)
    job.dtype = r.optional("dtype", _enum(JOB_DTYPES), "float32")
    job.dynamic = r.optional("dynamic", _boolean, False)
    job.walk_batches = r.optional("walk_batches", lambda v, p: _array(v, p, _int32), [])
    job.artifact_metadata = r.optional("artifact_metadata", _object, {})
    job.runtime = r.optional("runtime", _enum(("libtorch", "python")), "python")
    job.model_definition = r.optional("model_definition", _optional(_definition))
    job.catalog = r.optional("catalog", _optional(_string))
    job.weights = r.optional("weights", _optional(_string))
    job.threads = r.optional("threads", _int32, 0)

    r.check(bool(job.model), "model", "must not be empty (the python runtime builds the model from the catalog)")
    if job.model_definition is not None:
        model_id = job.model_definition.id
        r.check(model_id_of(job.model) == model_id, "model",
                f'must be the model_definition\'s id "{model_id}" or "{model_id}@N" (its version N)')
    r.check(not job.format or job.format in FORMATS, "format",
            "must be torchscript, torchscript-frozen or aotinductor")
    r.check(job.batch > 0, "batch", "must be > 0")
    r.check(job.device in ("cpu", "cuda"), "device", "must be cpu or cuda")
    r.check(job.inputs is None or len(job.inputs) <= 16, "inputs", "must list 1 to 16 tensors")
    r.check(job.memory_limit_mb is None or 0 < job.memory_limit_mb <= _MAX_MEMORY_LIMIT_MB, "memory_limit_mb",
            "must be null or between 1 and 16777216 (16 TiB)")
    r.check(job.runtime == "python", "runtime",
            "is libtorch: this is the python runtime's runner; libtorch jobs run in benchfleet-worker")
    r.check(job.catalog is None or bool(job.catalog), "catalog", "must not be empty")
    r.check(len(job.walk_batches) <= MAX_WALK_BATCHES, "walk_batches",
            f"must list at most {MAX_WALK_BATCHES} batch sizes")
    for i, size in enumerate(job.walk_batches):
        r.check(0 < size <= MAX_WALK_BATCH and (i == 0 or job.walk_batches[i - 1] < size), f"walk_batches[{i}]",
                f"must be between 1 and {MAX_WALK_BATCH} and ascending")
    r.check(job.weights is None or bool(job.weights), "weights", "must not be empty")
    r.check(0 <= job.threads <= 4096, "threads", "must be between 0 (torch's default) and 4096")
    r.finish()
    return job
