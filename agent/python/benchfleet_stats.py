"""Latency statistics and the stopping rule, bit for bit as common/stats.cpp and
common/measurement.cpp compute them, for the Python runner (benchfleet_runner.py).

    stats = compute_statistics(samples_ms)      # dict with the JobResult `stats` fields
    rule = StoppingRule(measurement)            # measurement: dict as in the job JSON
    reason = rule.check(samples_ms, elapsed_s)  # None, or "fixed_count" | "ci_target" | ...

Every operation is the C++ one in the same order on IEEE doubles, so the results are equal, not
merely close: sums run left to right (no pairwise summation), interpolation is lo + f * (hi - lo),
and the bootstrap draws its indices as std::mt19937_64(seed)() % n (Mt19937_64 below, written
from the generator's definition in the C++ standard, [rand.eng.mers] and [rand.predef]).
With numpy the generator and the bootstrap run vectorised; without it, in plain Python (slow but
equal).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from benchfleet_rules import rule

_MASK64 = (1 << 64) - 1
_CHUNK_ELEMENTS = 1 << 22  # resampled values per numpy step of the bootstrap
_NAN = float("nan")

# Exit codes of a worker process per result status: common/rules/worker_exit_codes.json, which
# the C++ worker compiles in (common/measurement.h exit_code_for).
EXIT_CODES: Dict[str, int] = dict(rule("worker_exit_codes.json")["codes"])


def exit_code_for(status: str) -> int:
    return EXIT_CODES.get(status, 1)


@functools.lru_cache(maxsize=None)
def _numpy() -> Any:
    """numpy, or None; imported on first use (the runner forks before importing anything big)."""
    try:
        import numpy
    except ImportError:  # the plain-Python paths give the same numbers
        return None
    return numpy


class Mt19937_64:
    """std::mt19937_64: 64-bit Mersenne Twister (n=312, m=156, r=31), seeded as the C++ engine.

    Calling it returns the next output; draw(count) returns the next `count` outputs at once
    (vectorised with numpy). Both can be mixed: they read one stream.
    """

    _N, _M = 312, 156
    _MATRIX_A = 0xB5026F5AA96619E9
    _UPPER, _LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed: int = 5489) -> None:
        state = [seed & _MASK64]
        for i in range(1, self._N):
            prev = state[-1]
            state.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & _MASK64)
        self._state = state  # the last untempered block
        self._buffer: List[int] = []  # tempered outputs of that block
        self._next = len(self._buffer)  # the next output to return from _buffer

    def __call__(self) -> int:
        if self._next == len(self._buffer):
            self._state = _twist(self._state, self._N, self._M)
            self._buffer = [_temper(v) for v in self._state]
            self._next = 0
        self._next += 1
        return self._buffer[self._next - 1]

    def draw(self, count: int) -> Sequence[int]:
        """The next `count` outputs: a numpy uint64 array when numpy is there, else a list."""
        numpy = _numpy()
        if numpy is None:
            return [self() for _ in range(count)]
        taken = self._buffer[self._next:self._next + count]
        self._next += len(taken)
        blocks = -(-(count - len(taken)) // self._N)
        if blocks == 0:
            return numpy.array(taken, dtype=numpy.uint64)
        states = self._twist_blocks(blocks)
        fresh = _temper_numpy(states.reshape(-1))
        wanted = count - len(taken)
        # The last block's outputs past `wanted` are kept for later calls.
        self._state = [int(x) for x in states[-1]]
        self._buffer = [int(x) for x in fresh[-self._N:]]
        self._next = self._N - (blocks * self._N - wanted)
        return numpy.concatenate([numpy.array(taken, dtype=numpy.uint64), fresh[:wanted]])

    def _twist_blocks(self, blocks: int) -> Any:
        """The next `blocks` states (untempered), one per row. Per block: for i < 311 the
        x = upper(s[i]) | lower(s[i + 1]) terms read only the old state, so they are one vector
        op; entries 0..155 then read old entries 156..311, entries 156..310 the new ones 0..154,
        and entry 311 the new entries 0 and 155."""
        numpy = _numpy()
        n, m = self._N, self._M
        u = numpy.uint64
        upper, lower, matrix, one = u(self._UPPER), u(self._LOWER), u(self._MATRIX_A), u(1)
        out = numpy.empty((blocks, n), dtype=numpy.uint64)
        prev = numpy.array(self._state, dtype=numpy.uint64)
        for b in range(blocks):
            new = out[b]
            x = (prev[:-1] & upper) | (prev[1:] & lower)
            mixed = (x >> one) ^ ((x & one) * matrix)
            numpy.bitwise_xor(prev[m:], mixed[:n - m], out=new[:n - m])
            numpy.bitwise_xor(new[:n - 1 - m], mixed[n - m:], out=new[n - m:n - 1])
            last = (prev[n - 1] & upper) | (new[0] & lower)
            new[n - 1] = new[m - 1] ^ (last >> one) ^ ((last & one) * matrix)
            prev = new
        return out


def _twist(state: List[int], n: int, m: int) -> List[int]:
    """The next block of the state, entry by entry as the generator's definition reads."""
    s = list(state)
    for i in range(n):
        x = (s[i] & Mt19937_64._UPPER) | (s[(i + 1) % n] & Mt19937_64._LOWER)
        s[i] = s[(i + m) % n] ^ (x >> 1) ^ (Mt19937_64._MATRIX_A if x & 1 else 0)
    return s


def _temper(y: int) -> int:
    y ^= (y >> 29) & 0x5555555555555555
    y ^= (y << 17) & 0x71D67FFFEDA60000
    y ^= (y << 37) & 0xFFF7EEE000000000
    y ^= y >> 43
    return y & _MASK64


def _temper_numpy(y: Any) -> Any:
    u = _numpy().uint64
    y = y ^ ((y >> u(29)) & u(0x5555555555555555))
    y = y ^ ((y << u(17)) & u(0x71D67FFFEDA60000))
    y = y ^ ((y << u(37)) & u(0xFFF7EEE000000000))
    return y ^ (y >> u(43))


def _lerp(lo: float, hi: float, frac: float) -> float:
    return lo + frac * (hi - lo)


def mean(values: Sequence[float]) -> float:
    if not values:
        return _NAN
    total = 0.0
    for v in values:  # left to right, as the C++ loop
        total += v
    return total / len(values)


def sample_stddev(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    m = mean(values)
    squares = 0.0
    for v in values:
        squares += (v - m) * (v - m)
    return math.sqrt(squares / (len(values) - 1))


def percentile_sorted(sorted_values: Sequence[float], q: float) -> float:
    """numpy's default "linear" percentile of ascending values; q clamped to [0, 1]."""
    if len(sorted_values) == 0:
        return _NAN
    q = min(max(q, 0.0), 1.0)
    h = float(len(sorted_values) - 1) * q
    lo = int(math.floor(h))
    hi = min(lo + 1, len(sorted_values) - 1)
    return _lerp(float(sorted_values[lo]), float(sorted_values[hi]), h - lo)


def median(values: Sequence[float]) -> float:
    if len(values) == 0:
        return _NAN
    ordered = sorted(values)
    n = len(ordered)
    if n % 2 == 1:
        return ordered[n // 2]
    return _lerp(ordered[n // 2 - 1], ordered[n // 2], 0.5)


def _bootstrap_medians(samples: Sequence[float], resamples: int, seed: int) -> List[float]:
    """The sorted medians of `resamples` resamples, each drawn as samples[rng() % n]."""
    n = len(samples)
    rng = Mt19937_64(seed)
    numpy = _numpy()
    if numpy is None:
        return sorted(median([samples[rng() % n] for _ in range(n)]) for _ in range(resamples))
    values = numpy.asarray(samples, dtype=numpy.float64)
    medians: List[float] = []
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // n)  # bounds memory for long sample lists
    for first in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - first)
        indices = numpy.asarray(rng.draw(rows * n)) % numpy.uint64(n)
        resampled = numpy.sort(values[indices].reshape(rows, n), axis=1)
        if n % 2 == 1:
            middle = resampled[:, n // 2]
        else:  # lo + 0.5 * (hi - lo), elementwise in doubles like _lerp
            lo, hi = resampled[:, n // 2 - 1], resampled[:, n // 2]
            middle = lo + 0.5 * (hi - lo)
        medians.extend(float(x) for x in middle)
    return sorted(medians)


def bootstrap_median_ci(samples: Sequence[float], confidence: float = 0.95, resamples: int = 2000,
                        seed: int = 42) -> Tuple[float, float]:
    """Percentile-bootstrap CI of the median, widened to contain the sample median."""
    if len(samples) == 0:
        return (_NAN, _NAN)
    sample_median = median(samples)
    if len(samples) == 1 or resamples <= 0:
        return (sample_median, sample_median)
    confidence = min(max(confidence, 0.0), 1.0)
    medians = _bootstrap_medians(samples, resamples, seed & _MASK64)
    alpha = 1.0 - confidence
    low = percentile_sorted(medians, alpha / 2)
    high = percentile_sorted(medians, 1.0 - alpha / 2)
    return (min(low, sample_median), max(high, sample_median))


def compute_statistics(samples_ms: Sequence[float], seed: int = 42, resamples: int = 2000) -> Dict[str, float]:
    """The JobResult `stats` object (field names as common/codecs.cpp writes them)."""
    if len(samples_ms) == 0:
        return {**{key: 0.0 for key in _STAT_KEYS}, "iterations": 0}
    ordered = sorted(float(x) for x in samples_ms)
    mean_ms = mean(ordered)
    median_ms = percentile_sorted(ordered, 0.5)
    stddev_ms = sample_stddev(ordered)
    low, high = bootstrap_median_ci(ordered, 0.95, resamples, seed)  # of the sorted copy: order-free
    min_ms, max_ms = ordered[0], ordered[-1]
    return {
        "mean_ms": mean_ms,
        "median_ms": median_ms,
        "p90_ms": percentile_sorted(ordered, 0.90),
        "p99_ms": percentile_sorted(ordered, 0.99),
        "min_ms": min_ms,
        "max_ms": max_ms,
        "stddev_ms": stddev_ms,
        "cv": 0.0 if mean_ms == 0 else stddev_ms / mean_ms,
        "ci_low_ms": min(max(low, min_ms), median_ms),
        "ci_high_ms": min(max(high, median_ms), max_ms),
        "iterations": len(ordered),
    }


_STAT_KEYS = ("mean_ms", "median_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "stddev_ms", "cv", "ci_low_ms",
              "ci_high_ms")

# MeasurementSpec defaults (common/types.h).
MEASUREMENT_DEFAULTS: Mapping[str, float] = {
    "warmup": 10, "min_iterations": 30, "max_iterations": 1000, "min_duration_s": 0.5, "max_duration_s": 120.0,
    "target_ci_rel_width": 0.02,
}

# The CI check only decides when to stop: fewer resamples than the final statistics.
_CHECK_RESAMPLES = 400


class StoppingRule:
    """common/measurement.h StoppingRule: both minimums, then until the 95% CI of the median is
    within the target relative width, bounded by max iterations and max duration.
    min_iterations == max_iterations is a fixed count."""

    def __init__(self, measurement: Mapping[str, float]) -> None:
        spec = {**MEASUREMENT_DEFAULTS, **measurement}
        self._min_iterations = int(spec["min_iterations"])
        self._max_iterations = int(spec["max_iterations"])
        self._min_duration_s = float(spec["min_duration_s"])
        self._max_duration_s = float(spec["max_duration_s"])
        self._target = float(spec["target_ci_rel_width"])
        self._next_ci_check = 0
        self.last_relative_width: Optional[float] = None

    def check(self, samples_ms: Sequence[float], elapsed_s: float) -> Optional[str]:
        """Call after every timed iteration with all samples so far (in order); the reason to stop
        or None. The CI check runs first when both minimums are met, then every max(10, n // 10)."""
        n = len(samples_ms)
        fixed = self._min_iterations == self._max_iterations
        if fixed and n >= self._max_iterations:
            return "fixed_count"
        if n >= self._max_iterations:
            return "max_iterations"
        if elapsed_s >= self._max_duration_s:
            return "max_time"
        if fixed or n < self._min_iterations or elapsed_s < self._min_duration_s or n < self._next_ci_check:
            return None
        low, high = bootstrap_median_ci(samples_ms, 0.95, _CHECK_RESAMPLES, seed=n)
        med = median(samples_ms)
        self.last_relative_width = (high - low) / med if med > 0 else 0.0
        if self.last_relative_width <= self._target:
            return "ci_target"
        self._next_ci_check = n + max(10, n // 10)
        return None
