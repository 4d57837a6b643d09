"""Tests of Inductor's vector ISA on the CPU (benchfleet_vec_isa.py, benchfleet-g++): the wrapper
links Sleef into shared objects only and says what it is on -v; libsleef is told apart from a
libtorch with Sleef built in by the process's mappings; and where torch has Inductor's ISA probe
(torch >= 2.5, the torch roots) and the CPU has AVX2 or AVX-512, Inductor picks a vector ISA (its
kernels are not scalar code), in a compiled job's fingerprint too. On the host's torch 1.13 the
last two are skipped.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.join(SOURCE_DIR, "agent", "python")
sys.dont_write_bytecode = True
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, HERE)

import benchfleet_vec_isa as vi  # noqa: E402
from runner_support import job_for, run_in_process, torch_version  # noqa: E402


def cpu_has_vector_units() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags or "avx512f" in flags


class WrapperTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.seen = os.path.join(self.dir, "argv")
        self.cxx = os.path.join(self.dir, "fake-cxx")  # writes its argv, one per line
        with open(self.cxx, "w", encoding="utf-8") as f:
            f.write(f'#!/bin/sh\nprintf "%s\\n" "$@" > {self.seen}\necho "gcc version 99"\n')
        os.chmod(self.cxx, stat.S_IRWXU)

    def run_wrapper(self, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "BENCHFLEET_SLEEF_CXX": self.cxx}
        return subprocess.run([vi.WRAPPER, *args], env=env, capture_output=True, text=True, check=True)

    def argv(self) -> list:
        with open(self.seen, encoding="utf-8") as f:
            return f.read().split("\n")[:-1]

    def test_a_shared_object_is_linked_with_sleef_after_its_inputs(self) -> None:
        self.run_wrapper("-shared", "-fPIC", "kernel.o", "-o", "kernel.so", "-Wl,--as-needed")
        self.assertEqual(self.argv(), ["-shared", "-fPIC", "kernel.o", "-o", "kernel.so", "-Wl,--as-needed", "-lsleef"])

    def test_a_compile_or_a_version_query_is_passed_through(self) -> None:
        self.run_wrapper("-c", "kernel.cpp", "-o", "kernel.o")
        self.assertEqual(self.argv(), ["-c", "kernel.cpp", "-o", "kernel.o"])
        self.run_wrapper("--version")
        self.assertEqual(self.argv(), ["--version"])

    def test_its_verbose_version_names_it_so_inductor_keys_its_builds_apart(self) -> None:
        done = self.run_wrapper("-v")
        self.assertEqual(self.argv(), ["-v"])
        self.assertIn("gcc version 99", done.stdout)
        self.assertIn("benchfleet-g++", done.stderr)

    def test_its_name_reads_as_gcc_to_inductor(self) -> None:
        """Inductor picks gcc's flags for a compiler whose path ends in g++ after a / or -."""
        self.assertTrue(os.path.basename(vi.WRAPPER).endswith("-g++"))
        self.assertTrue(os.access(vi.WRAPPER, os.X_OK))


class KeyedWrapperTest(unittest.TestCase):
    """Inductor keys its caches by the compiler's path: the wrapper it is given lies in its cache
    directory, so a cache stays warm for another checkout or release of these modules."""

    def test_the_copy_lies_in_the_cache_directory_and_matches_the_wrapper(self) -> None:
        cache = os.path.join(tempfile.mkdtemp(), "inductor")
        copy = vi.keyed_wrapper(cache)
        self.assertEqual(copy, os.path.join(cache, "benchfleet-g++"))
        self.assertTrue(os.access(copy, os.X_OK))
        with open(copy, "rb") as a, open(vi.WRAPPER, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(vi.keyed_wrapper(cache), copy)
        self.assertEqual(sorted(os.listdir(cache)), ["benchfleet-g++"], "no temporary file left behind")

    def test_a_stale_copy_is_replaced(self) -> None:
        cache = tempfile.mkdtemp()
        stale = os.path.join(cache, "benchfleet-g++")
        with open(stale, "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\nexec g++ \"$@\"\n")
        os.chmod(stale, stat.S_IRWXU)
        vi.keyed_wrapper(cache)
        with open(stale, "rb") as a, open(vi.WRAPPER, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_without_a_cache_directory_or_one_it_cannot_write_it_is_the_module_s_own(self) -> None:
        self.assertEqual(vi.keyed_wrapper(""), vi.WRAPPER)
        blocked = os.path.join(tempfile.mkdtemp(), "a-file")
        with open(blocked, "w", encoding="utf-8") as f:
            f.write("not a directory")
        self.assertEqual(vi.keyed_wrapper(os.path.join(blocked, "inductor")), vi.WRAPPER)


class SeparateSleefTest(unittest.TestCase):
    def maps(self, *paths: str) -> str:
        f = tempfile.NamedTemporaryFile("w", delete=False, suffix=".maps")
        for i, path in enumerate(paths):
            f.write(f"7f{i:02x}000000-7f{i:02x}100000 r-xp 00000000 08:01 {i} {path}\n")
        f.close()
        return f.name

    def test_debian_libtorch_has_libsleef_mapped_beside_it(self) -> None:
        self.assertTrue(vi.separate_sleef_loaded(self.maps("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6",
                                                           "/usr/lib/x86_64-linux-gnu/libsleef.so.3.9.0")))

    def test_a_wheel_with_sleef_built_in_has_none(self) -> None:
        wheel = "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so"
        self.assertFalse(vi.separate_sleef_loaded(self.maps(wheel)))
        self.assertFalse(vi.separate_sleef_loaded("/nonexistent/maps"))


@unittest.skipIf(torch_version() < (2, 5), "Inductor's vector-ISA probe needs torch >= 2.5")
@unittest.skipUnless(cpu_has_vector_units(), "this CPU has neither AVX2 nor AVX-512")
class InductorPicksAVectorIsaTest(unittest.TestCase):
    def test_inductor_picks_a_vector_isa(self) -> None:
        isa = vi.inductor_vec_isa()
        self.assertNotIn(isa, ("none", "unknown"), "Inductor's CPU kernels would be scalar code")

    def test_a_compiled_cpu_job_records_its_vector_isa(self) -> None:
        shared = os.environ.get("BENCHFLEET_TEST_SHARED_INDUCTOR_CACHE")
        if shared:  # kept between test runs: what is checked is the same warm or cold
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(shared, "vec-isa")
        # ResNet-18: the ISA recorded is the build's, whatever the model; it compiles cold in less
        # than half of MobileNetV3-Small's time (17 s against 39 s on 2 cores).
        r = run_in_process(job_for("default", model="torchvision/resnet18"))
        self.assertEqual(r["status"], "ok", r.get("error"))
        self.assertEqual(r["environment"]["inductor_vec_isa"], vi.inductor_vec_isa())


if __name__ == "__main__":
    unittest.main()
