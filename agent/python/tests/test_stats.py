"""Tests of the python runner's statistics and stopping rule (agent/python/benchfleet_stats.py),
bit for bit as common/stats.cpp and common/measurement.cpp: the known answers were computed with
them. Need neither torch nor numpy.
"""

from __future__ import annotations

import os
import sys
import unittest
from typing import Any, Dict, List, Optional, Tuple
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from runner_support import HAVE_NUMPY, bs  # noqa: E402


# ---- statistics (no torch) ---------------------------------------------------------------------

def _without_numpy() -> Any:
    return mock.patch.object(bs, "_numpy", lambda: None)


class Mt19937Test(unittest.TestCase):
    def test_known_answers(self) -> None:
        g = bs.Mt19937_64()
        for _ in range(9999):
            g()
        self.assertEqual(g(), 9981545732273789042)  # the C++ standard's check for mt19937_64
        self.assertEqual(bs.Mt19937_64(42)(), 13930160852258120406)  # std::mt19937_64(42)()

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy")
    def test_vectorised_draws_continue_the_same_stream(self) -> None:
        self.assertEqual(int(bs.Mt19937_64().draw(10000)[-1]), 9981545732273789042)
        one, other = bs.Mt19937_64(7), bs.Mt19937_64(7)
        expected = [one() for _ in range(4000)]
        got: List[int] = []
        for count in (5, 400, 0, 1, 311, 312, 313, 700, 624):
            got += [int(x) for x in other.draw(count)]
            got.append(other())
        self.assertEqual(got, expected[:len(got)])


class StatsTest(unittest.TestCase):
    # tests/unit/stats_test.cpp's samples
    UNSORTED = [3.5, 1.25, 9.75, 4.5, 2.0, 6.0, 7.0]

    def test_by_hand(self) -> None:
        self.assertEqual(bs.mean([2, 4, 4, 4, 5, 5, 7, 9]), 5.0)
        self.assertAlmostEqual(bs.sample_stddev([2, 4, 4, 4, 5, 5, 7, 9]), 2.138089935299395, places=12)
        one_to_ten = [float(x) for x in range(1, 11)]
        self.assertAlmostEqual(bs.percentile_sorted(one_to_ten, 0.9), 9.1, places=12)
        self.assertAlmostEqual(bs.percentile_sorted(one_to_ten, 0.99), 9.91, places=12)
        self.assertEqual(bs.percentile_sorted(one_to_ten, -0.5), 1.0)
        self.assertEqual(bs.percentile_sorted(one_to_ten, 1.5), 10.0)
        self.assertEqual(bs.median(self.UNSORTED), 4.5)
        self.assertEqual(bs.median([10, 1]), 5.5)
        self.assertEqual(bs.sample_stddev([3.0]), 0.0)
        s = bs.compute_statistics(self.UNSORTED)
        self.assertEqual((s["iterations"], s["min_ms"], s["max_ms"], s["median_ms"]), (7, 1.25, 9.75, 4.5))
        self.assertAlmostEqual(s["mean_ms"], 4.857142857142857, places=12)
        self.assertAlmostEqual(s["p90_ms"], 8.1, places=12)
        self.assertAlmostEqual(s["p99_ms"], 9.585, places=12)
        self.assertAlmostEqual(s["stddev_ms"], 2.9715916850834576, places=12)
        self.assertEqual(bs.bootstrap_median_ci(self.UNSORTED), (2.0, 7.0))  # common/stats.cpp's answer

    def test_degenerate_cases(self) -> None:
        self.assertEqual(bs.bootstrap_median_ci([2.5] * 30), (2.5, 2.5))
        self.assertEqual(bs.bootstrap_median_ci([4.0]), (4.0, 4.0))
        self.assertEqual(bs.bootstrap_median_ci(self.UNSORTED, 0.95, 0), (4.5, 4.5))
        self.assertTrue(all(x != x for x in bs.bootstrap_median_ci([])))
        self.assertEqual(bs.compute_statistics([])["iterations"], 0)
        one = bs.compute_statistics([3.0])
        self.assertEqual((one["stddev_ms"], one["ci_low_ms"], one["ci_high_ms"]), (0.0, 3.0, 3.0))
        self.assertEqual(bs.compute_statistics([0.0, 0.0])["cv"], 0.0)

    def check_known_answers(self) -> None:
        """Values printed by common/stats.cpp (%.17g) for these samples and seeds."""
        g = bs.Mt19937_64(11)
        samples = [1.0 + (g() % 100000) / 7919.0 for _ in range(301)]
        self.assertEqual(bs.compute_statistics(samples), {
            "mean_ms": 7.2002916573496067, "median_ms": 6.9621164288420259, "p90_ms": 12.460032832428336,
            "p99_ms": 13.511933324914763, "min_ms": 1.0147745927516101, "max_ms": 13.581007702992801,
            "stddev_ms": 3.6942184514889105, "cv": 0.51306511281637923, "ci_low_ms": 6.2944816264679888,
            "ci_high_ms": 7.4131834827629755, "iterations": 301})
        self.assertEqual(bs.bootstrap_median_ci(samples[:300], 0.9, 1000, 123456789),
                         (6.4047670160373782, 7.3226891021593614))
        w = [10.0 + 0.37 * ((i * 7919) % 13) + 0.001 * i for i in range(40)]
        self.assertEqual(bs.bootstrap_median_ci(w, 0.9, 400, 40), (11.5015, 12.795))
        self.assertEqual(bs.compute_statistics(self.UNSORTED), bs.compute_statistics(self.UNSORTED[::-1]))

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy")
    def test_known_answers_with_numpy(self) -> None:
        self.check_known_answers()

    def test_known_answers_in_plain_python(self) -> None:
        with _without_numpy():
            self.check_known_answers()

    @unittest.skipUnless(HAVE_NUMPY, "needs numpy")
    def test_with_numpy_the_bootstrap_draws_in_blocks_not_one_value_at_a_time(self) -> None:
        # 2000 resamples of 300 drawn one value at a time take seconds in plain Python; with numpy
        # the indices come from vectorised draws, and the per-value generator call is not used.
        g = bs.Mt19937_64(3)
        samples = [5 + (g() % 1000) / 100 for _ in range(300)]
        calls = []
        one_at_a_time = bs.Mt19937_64.__call__
        with mock.patch.object(bs.Mt19937_64, "__call__", autospec=True,
                               side_effect=lambda rng: calls.append(1) or one_at_a_time(rng)):
            stats = bs.compute_statistics(samples)
        self.assertLess(len(calls), 300, "the bootstrap drew its indices one generator call at a time")
        self.assertLessEqual(stats["ci_low_ms"], stats["median_ms"])
        self.assertLessEqual(stats["median_ms"], stats["ci_high_ms"])


class StoppingRuleTest(unittest.TestCase):
    @staticmethod
    def stop(measurement: Dict[str, Any], seconds_per_sample: float = 0.0) -> Tuple[int, str, Optional[float]]:
        rule = bs.StoppingRule(measurement)
        g, samples = bs.Mt19937_64(7), []
        while True:
            samples.append(5.0 + (g() % 1000) / 1000.0)
            reason = rule.check(samples, seconds_per_sample * len(samples))
            if reason is not None:
                return len(samples), reason, rule.last_relative_width

    def test_known_answers_from_common_measurement(self) -> None:
        base = {"min_iterations": 10, "max_iterations": 500, "min_duration_s": 0}
        self.assertEqual(self.stop({**base, "target_ci_rel_width": 0.03}), (100, "ci_target", 0.02993226656968808))
        self.assertEqual(self.stop({**base, "target_ci_rel_width": 0.05}), (60, "ci_target", 0.034922424679776305))
        self.assertEqual(self.stop({**base, "target_ci_rel_width": 0.01})[:2], (500, "max_iterations"))

    def test_fixed_count_duration_and_time_cap(self) -> None:
        fixed = {"min_iterations": 300, "max_iterations": 300}
        self.assertEqual(self.stop(fixed)[:2], (300, "fixed_count"))
        # 0.5 s minimum at 10 ms per sample: no CI check before 50 samples.
        self.assertGreaterEqual(self.stop({"min_iterations": 5, "target_ci_rel_width": 0.5}, 0.01)[0], 50)
        capped = {"min_iterations": 5, "max_duration_s": 1.0, "target_ci_rel_width": 0.001}
        self.assertEqual(self.stop(capped, 0.01)[:2], (100, "max_time"))

    def test_exit_codes_as_the_worker(self) -> None:
        self.assertEqual(bs.EXIT_CODES, {"ok": 0, "error": 1, "oom": 3, "unsupported": 4, "invalid": 5,
                                         "timeout": 6, "crash": 7, "oom_implied": 8})


if __name__ == "__main__":
    unittest.main()
