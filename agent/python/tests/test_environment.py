"""The runner's --capabilities names the build's native library folders (pip's nvidia/*/lib),
which the agent puts on the worker's library path; the fingerprint's NVML readings (with a stand-in
for the library). Run with Debian's /usr/bin/python3 (ctest python_agent)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RUNNER = os.path.join(PYTHON_DIR, "benchfleet_runner.py")
HAVE_TORCH = importlib.util.find_spec("torch") is not None


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


class FakeNvml:
    """libnvidia-ml's functions that telemetry() calls, each answering through its pointer
    argument; `missing` names those this driver lacks."""

    def __init__(self, missing: tuple = ()) -> None:
        self.missing = missing

    def __getattr__(self, name: str):
        if name in self.missing or not name.startswith("nvml"):
            raise AttributeError(name)
        values = {"nvmlDeviceGetClockInfo": 1980, "nvmlDeviceGetTemperature": 41, "nvmlDeviceGetPowerUsage": 123500,
                  "nvmlDeviceGetCurrentClocksEventReasons": 4, "nvmlDeviceGetCurrentClocksThrottleReasons": 4}

        def call(*args):
            if name in values:
                args[-1]._obj.value = values[name]
            return 0

        return call


@unittest.skipUnless(HAVE_TORCH, "benchfleet_environment needs torch")
class NvmlTelemetryTest(unittest.TestCase):
    def telemetry(self, lib: FakeNvml) -> dict:
        sys.path.insert(0, PYTHON_DIR)
        import benchfleet_environment as be

        nvml = be._Nvml.__new__(be._Nvml)
        nvml._lib = lib
        return nvml.telemetry("GPU-00000000-0000-0000-0000-000000000000")

    def test_throttle_reasons_under_either_name(self) -> None:
        # Drivers >= 535 name the bitmask clocks event reasons (the throttle name is deprecated
        # there); older drivers have only the throttle name.
        for missing in ((), ("nvmlDeviceGetCurrentClocksThrottleReasons",),
                        ("nvmlDeviceGetCurrentClocksEventReasons",)):
            with self.subTest(missing=missing):
                self.assertEqual(self.telemetry(FakeNvml(missing)),
                                 {"sm_clock_mhz": 1980, "mem_clock_mhz": 1980, "temperature_c": 41, "power_w": 123.5,
                                  "throttle_reasons": 4})
        both = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
        self.assertNotIn("throttle_reasons", self.telemetry(FakeNvml(both)))


if __name__ == "__main__":
    unittest.main()
