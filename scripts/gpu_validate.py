#!/usr/bin/env python3
"""The JSON side of scripts/gpu-validate.sh: jobs in, verdicts out, the summary. Standard library
only, so any python3 runs it; `probe` alone imports torch, run by the torch build's own python.

    gpu_validate.py libtorch-job --metadata M --mode MODE --device D --out JOB [--memory-limit-mb N]
    gpu_validate.py python-job --model ID --mode MODE --device D --out JOB [--memory-limit-mb N]
    gpu_validate.py export-case --cases F --name N --output FILE --rc RC [--limit S] --unsupported fail|skip
    gpu_validate.py result-case --cases F --name N --result FILE --rc RC [--limit S] --expect ok|oom
                                --unsupported fail|skip
    gpu_validate.py capabilities --cases F --name N --file CAPS --rc RC --kind worker|runner --device D
    gpu_validate.py case --cases F --name N --status S --reason R
    gpu_validate.py verdict --state DIR --stage S --status S --reason R [--figures FILE]
    gpu_validate.py seeds-verdict --state DIR --seeds FILE
    gpu_validate.py finish --state DIR --stage S --rc RC --seconds T --limit L
    gpu_validate.py summary --state DIR --stages a,b --json FILE --table FILE [--meta K=V]...
    gpu_validate.py field --file JSON --key KEY        (prints a top-level string; "" if absent)
    <torch python> gpu_validate.py probe --state DIR --device D --figures FILE

State, under DIR (the script's work folder): <stage>.cases.jsonl holds one case per line as the
stage goes (so a stage killed at its time limit keeps the cases it finished), <stage>.verdict.json
a stage's own verdict (probe, build, seeds), <stage>.json the final record `finish` writes.
A case or stage is PASS, FAIL or SKIP with a one-line reason and figures (median ms...).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from gpu_validate_probe import probe_figures, probe_summary

STATUSES = ("PASS", "FAIL", "SKIP")
# The short measurement of every job: proof that it runs, not a benchmark.
QUICK_MEASUREMENT = {"warmup": 3, "min_iterations": 10, "max_iterations": 50, "min_duration_s": 0.2,
                     "max_duration_s": 3.0, "target_ci_rel_width": 0.1}
# Result figures copied into a case, when present.
_STAT_KEYS = ("median_ms", "mean_ms", "p90_ms", "iterations")
_RESULT_KEYS = ("first_call_ms", "load_s", "export_s", "stop_reason")
_EXIT_STATUS = {0: "ok", 1: "error", 3: "oom", 4: "unsupported", 5: "invalid", 7: "crash"}


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    # A program's stdout may carry other lines before its one JSON line: take the last object.
    for candidate in [text] + [line for line in reversed(text.splitlines()) if line.strip().startswith("{")]:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _write_json(path: str, value: Any) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def _one_line(text: Any, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _append_case(cases: str, name: str, status: str, reason: str, figures: Optional[Dict[str, Any]] = None) -> None:
    assert status in STATUSES, status
    record = {"name": name, "status": status, "reason": _one_line(reason), "figures": figures or {},
              "at": round(time.time(), 3)}
    with open(cases, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    print(f"gpu-validate: {name}: {status}: {record['reason']}", flush=True)


def _timed_out(rc: int) -> bool:
    return rc in (124, 137)


def _exit_text(rc: int) -> str:
    """exit 1 (error); killed by SIGSEGV (exit 139): what a shell's status says about a process."""
    if rc > 128 and rc - 128 < signal.NSIG:
        try:
            return f"killed by {signal.Signals(rc - 128).name} (exit {rc})"
        except ValueError:
            return f"killed by signal {rc - 128} (exit {rc})"
    return f"exit {rc}, {_EXIT_STATUS.get(rc, '?')}"


# ---- jobs --------------------------------------------------------------------------------------

def cmd_libtorch_job(a: argparse.Namespace) -> int:
    metadata = _read_json(a.metadata)
    if not metadata or "inputs" not in metadata:
        print(f"gpu_validate: {a.metadata} is no exporter metadata", file=sys.stderr)
        return 1
    job = {"runtime": "libtorch", "model": metadata.get("model", ""),
           "artifact": os.path.join(os.path.dirname(os.path.abspath(a.metadata)), metadata["artifact"]),
           "format": metadata["format"], "batch": metadata.get("batch", 1), "mode": a.mode, "device": a.device,
           "inputs": metadata["inputs"], "measurement": QUICK_MEASUREMENT,
           "memory_limit_mb": a.memory_limit_mb, "seed": 0, "artifact_metadata": metadata}
    _write_json(a.out, job)
    return 0


def cmd_python_job(a: argparse.Namespace) -> int:
    job = {"runtime": "python", "model": a.model, "batch": a.batch, "mode": a.mode, "device": a.device,
           "measurement": QUICK_MEASUREMENT, "memory_limit_mb": a.memory_limit_mb, "seed": 0}
    if a.catalog:
        job["catalog"] = a.catalog
    _write_json(a.out, job)
    return 0


# ---- cases -------------------------------------------------------------------------------------

def _unsupported(policy: str) -> str:
    # On the GPU the run is the proof, so a mode the build calls unsupported fails it; on the CPU
    # (a test of the script) it is what the build can honestly say.
    return "FAIL" if policy == "fail" else "SKIP"


def cmd_export_case(a: argparse.Namespace) -> int:
    """Exit 0 when the export produced an artifact; else records the case and exits 1."""
    out = _read_json(a.output) or {}
    status = out.get("status") or _EXIT_STATUS.get(a.rc, "error")
    if a.rc == 0 and status == "ok":
        return 0
    if _timed_out(a.rc):
        _append_case(a.cases, a.name, "FAIL", f"export timed out after {a.limit} s")
    elif status == "unsupported":
        _append_case(a.cases, a.name, _unsupported(a.unsupported), f"export unsupported: {out.get('message', '')}")
    else:
        message = out.get("message", "no JSON on stdout")
        _append_case(a.cases, a.name, "FAIL", f"export {status} ({_exit_text(a.rc)}): {message}")
    return 1


def _result_figures(result: Dict[str, Any]) -> Dict[str, Any]:
    figures: Dict[str, Any] = {"status": result.get("status")}
    stats = result.get("stats") or {}
    for key in _STAT_KEYS:
        if key in stats:
            figures[key] = stats[key]
    for key in _RESULT_KEYS:
        if result.get(key) is not None:
            figures[key] = result[key]
    oom = result.get("oom") or {}
    if oom:
        figures["oom_phase"] = oom.get("phase")
        if oom.get("bytes_requested") is not None:
            figures["oom_bytes_requested"] = oom["bytes_requested"]
    memory = result.get("memory") or {}
    for key in ("peak_allocated_bytes", "peak_rss_bytes"):
        if memory.get(key) is not None:
            figures[key] = memory[key]
    telemetry = result.get("telemetry") or {}
    for key in ("compile_ms", "graphs", "graph_breaks", "inductor_cache", "host_ms_per_iteration"):
        if key in telemetry:
            figures[key] = telemetry[key]
    return figures


def _ms(value: Any) -> str:
    return f"{value:.3f} ms" if isinstance(value, (int, float)) else "?"


def cmd_result_case(a: argparse.Namespace) -> int:
    result = _read_json(a.result)
    if _timed_out(a.rc):
        _append_case(a.cases, a.name, "FAIL", f"timed out after {a.limit} s")
        return 1
    if result is None:
        _append_case(a.cases, a.name, "FAIL", f"no result JSON ({_exit_text(a.rc)})")
        return 1
    status = result.get("status", "?")
    figures = _result_figures(result)
    message = _one_line(result.get("error") or "", 240)
    if status == a.expect:
        if status == "ok":
            reason = (f"median {_ms(figures.get('median_ms'))} over {figures.get('iterations', '?')} iterations, "
                      f"first call {_ms(figures.get('first_call_ms'))}")
        else:
            phase = figures.get("oom_phase") or "no phase"
            requested = figures.get("oom_bytes_requested")
            reason = f"oom in phase {phase}" + (f", {requested} bytes requested" if requested is not None else "")
            if not figures.get("oom_phase"):
                _append_case(a.cases, a.name, "FAIL", reason + " (an oom result must name its phase)", figures)
                return 1
        _append_case(a.cases, a.name, "PASS", reason, figures)
        return 0
    if status == "unsupported" and a.expect == "ok":
        _append_case(a.cases, a.name, _unsupported(a.unsupported), f"unsupported: {message}", figures)
        return 1
    _append_case(a.cases, a.name, "FAIL", f"status {status}, expected {a.expect}" + (f": {message}" if message else ""),
                 figures)
    return 1


def cmd_capabilities(a: argparse.Namespace) -> int:
    caps = _read_json(a.file)
    if _timed_out(a.rc) or caps is None or a.rc != 0:
        _append_case(a.cases, a.name, "FAIL", f"--capabilities gave no JSON (exit {a.rc})")
        return 1
    modes = caps.get("modes") or {}
    figures = {k: caps[k] for k in ("torch_version", "aoti", "aoti_cuda_graphs", "torch_compile", "cuda_compiled",
                                    "cuda_available") if k in caps}
    figures["modes_" + a.device] = modes.get(a.device, [])
    if a.kind == "worker":
        wanted = ["eager", "torchscript", "default", "reduce-overhead"] if a.device == "cuda" else ["eager"]
        flags = ["cuda_compiled", "cuda_available", "aoti"] if a.device == "cuda" else []
    else:
        wanted = (["eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs"] if a.device == "cuda"
                  else ["eager"])
        flags = ["cuda_compiled", "cuda_available", "torch_compile"] if a.device == "cuda" else []
    have = modes.get(a.device, [])
    missing = [m for m in wanted if m not in have] + [f for f in flags if caps.get(f) is not True]
    flag_text = ", ".join(f"{k} {str(v).lower()}" for k, v in figures.items() if isinstance(v, bool))
    reason = f"torch {caps.get('torch_version', '?')}; {a.device} modes: {' '.join(have) or 'none'}; {flag_text}"
    if missing:
        _append_case(a.cases, a.name, "FAIL", f"missing {', '.join(missing)} ({reason})", figures)
        return 1
    _append_case(a.cases, a.name, "PASS", reason, figures)
    return 0


def cmd_case(a: argparse.Namespace) -> int:
    _append_case(a.cases, a.name, a.status, a.reason)
    return 0


# ---- stages ------------------------------------------------------------------------------------

def cmd_verdict(a: argparse.Namespace) -> int:
    figures = (_read_json(a.figures) or {}) if a.figures else {}
    _write_json(os.path.join(a.state, f"{a.stage}.verdict.json"),
                {"status": a.status, "reason": _one_line(a.reason), "figures": figures})
    print(f"gpu-validate: {a.stage}: {a.status}: {_one_line(a.reason)}", flush=True)
    return 0


def seeds_verdict(document: Dict[str, Any]) -> Dict[str, Any]:
    """FAIL when any model errs; SKIP when none could be built at all; else PASS."""
    counts = document.get("counts", {})
    models = document.get("models", [])
    per_model = counts.get("model", {})
    failed = [m for m in models if m["status"] == "error"]
    skipped = [m for m in models if m["status"] == "skipped"]
    built = sum(1 for m in models if m["steps"]["build"]["status"] == "ok")
    steps = "; ".join(f"{step} " + " ".join(f"{k} {v}" for k, v in sorted(counts.get(step, {}).items()))
                      for step in ("build", "forward", "trace", "export"))
    versions = document.get("versions", {})
    head = f"torch {versions.get('torch', '?')}, transformers {versions.get('transformers', '?')}: {steps}"
    if failed:
        worst = failed[0]
        step, info = next((s, v) for s, v in worst["steps"].items() if v["status"] == "error")
        status = "FAIL"
        reason = (f"{len(failed)} of {len(models)} models error "
                  f"(first: {worst['model']} {step}: {info['reason']}); {head}")
    elif skipped:
        status, reason = "FAIL", f"{len(skipped)} of {len(models)} models not started in time; {head}"
    elif built == 0:
        status, reason = "SKIP", f"no model could be built here; {head}"
    else:
        status, reason = "PASS", head
    return {"status": status, "reason": reason,
            "figures": {"models": per_model,
                        "steps": {s: counts.get(s, {}) for s in ("build", "forward", "trace", "export")},
                        "versions": versions}}


def cmd_seeds_verdict(a: argparse.Namespace) -> int:
    document = _read_json(a.seeds)
    if not document or "models" not in document:
        verdict = {"status": "FAIL", "reason": f"the smoke test wrote no report ({a.seeds})", "figures": {}}
    else:
        verdict = seeds_verdict(document)
    verdict["reason"] = _one_line(verdict["reason"], 600)
    _write_json(os.path.join(a.state, "seeds.verdict.json"), verdict)
    print(f"gpu-validate: seeds: {verdict['status']}: {verdict['reason']}", flush=True)
    return 0


def _load_cases(state: str, stage: str) -> List[Dict[str, Any]]:
    cases: List[Dict[str, Any]] = []
    try:
        with open(os.path.join(state, f"{stage}.cases.jsonl"), encoding="utf-8") as f:
            for line in f:
                try:
                    cases.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return cases


def finish_stage(state: str, stage: str, rc: int, seconds: float, limit: float) -> Dict[str, Any]:
    """The stage's record from its verdict or cases and its exit status."""
    verdict = _read_json(os.path.join(state, f"{stage}.verdict.json"))
    cases = _load_cases(state, stage)
    for case in cases:
        case.pop("at", None)
    record: Dict[str, Any] = {"stage": stage, "seconds": round(seconds, 1), "limit_s": round(limit), "figures": {},
                              "cases": cases}
    if verdict:
        record.update(status=verdict["status"], reason=verdict["reason"], figures=verdict.get("figures", {}))
    elif cases:
        tally = {s: sum(1 for c in cases if c["status"] == s) for s in STATUSES}
        failed = [c for c in cases if c["status"] == "FAIL"]
        status = "FAIL" if failed else "PASS" if tally["PASS"] else "SKIP"
        reason = ", ".join(f"{n} {s}" for s, n in tally.items() if n)
        if failed:
            reason += f" (first FAIL: {failed[0]['name']}: {failed[0]['reason']})"
        elif status == "SKIP":
            reason += f" ({cases[0]['name']}: {cases[0]['reason']})"
        record.update(status=status, reason=reason)
    else:
        record.update(status="FAIL", reason=f"the stage ended (exit {rc}) without a verdict")
    if _timed_out(rc):
        record["status"] = "FAIL"
        record["reason"] = f"timed out after {limit:.0f} s; " + record["reason"]
    elif rc != 0 and record["status"] != "FAIL" and not verdict:
        record["status"] = "FAIL"
        record["reason"] = f"the stage exited {rc}; " + record["reason"]
    record["reason"] = _one_line(record["reason"], 600)
    return record


def cmd_finish(a: argparse.Namespace) -> int:
    record = finish_stage(a.state, a.stage, a.rc, a.seconds, a.limit)
    _write_json(os.path.join(a.state, f"{a.stage}.json"), record)
    print(f"gpu-validate: {a.stage}: {record['status']} in {record['seconds']} s: {record['reason']}", flush=True)
    return 0


# ---- probe -------------------------------------------------------------------------------------

def cmd_probe(a: argparse.Namespace) -> int:
    tools = dict(line.partition("=")[::2] for line in os.environ.get("GV_TOOLS", "").splitlines() if "=" in line)
    if os.environ.get("GV_SMI"):
        tools["nvidia_smi"] = os.environ["GV_SMI"]
    fig = probe_figures(a.device, tools)
    _write_json(a.figures, fig)
    print(json.dumps(fig, indent=2))
    status = "PASS" if fig["ok"] else "FAIL"
    _write_json(os.path.join(a.state, "probe.verdict.json"),
                {"status": status, "reason": _one_line(probe_summary(fig), 600), "figures": fig})
    print(f"gpu-validate: probe: {status}: {probe_summary(fig)}", flush=True)
    return 0 if fig["ok"] else 1


# ---- summary -----------------------------------------------------------------------------------

def render_table(stages: List[Dict[str, Any]], width: int = 160) -> str:
    rows = [("stage", "status", "seconds", "reason")]
    for s in stages:
        rows.append((s["stage"], s["status"], f"{s['seconds']:.1f}" if s.get("seconds") is not None else "-",
                     s["reason"]))
        for c in s.get("cases", []):
            rows.append(("  " + c["name"], c["status"], "", c["reason"]))
    name_w = max(len(r[0]) for r in rows)
    lines = []
    for name, status, seconds, reason in rows:
        line = f"{name:<{name_w}}  {status:<6}  {seconds:>7}  {reason}"
        lines.append(line if len(line) <= width else line[: width - 3] + "...")
    return "\n".join(lines) + "\n"


def cmd_summary(a: argparse.Namespace) -> int:
    stages = []
    for stage in [s for s in a.stages.split(",") if s]:
        record = _read_json(os.path.join(a.state, f"{stage}.json"))
        stages.append(record or {"stage": stage, "status": "FAIL", "seconds": None, "reason": "no record", "cases": []})
    counts = {s: sum(1 for r in stages if r["status"] == s) for s in STATUSES}
    document: Dict[str, Any] = {"schema": 1, "stages": stages, "counts": counts, "ok": counts["FAIL"] == 0}
    for item in a.meta or []:
        key, _, value = item.partition("=")
        document[key] = float(value) if key.endswith("_s") and value.replace(".", "", 1).isdigit() else value
    _write_json(a.json, document)
    table = render_table(stages)
    totals = " ".join(f"{s} {n}" for s, n in counts.items())
    text = table + f"\n{totals}; summary: {a.json}\n"
    with open(a.table, "w", encoding="utf-8") as f:
        f.write(render_table(stages, width=100000) + f"\n{totals}\n")
    sys.stdout.write(text)
    return 0


def cmd_field(a: argparse.Namespace) -> int:
    value = (_read_json(a.file) or {}).get(a.key, "")
    print(value if isinstance(value, str) else json.dumps(value))
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu_validate.py", description="JSON helper of scripts/gpu-validate.sh")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("libtorch-job")
    s.add_argument("--metadata", required=True)
    s.add_argument("--mode", required=True)
    s.add_argument("--device", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--memory-limit-mb", type=int)
    s.set_defaults(run=cmd_libtorch_job)

    s = sub.add_parser("python-job")
    s.add_argument("--model", required=True)
    s.add_argument("--batch", type=int, default=1)
    s.add_argument("--mode", required=True)
    s.add_argument("--device", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--memory-limit-mb", type=int)
    s.add_argument("--catalog")
    s.set_defaults(run=cmd_python_job)

    for name, run in (("export-case", cmd_export_case), ("result-case", cmd_result_case),
                      ("capabilities", cmd_capabilities), ("case", cmd_case)):
        s = sub.add_parser(name)
        s.add_argument("--cases", required=True)
        s.add_argument("--name", required=True)
        s.set_defaults(run=run)
        if name == "case":
            s.add_argument("--status", required=True, choices=STATUSES)
            s.add_argument("--reason", required=True)
            continue
        s.add_argument("--rc", type=int, required=True)
        if name == "export-case":
            s.add_argument("--output", required=True)
        if name == "result-case":
            s.add_argument("--result", required=True)
            s.add_argument("--expect", choices=("ok", "oom"), default="ok")
        if name in ("export-case", "result-case"):
            s.add_argument("--unsupported", choices=("fail", "skip"), required=True)
            s.add_argument("--limit", type=int, default=0, help="the time limit it ran under (for the message)")
        if name == "capabilities":
            s.add_argument("--file", required=True)
            s.add_argument("--kind", choices=("worker", "runner"), required=True)
            s.add_argument("--device", choices=("cpu", "cuda"), required=True)

    s = sub.add_parser("verdict")
    s.add_argument("--state", required=True)
    s.add_argument("--stage", required=True)
    s.add_argument("--status", required=True, choices=STATUSES)
    s.add_argument("--reason", required=True)
    s.add_argument("--figures")
    s.set_defaults(run=cmd_verdict)

    s = sub.add_parser("seeds-verdict")
    s.add_argument("--state", required=True)
    s.add_argument("--seeds", required=True)
    s.set_defaults(run=cmd_seeds_verdict)

    s = sub.add_parser("finish")
    s.add_argument("--state", required=True)
    s.add_argument("--stage", required=True)
    s.add_argument("--rc", type=int, required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--limit", type=float, required=True)
    s.set_defaults(run=cmd_finish)

    s = sub.add_parser("summary")
    s.add_argument("--state", required=True)
    s.add_argument("--stages", required=True)
    s.add_argument("--json", required=True)
    s.add_argument("--table", required=True)
    s.add_argument("--meta", action="append")
    s.set_defaults(run=cmd_summary)

    s = sub.add_parser("probe")
    s.add_argument("--state", required=True)
    s.add_argument("--device", choices=("cpu", "cuda"), required=True)
    s.add_argument("--figures", required=True)
    s.set_defaults(run=cmd_probe)

    s = sub.add_parser("field")
    s.add_argument("--file", required=True)
    s.add_argument("--key", required=True)
    s.set_defaults(run=cmd_field)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
