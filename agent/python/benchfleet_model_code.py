"""The two sources whose model is code rather than an architecture name (docs/models.md):

    python    factory = load_factory(spec)
              module, inputs = call_factory(spec, factory, batch, device)
    exported  program, inputs = load_exported(spec, batch)    # module: program.module()

A python model is the operator's function `package.module:function`, imported from the build's
environment or from the definition's file; called as function(batch=B, dtype=torch.float32,
device=...), it returns the model and its inputs. An exported model is a torch.export archive
(.pt2); its inputs are what the program's signature says, at the job's batch.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, List, Tuple

import torch

from benchfleet_definition import ExportFailure, InputSpec, ModelSpec
from benchfleet_memory import describe_error, is_oom_message
from benchfleet_tensors import dtype_name


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:500] if text else ''}"


# ---- python: a factory function ------------------------------------------------------------------

def _import_file(spec: ModelSpec, module_name: str, path: str) -> Any:
    """The module in `path` (the definition's .py file), imported under the factory's module name
    and entered in sys.modules, so that code looking its classes up by module (torch.compile,
    inspect, pickle) finds it; imported once (a model built again, e.g. for the float64 reference,
    uses the same module)."""
    if not os.path.isfile(path):
        raise ExportFailure("error", f"{spec.id}: the factory's file {path} does not exist or is not a file")
    existing = sys.modules.get(module_name)
    if existing is not None:
        if os.path.realpath(getattr(existing, "__file__", None) or "") == os.path.realpath(path):
            return existing
        raise ExportFailure("error", f"factory {spec.factory}: a module {module_name} is imported already; name the "
                                     f"module of {path} differently")
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ExportFailure("error", f"factory {spec.factory}: {path} is not a Python source file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as e:  # a syntax error, a failing import: the operator's code, reported as such
        del sys.modules[module_name]
        raise ExportFailure("error", f"factory {spec.factory}: importing {path} raised {_first_line(e)}") from None
    return module


def load_factory(spec: ModelSpec) -> Callable[..., Any]:
    """The factory function: from the definition's file (path, or the agent's copy of its
    artifact) when it has one, else imported from this python's environment."""
    module_name, function = spec.factory.split(":")
    path = spec.located
    if path:
        module = _import_file(spec, module_name, path)
    else:
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # ModuleNotFoundError, or the module's own failure
            raise ExportFailure("error", f"factory {spec.factory}: importing {module_name} raised "
                                         f"{_first_line(e)}") from None
    factory = getattr(module, function, None)
    if not callable(factory):
        raise ExportFailure("error", f"factory {spec.factory}: {module_name} has no function {function}")
    return factory


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        kind = "a tuple" if isinstance(value, tuple) else "a list"
        return f"{kind} of ({', '.join(type(item).__name__ for item in value[:4])}{', ...' if len(value) > 4 else ''})"
    return f"a {type(value).__name__}"


def call_factory(spec: ModelSpec, factory: Callable[..., Any], batch: int,
                 device: str) -> Tuple[torch.nn.Module, List[torch.Tensor]]:
    """(model, inputs) the factory returns for `batch` on `device`, the inputs as a list.

    An exception in the factory is an error naming it, except running out of memory, which stays
    what it is (the runner's oom verdict); a result of another shape is an error saying what came."""
    try:
        made = factory(batch=batch, dtype=torch.float32, device=device)
    except Exception as e:
        if isinstance(e, MemoryError) or is_oom_message(describe_error(e)):
            raise
        raise ExportFailure("error", f"factory {spec.factory} raised {type(e).__name__}: {e}"[:2000]) from None
    if isinstance(made, (tuple, list)) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
        model, inputs = made
        if isinstance(inputs, torch.Tensor):
            return model, [inputs]
        if isinstance(inputs, (tuple, list)) and inputs and all(isinstance(t, torch.Tensor) for t in inputs):
            return model, list(inputs)
    raise ExportFailure("error", f"factory {spec.factory} returned {_describe(made)}; it must return (model, inputs): "
                                 "an nn.Module and a tensor or a tuple/list of tensors")


# ---- exported: a torch.export archive ------------------------------------------------------------

def _signature_inputs(spec: ModelSpec, program: Any, batch: int) -> Tuple[InputSpec, ...]:
    """The program's user inputs per image: tensors whose first dimension is the batch, dynamic
    (and allowing `batch`) or static and equal to it; floats drawn at random, integers as masks.
    What the runner cannot feed is unsupported, saying why."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    inputs = []
    for name in program.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val") if name in placeholders else None
        if not isinstance(value, torch.Tensor):
            raise ExportFailure("unsupported", f"{spec.id}: input {name} of the exported program is not a tensor "
                                               f"({type(value).__name__}); the runner passes tensors only")
        dtype = dtype_name(value.dtype)
        if dtype is None:
            raise ExportFailure("unsupported", f"{spec.id}: input {name} of the exported program is {value.dtype}, "
                                               "which the runner does not make inputs of")
        if value.dim() == 0:
            raise ExportFailure("unsupported", f"{spec.id}: input {name} of the exported program is a scalar; its "
                                               "first dimension must be the batch")
        first, rest = value.shape[0], value.shape[1:]
        if not all(isinstance(d, int) for d in rest):
            raise ExportFailure("unsupported", f"{spec.id}: input {name} of the exported program has a dynamic "
                                               f"dimension besides the batch ({list(value.shape)}); the runner makes "
                                               "inputs of one shape per image")
        if isinstance(first, int):
            if first != batch:
                raise ExportFailure("unsupported", f"{spec.id} was exported at batch {first} (input {name}'s batch "
                                                   f"dimension is static), not {batch}: export it with a dynamic "
                                                   "batch dimension (torch.export.Dim)")
        else:
            bounds = program.range_constraints.get(first.node.expr)
            if bounds is not None and (bool(bounds.lower > batch) or bool(bounds.upper < batch)):
                raise ExportFailure("unsupported", f"{spec.id}: the exported program's batch dimension allows "
                                                   f"{bounds.lower} to {bounds.upper}, not {batch}")
        inputs.append(InputSpec(name, tuple(int(d) for d in rest), dtype))
    if not inputs:
        raise ExportFailure("unsupported", f"{spec.id}: the exported program takes no inputs")
    return tuple(inputs)


def load_exported(spec: ModelSpec, batch: int) -> Tuple[Any, Tuple[InputSpec, ...]]:
    """The ExportedProgram of the definition's archive and its inputs per image (the program's
    signature, checked against `batch`; the definition's own list, when it has one, names them)."""
    export = getattr(torch, "export", None)
    if not hasattr(export, "load"):
        raise ExportFailure("unsupported", f"{spec.id}: torch {torch.__version__} has no torch.export.load (an "
                                           "exported program needs torch >= 2.1)")
    path = spec.located
    if not os.path.isfile(path):
        raise ExportFailure("error", f"{spec.id}: the exported program {path} does not exist or is not a file")
    try:
        program = export.load(path)
    except Exception as e:  # not an archive, or one of another torch's serialisation
        raise ExportFailure("error", f"{spec.id}: cannot load the exported program {path}: {_first_line(e)}") from None
    derived = _signature_inputs(spec, program, batch)
    if not spec.inputs:
        return program, derived
    if len(spec.inputs) != len(derived):
        raise ExportFailure("error", f"{spec.id}: inputs: the definition lists {len(spec.inputs)}, the exported "
                                     f"program takes {len(derived)}")
    for i, (listed, taken) in enumerate(zip(spec.inputs, derived)):
        if (listed.concrete_shape(batch), listed.dtype) != (taken.concrete_shape(batch), taken.dtype):
            raise ExportFailure("error", f"{spec.id}: inputs[{i}]: the definition says {listed.dtype} "
                                         f"{listed.concrete_shape(batch)}, the exported program takes {taken.name} as "
                                         f"{taken.dtype} {taken.concrete_shape(batch)}")
    return program, spec.inputs
