"""Tests of the shape walk (agent/python/benchfleet_shape_walk.py) on a stand-in model whose
calls take known times and "compile" a graph at chosen batch sizes; no torch needed. The walk
through a real torch.compile is tested in the torch 2.6 root (test_runner.py CompileModesTest).
"""

from __future__ import annotations

import os
import sys
import unittest
from typing import Any, Dict, List, Optional, Set

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SOURCE_DIR, "agent", "python"))

from benchfleet_shape_walk import WALK_CALLS, shape_walk  # noqa: E402


class FakeModel:
    """Each call advances a fake clock by batch x 1 ms, and by 100 ms more when it "compiles" (the
    first call at a batch size in `compiles_at`); `fails_at` raises like an out-of-memory."""

    def __init__(self, compiles_at: Set[int], fails_at: Optional[int] = None) -> None:
        self.now = 0.0
        self.graphs = 1  # the job's first call compiled one
        self.compiles_at = set(compiles_at)
        self.fails_at = fails_at
        self.calls: List[int] = []
        self.synchronized = 0

    def inputs_at(self, batch: int) -> List[Any]:
        if batch == self.fails_at:
            raise RuntimeError(f"out of memory: tried to allocate {batch} GiB")
        return [batch]

    def call(self, inputs: List[Any]) -> None:
        batch = inputs[0]
        self.calls.append(batch)
        self.now += batch / 1000
        if batch in self.compiles_at:
            self.compiles_at.discard(batch)
            self.graphs += 1
            self.now += 0.1

    def sync(self) -> None:
        self.synchronized += 1

    def walk(self, batches: List[int], counted: bool = True) -> Dict[str, Any]:
        return shape_walk(batches, self.inputs_at, self.call, self.sync, (lambda: self.graphs) if counted else None,
                          clock=lambda: self.now)


class ShapeWalkTest(unittest.TestCase):
    def test_per_batch_first_and_median_times_graphs_and_recompiles(self) -> None:
        model = FakeModel(compiles_at={2, 16})
        t = model.walk([1, 2, 4, 16])
        self.assertEqual(model.calls, [b for b in (1, 2, 4, 16) for _ in range(1 + WALK_CALLS)])
        self.assertEqual(t["walk_batches"], "1,2,4,16")
        for b, first in ((1, 1.0), (2, 102.0), (4, 4.0), (16, 116.0)):
            self.assertAlmostEqual(t[f"walk_b{b}_first_ms"], first)  # a recompile shows in the first call
            self.assertAlmostEqual(t[f"walk_b{b}_median_ms"], float(b))
        self.assertEqual([t[f"walk_b{b}_graphs"] for b in (1, 2, 4, 16)], [1, 2, 2, 3])
        self.assertEqual(t["walk_recompiles"], 2)
        self.assertNotIn("walk_error", t)
        self.assertTrue(all(isinstance(v, (str, int, float)) for v in t.values()), t)  # flat scalars

    def test_eager_has_no_graph_keys(self) -> None:
        t = FakeModel(compiles_at=set()).walk([1, 8], counted=False)
        self.assertEqual(set(t), {"walk_batches", "walk_b1_first_ms", "walk_b1_median_ms", "walk_b8_first_ms",
                                  "walk_b8_median_ms"})

    def test_a_failure_ends_the_walk_not_the_job(self) -> None:
        model = FakeModel(compiles_at={4}, fails_at=8)
        t = model.walk([1, 4, 8, 16])
        self.assertEqual(t["walk_error"], "at batch 8: RuntimeError: out of memory: tried to allocate 8 GiB")
        self.assertIn("walk_b4_median_ms", t)
        self.assertFalse(any(k.startswith(("walk_b8_", "walk_b16_")) for k in t), t)
        self.assertEqual(t["walk_recompiles"], 1)


if __name__ == "__main__":
    unittest.main()
