#!/usr/bin/env python3
"""Renders docs/results/seed-study-cpu.md's tables from a coordinator's stored results: the seeds'
study on the CPU beside the seeds' own A100 figures.

    scripts/seed-study-table.py --url URL --python-runs 1,3 [--libtorch-runs 2] [--builds-runs 4]

--python-runs   runs of examples/seed-study-cpu.yaml (python runtime: eager vs torch.compile
                `default`), one table per batch size, in the seeds' format, with the CPU speedup
                (eager / compiled, from the medians) next to the seeds' A100 one (torch 2.0, no
                compile / compile) and whether the two agree in direction; then compile times,
                accuracy verdicts and peak memory
--libtorch-runs runs of the same matrix in the libtorch runtime (AOTInductor packages)
--builds-runs   runs comparing builds (stable vs unstable) on the models both can run
Only the standard library: it runs with any python3. The A100 figures are the seeds' (Hugging
Face's torch.compile page, torch 2.0, ms per call); OwlViT's batch 4 and 16 are OOM there.
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

# The seeds' A100 table (torch 2.0): model -> batch -> (no compile, compile) in ms; None = OOM.
SEED_A100: Dict[str, Dict[int, Optional[Tuple[float, float]]]] = {
    "Image Classification/ViT": {1: (9.325, 7.584), 4: (14.832, 14.499), 16: (40.944, 40.010)},
    "Image Segmentation/Segformer": {1: (11.759, 10.500), 4: (18.838, 16.476), 16: (37.005, 31.144)},
    "Object Detection/OwlViT": {1: (24.978, 18.420), 4: None, 16: None},
    "Image Classification/BeiT": {1: (11.282, 8.448), 4: (13.205, 13.048), 16: (41.854, 41.048)},
    "Object Detection/DETR": {1: (34.619, 19.040), 4: (48.657, 32.418), 16: (164.382, 161.902)},
    "Image Classification/ConvNeXT": {1: (10.410, 10.208), 4: (22.940, 21.631), 16: (82.258, 75.561)},
    "Image Classification/ResNet": {1: (6.531, 4.124), 4: (6.657, 4.268), 16: (7.018, 5.024)},
    "Image Segmentation/Mask2former": {1: (60.188, 49.117), 4: (74.277, 61.781), 16: (178.945, 154.814)},
    "Image Segmentation/Maskformer": {1: (75.764, 59.487), 4: (180.700, 159.116), 16: (638.570, 579.826)},
    "Image Segmentation/MobileNet": {1: (8.583, 3.974), 4: (14.174, 8.515), 16: (51.693, 30.310)},
    "Object Detection/Resnet-101": {1: (36.276, 18.197), 4: (68.101, 44.998), 16: (232.887, 155.021)},
    "Object Detection/Conditional-DETR": {1: (31.219, 17.993), 4: (56.470, 35.552), 16: (180.491, 124.032)},
}


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.load(r)


def results(base: str, run: int) -> List[Dict[str, Any]]:
    out, cursor = [], None
    while True:
        page = get(f"{base}/api/v1/runs/{run}/results?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
        out += page["results"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def labels(base: str) -> Dict[str, str]:
    return {m["id"]: f"{m['task']}/{m['name']}" for m in get(f"{base}/api/v1/models")["models"]}


def latest(rows: List[Dict[str, Any]]) -> Dict[Tuple, Dict[str, Any]]:
    """(model, batch, runtime, mode, build) -> the row of the job's last attempt."""
    cells: Dict[Tuple, Dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (r["job_id"], r["attempt"])):
        j = row["job"]
        cells[(j["model"], j["batch"], j["runtime"], j["mode"], j["torch_build"])] = row
    return cells


def load_runs(base: str, runs: List[int]) -> Tuple[List[str], Dict[Tuple, Dict[str, Any]]]:
    """The runs' models in matrix order, and their cells (later runs win)."""
    cells: Dict[Tuple, Dict[str, Any]] = {}
    models: List[str] = []
    for run in runs:
        for model in get(f"{base}/api/v1/runs/{run}")["matrix"]["models"]:
            if model not in models:
                models.append(model)
        cells.update(latest(results(base, run)))
    return models, cells


def cell_text(row: Optional[Dict[str, Any]]) -> str:
    if row is None:
        return "-"
    r = row["result"]
    if r["status"] == "oom":
        return "OOM"
    if r["status"] != "ok":
        return r["status"]
    return f"{r['stats']['median_ms']:.1f}" + marks(row.get("flags") or [])


def one_line(text: str) -> str:
    """A message as one table cell: its lines joined, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def marks(flags: List[str]) -> str:
    """As the product's reports mark a number: "*" noisy, "†" stopped at its budget (ci_not_met)."""
    budget = "ci_not_met" in flags
    return ("*" if len(flags) > (1 if budget else 0) else "") + ("†" if budget else "")


def median(row: Optional[Dict[str, Any]]) -> Optional[float]:
    if row is None or row["result"]["status"] != "ok":
        return None
    return row["result"]["stats"]["median_ms"]


def arrow(speedup: Optional[float]) -> str:
    if speedup is None:
        return "-"
    return f"{speedup:.2f}x " + {1: "▲", -1: "▼", 0: "="}[direction(speedup)]


# Within 5% of 1 is neither faster nor slower: each CPU median's 95% CI is within 5% of it.
SAME_BAND = 0.05


def direction(s: Optional[float]) -> int:
    return 0 if s is None or abs(s - 1) <= SAME_BAND else (1 if s > 1 else -1)


def python_tables(base: str, runs: List[int], build: str) -> str:
    names = labels(base)
    models, cells = load_runs(base, runs)
    batches = sorted({k[1] for k in cells if k[2] == "python"})
    out: List[str] = []
    agree = disagree = 0
    for batch in batches:
        out += [f"### CPU, unstable (torch 2.14), python runtime (batch size: {batch})", "",
                "| **Task/Model** | **eager** | **compile (default)** | **CPU speedup** | "
                "**A100 speedup (seeds, torch 2.0)** | **same direction** |",
                "|:---:|:---:|:---:|:---:|:---:|:---:|"]
        for model in models:
            label = names.get(model, model)
            eager = cells.get((model, batch, "python", "eager", build))
            comp = cells.get((model, batch, "python", "default", build))
            e, c = median(eager), median(comp)
            cpu = e / c if e and c else None
            seed = SEED_A100.get(label, {}).get(batch, "missing")
            if seed is None:
                a100, gpu = "OOM", None  # the seeds' card ran out of memory
            elif seed == "missing":
                a100, gpu = "-", None
            else:
                gpu = seed[0] / seed[1]
                a100 = arrow(gpu)
            same = "-"
            if cpu is not None and gpu is not None:
                ok = direction(cpu) == direction(gpu)
                same = "yes" if ok else "**no**"
                agree, disagree = agree + ok, disagree + (not ok)
            out.append(f"| {label} | {cell_text(eager)} | {cell_text(comp)} | {arrow(cpu)} | {a100} | {same} |")
        out.append("")
    out.append(f"Direction: the CPU agrees with the A100 in {agree} cells and disagrees in {disagree} "
               f"(a speedup within {SAME_BAND:.0%} of 1 counts as neither faster nor slower: `=`).")
    out.append("")
    # Compile time, accuracy and memory per cell.
    out += ["### Compile time, accuracy and peak memory (unstable, python runtime)", "",
            "| **Task/Model** | **batch** | **compile s** | **accuracy** | **eager peak MB** | "
            "**compiled peak MB** | **notes** |", "|:---:|:---:|:---:|:---:|:---:|:---:|:---|"]
    for model in models:
        for batch in batches:
            eager = cells.get((model, batch, "python", "eager", build))
            comp = cells.get((model, batch, "python", "default", build))
            if comp is None and eager is None:
                continue
            notes = []
            compile_s = acc = "-"
            for row in (eager, comp):
                if row is not None and row["result"]["status"] not in ("ok",):
                    r = row["result"]
                    phase = (r.get("oom") or {}).get("phase")
                    notes.append(f"{row['job']['mode']}: {r['status']}" + (f" in {phase}" if phase else "") +
                                 (f": {one_line(r.get('error', ''))[:160]}" if r["status"] != "oom" else ""))
                if row is not None and row.get("flags"):
                    notes.append(f"{row['job']['mode']}: " + ", ".join(row["flags"]))
            if comp is not None and comp["result"]["status"] == "ok":
                t = comp["result"]["telemetry"]
                warm = " (warm)" if t.get("inductor_cache") == "warm" else ""
                compile_s = f"{t.get('compile_ms', 0) / 1000:.1f}{warm}"
                acc = (comp["result"].get("accuracy") or {}).get("verdict", "-")
            mem = [f"{row['result']['memory']['peak_rss_bytes'] / 2**20:.0f}"
                   if row is not None and row["result"].get("memory", {}).get("peak_rss_bytes") else "-"
                   for row in (eager, comp)]
            out.append(f"| {names.get(model, model)} | {batch} | {compile_s} | {acc} | {mem[0]} | {mem[1]} | "
                       f"{'; '.join(notes)} |")
    out.append("")
    return "\n".join(out)


def libtorch_table(base: str, runs: List[int], build: str) -> str:
    names = labels(base)
    models, cells = load_runs(base, runs)
    out = ["### CPU, unstable (torch 2.14), libtorch runtime: AOTInductor packages (batch size: 1)", "",
           "| **Task/Model** | **eager** | **AOTInductor (default)** | **speedup** | **export + compile s** | "
           "**accuracy** | **notes** |", "|:---:|:---:|:---:|:---:|:---:|:---:|:---|"]
    for model in models:
        eager = cells.get((model, 1, "libtorch", "eager", build))
        comp = cells.get((model, 1, "libtorch", "default", build))
        e, c = median(eager), median(comp)
        notes = []
        for row in (eager, comp):
            if row is not None and row["result"]["status"] != "ok":
                r = row["result"]
                notes.append(f"{row['job']['mode']}: {r['status']}: {one_line(r.get('error', ''))[:200]}")
        seconds = comp["result"].get("export_s") if comp is not None else None
        export = f"{seconds:.0f}" if seconds else "-"
        acc = (comp["result"].get("accuracy") or {}).get("verdict", "-") if comp is not None else "-"
        out.append(f"| {names.get(model, model)} | {cell_text(eager)} | {cell_text(comp)} | "
                   f"{arrow(e / c if e and c else None)} | {export} | {acc} | {'; '.join(notes)} |")
    out.append("")
    return "\n".join(out)


def builds_table(base: str, runs: List[int]) -> str:
    names = labels(base)
    models, cells = load_runs(base, runs)
    batches = sorted({k[1] for k in cells})
    versions: Dict[str, str] = {}
    for row in cells.values():
        env = row["result"].get("environment", {})
        versions.setdefault(row["job"]["torch_build"], env.get("torch_version", "?"))
    out = []
    for batch in batches:
        out += [f"### CPU, stable vs unstable, python runtime (batch size: {batch})", "",
                f"| **Task/Model** | **stable ({versions.get('stable', '?')}) - eager** | **stable - default** | "
                f"**unstable ({versions.get('unstable', '?')}) - eager** | **unstable - default** | "
                "**eager: unstable vs stable** | **default: unstable vs stable** |",
                "|:---:|:---:|:---:|:---:|:---:|:---:|:---:|"]
        for model in models:
            row = [cells.get((model, batch, "python", m, b))
                   for b in ("stable", "unstable") for m in ("eager", "default")]
            se, sd, ue, ud = (median(r) for r in row)
            out.append(f"| {names.get(model, model)} | " + " | ".join(cell_text(r) for r in row) +
                       f" | {arrow(se / ue if se and ue else None)} | {arrow(sd / ud if sd and ud else None)} |")
        out.append("")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--python-runs", default="")
    p.add_argument("--libtorch-runs", default="")
    p.add_argument("--builds-runs", default="")
    p.add_argument("--build", default="unstable")
    a = p.parse_args()
    ids = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    if a.python_runs:
        print(python_tables(a.url, ids(a.python_runs), a.build))
    if a.libtorch_runs:
        print(libtorch_table(a.url, ids(a.libtorch_runs), a.build))
    if a.builds_runs:
        print(builds_table(a.url, ids(a.builds_runs)))


if __name__ == "__main__":
    main()
