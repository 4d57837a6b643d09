"""Tests of the rules the python side shares with the C++ programs (common/rules/*.json, read by
benchfleet_rules.py; the C++ side's tests are tests/unit/shared_rules_test.cpp): the unsupported-
dtype rule (benchfleet_unsupported_dtype.py, read by the exporter and the runner) on the messages
the worker is tested on too (tests/data/unsupported_dtype_cases.json), the measurement limits in
the job file's checks, the OOM needles on the worker's cases (tests/data/oom_message_cases.json;
that one needs torch, skipped without), and where an installed agent finds the rules.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.join(SOURCE_DIR, "agent", "python")
sys.dont_write_bytecode = True
sys.path.insert(0, PYTHON_DIR)

import benchfleet_job as bj  # noqa: E402
from benchfleet_unsupported_dtype import unsupported_dtype_line  # noqa: E402

CASES = os.path.join(SOURCE_DIR, "tests", "data", "unsupported_dtype_cases.json")
RULES = os.path.join(SOURCE_DIR, "common", "rules")
RULE = os.path.join(RULES, "unsupported_dtype.json")


class MeasurementLimitsTest(unittest.TestCase):
    def test_the_job_file_takes_the_iteration_limit_of_the_rule(self) -> None:
        """codecs_test's MeasurementSpec checks read the same file: a job at the limit is valid
        on both sides, one past it on neither."""
        with open(os.path.join(RULES, "measurement_limits.json"), encoding="utf-8") as f:
            most = json.load(f)["max_iterations"]
        job = {"model": "torchvision/resnet18", "batch": 1, "mode": "eager", "runtime": "python"}
        at_limit = bj.parse_job(json.dumps({**job, "measurement": {"min_iterations": most, "max_iterations": most}}))
        self.assertEqual(at_limit.measurement["max_iterations"], most)
        with self.assertRaises(bj.JobError) as past:
            bj.parse_job(json.dumps({**job, "measurement": {"min_iterations": 1, "max_iterations": most + 1}}))
        self.assertIn(f"measurement.max_iterations: must be between min_iterations and {most}", str(past.exception))


class OomMessageTest(unittest.TestCase):
    @unittest.skipUnless(importlib.util.find_spec("torch"), "benchfleet_memory needs torch")
    def test_judges_the_same_messages_as_the_worker(self) -> None:
        from benchfleet_memory import is_oom_message
        with open(os.path.join(SOURCE_DIR, "tests", "data", "oom_message_cases.json"), encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 8)
        for case in cases:
            with self.subTest(message=case["message"]):
                self.assertEqual(is_oom_message(case["message"]), case["oom"])


class UnsupportedDtypeTest(unittest.TestCase):
    def test_finds_the_same_lines_as_the_worker(self) -> None:
        with open(CASES, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 10)
        for case in cases:
            with self.subTest(dtype=case["dtype"], message=case["message"]):
                self.assertEqual(unsupported_dtype_line(case["dtype"], case["message"]), case["line"])

    def test_a_long_line_is_cut_before_it_is_read(self) -> None:
        half = "\"slow_conv2d_cpu\" not implemented for 'Half'"
        self.assertEqual(unsupported_dtype_line("float16", "x" * 100 + half), "x" * 100 + half)
        self.assertIsNone(unsupported_dtype_line("float16", "x" * 5000 + half))  # past max_line_chars
        self.assertEqual(unsupported_dtype_line("float16", "x" * 200000 + "\n" + half), half)

    def test_an_installed_layout_reads_the_rule_beside_the_modules(self) -> None:
        """share/benchfleet/{benchfleet_*.py, rules/unsupported_dtype.json}: no source tree."""
        with tempfile.TemporaryDirectory() as share:
            for name in ("benchfleet_unsupported_dtype.py", "benchfleet_rules.py"):
                shutil.copy(os.path.join(PYTHON_DIR, name), share)
            os.mkdir(os.path.join(share, "rules"))
            with open(RULE, encoding="utf-8") as f:
                rule = json.load(f)
            rule["patterns"] = ["installed-rule-marker"]
            with open(os.path.join(share, "rules", "unsupported_dtype.json"), "w", encoding="utf-8") as f:
                json.dump(rule, f)
            code = ("import benchfleet_unsupported_dtype as u; "
                    "print(u.unsupported_dtype_line('float16', 'an installed-rule-marker line'))")
            out = subprocess.run([sys.executable, "-B", "-c", code], cwd=share, capture_output=True, text=True,
                                 check=True, env={**os.environ, "PYTHONPATH": share})
            self.assertEqual(out.stdout.strip(), "an installed-rule-marker line")


if __name__ == "__main__":
    unittest.main()
