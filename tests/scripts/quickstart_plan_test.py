"""scripts/quickstart_plan.py: the quick start's runs, each build's part as soon as its root is ready.

Run as the quick start runs it (a program over a plan file), on the repository's real matrices
(examples/) and on files written here.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("BENCHFLEET_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PLANNER = os.path.join(SOURCE, "scripts", "quickstart_plan.py")
MEMORY = os.path.join(SOURCE, "examples", "cpu-memory-demo.yaml")  # stable, unstable
SEED = os.path.join(SOURCE, "examples", "cpu-seed-demo.yaml")  # unstable
COMPILE = os.path.join(SOURCE, "examples", "cpu-compile-demo.yaml")  # stable, unstable


class Plan:
    def __init__(self, test, *matrices):
        self.test = test
        self.path = os.path.join(test.tmp.name, "plan.json")
        self.call("init", *matrices)

    def call(self, *args):
        done = subprocess.run([sys.executable, PLANNER, self.path, *args], capture_output=True, text=True,
                              check=False)
        self.test.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout.splitlines()

    def next(self, stable, unstable):
        """The quick start's states of its two root builds."""
        return self.call("next", f"stable={stable}", f"unstable={unstable}")

    def ran(self, matrix, builds, run_id):
        return self.call("ran", matrix, builds, str(run_id))


class QuickstartPlanTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_the_unstable_parts_run_first_when_only_its_root_is_ready(self):
        plan = Plan(self, MEMORY, SEED, COMPILE)
        self.assertEqual(plan.next("pending", "pending"), [f"wait {MEMORY} {SEED} {COMPILE}"])
        self.assertEqual(plan.next("pending", "ready"), [f"run {MEMORY} unstable 1"])
        self.assertEqual(plan.ran(MEMORY, "unstable", 1), [])
        self.assertEqual(plan.next("pending", "ready"), [f"run {SEED} unstable 0"])
        self.assertEqual(plan.ran(SEED, "unstable", 2), [])
        self.assertEqual(plan.next("pending", "ready"), [f"run {COMPILE} unstable 1"])
        self.assertEqual(plan.ran(COMPILE, "unstable", 3), [])
        self.assertEqual(plan.next("pending", "ready"), [f"wait {MEMORY} {COMPILE}"])
        # The stable root follows: the matrices' stable parts, each ending with its comparison.
        self.assertEqual(plan.next("ready", "ready"), [f"run {MEMORY} stable 1"])
        self.assertEqual(plan.ran(MEMORY, "stable", 4), ["compare 4 1 stable unstable"])
        self.assertEqual(plan.next("ready", "ready"), [f"run {COMPILE} stable 1"])
        self.assertEqual(plan.ran(COMPILE, "stable", 5), ["compare 5 3 stable unstable"])
        self.assertEqual(plan.next("ready", "ready"), ["done"])

    def test_a_matrix_whose_roots_are_all_ready_runs_whole(self):
        plan = Plan(self, MEMORY, COMPILE)
        self.assertEqual(plan.next("ready", "ready"), [f"run {MEMORY} stable,unstable 0"])
        self.assertEqual(plan.ran(MEMORY, "stable,unstable", 1), [], "one run: no comparison of parts")
        self.assertEqual(plan.next("ready", "pending"), [f"run {COMPILE} stable 1"])
        self.assertEqual(plan.ran(COMPILE, "stable", 2), [])
        self.assertEqual(plan.next("ready", "ready"), [f"run {COMPILE} unstable 1"])
        self.assertEqual(plan.ran(COMPILE, "unstable", 3), ["compare 2 3 stable unstable"])
        self.assertEqual(plan.next("ready", "ready"), ["done"])

    def test_a_build_whose_root_could_not_be_made_is_left_out_and_said(self):
        plan = Plan(self, MEMORY, SEED)
        self.assertEqual(plan.next("none", "ready"),
                         [f"drop {MEMORY} stable: its root is not there", f"run {MEMORY} unstable 1"])
        self.assertEqual(plan.ran(MEMORY, "unstable", 1), [], "no stable part to compare with")
        self.assertEqual(plan.next("none", "ready"), [f"run {SEED} unstable 0"])
        plan.ran(SEED, "unstable", 2)
        self.assertEqual(plan.next("none", "ready"), ["done"])

    def test_a_matrix_with_no_root_left_is_skipped(self):
        plan = Plan(self, SEED, MEMORY)
        self.assertEqual(plan.next("ready", "none"),
                         [f"drop {SEED} unstable: its root is not there",
                          f"skip {SEED}: no torch build it names has a root here",
                          f"drop {MEMORY} unstable: its root is not there",
                          f"run {MEMORY} stable 1"])

    def test_builds_of_no_root_count_as_ready_and_unreadable_files_go_to_submit(self):
        host = self.write("host.yaml", "torch_builds: [debian12]\n")
        broken = self.write("broken.yaml", "torch_builds: [stable\n")
        plan = Plan(self, host, broken)
        self.assertEqual(plan.next("none", "none"), [f"run {host} debian12 0"])
        plan.ran(host, "debian12", 1)
        # submit reads the file itself and says what is wrong with it.
        self.assertEqual(plan.next("none", "none"), [f"run {broken} - 0"])
        self.assertEqual(plan.next("none", "none"), ["done"])

    def test_the_plan_is_a_file_between_calls(self):
        plan = Plan(self, COMPILE)
        plan.next("ready", "pending")
        with open(plan.path, encoding="utf-8") as f:
            stored = json.load(f)
        self.assertEqual(stored["matrices"][0]["left"], ["unstable"])
        bad = subprocess.run([sys.executable, PLANNER, plan.path, "next", "unstable=maybe"], capture_output=True,
                             text=True, check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("unstable=maybe", bad.stderr)

    def test_the_comparison_follows_the_matrix_order_of_its_builds(self):
        unstable_first = self.write("reversed.yaml", "torch_builds: [unstable, stable]\n")
        plan = Plan(self, unstable_first)
        self.assertEqual(plan.next("ready", "pending"), [f"run {unstable_first} stable 1"])
        plan.ran(unstable_first, "stable", 7)
        self.assertEqual(plan.next("ready", "ready"), [f"run {unstable_first} unstable 1"])
        self.assertEqual(plan.ran(unstable_first, "unstable", 8), ["compare 8 7 unstable stable"])


if __name__ == "__main__":
    unittest.main()
