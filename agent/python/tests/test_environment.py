"""The runner's --capabilities names the build's native library folders (pip's nvidia/*/lib),
which the agent puts on the worker's library path. Run with Debian's /usr/bin/python3 (ctest
python_agent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RUNNER = os.path.join(PYTHON_DIR, "benchfleet_runner.py")


def capabilities(extra_path: str = "") -> dict:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, RUNNER, "--capabilities"], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout)


class NativeLibraryDirsTest(unittest.TestCase):
    def test_without_pip_cuda_wheels_there_are_none(self) -> None:
        self.assertEqual(capabilities()["library_dirs"], [])

    def test_every_nvidia_wheel_lib_folder_is_named_once_in_order(self) -> None:
        # pip's CUDA wheels share the `nvidia` namespace package (no __init__.py), each with lib/.
        with tempfile.TemporaryDirectory() as site_a, tempfile.TemporaryDirectory() as site_b:
            for site, wheels in ((site_a, ("cudnn", "cu13")), (site_b, ("nccl",))):
                for wheel in wheels:
                    os.makedirs(os.path.join(site, "nvidia", wheel, "lib"))
            os.makedirs(os.path.join(site_a, "nvidia", "headers_only", "include"))  # no lib/: not named
            dirs = capabilities(site_a + os.pathsep + site_b)["library_dirs"]
        self.assertEqual(dirs, [os.path.join(site_a, "nvidia", "cu13", "lib"),
                                os.path.join(site_a, "nvidia", "cudnn", "lib"),
                                os.path.join(site_b, "nvidia", "nccl", "lib")])


if __name__ == "__main__":
    unittest.main()
