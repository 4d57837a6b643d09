"""Tests of the accuracy rule in Python (agent/python/benchfleet_accuracy.py): the verdicts on the
cases the C++ rule (common/accuracy.cpp) is tested on too (tests/data/accuracy_cases.json), the
rule by hand, the comparisons on small tensors, the runner's check of a compiled model
(check_compiled, with stand-ins for the compiled model, so any torch will do), and the test-only
perturbation. The judging tests need no torch; the others skip without it.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import unittest
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("BENCHFLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SOURCE_DIR, "agent", "python"))

import benchfleet_accuracy as ba  # noqa: E402

CASES = os.path.join(SOURCE_DIR, "tests", "data", "accuracy_cases.json")
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def comparison(**fields: Any) -> ba.OutputComparison:
    return ba.OutputComparison(**{"name": "output0", **fields})


class SharedCasesTest(unittest.TestCase):
    """The cases common/accuracy.cpp is tested on: both rules must agree on each."""

    def test_cases_judged_as_the_cpp_rule(self) -> None:
        with open(CASES, encoding="utf-8") as f:
            document = json.load(f)
        cases: List[Dict[str, Any]] = document["cases"] if isinstance(document, dict) else document
        self.assertGreaterEqual(len(cases), 10)
        verdicts = set()
        for i, case in enumerate(cases):
            with self.subTest(case=case.get("name", i)):
                outputs = [ba.OutputComparison(**o) for o in case["outputs"]]
                got = ba.judge(case["dtype"], bool(case.get("on_cuda", False)),
                               bool(case.get("eager_deterministic", True)), outputs)
                expected = case["expect"]
                verdicts.add(expected["verdict"])
                for key, value in expected.items():
                    if isinstance(value, float):
                        self.assertAlmostEqual(got[key], value, delta=abs(value) * 1e-9, msg=key)
                    else:  # output: "" when none (the JSON leaves it out)
                        self.assertEqual(got.get(key, ""), value, key)
        self.assertLessEqual({"pass", "wrong", "eager_nondeterministic"}, verdicts)


class JudgeTest(unittest.TestCase):
    def test_tolerance_is_three_times_eager_plus_the_dtype_floor(self) -> None:
        floors = {("float32", False): 1e-4, ("float16", False): 1e-2, ("bfloat16", True): 4e-2,
                  ("amp", True): 1e-2, ("amp", False): 4e-2}
        for (dtype, cuda), floor in floors.items():
            with self.subTest(dtype=dtype, cuda=cuda):
                tolerance = 3 * 1e-3 + floor
                at = ba.judge(dtype, cuda, True, [comparison(compiled_error=tolerance, eager_error=1e-3, cosine=1.0)])
                self.assertEqual(at["verdict"], "pass", at)
                self.assertAlmostEqual(at["tolerance"], tolerance)
                over = ba.judge(dtype, cuda, True, [comparison(compiled_error=tolerance * 1.01, eager_error=1e-3)])
                self.assertEqual(over["verdict"], "wrong", over)
                self.assertIn("3.0 x eager's error", over["detail"])

    def test_resnet18s_inductor_error_is_wrong_and_mobilenets_passes(self) -> None:
        # Figures measured on the CPU: resnet18 compiled 4.9% off the float64 reference, eager 4.3e-7.
        resnet = ba.judge("float32", False, True, [comparison(name="logits", compiled_error=0.049, eager_error=4.3e-7)])
        self.assertEqual((resnet["verdict"], resnet["output"]), ("wrong", "logits"))
        mobilenet = ba.judge("float32", False, True, [comparison(compiled_error=9.2e-7, eager_error=8.4e-7)])
        self.assertEqual(mobilenet["verdict"], "pass")

    def test_cosine_counts_in_reduced_precision_only(self) -> None:
        low = comparison(compiled_error=1e-3, eager_error=1e-3, cosine=0.98)
        self.assertEqual(ba.judge("bfloat16", False, True, [low])["verdict"], "wrong")
        self.assertIn("cosine", ba.judge("float16", False, True, [low])["detail"])
        self.assertEqual(ba.judge("float32", False, True, [comparison(compiled_error=1e-5, cosine=0.98)])["verdict"],
                         "pass")

    def test_other_verdicts(self) -> None:
        fine = comparison(compiled_error=1e-6, eager_error=1e-6)
        self.assertEqual(ba.judge("float32", False, False, [fine])["verdict"], "eager_nondeterministic")
        self.assertEqual(ba.judge("float32", False, True, [])["verdict"], "unchecked")
        ids = comparison(name="ids", floating=False, equal=False)
        wrong = ba.judge("float32", False, True, [fine, ids])
        self.assertEqual((wrong["verdict"], wrong["output"]), ("wrong", "ids"))
        self.assertIn("exact match", wrong["detail"])
        nan = ba.judge("float32", False, True, [comparison(compiled_error=math.inf, compiled_finite=False)])
        self.assertEqual((nan["verdict"], nan["compiled_error"]), ("wrong", 0.0))
        self.assertIn("NaN or Inf", nan["detail"])

    def test_reports_the_output_closest_to_failing_or_the_first_failing(self) -> None:
        outputs = [comparison(name="a", compiled_error=1e-5), comparison(name="b", compiled_error=9e-5),
                   comparison(name="c", compiled_error=2e-5)]
        self.assertEqual(ba.judge("float32", False, True, outputs)["output"], "b")
        outputs += [comparison(name="d", compiled_error=1.0), comparison(name="e", compiled_error=2.0)]
        self.assertEqual(ba.judge("float32", False, True, outputs)["output"], "d")


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class CompareTest(unittest.TestCase):
    def test_relative_l2_and_cosine(self) -> None:
        import torch

        ref = torch.tensor([3.0, 4.0], dtype=torch.float64)
        c = ba.compare("y", torch.tensor([3.0, 4.5]), torch.tensor([3.0, 4.0]), ref)
        self.assertAlmostEqual(c.compiled_error, 0.5 / 5)
        self.assertEqual(c.eager_error, 0.0)
        self.assertAlmostEqual(c.cosine, (9 + 18) / (5 * math.hypot(3, 4.5)))
        zero = ba.compare("z", torch.tensor([0.0, 2.0]), torch.zeros(2), torch.zeros(2, dtype=torch.float64))
        self.assertEqual((zero.compiled_error, zero.cosine), (2.0, 0.0))  # the absolute norm
        both = ba.compare("z", torch.zeros(2), torch.zeros(2), torch.zeros(2, dtype=torch.float64))
        self.assertEqual((both.compiled_error, both.cosine), (0.0, None))

    def test_outputs_eager_itself_loses_are_not_judged(self) -> None:
        import torch

        # mobilenet_v3_small's random-init logits are about 1e-9: in float16 eager and compiled
        # both give zeros (relative errors 1.0, cosine 0). Eager carries no information about the
        # reference, so the compiled output is not blamed: unchecked, saying why.
        ref = torch.full((10,), 1e-9, dtype=torch.float64)
        zeros = torch.zeros(10, dtype=torch.float16)
        c = ba.compare("logits", zeros, zeros, ref)
        self.assertEqual((c.compiled_error, c.eager_error, c.cosine), (1.0, 1.0, 0.0))
        info = ba.judge("float16", False, True, [c])
        self.assertEqual(info["verdict"], "unchecked", info)
        self.assertIn("eager in float16 is itself", info["detail"])

    def test_non_finite_and_non_floating_outputs(self) -> None:
        import torch

        ref = torch.tensor([1.0, math.nan, 2.0], dtype=torch.float64)
        same_nan = ba.compare("y", torch.tensor([1.0, math.nan, 2.0]), torch.tensor([1.0, math.nan, 2.0]), ref)
        self.assertTrue(same_nan.compiled_finite)
        self.assertEqual(same_nan.compiled_error, 0.0)  # compared where the reference is finite
        new_inf = ba.compare("y", torch.tensor([1.0, 0.0, math.inf]), torch.tensor([1.0, 0.0, 2.0]), ref)
        self.assertFalse(new_inf.compiled_finite)
        self.assertEqual(ba.judge("float32", False, True, [new_inf])["verdict"], "wrong")
        ids = torch.tensor([1, 2, 3])
        self.assertTrue(ba.compare("ids", ids.clone(), ids.clone(), ids).equal)
        self.assertFalse(ba.compare("ids", torch.tensor([1, 2, 4]), ids, ids).equal)
        self.assertFalse(ba.compare("ids", ids, ids, ids).floating)

    def test_outputs_equal_is_bitwise(self) -> None:
        import torch

        a = [torch.tensor([1.0, math.nan]), torch.tensor([1, 2])]
        self.assertTrue(ba.outputs_equal(a, [t.clone() for t in a]))
        self.assertFalse(ba.outputs_equal(a, [torch.tensor([1.0 + 1e-7, math.nan]), a[1]]))
        self.assertFalse(ba.outputs_equal(a, [torch.tensor([1.0, 0.0]), a[1]]))
        self.assertFalse(ba.outputs_equal(a, [a[0].double(), a[1]]))
        self.assertFalse(ba.outputs_equal(a, a[:1]))

    def test_float64_helpers_leave_the_model_and_ids_alone(self) -> None:
        import torch

        model = torch.nn.Linear(2, 2)
        copy = ba.float64_copy(model)
        self.assertEqual((model.weight.dtype, copy.weight.dtype), (torch.float32, torch.float64))
        ids = torch.tensor([1, 2])
        x, y = ba.float64_inputs([torch.ones(2, dtype=torch.bfloat16), ids])
        self.assertEqual(x.dtype, torch.float64)
        self.assertIs(y, ids)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class CheckCompiledTest(unittest.TestCase):
    """check_compiled with the eager model, or a deliberately changed one, standing in for the
    compiled model (what torch.compile makes is tested in the torch 2.6 root: test_runner.py)."""

    def setUp(self) -> None:
        import torch

        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
        self.inputs = [torch.randn(4, 16)]

    def check(self, compiled: Any, eager: Any = None, **kw: Any) -> Dict[str, Any]:
        return ba.check_compiled(eager or self.model, compiled, lambda: ba.float64_copy(self.model), self.inputs,
                                 kw.get("dtype", "float32"), False, kw.get("names", ("logits",)))

    def test_the_model_itself_passes(self) -> None:
        info = self.check(self.model)
        self.assertEqual((info["verdict"], info["output"]), ("pass", "logits"), info)
        self.assertLess(info["eager_error"], 1e-6)
        self.assertLessEqual(info["compiled_error"], info["tolerance"])

    def test_a_perturbed_model_is_wrong(self) -> None:
        info = self.check(ba.perturbed(self.model, 0.05))
        self.assertEqual(info["verdict"], "wrong", info)
        self.assertAlmostEqual(info["compiled_error"], 0.05, delta=0.02)  # the scale is the relative error

    def test_a_nondeterministic_eager_model(self) -> None:
        import torch

        calls = [0]

        def drifting(x: Any) -> Any:
            calls[0] += 1
            return self.model(x) + calls[0] * 1e-3 * torch.ones(())

        self.assertEqual(self.check(self.model, eager=drifting)["verdict"], "eager_nondeterministic")

    def test_structure_mismatches(self) -> None:
        def two(x: Any) -> Any:
            return self.model(x), self.model(x)

        info = self.check(two)
        self.assertEqual(info["verdict"], "wrong", info)
        self.assertIn("returned 2 tensors", info["detail"])
        info = self.check(lambda x: self.model(x)[:2])
        self.assertEqual((info["verdict"], info["output"]), ("wrong", "logits"), info)
        self.assertIn("shape [2, 8]", info["detail"])

    def test_an_eager_model_that_overflows_leaves_nothing_to_judge(self) -> None:
        import torch

        def overflowing(x: Any) -> Any:
            return self.model(x) * torch.tensor([math.inf] + [1.0] * 7)

        info = self.check(self.model, eager=overflowing)
        self.assertEqual((info["verdict"], info["output"]), ("unchecked", "logits"), info)
        self.assertIn("NaN or Inf", info["detail"])
        json.dumps(info, allow_nan=False)  # every number finite, as the C++ codec requires

    def test_a_failing_check_is_unchecked_not_an_error(self) -> None:
        def out_of_memory(x: Any) -> Any:
            raise MemoryError("out of memory: tried to allocate 8 GiB")

        info = self.check(out_of_memory)
        self.assertEqual(info["verdict"], "unchecked", info)
        self.assertIn("the accuracy check failed: MemoryError: out of memory", info["detail"])

    def test_reduced_precision_is_judged_against_the_float32_models_float64_copy(self) -> None:
        import torch

        half = ba.float64_copy(self.model).to(torch.bfloat16)
        inputs = [t.to(torch.bfloat16) for t in self.inputs]
        info = ba.check_compiled(half, half, lambda: ba.float64_copy(self.model), inputs, "bfloat16", False)
        self.assertEqual((info["verdict"], info["output"]), ("pass", "output0"), info)
        self.assertGreater(info["eager_error"], 1e-4)  # bfloat16's own rounding, measured
        self.assertGreater(info["cosine"], 0.99)


class PerturbationTest(unittest.TestCase):
    def test_scale_from_the_environment(self) -> None:
        self.assertIsNone(ba.perturbation_scale({}))
        self.assertIsNone(ba.perturbation_scale({ba.PERTURB_VARIABLE: ""}))
        self.assertEqual(ba.perturbation_scale({ba.PERTURB_VARIABLE: "0.05"}), 0.05)
        for bad in ("x", "0", "-0.1", "2", "nan"):
            with self.assertRaises(ValueError) as caught:
                ba.perturbation_scale({ba.PERTURB_VARIABLE: bad})
            self.assertIn(ba.PERTURB_VARIABLE, str(caught.exception))

    @unittest.skipUnless(HAVE_TORCH, "needs torch")
    def test_fixed_noise_floating_outputs_only(self) -> None:
        import torch

        out = (torch.arange(1000, dtype=torch.float32), torch.tensor([1, 2, 3]))
        first = ba.perturbed(lambda: out, 0.1)()
        second = ba.perturbed(lambda: out, 0.1)()
        self.assertTrue(torch.equal(first[0], second[0]))  # the same noise in every process
        self.assertIs(first[1], out[1])
        self.assertAlmostEqual(ba.relative_error(first[0], out[0]), 0.1, delta=0.01)
        half = ba.perturbed(lambda: out[0].half(), 0.1)()
        self.assertEqual(half.dtype, torch.float16)


if __name__ == "__main__":
    unittest.main()
